"""ONNX Runtime sessions: the one place session options and execution providers are chosen.

Providers are asked for by short name (cpu, cuda, tensorrt, rocm, openvino, coreml, directml), several in priority
order; the CPU is always last in the chain. A requested provider that this onnxruntime build lacks, or that fails
to initialise (ONNX Runtime then quietly runs the session elsewhere: `session.get_providers()` tells), is reported
through the caller's `warn` callback (the pool's: a logged warning) and recorded in a `ProviderReport`; with
`strict_provider` it is an error instead.
"""
from __future__ import annotations

import threading
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import onnxruntime as ort

from slimfuse.atomic import Notify
from slimfuse.errors import ProviderUnavailableError, is_allocation_failure
from slimfuse.models.providers import LABELS, PROVIDERS, ArenaExtendStrategy, ConvAlgoSearch, short_name



GRAPH_OPTIMIZATION: dict[str, ort.GraphOptimizationLevel] = {
    "disable": ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
    "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
    "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
    "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
}

GraphOptimization = Literal["disable", "basic", "extended", "all"]


@dataclass(frozen=True)
class SessionSettings:
    """Every ONNX Runtime setting of a run's sessions; the run's plan derives it from the config once (RunPlan)."""

    providers: tuple[str, ...] = ("cpu",)
    """Short names, in priority order; the CPU is always tried last whether listed or not."""
    device_id: int = 0
    strict_provider: bool = False
    """A requested provider that is missing or fails to initialise is an error instead of a warning."""
    graph_optimization: GraphOptimization = "all"
    intra_op_threads: int = 0
    """0 lets ONNX Runtime choose (one thread per physical core)."""
    inter_op_threads: int = 1
    enable_mem_pattern: bool = True
    enable_cpu_arena: bool = True
    disable_prepacking: bool = False
    """No prepacked copies of weights (for a graph ONNX Runtime already optimised, see slimfuse.models.prepared)."""
    shrink_arenas: bool = False
    """Ask ONNX Runtime to return its arenas' free memory after each generator run (see `run_options`)."""
    gpu_mem_limit: int | None = None
    """Bytes the CUDA / ROCm arena may hold (None: no limit); also TensorRT's workspace limit."""
    arena_extend_strategy: ArenaExtendStrategy = "kSameAsRequested"
    """kSameAsRequested grows the GPU arena only by what is asked for; kNextPowerOfTwo is faster and hungrier."""
    cudnn_conv_algo_search: ConvAlgoSearch = "HEURISTIC"
    """EXHAUSTIVE benchmarks every convolution algorithm on first use (slow start, large workspaces)."""
    tensorrt_fp16: bool = False
    tensorrt_cache_dir: Path | None = None
    """Where TensorRT keeps built engines and timing caches (None: no cache, engines are rebuilt each run)."""

    def __post_init__(self) -> None:
        names: list[str] = []
        for provider in self.providers:
            short = short_name(provider)
            if short not in names:
                names.append(short)
        object.__setattr__(self, "providers", tuple(names) or ("cpu",))
        if self.graph_optimization not in GRAPH_OPTIMIZATION:
            raise ValueError(f"graph_optimization must be one of {', '.join(GRAPH_OPTIMIZATION)}")
        if self.device_id < 0 or self.intra_op_threads < 0 or self.inter_op_threads < 0:
            raise ValueError("device id and thread counts cannot be negative")


