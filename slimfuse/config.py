"""RunConfig: every setting of a run, in frozen sections, built once; the one place defaults live.

Each field is named as the `slimfuse swap` option it comes from (`--face-enhancer-blend` is
`enhance.face_enhancer_blend`), so the command line, the Python API (`slimfuse.Swapper(**options)`) and the
server all build it the same way: `RunConfig.from_options(sources, **options)`, which applies the profile
(explicit options win over the profile, the profile over these defaults), strips `NAME.VARIANT` from the model
options, and checks every value with one-line messages that name the option. What a run decides from its config
and the machine (memory plan, capped sizes, variants) is a separate RunPlan (slimfuse.pipeline.plan).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from fractions import Fraction
from pathlib import Path
from typing import Literal, get_args

from slimfuse.errors import UsageError
from slimfuse.faces.select import SELECTOR_MODES, SelectorMode
from slimfuse.faces.track import TrackerOptions
from slimfuse.media.temp_frames import FRAME_FORMATS
from slimfuse.media.video_encoding import CONTAINERS, EncodeSettings
from slimfuse.memory.levels import DEFAULT_LEVEL, LEVELS, STRATEGIES, MemoryLevel
from slimfuse.model_choices import MESH_SWAPPER, MODEL_CHOICES, NO_MODEL, split_variants
from slimfuse.models.runtime import PROVIDERS, ArenaExtendStrategy, ConvAlgoSearch
from slimfuse.processors.mask_types import MASK_TYPES, MaskOptions, MaskType, Padding, padding_from
from slimfuse.processors.parsing import REGIONS
from slimfuse.processors.pixel_boost import PIXEL_BOOSTS
from slimfuse.profiles import PROFILE_OPTIONS, PROFILES, resolve

BlendMode = Literal["feather", "poisson"]
EyeRegion = Literal["source", "target"]


def _option(name: str) -> str:
    return "--" + name.replace("_", "-")


def _require(ok: bool, name: str, problem: str) -> None:
    if not ok:
        raise UsageError(detail=f"{_option(name)}: {problem}")


def _choice(value: object, name: str, choices: Sequence[object]) -> None:
    _require(value in choices, name, f"invalid choice: {value!r} (choose from {', '.join(map(repr, choices))})")


def _within(value: float, name: str, low: float, high: float) -> None:
    _require(low <= value <= high, name, f"must lie between {low:g} and {high:g}, got {value}")


def _positive(value: float, name: str) -> None:
    kind = "a positive whole number" if isinstance(value, int) else "positive"
    _require(value > 0, name, f"must be {kind}, got {value}")


def _at_least(value: int, name: str, low: int) -> None:
    _require(value >= low, name, f"must be {low} or more, got {value}")


@dataclass(frozen=True)
class FaceOptions:
    """Finding, following and choosing the target faces."""

    face_detector_model: str = "auto"
    """BlazeFace short / full / auto, or a neural detector of the catalog (slimfuse.models.neural.detectors)."""
    face_detector_score: float | None = None
    """None: the model's own threshold."""
    face_detector_size: int = 640
    face_detector_interval: int = TrackerOptions.detect_interval
    face_landmarker_model: str = "face_landmark"
    face_recognizer_model: str = "dlib"
    face_selector_mode: SelectorMode = "one"
    reference_face_image: Path | None = None
    reference_face_position: int = 0
    reference_face_distance: float = 0.6

    def __post_init__(self) -> None:
        for name in ("face_detector_model", "face_landmarker_model", "face_recognizer_model"):
            _choice(getattr(self, name), name, MODEL_CHOICES[name])
        if self.face_detector_score is not None:
            _require(0 < self.face_detector_score < 1, "face_detector_score",
                     f"must lie between 0 and 1, got {self.face_detector_score}")
        _positive(self.face_detector_size, "face_detector_size")
        _at_least(self.face_detector_interval, "face_detector_interval", 1)
        _choice(self.face_selector_mode, "face_selector_mode", SELECTOR_MODES)
        _at_least(self.reference_face_position, "reference_face_position", 0)
        _positive(self.reference_face_distance, "reference_face_distance")


