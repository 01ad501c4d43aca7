"""RunConfig: every setting of a run, built once from the command line; the one place defaults live."""
from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

from slimfuse.faces.select import SelectorMode
from slimfuse.faces.track import TrackerOptions
from slimfuse.media.video_encoding import CONTAINERS
from slimfuse.memory.levels import DEFAULT_LEVEL, LEVELS, MemoryLevel
from slimfuse.models.runtime import ArenaExtendStrategy, ConvAlgoSearch, RuntimeOptions
from slimfuse.processors.frame_enhance import FrameEnhanceOptions
from slimfuse.processors.mask_types import MaskOptions, MaskType, Padding
from slimfuse.processors.parsing import DEFAULT_REGIONS

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
    face_detector_model: str = "auto"
    """BlazeFace short / full / auto, or a neural detector of the catalog (slimfuse.models.neural.detectors)."""
    face_detector_score: float | None = None
    face_detector_size: int = 640
    target_face_size: int = 512
    keep_mouth: bool = True
    keep_eyes: bool = False
    blend: BlendMode = "feather"
    execution_thread_count: int = 0
    models_dir: Path | None = None
    # Video
    trim_frame_start: int = 0
    trim_frame_end: int | None = None
    detect_interval: int = TrackerOptions.detect_interval
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
    model_variants: tuple[tuple[str, str], ...] = ()
    """(catalog name, NAME.VARIANT): stored variants (slimfuse optimize) the pool loads in those models' place,
    from the `--face-*-model NAME.VARIANT` options."""
    # Masks of the neural face processors (the mesh swapper keeps its own mesh mask)
    face_mask_types: tuple[MaskType, ...] = ("box", "mesh")
    face_mask_blur: float = 0.3
    face_mask_padding: Padding = (0, 0, 0, 0)
    """Top, right, bottom, left, in percent of the crop's side."""
    face_occluder_model: str = "xseg_1"
    face_parser_model: str = "bisenet_resnet_34"
    face_mask_regions: tuple[str, ...] = DEFAULT_REGIONS
    # Whole-frame enhancement, after the face processors
    frame_enhancer_model: str = "none"
    frame_enhancer_blend: int = 80
    frame_enhancer_tile_size: int = 256
    frame_enhancer_tile_overlap: int = 24
    frame_enhancer_keep_scale: bool = False
    """Give the frame at the model's scale (x2, x4) instead of the input's size."""
    # Memory and hardware
    profile: str | None = None
    """The --profile the options came from (slimfuse.profiles); explicit options override it."""
    system_memory_limit: float | None = None
    """GB (2^30 bytes): a hard cap on the process (slimfuse.memory.limit); None: no cap."""
    memory_budget: float | None = None
    """MB (2^20 bytes) the run plans within (slimfuse.memory.plan): process RSS on the CPU provider, device memory
    on a GPU provider; None: no plan limits."""
    video_memory_level: int = DEFAULT_LEVEL
    """0-3 (slimfuse.memory.levels): how much speed the run gives up for a lower peak; images too."""

    @property
    def memory_level(self) -> MemoryLevel:
        return LEVELS[self.video_memory_level]

    @property
    def on_gpu(self) -> bool:
        return any(provider != "cpu" for provider in self.execution_providers)

    def with_level_caps(self) -> RunConfig:
        """This config with its memory level's caps on the face crop and the frame enhancer's tiles applied."""
        level = self.memory_level
        face, tile = level.max_face_size, level.max_frame_tile
        return replace(
            self,
            target_face_size=self.target_face_size if face is None else min(self.target_face_size, face),
            face_swapper_pixel_boost=(self.face_swapper_pixel_boost if face is None or self.face_swapper_pixel_boost
                                      is None else min(self.face_swapper_pixel_boost, face)),
            frame_enhancer_tile_size=(self.frame_enhancer_tile_size if tile is None
                                      else min(self.frame_enhancer_tile_size, tile)))

    @property
    def memory_budget_bytes(self) -> int | None:
        return None if self.memory_budget is None else int(self.memory_budget * (1 << 20))

    @property
    def system_memory_limit_bytes(self) -> int | None:
        return None if self.system_memory_limit is None else int(self.system_memory_limit * (1 << 30))

    @property
    def is_video(self) -> bool:
        return self.target.suffix.lower() in CONTAINERS

    @property
    def intra_op_threads(self) -> int:
        """ONNX Runtime threads per model. A video already keeps both cores busy with its decoder, encoder,
        analysis and rendering threads; one thread per model there avoids them fighting (about 1.5x faster
        measured on 2 cores); an image gets every core (0 lets ONNX Runtime choose)."""
        if self.execution_thread_count == 0 and self.is_video:
            return 1
        return self.execution_thread_count

    def runtime_options(self) -> RuntimeOptions:
        """The ONNX Runtime settings of this run (sessions are made only by the model pool). Without an explicit
        --execution-gpu-memory-limit, a --memory-budget on a GPU provider caps the device arena too."""
        level = self.memory_level
        gpu_limit = self.execution_gpu_memory_limit
        if gpu_limit is None and self.on_gpu:
            gpu_limit = self.memory_budget_bytes
        return RuntimeOptions(
            providers=self.execution_providers,
            device_id=self.execution_device_id,
            strict_provider=self.strict_provider,
            intra_op_threads=self.intra_op_threads,
            gpu_mem_limit=gpu_limit,
            enable_cpu_arena=level.cpu_arena,
            enable_mem_pattern=level.memory_patterns,
            shrink_arenas=level.shrink_arenas,
            arena_extend_strategy=self.execution_arena_extend_strategy,
            cudnn_conv_algo_search=self.execution_cudnn_conv_algo_search,
            tensorrt_fp16=self.execution_tensorrt_fp16,
            tensorrt_cache_dir=self.execution_tensorrt_cache_dir,
        )

    def mask_options(self) -> MaskOptions:
        """The face mask types, blur and padding of this run's neural face processors."""
        return MaskOptions(types=self.face_mask_types, blur=self.face_mask_blur, padding=self.face_mask_padding)

    def frame_enhance_options(self) -> FrameEnhanceOptions:
        """The tiling and blending of this run's frame enhancer (the output at the input's size unless kept)."""
        return FrameEnhanceOptions(tile_size=self.frame_enhancer_tile_size, overlap=self.frame_enhancer_tile_overlap,
                                   blend=self.frame_enhancer_blend, keep_scale=self.frame_enhancer_keep_scale)
