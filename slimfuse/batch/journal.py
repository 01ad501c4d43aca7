"""The resume journal: a JSON line per finished item in the output folder (`.slimfuse-batch.jsonl`), with the
output's sha256 and a hash of everything that made it (sources, target, options). Running the same batch again
skips an item whose output is still the file the journal recorded for the same inputs and options, and redoes
one that is missing, changed, or asked for with other inputs or options."""
from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import fields
from pathlib import Path

from slimfuse.media.provenance import tool_version
from slimfuse.config import ProgramOptions, RunConfig

JOURNAL_NAME = ".slimfuse-batch.jsonl"
CHUNK = 1 << 20


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(CHUNK):
            digest.update(block)
    return digest.hexdigest()


def options_hash(config: RunConfig, target: Path) -> str:
    """What the output depends on: slimfuse's version, every option of the run (not the program's: its messages,
    config file or --halt-on-error make no other output), and each input's size and modification time (a changed
    source or target changes the hash)."""
    inputs = [_fingerprint(path) for path in (*config.sources, target)]
    program = {field.name for field in fields(ProgramOptions)}
    options = {name: value for name, value in config.options().items() if name not in program}
    text = json.dumps({"version": tool_version(), "options": options, "inputs": inputs}, sort_keys=True,
                      default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def _fingerprint(path: Path) -> list[object]:
    try:
        stat = path.stat()
    except OSError:
        return [str(path), None, None]
    return [str(path.resolve()), stat.st_size, stat.st_mtime_ns]


class Journal:
    """Finished items, by output path; the last line for an output wins."""

    def __init__(self, folder: Path) -> None:
        self.path = folder / JOURNAL_NAME
        self._entries: dict[str, Mapping[str, object]] = {}
        if self.path.is_file():
            for line in self.path.read_text(encoding="utf-8").splitlines():
                try:
                    entry = json.loads(line)
                except json.JSONDecodeError:
                    continue  # a line cut short by a crash: that item is redone
                if isinstance(entry, dict) and isinstance(entry.get("output"), str):
                    self._entries[entry["output"]] = entry

    def is_complete(self, output: Path, options: str) -> bool:
        entry = self._entries.get(str(output.resolve()))
        if entry is None or entry.get("options") != options or not output.is_file():
            return False
        return entry.get("sha256") == sha256_of(output)

    def record(self, output: Path, options: str, target: Path, seconds: float) -> None:
        """Append the finished item, flushed to disk, so a crash right after still counts it."""
        entry = {"output": str(output.resolve()), "sha256": sha256_of(output), "options": options,
                 "target": str(target), "seconds": round(seconds, 3)}
        self._entries[entry["output"]] = entry
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(entry) + "\n")
            handle.flush()
            os.fsync(handle.fileno())
