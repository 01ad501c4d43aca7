"""`slimfuse swap`: put the source face onto the faces of a target image or video.

The parser only reads the command line: every option it was given goes to `RunConfig.from_options`, which
applies the profile and the defaults and checks the values (the same checks the Python API gets); absent options
are not in the namespace at all."""
from __future__ import annotations

import argparse
import logging
from fractions import Fraction
from pathlib import Path

from slimfuse.cli.common import add_common_options
from slimfuse.cli.profile_options import add_profile_options
from slimfuse.cli.progress import Progress
from slimfuse.config import RunConfig, is_video
from slimfuse.errors import OutputUnwritableError, UsageError
from slimfuse.media.temp_frames import FRAME_FORMATS
from slimfuse.media.video_encoding import ENCODERS, PRESETS
from slimfuse.model_choices import MODEL_CHOICES
from slimfuse.models.neural.detectors import DETECTOR_NAMES
from slimfuse.models.neural.enhancers import ENHANCER_NAMES
from slimfuse.models.neural.frame_enhancers import FRAME_ENHANCER_NAMES
from slimfuse.models.neural.swappers import SWAPPER_NAMES
from slimfuse.models.runtime import PROVIDERS
from slimfuse.processors.mask_types import MASK_TYPES
from slimfuse.processors.parsing import REGIONS
from slimfuse.processors.pixel_boost import PIXEL_BOOSTS

LOG = logging.getLogger(__name__)
D = RunConfig()
"""The defaults, for the help texts (they live in config.py)."""
CLI_ONLY = frozenset({"sources", "target", "output", "report", "quiet", "debug", "log_format", "command", "name",
                      "help_prog", "interrupts", "workers", "ray", "manifest"})
"""What the command line takes that is not a run option."""