@dataclass(frozen=True)
class SwapOptions:
    face_swapper_model: str = MESH_SWAPPER
    """The embedded mesh swapper, or a neural swapper of the catalog (slimfuse.models.neural.swappers)."""
    face_swapper_pixel_boost: int | None = None
    """None: the swapper's own size."""
    target_face_size: int = 512
    """Faces are processed at most at this size, then pasted back at full resolution."""
    keep_mouth: bool = True
    keep_eyes: bool = False
    eye_region: EyeRegion = "source"
    """The mesh swapper's eye region: the source's, or the target's whole eye region (its glasses stay in front and
    a source's glasses never show, at a cost in likeness)."""
    keep_occluders: bool = False
    """The mesh swapper keeps thin dark lines of the target's eye region that the source lacks (glasses rims,
    temple arms) in front of the swapped face."""
    remove_source_glasses: bool = False
    """The mesh swapper fills thin dark lines around the source's eyes (glasses rims) from the skin around them
    before the warp, so a source's glasses do not come along."""
    blend: BlendMode = "feather"

    def __post_init__(self) -> None:
        _choice(self.face_swapper_model, "face_swapper_model", MODEL_CHOICES["face_swapper_model"])
        _choice(self.eye_region, "eye_region", get_args(EyeRegion))
        if self.face_swapper_pixel_boost is not None:
            _choice(self.face_swapper_pixel_boost, "face_swapper_pixel_boost", PIXEL_BOOSTS)
        _positive(self.target_face_size, "target_face_size")
        _choice(self.blend, "blend", get_args(BlendMode))

    @property
    def neural(self) -> bool:
        return self.face_swapper_model != MESH_SWAPPER


@dataclass(frozen=True)
class EnhanceOptions:
    face_enhancer_model: str = NO_MODEL
    face_enhancer_blend: int = 80
    face_enhancer_weight: float = 0.5
    frame_enhancer_model: str = NO_MODEL
    frame_enhancer_blend: int = 80
    frame_enhancer_tile_size: int = 256
    frame_enhancer_tile_overlap: int = 24
    frame_enhancer_keep_scale: bool = False
    """Give the frame at the model's scale (x2, x4) instead of the input's size."""

    def __post_init__(self) -> None:
        for name in ("face_enhancer_model", "frame_enhancer_model"):
            _choice(getattr(self, name), name, MODEL_CHOICES[name])
        _within(self.face_enhancer_blend, "face_enhancer_blend", 0, 100)
        _within(self.face_enhancer_weight, "face_enhancer_weight", 0, 1)
        _within(self.frame_enhancer_blend, "frame_enhancer_blend", 0, 100)
        _positive(self.frame_enhancer_tile_size, "frame_enhancer_tile_size")
        _at_least(self.frame_enhancer_tile_overlap, "frame_enhancer_tile_overlap", 0)

    @property
    def face_enhancer(self) -> str | None:
        return None if self.face_enhancer_model == NO_MODEL else self.face_enhancer_model

    @property
    def frame_enhancer(self) -> str | None:
        return None if self.frame_enhancer_model == NO_MODEL else self.frame_enhancer_model


DEFAULT_REGIONS: tuple[str, ...] = (
    "skin", "left-eyebrow", "right-eyebrow", "left-eye", "right-eye", "glasses", "nose", "mouth", "upper-lip",
    "lower-lip",
)
"""FaceFusion's default: the face itself, without ears, neck, hair or clothes."""


@dataclass(frozen=True)
class MaskSettings:
    """The paste-back masks of the neural face processors (the mesh swapper keeps its own mesh mask)."""

    face_mask_types: tuple[MaskType, ...] = ("box", "mesh")
    face_mask_blur: float = 0.3
    face_mask_padding: Padding = (0, 0, 0, 0)
    """Top, right, bottom, left, in percent of the crop's side (1 to 4 values are accepted, as in CSS)."""
    face_occluder_model: str = "xseg_1"
    face_parser_model: str = "bisenet_resnet_34"
    face_mask_regions: tuple[str, ...] = DEFAULT_REGIONS

    def __post_init__(self) -> None:
        for name in self.face_mask_types:
            _choice(name, "face_mask_types", MASK_TYPES)
        _within(self.face_mask_blur, "face_mask_blur", 0, 1)
        try:
            padding = padding_from(self.face_mask_padding)
        except ValueError as exc:
            raise UsageError(detail=f"--face-mask-padding: {exc}") from None
        for side in padding:
            _within(side, "face_mask_padding", 0, 100)
        object.__setattr__(self, "face_mask_padding", padding)
        for name in ("face_occluder_model", "face_parser_model"):
            _choice(getattr(self, name), name, MODEL_CHOICES[name])
        for region in self.face_mask_regions:
            _choice(region, "face_mask_regions", list(REGIONS))

    def mask_options(self) -> MaskOptions:
        return MaskOptions(types=self.face_mask_types, blur=self.face_mask_blur, padding=self.face_mask_padding)


