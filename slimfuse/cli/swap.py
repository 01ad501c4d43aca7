"""`slimfuse swap`: put the source face onto the faces of a target image."""
from __future__ import annotations

import argparse
import sys
from dataclasses import asdict, replace
from fractions import Fraction
from pathlib import Path

from slimfuse.cli.common import add_common_options, make_store
from slimfuse.cli.profile_options import add_profile_options, apply_profile
from slimfuse.cli.progress import Progress
from slimfuse.cli.variant_options import LANDMARKER_MODELS, ModelChoices, gate_variants, take_variants
from slimfuse.errors import OutputUnwritableError, UsageError
from slimfuse.media.temp_frames import FRAME_FORMATS
from slimfuse.media.video_encoding import CONTAINERS, ENCODERS, PRESETS, EncodeSettings
from slimfuse.memory.batching import AdaptiveBatcher
from slimfuse.memory.limit import system_memory_limit
from slimfuse.memory.plan import MemoryPlan
from slimfuse.models.store import Notify
from slimfuse.config import RunConfig
from slimfuse.faces.detect import BLAZEFACE_MODELS
from slimfuse.faces.recognize import RECOGNIZERS
from slimfuse.models.neural.detectors import DETECTOR_NAMES
from slimfuse.models.neural.enhancers import ENHANCER_NAMES
from slimfuse.models.neural.frame_enhancers import FRAME_ENHANCER_NAMES
from slimfuse.models.neural.masks import OCCLUDER_NAMES, PARSER_NAMES
from slimfuse.models.neural.swappers import SWAPPER_NAMES
from slimfuse.models.pool import ModelPool
from slimfuse.models.runtime import PROVIDERS
from slimfuse.pipeline.report import RunReport, StageHook
from slimfuse.processors.mask_types import MASK_TYPES, padding_from
from slimfuse.processors.parsing import REGIONS
from slimfuse.processors.pixel_boost import PIXEL_BOOSTS

DEFAULTS = RunConfig(sources=(), target=Path(), output=Path())
MODEL_CHOICES: dict[str, ModelChoices] = {
    "face_swapper_model": ModelChoices(["mesh", *SWAPPER_NAMES]),
    "face_detector_model": ModelChoices([*BLAZEFACE_MODELS, *DETECTOR_NAMES]),
    "face_landmarker_model": ModelChoices(LANDMARKER_MODELS),
    "face_enhancer_model": ModelChoices(["none", *ENHANCER_NAMES]),
    "face_recognizer_model": ModelChoices(RECOGNIZERS),
    "frame_enhancer_model": ModelChoices(["none", *FRAME_ENHANCER_NAMES]),
    "face_occluder_model": ModelChoices(OCCLUDER_NAMES),
    "face_parser_model": ModelChoices(PARSER_NAMES),
}
"""The model options' choices; each also takes CHOICE.VARIANT, a stored variant (slimfuse optimize)."""