def add_parser(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser("swap", help="swap faces in images and videos", argument_default=argparse.SUPPRESS,
                                 description="Put the face of SOURCE onto the faces of TARGET (an image or a video) "
                                 "and write OUTPUT.")
    parser.add_argument("-s", "--source", "--source-paths", dest="sources", type=Path, nargs="+", required=True,
                        metavar="SOURCE", help="one or more photos of the same person")
    parser.add_argument("-t", "--target", "--target-path", dest="target", type=Path, nargs="+", required=True,
                        help="the image (.jpg .jpeg .png .webp .bmp) or video (.mp4 .m4v .mov .mkv .webm .avi) whose "
                        "faces are replaced; several files, a folder or a glob make a batch (see slimfuse batch)")
    parser.add_argument("-o", "--output", "--output-path", dest="output", type=Path, required=True,
                        help="where to write the result; its type follows its extension (a folder for a batch)")
    add_run_options(parser)
    add_batch_options(parser)
    parser.set_defaults(command=run, log_format="text")


def add_batch_options(parser: argparse.ArgumentParser) -> None:
    """Where batch work runs (slimfuse batch, and swap with several targets or --workers)."""
    group = parser.add_argument_group("batches and long videos")
    group.add_argument("--workers", type=int, metavar="N",
                       help="run in N worker processes (a long video in keyframe segments); fewer when "
                       "--memory-budget does not fit N")
    group.add_argument("--ray", metavar="auto|ADDRESS",
                       help="run the workers as actors on a Ray cluster (the ray extra; auto: this machine's "
                       "cluster, or a new local one)")


def add_run_options(parser: argparse.ArgumentParser) -> None:
    """Every option of a run (what RunConfig.from_options takes), and the common ones."""
    add_face_options(parser)
    add_neural_options(parser)
    add_mask_options(parser)
    _add_video_options(parser)
    add_profile_options(parser)
    parser.add_argument("--output-image-quality", type=int, metavar="0-100",
                        help=f"JPEG and WebP quality of an image output (default {D.output.output_image_quality})")
    parser.add_argument("--no-provenance", dest="provenance", action="store_false",
                        help="do not label the output as synthetic in its metadata (labelled by default)")
    parser.add_argument("--c2pa-key", type=Path, metavar="PEM",
                        help="sign a C2PA manifest into the output with this private key (needs --c2pa-certificates "
                        "and the c2pa extra)")
    parser.add_argument("--c2pa-certificates", type=Path, metavar="PEM",
                        help="the key's certificate chain, the signing certificate first")
    add_common_options(parser)


def run(args: argparse.Namespace) -> int:
    from slimfuse.batch.items import names_many
    from slimfuse.pipeline.jobs import check_output, swap_job  # heavy: only the swap itself needs it

    if names_many(args.target, args.output) or getattr(args, "workers", 1) > 1 or getattr(args, "ray", None):
        from slimfuse.cli.batch import run_targets

        return run_targets(args)
    args.target = args.target[0]
    config = config_from_args(args)
    check_output(args.output, args.target)
    progress = Progress(total=None, quiet=args.quiet, log_format=args.log_format)
    result = swap_job(config, args.target, args.output, args.report, progress)
    args.interrupts.output_complete()
    if args.report is not None and result.report_error is not None:
        raise OutputUnwritableError(args.report, f"cannot write the run report ({result.report_error})")
    summary = result.summary()
    if is_video(args.target):
        progress.finish(output=str(result.output), **summary)
    else:
        found, swapped = summary["faces_found"], summary["faces_swapped"]
        LOG.info(f"{args.target}: {found} face{'s' * (found != 1)} found, {swapped} swapped")
    print(result.output)
    return 0


def config_from_args(args: argparse.Namespace, command: str = "swap",
                     not_run_options: frozenset[str] = CLI_ONLY) -> RunConfig:
    """The run's config from the options given on the command line (with the profile and the defaults); a bad
    value is a one-line usage error that says where the help is, as the parser's own are."""
    try:
        return RunConfig.from_options(args.sources, **{name: value for name, value in vars(args).items()
                                                       if name not in not_run_options})
    except UsageError as exc:
        raise UsageError(detail=f"{exc.message}; see slimfuse {command} --help") from None


def add_face_options(parser: argparse.ArgumentParser) -> None:
    faces, swap = D.faces, D.swap
    parser.add_argument("--face-swapper-model", metavar="MODEL",
                        help="mesh (embedded, default) or a neural swapper placed with --models-dir: "
                        + ", ".join(SWAPPER_NAMES))
    parser.add_argument("--face-selector-mode", metavar="one|many|reference",
                        help="one: the largest face (default); many: every face; reference: faces like the reference")
    parser.add_argument("--reference-face-image", type=Path,
                        help="photo of the person to replace (reference mode); default: the target itself")
    parser.add_argument("--reference-face-position", type=int,
                        help=f"which face of the reference photo, 0 = largest (default {faces.reference_face_position})")
    parser.add_argument("--reference-face-distance", type=float,
                        help="largest identity distance still counted as the reference person (dlib: Euclidean; "
                        f"arcface: 1 - cosine similarity; default {faces.reference_face_distance})")
    parser.add_argument("--face-detector-model", metavar="MODEL",
                        help="BlazeFace short, full or auto (both; default), or a neural detector placed with "
                        "--models-dir: " + ", ".join(DETECTOR_NAMES) + "; MODEL.VARIANT (e.g. short.fp16) runs a "
                        "variant made with slimfuse optimize")
    parser.add_argument("--face-landmarker-model", metavar="MODEL",
                        help="FaceMesh (face_landmark, default) or one of its variants made with slimfuse optimize: "
                        "face_landmark.fp16, face_landmark.int8, ...")
    parser.add_argument("--face-detector-score", type=float, metavar="0-1",
                        help="detection score threshold (default: the model's own, 0.5 short / 0.6 full; neural 0.5)")
    parser.add_argument("--face-detector-size", type=int, metavar="PX",
                        help=f"smallest tile that large images are searched in for small faces "
                        f"(default {faces.face_detector_size})")
    parser.add_argument("--target-face-size", type=int, metavar="PX",
                        help=f"faces are processed at most at this size, then pasted back "
                        f"(default {swap.target_face_size})")
    parser.add_argument("--keep-mouth", action=argparse.BooleanOptionalAction,
                        help="keep the target's mouth interior (default on)")
    parser.add_argument("--keep-eyes", action=argparse.BooleanOptionalAction,
                        help="keep the target's eyes (default off)")
    parser.add_argument("--eye-region", metavar="source|target",
                        help="the mesh swapper's eyes and glasses: the source's (default), or the target's whole eye "
                        "region, so its glasses stay in front and a source's never show (less likeness)")
    parser.add_argument("--keep-occluders", action=argparse.BooleanOptionalAction,
                        help="the mesh swapper keeps the target's glasses rims and other thin dark lines in front "
                        "(default off: it costs likeness when the target wears glasses)")
    parser.add_argument("--remove-source-glasses", action=argparse.BooleanOptionalAction,
                        help="the mesh swapper fills the source's glasses rims from the skin around them before the "
                        "warp (default off)")
    parser.add_argument("--blend", metavar="feather|poisson", help="feathered alpha (default) or Poisson blending")
    parser.add_argument("--execution-thread-count", type=int, metavar="N",
                        help="ONNX Runtime threads per model; 0 (default) = one per core for images, 1 for videos")


def add_neural_options(parser: argparse.ArgumentParser) -> None:
    """Options of the neural models (enhancer, recognizer, pixel boost) and of ONNX Runtime."""
    enhance, runtime = D.enhance, D.runtime
    parser.add_argument("--face-swapper-pixel-boost", type=int, metavar="SIZE",
                        help="align at SIZE px and run the swapper on interleaved sub-images of its own size "
                        f"({', '.join(map(str, PIXEL_BOOSTS))}; a multiple of the model's size)")
    parser.add_argument("--face-enhancer-model", "--enhancer", dest="face_enhancer_model", metavar="MODEL",
                        help="enhance each face after the swap: none (default) or " + ", ".join(ENHANCER_NAMES))
    parser.add_argument("--face-enhancer-blend", type=int, metavar="0-100",
                        help=f"how much of the enhanced face replaces the face (default {enhance.face_enhancer_blend})")
    parser.add_argument("--face-enhancer-weight", type=float, metavar="0-1",
                        help="CodeFormer's fidelity (0 favours quality, 1 the input; default "
                        f"{enhance.face_enhancer_weight})")
    parser.add_argument("--face-recognizer-model", metavar="MODEL",
                        help="identity model for reference selection and the source check: "
                        + ", ".join(MODEL_CHOICES["face_recognizer_model"]) + " (default dlib)")
    parser.add_argument("--frame-enhancer-model", metavar="MODEL",
                        help="enhance the whole frame after the faces: none (default) or "
                        + ", ".join(FRAME_ENHANCER_NAMES))
    parser.add_argument("--frame-enhancer-blend", type=int, metavar="0-100",
                        help=f"how much of the enhanced frame replaces the frame (default {enhance.frame_enhancer_blend})")
    parser.add_argument("--frame-enhancer-tile-size", type=int, metavar="PX",
                        help="the frame enhancer's tiles, in input pixels (memory follows the tile; default "
                        f"{enhance.frame_enhancer_tile_size})")
    parser.add_argument("--frame-enhancer-tile-overlap", type=int, metavar="PX",
                        help="pixels neighbouring tiles share (more than 8, at most half a tile; default "
                        f"{enhance.frame_enhancer_tile_overlap})")
    parser.add_argument("--frame-enhancer-keep-scale", action="store_true",
                        help="write the frame at the model's scale (x2, x4) instead of the input's size")
    parser.add_argument("--execution-provider", "--execution-providers", dest="execution_providers", nargs="+",
                        metavar="PROVIDER", help="ONNX Runtime providers in priority order (" + ", ".join(PROVIDERS)
                        + "); the CPU is always the last resort, with a warning")
    parser.add_argument("--execution-device-id", type=int, metavar="N",
                        help=f"which GPU the providers use (default {runtime.execution_device_id})")
    parser.add_argument("--strict-provider", action="store_true",
                        help="fail (exit 17, no output) instead of falling back when a requested provider is missing")
    parser.add_argument("--execution-gpu-memory-limit", type=_byte_size, metavar="SIZE",
                        help="the most GPU memory the CUDA/ROCm arena may take, e.g. 3.5G (default: no limit)")
    parser.add_argument("--execution-arena-extend-strategy", metavar="kSameAsRequested|kNextPowerOfTwo",
                        help="how the GPU arena grows: only as asked (default) or in powers of two")
    parser.add_argument("--execution-cudnn-conv-algo-search", metavar="HEURISTIC|EXHAUSTIVE|DEFAULT",
                        help="how cuDNN picks convolution algorithms (default HEURISTIC; EXHAUSTIVE: slower start, "
                        "more memory)")
    parser.add_argument("--execution-tensorrt-fp16", action="store_true", help="let TensorRT run in fp16")
    parser.add_argument("--execution-tensorrt-cache-dir", type=Path,
                        help="keep TensorRT engines here between runs")


def add_mask_options(parser: argparse.ArgumentParser) -> None:
    """Masks of the neural face processors (the mesh swapper keeps its own mesh mask)."""
    masks = parser.add_argument_group("face masks of the neural swappers and enhancers")
    defaults = D.masks
    masks.add_argument("--face-mask-types", nargs="+", metavar="TYPE",
                       help="one or more of " + ", ".join(MASK_TYPES) + ", combined by their minimum (default: "
                       + " ".join(defaults.face_mask_types) + ")")
    masks.add_argument("--face-mask-blur", type=float, metavar="0-1",
                       help=f"the box mask's edge blur, as a fraction of half the crop (default {defaults.face_mask_blur})")
    masks.add_argument("--face-mask-padding", nargs="+", type=int, metavar="PERCENT",
                       help="1 to 4 values 0-100 (all; vertical horizontal; top horizontal bottom; top right bottom "
                       "left): the box mask's margin in percent of the crop")
    masks.add_argument("--face-occluder-model", metavar="MODEL",
                       help="the XSeg model of the occlusion mask: " + ", ".join(MODEL_CHOICES["face_occluder_model"])
                       + f" (default {defaults.face_occluder_model})")
    masks.add_argument("--face-parser-model", metavar="MODEL",
                       help="the BiSeNet model of the region mask: " + ", ".join(MODEL_CHOICES["face_parser_model"])
                       + f" (default {defaults.face_parser_model})")
    masks.add_argument("--face-mask-regions", nargs="+", metavar="REGION",
                       help="the face parts the region mask keeps: " + ", ".join(REGIONS))


def _add_video_options(parser: argparse.ArgumentParser) -> None:
    """Options that apply when the target is a video."""
    video = parser.add_argument_group("video targets (.mp4 .m4v .mov .mkv .webm .avi)")
    encode = D.encode
    video.add_argument("--trim-frame-start", type=int, metavar="N", help="first frame to process (0-based)")
    video.add_argument("--trim-frame-end", type=int, metavar="N", help="frame to stop before (default: the end)")
    video.add_argument("--output-video-encoder", metavar="ENCODER",
                       help=", ".join(ENCODERS) + " (default: libvpx-vp9 for .webm, libx264 otherwise; NVENC needs "
                       "an FFmpeg built with it)")
    video.add_argument("--output-video-quality", type=int, metavar="0-100",
                       help="mapped linearly onto the encoder's CRF (x264/x265: 51 - 0.51 x quality; default "
                       f"{encode.output_video_quality})")
    video.add_argument("--output-video-preset", metavar="PRESET",
                       help=", ".join(PRESETS) + f" (default {encode.output_video_preset})")
    video.add_argument("--output-video-fps", type=Fraction, metavar="FPS",
                       help="a constant output frame rate (default: keep every input frame's own timestamp)")
    video.add_argument("--output-video-scale", type=float, metavar="F", help="output size factor, e.g. 0.5")
    video.add_argument("--skip-audio", action="store_true", help="write no audio track")
    video.add_argument("--temp-frame-format", "--temp-frame-type", metavar="|".join(FRAME_FORMATS),
                       help="go through frame files on disk instead of streaming (default: stream, no temp files)")
    video.add_argument("--temp-path", type=Path, help="where disk mode puts its temp directory")
    video.add_argument("--keep-temp", action="store_true", help="keep disk mode's temp directory")
    add_tracking_options(video)
    video.add_argument("--log-format", choices=["text", "json"],
                       help="json: progress and the summary as JSON lines on stderr")


def add_tracking_options(group: argparse._ActionsContainer) -> None:
    """Options of every stream of frames (videos and live): detection interval and reuse of generated faces."""
    group.add_argument("--face-detector-interval", type=int, metavar="N",
                       help=f"run the detector every N frames (sooner when a face is lost or faces cross; default "
                       f"{D.faces.face_detector_interval})")
    group.add_argument("--reuse-threshold", type=float, metavar="G",
                       help="reuse a generated face while its crop changed less than this (grey levels); "
                       "0 = off; default 2 for neural swappers, off for mesh")
    group.add_argument("--reuse-max-frames", type=int, metavar="K",
                       help=f"at most this many reuses in a row (default {D.video.reuse_max_frames})")


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