def provider_options(provider: str, options: SessionSettings) -> dict[str, Any]:
    """The option dict ONNX Runtime takes for `provider` (a short name) under `options`."""
    device = options.device_id
    if provider == "cuda":
        cuda: dict[str, Any] = {
            "device_id": device,
            "arena_extend_strategy": options.arena_extend_strategy,
            "cudnn_conv_algo_search": options.cudnn_conv_algo_search,
            "do_copy_in_default_stream": True,
        }
        if options.gpu_mem_limit is not None:
            cuda["gpu_mem_limit"] = int(options.gpu_mem_limit)
        return cuda
    if provider == "tensorrt":
        trt: dict[str, Any] = {"device_id": device, "trt_fp16_enable": options.tensorrt_fp16}
        if options.gpu_mem_limit is not None:
            trt["trt_max_workspace_size"] = int(options.gpu_mem_limit)
        if options.tensorrt_cache_dir is not None:
            cache = str(options.tensorrt_cache_dir)
            trt.update({"trt_engine_cache_enable": True, "trt_engine_cache_path": cache,
                        "trt_timing_cache_enable": True, "trt_timing_cache_path": cache})
        return trt
    if provider == "rocm":
        rocm: dict[str, Any] = {"device_id": device, "arena_extend_strategy": options.arena_extend_strategy}
        if options.gpu_mem_limit is not None:
            rocm["gpu_mem_limit"] = int(options.gpu_mem_limit)
        return rocm
    if provider == "openvino":
        return {"device_type": "GPU" if device == 0 else f"GPU.{device}", "precision": "FP32"}
    if provider == "coreml":
        return {"SpecializationStrategy": "FastPrediction"}
    if provider == "directml":
        return {"device_id": device}
    if provider == "cpu":
        return {}
    raise ValueError(f"unknown execution provider {provider!r}")


# Fatal only: ORT's warnings are not the user's business, and every error it logs also comes back as the
# exception slimfuse reports in one line.
QUIET_LOG_SEVERITY = 4


def session_options(options: SessionSettings) -> ort.SessionOptions:
    settings = ort.SessionOptions()
    settings.graph_optimization_level = GRAPH_OPTIMIZATION[options.graph_optimization]
    settings.intra_op_num_threads = options.intra_op_threads
    settings.inter_op_num_threads = options.inter_op_threads
    settings.enable_cpu_mem_arena = options.enable_cpu_arena
    settings.enable_mem_pattern = options.enable_mem_pattern
    settings.log_severity_level = QUIET_LOG_SEVERITY
    if options.disable_prepacking:
        settings.add_session_config_entry("session.disable_prepacking", "1")
    return settings


ARENA_PROVIDERS = frozenset({"CUDAExecutionProvider", "ROCMExecutionProvider"})
"""Providers whose device allocator is an arena that can be shrunk."""


def run_options(session: ort.InferenceSession, options: SessionSettings) -> ort.RunOptions | None:
    """RunOptions that shrink the arenas `session` allocates from once the run ends, so a generator's peak
    activations go back to the system (CPU) or the card (GPU) instead of staying reserved; None when
    `options.shrink_arenas` is off or the session has no arena to shrink. ONNX Runtime refuses a shrink request
    for an arena that does not exist, so only the session's own are named."""
    if not options.shrink_arenas:
        return None
    arenas = [f"gpu:{options.device_id}"] if ARENA_PROVIDERS & set(session.get_providers()) else []
    if options.enable_cpu_arena:
        arenas.append("cpu:0")
    if not arenas:
        return None
    settings = ort.RunOptions()
    settings.add_run_config_entry("memory.enable_memory_arena_shrinkage", ";".join(arenas))
    return settings


def provider_chain(providers: tuple[str, ...], options: SessionSettings) -> list[str | tuple[str, dict[str, Any]]]:
    """What InferenceSession takes as `providers`: each short name with its options, then the CPU."""
    chain: list[str | tuple[str, dict[str, Any]]] = [
        (PROVIDERS[name], provider_options(name, options)) for name in providers if name != "cpu"
    ]
    chain.append(PROVIDERS["cpu"])
    return chain


@dataclass(frozen=True)
class ProviderProblem:
    provider: str
    reason: str
    instead: str
    model: str | None

    @property
    def message(self) -> str:
        instead = "the CPU" if self.instead == "cpu" else LABELS.get(self.instead, self.instead)
        return f"{LABELS[self.provider]} execution provider unavailable ({self.reason}); using {instead}"


@dataclass
class ProviderReport:
    """What the run asked for and what it got, for the run report; filled by the sessions of one ModelPool."""

    requested: tuple[str, ...]
    problems: list[ProviderProblem] = field(default_factory=list)
    used: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """Model name -> the providers its session runs on (short names), as ONNX Runtime reports them."""
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def problem(self, provider: str) -> ProviderProblem | None:
        with self._lock:
            return next((p for p in self.problems if p.provider == provider), None)

    def add_problem(self, problem: ProviderProblem) -> bool:
        """Record a problem; False if this provider's trouble was already recorded (report each once)."""
        with self._lock:
            if any(p.provider == problem.provider for p in self.problems):
                return False
            self.problems.append(problem)
            return True

    def record_use(self, model: str, providers: list[str]) -> None:
        shorts = tuple(short_name(p) for p in providers if _known(p))
        with self._lock:
            self.used[model] = shorts

    @property
    def fell_back(self) -> bool:
        return bool(self.problems)

    def to_dict(self) -> dict[str, Any]:
        with self._lock:
            return {
                "requested": list(self.requested),
                "problems": [{"provider": p.provider, "reason": p.reason, "instead": p.instead, "model": p.model}
                             for p in self.problems],
                "used": {model: list(providers) for model, providers in self.used.items()},
            }


