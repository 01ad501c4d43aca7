"""`slimfuse swap`: put the source face onto the faces of a target image."""
from __future__ import annotations

import argparse
from pathlib import Path

from slimfuse.cli.common import add_common_options, make_store
from slimfuse.config import RunConfig
from slimfuse.models.pool import ModelPool
from slimfuse.models.runtime import RuntimeOptions

DEFAULTS = RunConfig(sources=(), target=Path(), output=Path())


def add_parser(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser("swap", help="swap faces in an image",
                                 description="Put the face of SOURCE onto the faces of TARGET and write OUTPUT.")
    parser.add_argument("-s", "--source", "--source-paths", dest="sources", type=Path, nargs="+", required=True,
                        metavar="SOURCE", help="one or more photos of the same person")
    parser.add_argument("-t", "--target", "--target-path", dest="target", type=Path, required=True,
                        help="the image whose faces are replaced (.jpg .jpeg .png .webp .bmp)")
    parser.add_argument("-o", "--output", "--output-path", dest="output", type=Path, required=True,
                        help="where to write the result; its type follows its extension")
    parser.add_argument("--face-swapper-model", choices=["mesh"], default=DEFAULTS.face_swapper_model)
    parser.add_argument("--face-selector-mode", choices=["one", "many", "reference"],
                        default=DEFAULTS.face_selector_mode,
                        help="one: the largest face; many: every face; reference: faces like the reference face")
    parser.add_argument("--reference-face-image", type=Path, default=None,
                        help="photo of the person to replace (reference mode); default: the target itself")
    parser.add_argument("--reference-face-position", type=int, default=DEFAULTS.reference_face_position,
                        help="which face of the reference photo, 0 = largest")
    parser.add_argument("--reference-face-distance", type=float, default=DEFAULTS.reference_face_distance,
                        help="largest identity distance (dlib) still counted as the reference person")
    parser.add_argument("--face-detector-model", choices=["short", "full", "auto"],
                        default=DEFAULTS.face_detector_model)
    parser.add_argument("--face-detector-score", type=_unit_float, default=None,
                        help="detection score threshold 0-1 (default: the model's own, 0.5 short / 0.6 full)")
    parser.add_argument("--face-detector-size", type=_positive_int, default=DEFAULTS.face_detector_size,
                        help="smallest tile, in pixels, that large images are searched in for small faces")
    parser.add_argument("--target-face-size", type=_positive_int, default=DEFAULTS.target_face_size,
                        help="faces are processed at most at this size in pixels, then pasted back")
    parser.add_argument("--keep-mouth", action=argparse.BooleanOptionalAction, default=DEFAULTS.keep_mouth,
                        help="keep the target's mouth interior (default on)")
    parser.add_argument("--keep-eyes", action=argparse.BooleanOptionalAction, default=DEFAULTS.keep_eyes,
                        help="keep the target's eyes (default off)")
    parser.add_argument("--blend", choices=["feather", "poisson"], default=DEFAULTS.blend,
                        help="feathered alpha (default) or Poisson blending")
    parser.add_argument("--execution-thread-count", type=int, default=DEFAULTS.execution_thread_count,
                        help="ONNX Runtime threads per model, 0 = one per core")
    add_common_options(parser)
    parser.set_defaults(command=run)


def run(args: argparse.Namespace) -> int:
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
    )
    from slimfuse.pipeline.image import ImageSwapper  # heavy: only the swap itself needs it

    store = make_store(args)
    pool = ModelPool(store, RuntimeOptions(intra_op_threads=config.execution_thread_count))
    output = ImageSwapper(config, pool, store.notify).run()
    print(output)
    return 0


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
