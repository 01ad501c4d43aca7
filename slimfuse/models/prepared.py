"""Large models prepared once for this CPU: ONNX Runtime's fully optimised graph, saved and loaded as it is.

Loading a model file with graph optimisation on makes ONNX Runtime hold the parsed file, its initializers and the
rewritten ones (fused, re-laid out for this CPU's vector width) at once: about twice the weights at the load's peak,
and for some graphs (gfpgan_1.4) the old and new copies stay resident. The graph ONNX Runtime ends with is saved once
(`SessionOptions.optimized_model_filepath`) to $SLIMFUSE_HOME/prepared/ and later sessions load that file with
optimisation off and, for float models, without prepacked weight copies (`session.disable_prepacking`): the same
kernels run, at the same speed, from one copy of the weights (measured in the README, "Loading a model"). An int8
variant keeps prepacking: without it its integer kernels pack the weights again at every run, which made level 3
with gfpgan_1.4.int8 slower (30 against 18 s for 6 frames) and its peak higher (1000 against 790 MB).

The saved graph is specific to this onnxruntime version and this CPU's instruction set (its layout transforms), so
both are part of the cache key, with the original file's path, size and modification time. A sidecar holds the
prepared file's sha256, checked before its first load in a process. ORT-format files were tried too: loading one
from a path reads the whole file into a buffer beside the initializers, which does not lower the peak.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import platform
from dataclasses import dataclass, field, replace
from pathlib import Path

import onnxruntime as ort

from slimfuse.errors import is_allocation_failure
from slimfuse.atomic import Notify, temporary_name, write_bytes_atomic
from slimfuse.models.files import sha256_file
from slimfuse.models.runtime import SessionSettings, first_line, session_options

LOG = logging.getLogger(__name__)

MIN_BYTES = 32 << 20
"""Smaller models are loaded as they are: their copies cost little and preparing them would cost a load."""
FOLDER = "prepared"


def _quantized(name: str) -> bool:
    """An int8 variant's integer convolutions and matrix products run about twice as fast from prepacked weights
    (gfpgan_1.4.int8: 1.1 against 2.2 s a face), so they keep prepacking and its copy of the int8 weights; the
    float kernels run as fast without it."""
    return name.endswith((".int8", ".int8-dynamic"))


def cpu_identity() -> str:
    """What the saved graph depends on besides the file: onnxruntime's version, the machine and its CPU flags."""
    flags = ""
    try:
        for line in Path("/proc/cpuinfo").read_text(errors="replace").splitlines():
            if line.startswith(("flags", "Features")):
                flags = line.split(":", 1)[1].strip()
                break
    except OSError:
        flags = platform.processor()
    return f"{ort.__version__}|{platform.machine()}|{flags}"


@dataclass
class PreparedModels:
    """The prepared copies a pool loads on the CPU, in folder `root` (made there on first need)."""

    root: Path
    notify: Notify = lambda message: None
    min_bytes: int = MIN_BYTES
    _verified: set[Path] = field(default_factory=set)

    def applies(self, path: Path, options: SessionSettings) -> bool:
        return (options.providers == ("cpu",) and options.graph_optimization != "disable"
                and path.stat().st_size >= self.min_bytes)

    def session_input(self, name: str, path: Path, options: SessionSettings) -> tuple[Path, SessionSettings]:
        """The file and options a CPU session of model `name` (verified file `path`) loads: its prepared copy,
        made now if there is none, with optimisation and prepacking off; `path` and `options` as they are where
        preparing does not apply or fails."""
        if not self.applies(path, options):
            return path, options
        target = self.root / f"{path.stem}.{self._key(path, options)}.onnx"
        try:
            if not self._usable(target):
                self._make(name, path, target, options)
        except Exception as exc:  # noqa: BLE001 - a graph ORT cannot save (over 2 GB, a full disk): load it as it is
            if is_allocation_failure(exc):
                raise MemoryError(first_line(exc)) from exc
            LOG.warning(f"{name}: could not prepare it for this CPU ({first_line(exc)}); loading it as it is")
            return path, options
        return target, replace(options, graph_optimization="disable", disable_prepacking=not _quantized(name))

    def _key(self, path: Path, options: SessionSettings) -> str:
        stat = path.stat()
        text = f"{path.resolve()}|{stat.st_size}|{stat.st_mtime_ns}|{options.graph_optimization}|{cpu_identity()}"
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def _usable(self, target: Path) -> bool:
        """Whether `target` is there and is the file its sidecar recorded (checked once a process)."""
        if target in self._verified:
            return target.is_file()
        try:
            recorded = json.loads(target.with_suffix(".json").read_text(encoding="utf-8"))["sha256"]
        except (OSError, ValueError, KeyError, TypeError):
            return False
        if not target.is_file() or sha256_file(target) != recorded:
            return False
        self._verified.add(target)
        return True

    def _make(self, name: str, path: Path, target: Path, options: SessionSettings) -> None:
        self.notify(f"{name}: preparing it for this CPU, once (ONNX Runtime's optimised graph, kept in "
                    f"{self.root})")
        self.root.mkdir(parents=True, exist_ok=True)
        partial = temporary_name(target)
        settings = session_options(replace(options, intra_op_threads=1))
        settings.optimized_model_filepath = str(partial)
        try:
            ort.InferenceSession(str(path), sess_options=settings, providers=["CPUExecutionProvider"])
            digest = sha256_file(partial)
            os.replace(partial, target)
        finally:
            partial.unlink(missing_ok=True)
        sidecar = {"sha256": digest, "original": str(path.resolve()), "identity": cpu_identity()}
        write_bytes_atomic(target.with_suffix(".json"), (json.dumps(sidecar, indent=1) + "\n").encode("utf-8"))
        self._verified.add(target)
