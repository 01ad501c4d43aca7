"""RunConfig: every setting of a run, built once from the command line; the one place defaults live."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from slimfuse.faces.detect import DetectorName
from slimfuse.faces.select import SelectorMode
from slimfuse.models.runtime import ArenaExtendStrategy, ConvAlgoSearch, RuntimeOptions

BlendMode = Literal["feather", "poisson"]


@dataclass(frozen=True)
class RunConfig:
    sources: tuple[Path, ...]
    target: Path
    output: Path
    face_swapper_model: str = "mesh"
    """"mesh" (embedded) or a neural swapper of the catalog (slimfuse.models.neural.swappers)."""
    face_selector_mode: SelectorMode = "one"
    reference_face_image: Path | None = None
    reference_face_position: int = 0
    reference_face_distance: float = 0.6
    face_detector_model: DetectorName = "auto"
    face_detector_score: float | None = None
    face_detector_size: int = 640
    target_face_size: int = 512
    keep_mouth: bool = True
    keep_eyes: bool = False
    blend: BlendMode = "feather"
    execution_thread_count: int = 0
    models_dir: Path | None = None
    home: Path | None = None
    # Video
    trim_frame_start: int = 0
    trim_frame_end: int | None = None
    detect_interval: int = 5
    reuse_threshold: float | None = None
    """None: on (2.0) for neural swappers, off for the mesh swapper."""
    reuse_max_frames: int = 3
    # Neural models and ONNX Runtime
    face_swapper_pixel_boost: int | None = None
    """None: the swapper's own size."""
    face_enhancer_model: str = "none"
    face_enhancer_blend: int = 80
    face_enhancer_weight: float = 0.5
    face_recognizer_model: str = "dlib"
    execution_providers: tuple[str, ...] = ("cpu",)
    execution_device_id: int = 0
    strict_provider: bool = False
    execution_gpu_memory_limit: int | None = None
    execution_arena_extend_strategy: ArenaExtendStrategy = "kSameAsRequested"
    execution_cudnn_conv_algo_search: ConvAlgoSearch = "HEURISTIC"
    execution_tensorrt_fp16: bool = False
    execution_tensorrt_cache_dir: Path | None = None

    def runtime_options(self) -> RuntimeOptions:
        """The ONNX Runtime settings of this run (sessions are made only by the model pool)."""
        return RuntimeOptions(
            providers=self.execution_providers,
            device_id=self.execution_device_id,
            strict_provider=self.strict_provider,
            intra_op_threads=self.execution_thread_count,
            gpu_mem_limit=self.execution_gpu_memory_limit,
            arena_extend_strategy=self.execution_arena_extend_strategy,
            cudnn_conv_algo_search=self.execution_cudnn_conv_algo_search,
            tensorrt_fp16=self.execution_tensorrt_fp16,
            tensorrt_cache_dir=self.execution_tensorrt_cache_dir,
        )