@dataclass(frozen=True)
class RuntimeSettings:
    """ONNX Runtime and where the models are found (sessions are made only by the model pool)."""

    execution_providers: tuple[str, ...] = ("cpu",)
    execution_device_id: int = 0
    execution_thread_count: int = 0
    """0: one per core for images, 1 for videos (see RunPlan.intra_op_threads)."""
    strict_provider: bool = False
    execution_gpu_memory_limit: int | None = None
    """Bytes the CUDA / ROCm arena may take."""
    execution_arena_extend_strategy: ArenaExtendStrategy = "kSameAsRequested"
    execution_cudnn_conv_algo_search: ConvAlgoSearch = "HEURISTIC"
    execution_tensorrt_fp16: bool = False
    execution_tensorrt_cache_dir: Path | None = None
    models_dir: Path | None = None
    model_variants: tuple[tuple[str, str], ...] = ()
    """(catalog name, NAME.VARIANT): stored variants the pool loads in those models' place, from the
    `--face-*-model NAME.VARIANT` options."""

    def __post_init__(self) -> None:
        _require(bool(self.execution_providers), "execution_providers", "name at least one provider")
        for provider in self.execution_providers:
            _choice(provider, "execution_providers", list(PROVIDERS))
        _at_least(self.execution_device_id, "execution_device_id", 0)
        _at_least(self.execution_thread_count, "execution_thread_count", 0)
        if self.execution_gpu_memory_limit is not None:
            _positive(self.execution_gpu_memory_limit, "execution_gpu_memory_limit")
        _choice(self.execution_arena_extend_strategy, "execution_arena_extend_strategy",
                get_args(ArenaExtendStrategy))
        _choice(self.execution_cudnn_conv_algo_search, "execution_cudnn_conv_algo_search", get_args(ConvAlgoSearch))

    @property
    def on_gpu(self) -> bool:
        return any(provider != "cpu" for provider in self.execution_providers)


@dataclass(frozen=True)
class VideoOptions:
    trim_frame_start: int = 0
    trim_frame_end: int | None = None
    reuse_threshold: float | None = None
    """None: on (NEURAL_REUSE_THRESHOLD) for neural swappers, off for the mesh swapper."""
    reuse_max_frames: int = 3
    temp_frame_format: str | None = None
    """None: stream; else frames go through files of this format in a temporary folder."""
    temp_path: Path | None = None
    keep_temp: bool = False

    def __post_init__(self) -> None:
        _at_least(self.trim_frame_start, "trim_frame_start", 0)
        if self.trim_frame_end is not None:
            _at_least(self.trim_frame_end, "trim_frame_end", 1)
        if self.reuse_threshold is not None:
            _require(self.reuse_threshold >= 0, "reuse_threshold", f"must be 0 or more, got {self.reuse_threshold}")
        _at_least(self.reuse_max_frames, "reuse_max_frames", 0)
        if self.temp_frame_format is not None:
            _choice(self.temp_frame_format, "temp_frame_format", FRAME_FORMATS)


_ENCODER_DEFAULTS = EncodeSettings()


@dataclass(frozen=True)
class EncodeOptions:
    """How an output video is encoded; checked by EncodeSettings, which the writer takes (its defaults are the
    video writer's own, so they are taken from there rather than written twice)."""

    output_video_encoder: str | None = _ENCODER_DEFAULTS.encoder
    """None: libvpx-vp9 for .webm, else libx264."""
    output_video_quality: int = _ENCODER_DEFAULTS.quality
    output_video_preset: str = _ENCODER_DEFAULTS.preset
    output_video_fps: Fraction | None = _ENCODER_DEFAULTS.fps
    output_video_scale: float = _ENCODER_DEFAULTS.scale
    skip_audio: bool = _ENCODER_DEFAULTS.skip_audio

    def __post_init__(self) -> None:
        self.settings(threads=0)

    def settings(self, threads: int) -> EncodeSettings:
        return EncodeSettings(encoder=self.output_video_encoder, quality=self.output_video_quality,
                              preset=self.output_video_preset, fps=self.output_video_fps,
                              scale=self.output_video_scale, skip_audio=self.skip_audio, threads=threads)


@dataclass(frozen=True)
class MemoryOptions:
    profile: str | None = None
    """The --profile the options came from (slimfuse.profiles)."""
    system_memory_limit: float | None = None
    """GB (2^30 bytes): a hard cap on the process (slimfuse.memory.limit)."""
    memory_budget: float | None = None
    """MB (2^20 bytes) the run plans within (slimfuse.memory.plan)."""
    video_memory_level: int = DEFAULT_LEVEL
    """0-3 (slimfuse.memory.levels); images too."""

    def __post_init__(self) -> None:
        if self.profile is not None:
            _choice(self.profile, "profile", list(PROFILES))
        for name in ("system_memory_limit", "memory_budget"):
            value = getattr(self, name)
            if value is not None:
                _positive(value, name)
        _choice(self.video_memory_level, "video_memory_level", list(LEVELS))

    @property
    def level(self) -> MemoryLevel:
        return LEVELS[self.video_memory_level]

    @property
    def budget_bytes(self) -> int | None:
        return None if self.memory_budget is None else int(self.memory_budget * (1 << 20))

    @property
    def system_limit_bytes(self) -> int | None:
        return None if self.system_memory_limit is None else int(self.system_memory_limit * (1 << 30))