class ModelLoadError(Exception):
    """ONNX Runtime could not load the file even on the CPU: the file, not the provider, is at fault."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def available_providers() -> list[str]:
    return list(ort.get_available_providers())


def check_requested(options: SessionSettings, report: ProviderReport, warn: Notify) -> tuple[str, ...]:
    """The requested providers this onnxruntime build has; each missing one is reported (or refused if strict)."""
    available = set(available_providers())
    usable = tuple(name for name in options.providers if PROVIDERS[name] in available)
    offered = ", ".join(short_name(p) if _known(p) else p for p in available_providers())
    for name in options.providers:
        if PROVIDERS[name] in available:
            continue
        fallback = next((other for other in usable if other != name), "cpu")
        _problem(options, report, warn, ProviderProblem(
            name, f"not in this onnxruntime build, which offers {offered}", fallback, None))
    return usable


def create_session(path: Path, options: SessionSettings, report: ProviderReport | None = None,
                   warn: Notify | None = None, model: str | None = None) -> ort.InferenceSession:
    """A session for the model at `path` on the first requested provider that works.

    Raises ModelLoadError when the file cannot be loaded even on the CPU, and ProviderUnavailableError when a
    requested provider is missing or fails to initialise under `strict_provider`."""
    report = report if report is not None else ProviderReport(options.providers)
    warn = warn if warn is not None else (lambda message: None)
    usable = check_requested(options, report, warn)
    settings = session_options(options)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ORT warns in Python about providers it lacks; we report those ourselves
        try:
            # enable_fallback=0: ORT's own retry prints a banner on stdout; the CPU retry below reports the reason.
            session = ort.InferenceSession(str(path), sess_options=settings, providers=provider_chain(usable, options),
                                           enable_fallback=0)
        except Exception as exc:  # noqa: BLE001 - ORT raises many types; sort them out below
            if is_allocation_failure(exc):  # out of memory, not a bad file: never reject the file for it
                raise MemoryError(first_line(exc)) from exc
            if all(name == "cpu" for name in usable):
                raise ModelLoadError(first_line(exc)) from exc
            try:  # a GPU provider may fail hard; does the file load on the CPU?
                session = ort.InferenceSession(str(path), sess_options=session_options(options),
                                               providers=provider_chain(("cpu",), options), enable_fallback=0)
            except Exception as cpu_exc:  # noqa: BLE001
                if is_allocation_failure(cpu_exc):
                    raise MemoryError(first_line(cpu_exc)) from cpu_exc
                raise ModelLoadError(first_line(cpu_exc)) from cpu_exc
            for name in usable:
                if name != "cpu":
                    _problem(options, report, warn,
                             ProviderProblem(name, f"failed to initialise: {first_line(exc)}", "cpu", model))
    active = session.get_providers()
    for name in usable:
        if name == "cpu" or PROVIDERS[name] in active:
            continue
        instead = next((short_name(p) for p in active if _known(p)), "cpu")
        _problem(options, report, warn, ProviderProblem(
            name, "failed to initialise (missing GPU libraries or device?)", instead, model))
    if model is not None:
        report.record_use(model, active)
    return session


def _problem(options: SessionSettings, report: ProviderReport, warn: Notify, problem: ProviderProblem) -> None:
    if options.strict_provider:
        raise ProviderUnavailableError(detail=(
            f"{LABELS[problem.provider]} execution provider unavailable ({problem.reason}); "
            "--strict-provider forbids running elsewhere"))
    if report.add_problem(problem):
        warn(problem.message)


def _known(provider: str) -> bool:
    return provider in PROVIDERS.values()


def first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__