def add_parser(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser("swap", help="swap faces in images and videos",
                                 description="Put the face of SOURCE onto the faces of TARGET and write OUTPUT.")
    parser.add_argument("-s", "--source", "--source-paths", dest="sources", type=Path, nargs="+", required=True,
                        metavar="SOURCE", help="one or more photos of the same person")
    parser.add_argument("-t", "--target", "--target-path", dest="target", type=Path, required=True,
                        help="the image whose faces are replaced (.jpg .jpeg .png .webp .bmp)")
    parser.add_argument("-o", "--output", "--output-path", dest="output", type=Path, required=True,
                        help="where to write the result; its type follows its extension")
    parser.add_argument("--face-swapper-model", choices=MODEL_CHOICES["face_swapper_model"],
                        default=DEFAULTS.face_swapper_model,
                        metavar="MODEL", help="mesh (embedded) or a neural swapper placed with --models-dir: "
                        + ", ".join(SWAPPER_NAMES))
    parser.add_argument("--face-selector-mode", choices=["one", "many", "reference"],
                        default=DEFAULTS.face_selector_mode,
                        help="one: the largest face; many: every face; reference: faces like the reference face")
    parser.add_argument("--reference-face-image", type=Path, default=None,
                        help="photo of the person to replace (reference mode); default: the target itself")
    parser.add_argument("--reference-face-position", type=int, default=DEFAULTS.reference_face_position,
                        help="which face of the reference photo, 0 = largest")
    parser.add_argument("--reference-face-distance", type=float, default=DEFAULTS.reference_face_distance,
                        help="largest identity distance still counted as the reference person (dlib: "
                        "Euclidean; arcface: 1 - cosine similarity)")
    parser.add_argument("--face-detector-model", choices=MODEL_CHOICES["face_detector_model"],
                        default=DEFAULTS.face_detector_model, metavar="MODEL",
                        help="BlazeFace short, full or auto (both; default), or a neural detector placed with "
                        "--models-dir: " + ", ".join(DETECTOR_NAMES) + "; MODEL.VARIANT (e.g. short.fp16) runs a "
                        "variant made with slimfuse optimize")
    parser.add_argument("--face-landmarker-model", choices=MODEL_CHOICES["face_landmarker_model"],
                        default="face_landmark", metavar="MODEL",
                        help="FaceMesh (face_landmark, default) or one of its variants made with slimfuse optimize: "
                        "face_landmark.fp16, face_landmark.int8, ...")
    parser.add_argument("--face-detector-score", type=_unit_float, default=None,
                        help="detection score threshold 0-1 (default: the model's own, 0.5 short / 0.6 full; neural 0.5)")
    parser.add_argument("--face-detector-size", type=_positive_int, default=DEFAULTS.face_detector_size,
                        help="smallest tile, in pixels, that large images are searched in for small faces")
    parser.add_argument("--target-face-size", type=_positive_int, default=None,
                        help=f"faces are processed at most at this size in pixels, then pasted back "
                        f"(default {DEFAULTS.target_face_size})")
    parser.add_argument("--keep-mouth", action=argparse.BooleanOptionalAction, default=DEFAULTS.keep_mouth,
                        help="keep the target's mouth interior (default on)")
    parser.add_argument("--keep-eyes", action=argparse.BooleanOptionalAction, default=DEFAULTS.keep_eyes,
                        help="keep the target's eyes (default off)")
    parser.add_argument("--blend", choices=["feather", "poisson"], default=DEFAULTS.blend,
                        help="feathered alpha (default) or Poisson blending")
    parser.add_argument("--execution-thread-count", type=int, default=DEFAULTS.execution_thread_count,
                        help="ONNX Runtime threads per model; 0 = one per core for images, 1 for videos")
    _add_neural_options(parser)
    _add_mask_options(parser)
    _add_video_options(parser)
    add_profile_options(parser)
    add_common_options(parser)
    parser.set_defaults(command=run)


def run(args: argparse.Namespace) -> int:
    config = build_config(args)
    report = None if args.report is None else RunReport(args.report, config, _video_options(args))
    try:
        with system_memory_limit(config.system_memory_limit_bytes):
            output, results = _swap(args, config, report)
    except BaseException as error:
        if report is not None:
            try:
                report.write(error=error)
            except OSError as exc:  # the run's own error is the one to report
                print(f"slimfuse: warning: {args.report}: cannot write the run report ({exc})", file=sys.stderr,
                      flush=True)
        raise
    if report is not None:
        try:
            report.write(output, results=results)
        except OSError as exc:
            raise OutputUnwritableError(args.report, f"cannot write the run report ({exc})") from exc
    print(output)
    return 0


def build_config(args: argparse.Namespace) -> RunConfig:
    """The run's settings: explicit options, then the --profile's, then the defaults."""
    apply_profile(args, DEFAULTS)
    variants = take_variants(args, MODEL_CHOICES)
    config = RunConfig(
        sources=tuple(args.sources),
        target=args.target,
        output=args.output,
        face_swapper_model=args.face_swapper_model,
        face_selector_mode=args.face_selector_mode,
        reference_face_image=args.reference_face_image,
        reference_face_position=args.reference_face_position,
        reference_face_distance=args.reference_face_distance,
        face_detector_model=args.face_detector_model,
        face_detector_score=args.face_detector_score,
        face_detector_size=args.face_detector_size,
        target_face_size=args.target_face_size,
        keep_mouth=args.keep_mouth,
        keep_eyes=args.keep_eyes,
        blend=args.blend,
        execution_thread_count=args.execution_thread_count,
        models_dir=args.models_dir,
        profile=args.profile,
        system_memory_limit=args.system_memory_limit,
        memory_budget=args.memory_budget,
        video_memory_level=args.video_memory_level,
        model_variants=variants,
        **_neural_config(args),
        **_mask_config(args),
        **_video_config(args),
    )
    return config.with_level_caps()


def _swap(args: argparse.Namespace, config: RunConfig, report: RunReport | None) -> tuple[Path, dict[str, object]]:
    """Run the swap; the output path and, for videos, the frame counts."""
    from slimfuse.pipeline.image import ImageSwapper  # heavy: only the swap itself needs it
    from slimfuse.pipeline.run_memory import cpu_only_models, plan_run, reduced_precision_variants

    store = make_store(args)
    if config.memory_level.reduced_precision:
        config = replace(config, model_variants=reduced_precision_variants(config, store))
    plan = plan_run(config, store)  # refuses a budget the job cannot fit in, before any work
    config = replace(config, frame_enhancer_tile_size=plan.frame_tile(config.frame_enhancer_tile_size))
    if report is not None:
        report.plan, report.config = plan, config
    gate_variants(store, config.model_variants, store.notify)
    pool = ModelPool(store, config.runtime_options(), budget_bytes=plan.pool_budget_bytes,
                     variants=dict(config.model_variants), cpu_only=cpu_only_models(config, store))
    batcher = AdaptiveBatcher(pool, plan.batch_sizes(), plan.batch_size, store.notify, plan.refine_within_bytes)
    stage: StageHook = lambda name: None  # noqa: E731
    if report is not None:
        report.pool, report.batcher, stage = pool, batcher, report.stage
    if config.is_video:
        return _run_video(args, config, pool, store.notify, stage, batcher, plan)
    swapper = ImageSwapper(config, pool, store.notify, batcher)
    stage("models")
    return swapper.run(stage), {}


def _video_options(args: argparse.Namespace) -> dict[str, object]:
    """The effective video options that are not RunConfig fields, for the run report."""
    names = ("output_video_encoder", "output_video_quality", "output_video_preset", "output_video_fps",
             "output_video_scale", "skip_audio", "temp_frame_format", "temp_path", "keep_temp")
    return {name: getattr(args, name) for name in names}


def _run_video(args: argparse.Namespace, config: RunConfig, pool: ModelPool, notify: Notify, stage: StageHook,
               batcher: AdaptiveBatcher, plan: MemoryPlan) -> tuple[Path, dict[str, object]]:
    from slimfuse.pipeline.video import TempFrameOptions, VideoSwapJob

    if config.output.suffix.lower() not in CONTAINERS:
        raise UsageError(config.output, f"a video target needs a video output ({', '.join(CONTAINERS)})")
    encode = EncodeSettings(encoder=args.output_video_encoder, quality=args.output_video_quality,
                            preset=args.output_video_preset, fps=args.output_video_fps,
                            scale=args.output_video_scale, skip_audio=args.skip_audio, threads=plan.codec_threads)
    temp = None
    if args.temp_frame_format is not None:
        temp = TempFrameOptions(args.temp_frame_format, args.temp_path, args.keep_temp)
    progress = Progress(total=None, quiet=args.quiet, log_format=args.log_format)
    result = VideoSwapJob(config, pool, notify, encode, progress, temp, stage, batcher, plan.queue_frames,
                          plan.codec_threads, plan.render_workers).run()
    stats = result.stats
    progress.finish(output=str(result.output), frames_written=result.frames_written,
                    frames_with_faces=stats.frames_with_faces, detections=stats.detections_run,
                    generated=stats.generated, reused=stats.reused)
    return result.output, {"frames_written": result.frames_written, "setup_seconds": round(result.setup_seconds, 4),
                           **asdict(stats)}


def _add_neural_options(parser: argparse.ArgumentParser) -> None:
    """Options of the neural models (enhancer, recogniser, pixel boost) and of ONNX Runtime."""
    parser.add_argument("--face-swapper-pixel-boost", type=int, choices=PIXEL_BOOSTS, default=None, metavar="SIZE",
                        help="align at SIZE px and run the swapper on interleaved sub-images of its own size "
                        f"({', '.join(map(str, PIXEL_BOOSTS))}; a multiple of the model's size)")
    parser.add_argument("--face-enhancer-model", "--enhancer", dest="face_enhancer_model",
                        choices=MODEL_CHOICES["face_enhancer_model"], default=None, metavar="MODEL",
                        help="enhance each face after the swap: none (default) or " + ", ".join(ENHANCER_NAMES))
    parser.add_argument("--face-enhancer-blend", type=_percent, default=DEFAULTS.face_enhancer_blend,
                        help="0-100: how much of the enhanced face replaces the face")
    parser.add_argument("--face-enhancer-weight", type=_fraction, default=DEFAULTS.face_enhancer_weight,
                        help="0-1: CodeFormer's fidelity (0 favours quality, 1 the input)")
    parser.add_argument("--face-recognizer-model", choices=MODEL_CHOICES["face_recognizer_model"],
                        default=DEFAULTS.face_recognizer_model, metavar="MODEL",
                        help="identity model for reference selection and the source check")
    parser.add_argument("--frame-enhancer-model", choices=MODEL_CHOICES["frame_enhancer_model"],
                        default=DEFAULTS.frame_enhancer_model, metavar="MODEL",
                        help="enhance the whole frame after the faces: none (default) or "
                        + ", ".join(FRAME_ENHANCER_NAMES))
    parser.add_argument("--frame-enhancer-blend", type=_percent, default=DEFAULTS.frame_enhancer_blend,
                        help="0-100: how much of the enhanced frame replaces the frame")
    parser.add_argument("--frame-enhancer-tile-size", type=_positive_int, default=None,
                        help=f"the frame enhancer's tiles, in input pixels (memory follows the tile; default "
                        f"{DEFAULTS.frame_enhancer_tile_size})")
    parser.add_argument("--frame-enhancer-tile-overlap", type=_non_negative_int,
                        default=DEFAULTS.frame_enhancer_tile_overlap,
                        help="pixels neighbouring tiles share (more than 8, at most half a tile)")
    parser.add_argument("--frame-enhancer-keep-scale", action="store_true",
                        help="write the frame at the model's scale (x2, x4) instead of the input's size")
    parser.add_argument("--execution-provider", "--execution-providers", dest="execution_providers", nargs="+",
                        choices=list(PROVIDERS), default=None, metavar="PROVIDER",
                        help="ONNX Runtime providers in priority order (" + ", ".join(PROVIDERS) + "); "
                        "the CPU is always the last resort, with a warning")
    parser.add_argument("--execution-device-id", type=int, default=DEFAULTS.execution_device_id,
                        help="which GPU the providers use")
    parser.add_argument("--strict-provider", action="store_true",
                        help="fail (exit 17, no output) instead of falling back when a requested provider is missing")
    parser.add_argument("--execution-gpu-memory-limit", type=_byte_size, default=None, metavar="SIZE",
                        help="the most GPU memory the CUDA/ROCm arena may take, e.g. 3.5G (default: no limit)")
    parser.add_argument("--execution-arena-extend-strategy", choices=["kSameAsRequested", "kNextPowerOfTwo"],
                        default=DEFAULTS.execution_arena_extend_strategy,
                        help="how the GPU arena grows: only as asked (default) or in powers of two")
    parser.add_argument("--execution-cudnn-conv-algo-search", choices=["HEURISTIC", "EXHAUSTIVE", "DEFAULT"],
                        default=DEFAULTS.execution_cudnn_conv_algo_search,
                        help="how cuDNN picks convolution algorithms (EXHAUSTIVE: slower start, more memory)")
    parser.add_argument("--execution-tensorrt-fp16", action="store_true", help="let TensorRT run in fp16")
    parser.add_argument("--execution-tensorrt-cache-dir", type=Path, default=None,
                        help="keep TensorRT engines here between runs")


def _neural_config(args: argparse.Namespace) -> dict[str, object]:
    return {
        "face_swapper_pixel_boost": args.face_swapper_pixel_boost,
        "face_enhancer_model": args.face_enhancer_model,
        "face_enhancer_blend": args.face_enhancer_blend,
        "face_enhancer_weight": args.face_enhancer_weight,
        "face_recognizer_model": args.face_recognizer_model,
        "frame_enhancer_model": args.frame_enhancer_model,
        "frame_enhancer_blend": args.frame_enhancer_blend,
        "frame_enhancer_tile_size": args.frame_enhancer_tile_size,
        "frame_enhancer_tile_overlap": args.frame_enhancer_tile_overlap,
        "frame_enhancer_keep_scale": args.frame_enhancer_keep_scale,
        "execution_providers": tuple(args.execution_providers),
        "execution_device_id": args.execution_device_id,
        "strict_provider": args.strict_provider,
        "execution_gpu_memory_limit": args.execution_gpu_memory_limit,
        "execution_arena_extend_strategy": args.execution_arena_extend_strategy,
        "execution_cudnn_conv_algo_search": args.execution_cudnn_conv_algo_search,
        "execution_tensorrt_fp16": args.execution_tensorrt_fp16,
        "execution_tensorrt_cache_dir": args.execution_tensorrt_cache_dir,
    }


def _add_mask_options(parser: argparse.ArgumentParser) -> None:
    """Masks of the neural face processors (the mesh swapper keeps its own mesh mask)."""
    masks = parser.add_argument_group("face masks of the neural swappers and enhancers")
    masks.add_argument("--face-mask-types", nargs="+", choices=MASK_TYPES, default=list(DEFAULTS.face_mask_types),
                       metavar="TYPE", help="one or more of " + ", ".join(MASK_TYPES) + ", combined by their "
                       "minimum (default: box mesh)")
    masks.add_argument("--face-mask-blur", type=_fraction, default=DEFAULTS.face_mask_blur,
                       help="0-1: the box mask's edge blur, as a fraction of half the crop")
    masks.add_argument("--face-mask-padding", nargs="+", type=_percent, default=list(DEFAULTS.face_mask_padding),
                       metavar="PERCENT", help="1 to 4 values 0-100 (all; vertical horizontal; top horizontal "
                       "bottom; top right bottom left): the box mask's margin in percent of the crop")
    masks.add_argument("--face-occluder-model", choices=MODEL_CHOICES["face_occluder_model"],
                       default=DEFAULTS.face_occluder_model, metavar="MODEL",
                       help="the XSeg model of the occlusion mask")
    masks.add_argument("--face-parser-model", choices=MODEL_CHOICES["face_parser_model"],
                       default=DEFAULTS.face_parser_model, metavar="MODEL",
                       help="the BiSeNet model of the region mask")
    masks.add_argument("--face-mask-regions", nargs="+", choices=list(REGIONS),
                       default=list(DEFAULTS.face_mask_regions), metavar="REGION",
                       help="the face parts the region mask keeps: " + ", ".join(REGIONS))


def _mask_config(args: argparse.Namespace) -> dict[str, object]:
    try:
        padding = padding_from(args.face_mask_padding)
    except ValueError as exc:
        raise UsageError(detail=f"--face-mask-padding: {exc}") from exc
    return {"face_mask_types": tuple(args.face_mask_types), "face_mask_blur": args.face_mask_blur,
            "face_mask_padding": padding, "face_occluder_model": args.face_occluder_model,
            "face_parser_model": args.face_parser_model, "face_mask_regions": tuple(args.face_mask_regions)}


def _add_video_options(parser: argparse.ArgumentParser) -> None:
    """Options that apply when the target is a video."""
    video = parser.add_argument_group("video targets (.mp4 .m4v .mov .mkv .webm .avi)")
    video.add_argument("--trim-frame-start", type=_non_negative_int, default=DEFAULTS.trim_frame_start,
                       help="first frame to process (0-based)")
    video.add_argument("--trim-frame-end", type=_positive_int, default=DEFAULTS.trim_frame_end,
                       help="frame to stop before (default: the end)")
    video.add_argument("--output-video-encoder", choices=ENCODERS, default=None,
                       help="default: libvpx-vp9 for .webm, libx264 otherwise; NVENC needs an FFmpeg built with it")
    video.add_argument("--output-video-quality", type=_percent, default=80,
                       help="0-100, mapped linearly onto the encoder's CRF (x264/x265: 51 - 0.51 x quality)")
    video.add_argument("--output-video-preset", choices=PRESETS, default="veryfast")
    video.add_argument("--output-video-fps", type=Fraction, default=None,
                       help="a constant output frame rate (default: keep every input frame's own timestamp)")
    video.add_argument("--output-video-scale", type=float, default=1.0, help="output size factor, e.g. 0.5")
    video.add_argument("--skip-audio", action="store_true", help="write no audio track")
    video.add_argument("--temp-frame-format", "--temp-frame-type", choices=FRAME_FORMATS, default=None,
                       help="go through frame files on disk instead of streaming (default: stream, no temp files)")
    video.add_argument("--temp-path", type=Path, default=None, help="where disk mode puts its temp directory")
    video.add_argument("--keep-temp", action="store_true", help="keep disk mode's temp directory")
    video.add_argument("--face-detector-interval", dest="detect_interval", type=_positive_int,
                       default=DEFAULTS.detect_interval,
                       help="run the detector every N frames (sooner when a face is lost or faces cross)")
    video.add_argument("--reuse-threshold", type=float, default=DEFAULTS.reuse_threshold,
                       help="reuse a generated face while its crop changed less than this (grey levels); "
                       "0 = off; default 2 for neural swappers, off for mesh")
    video.add_argument("--reuse-max-frames", type=_non_negative_int, default=DEFAULTS.reuse_max_frames,
                       help="at most this many reuses in a row")
    video.add_argument("--log-format", choices=["text", "json"], default="text",
                       help="json: progress and the summary as JSON lines on stderr")


def _video_config(args: argparse.Namespace) -> dict[str, object]:
    return {"trim_frame_start": args.trim_frame_start, "trim_frame_end": args.trim_frame_end,
            "detect_interval": args.detect_interval, "reuse_threshold": args.reuse_threshold,
            "reuse_max_frames": args.reuse_max_frames}


def _non_negative_int(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {text}")
    return value


def _percent(text: str) -> int:
    value = int(text)
    if not 0 <= value <= 100:
        raise argparse.ArgumentTypeError(f"must lie between 0 and 100, got {text}")
    return value


def _fraction(text: str) -> float:
    value = float(text)
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"must lie between 0 and 1, got {text}")
    return value


def _byte_size(text: str) -> int:
    """'4G', '3.5GB', '512M', '1048576' -> bytes (K, M, G, T in powers of 1024)."""
    units = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
    cleaned = text.strip().upper().removesuffix("IB").removesuffix("B")
    unit = cleaned[-1:] if cleaned[-1:] in "KMGT" else ""
    try:
        value = float(cleaned[:-1] if unit else cleaned)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a size (like 3.5G or 512M): {text}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be positive, got {text}")
    return int(value * units[unit])


def _positive_int(text: str) -> int:
    value = int(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive whole number, got {text}")
    return value


def _unit_float(text: str) -> float:
    value = float(text)
    if not 0.0 < value < 1.0:
        raise argparse.ArgumentTypeError(f"must lie between 0 and 1, got {text}")
    return value