@dataclass(frozen=True)
class OutputOptions:
    output_image_quality: int = 95
    """JPEG and WebP quality of image outputs (PNG and BMP are lossless)."""
    provenance: bool = True
    """Label every output as synthetic (IPTC digital source type in its metadata)."""
    c2pa_key: Path | None = None
    """A PEM private key: with c2pa_certificates, outputs also get a signed C2PA manifest (the c2pa extra)."""
    c2pa_certificates: Path | None = None
    """The PEM certificate chain of c2pa_key (the signing certificate first, then its issuers)."""

    def __post_init__(self) -> None:
        _within(self.output_image_quality, "output_image_quality", 1, 100)
        _require((self.c2pa_key is None) == (self.c2pa_certificates is None), "c2pa_key",
                 "give --c2pa-key and --c2pa-certificates together")


@dataclass(frozen=True)
class RunConfig:
    sources: tuple[Path, ...] = ()
    """Photos of the person whose face is put in (several photos of one person are combined)."""
    faces: FaceOptions = FaceOptions()
    swap: SwapOptions = SwapOptions()
    enhance: EnhanceOptions = EnhanceOptions()
    masks: MaskSettings = MaskSettings()
    runtime: RuntimeSettings = RuntimeSettings()
    video: VideoOptions = VideoOptions()
    encode: EncodeOptions = EncodeOptions()
    memory: MemoryOptions = MemoryOptions()
    output: OutputOptions = OutputOptions()

    @classmethod
    def from_options(cls, sources: Sequence[Path | str] = (), **options: object) -> RunConfig:
        """A config from options named as the swap command's (face_swapper_model=, memory_budget=, ...): an
        option given (not None) wins over the profile's value, the profile's over the default. Unknown names and
        bad values are UsageErrors naming the option."""
        unknown = sorted(set(options) - set(OPTION_SECTIONS) - {"video_memory_strategy"})
        if unknown:
            raise UsageError(detail=f"unknown option{'s' if len(unknown) > 1 else ''} {', '.join(unknown)}")
        given = {name: value for name, value in options.items() if value is not None}
        strategy = given.pop("video_memory_strategy", None)
        if strategy is not None:
            _choice(strategy, "video_memory_strategy", list(STRATEGIES))
            given.setdefault("video_memory_level", STRATEGIES[str(strategy)])
        profile = given.get("profile")
        if profile is not None:
            _choice(profile, "profile", list(PROFILES))
        resolved = resolve(given, None if profile is None else str(profile), _DEFAULTS)
        merged = {**given, **{name: value for name, value in resolved.items() if value is not None}}
        plain, variants = split_variants(merged)
        if variants:
            plain["model_variants"] = variants
        sections: dict[str, dict[str, object]] = {}
        for name, value in plain.items():
            sections.setdefault(OPTION_SECTIONS[name], {})[name] = _normalised(value)
        built = {section: SECTION_TYPES[section](**values) for section, values in sections.items()}
        return cls(sources=tuple(Path(source) for source in sources), **built)  # type: ignore[arg-type]

    def options(self) -> dict[str, object]:
        """Every option by its flat name (what the run report and the server record)."""
        return {item.name: getattr(getattr(self, section), item.name)
                for section, kind in SECTION_TYPES.items() for item in fields(kind)}


def _normalised(value: object) -> object:
    """Lists (from the command line or JSON) become tuples, so the frozen sections hash and compare."""
    return tuple(value) if isinstance(value, list) else value


SECTION_TYPES: Mapping[str, type] = {
    "faces": FaceOptions, "swap": SwapOptions, "enhance": EnhanceOptions, "masks": MaskSettings,
    "runtime": RuntimeSettings, "video": VideoOptions, "encode": EncodeOptions, "memory": MemoryOptions,
    "output": OutputOptions,
}
OPTION_SECTIONS: Mapping[str, str] = {item.name: section for section, kind in SECTION_TYPES.items()
                                      for item in fields(kind)}
"""Each option's section (`face_enhancer_blend` -> "enhance")."""
_DEFAULTS: Mapping[str, object] = {name: getattr(getattr(RunConfig(), section), name)
                                   for name, section in OPTION_SECTIONS.items() if name in PROFILE_OPTIONS}


def is_video(path: Path) -> bool:
    """Whether a target or output path names a video (by its extension)."""
    return path.suffix.lower() in CONTAINERS
