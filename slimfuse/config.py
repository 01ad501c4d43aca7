"""RunConfig, and the one table of run options: every option of a run is a field of one of its frozen sections,
declared once with its default, its kind, its help and who may set it (slimfuse.options).

The command line's options (slimfuse.cli.options), the checks of every value (here, as a section is made), the
server's allowlist and the page's form (`GET /v1/options`) and the README test all read this table, and the
processors take their section as it is. `RunConfig.from_options(sources, **options)` builds a config from options
named as the swap command's: it applies the profile (explicit options win over the profile, the profile over the
defaults), strips `NAME.VARIANT` from the model options, and checks every value with one-line messages that name
the option. What a run decides from its config and the machine (memory plan, capped sizes, variants) is a separate
RunPlan (slimfuse.pipeline.plan).

Standard library only (and the word lists of light modules): `slimfuse --help` reads this table at once.
"""
from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields, replace
from fractions import Fraction
from pathlib import Path
from types import MappingProxyType
from typing import ClassVar, Literal

from slimfuse.config_file import read_config_file
from slimfuse.errors import UsageError
from slimfuse.media.formats import (AUDIO_ENCODERS, AUDIO_SUFFIXES, CONTAINERS, ENCODERS, FRAME_FORMATS, PRESETS,
                                    EncodeSettings)
from slimfuse.memory.levels import DEFAULT_LEVEL, LEVELS, STRATEGIES, MemoryLevel
from slimfuse.models.choices import MESH_SWAPPER, MODEL_CHOICES, NO_MODEL, SELFIE_SEGMENTATION, split_variants
from slimfuse.models.neural.deep_swappers import DEEP_SWAPPER_NAMES, is_custom_name, is_dfm_path
from slimfuse.models.neural.deep_swappers import DEFAULT_MODEL as DEEP_SWAPPER_DEFAULT
from slimfuse.models.neural.deep_swappers import model_name as deep_swapper_model_name
from slimfuse.models.neural.frame_colorizers import SIZES as FRAME_COLORIZER_SIZES
from slimfuse.models.neural.live_portrait import EDITOR_MODELS, RESTORER_MODELS
from slimfuse.models.neural.masks import REGIONS
from slimfuse.models.neural.swappers import PIXEL_BOOSTS
from slimfuse.models.providers import PROVIDERS
from slimfuse.models.variants import VARIANTS
from slimfuse.options import (BATCHES, COMMAND_LINES, CONTROLLED, Choice, FILE_OWNER, NOT_LIVE, OWNER, Amount, Bytes,
                              Declared, FilePath, Items, ModelName, Number, Option, Rate, Section, Switch, Whole, Word,
                              alias, declared_in, option, option_error)
from slimfuse.profiles import PROFILE_OPTIONS, PROFILES, resolve

SelectorMode = Literal["one", "many", "reference"]
SELECTOR_MODES: tuple[SelectorMode, ...] = ("one", "many", "reference")
SelectorOrder = Literal["left-right", "right-left", "top-bottom", "bottom-top", "small-large", "large-small",
                        "best-worst", "worst-best"]
SELECTOR_ORDERS: tuple[SelectorOrder, ...] = ("left-right", "right-left", "top-bottom", "bottom-top", "small-large",
                                              "large-small", "best-worst", "worst-best")
GENDERS: tuple[str, ...] = ("female", "male")
RACES: tuple[str, ...] = ("white", "black", "latino", "asian", "indian", "arabic")
"""FaceFusion's words for what its fairface classifier tells (`auto`: the source face's)."""
DETECTOR_ANGLES: tuple[int, ...] = (0, 90, 180, 270)
FACEFUSION_PROCESSORS: tuple[str, ...] = (
    "age_modifier", "background_remover", "deep_swapper", "expression_restorer", "face_debugger", "face_editor",
    "face_enhancer", "face_swapper", "frame_colorizer", "frame_enhancer", "lip_syncer",
)
"""FaceFusion's processors (--processors); slimfuse's stages are SLIMFUSE_PROCESSORS."""
SLIMFUSE_PROCESSORS: tuple[str, ...] = ("face_swapper", "deep_swapper", "face_enhancer", "age_modifier",
                                         "expression_restorer", "face_editor", "lip_syncer", "frame_enhancer",
                                         "frame_colorizer", "background_remover", "face_debugger")
"""The processors slimfuse has: the stages --processors may list (pipeline/stages.py builds each)."""
SOURCE_PROCESSORS: frozenset[str] = frozenset({"face_swapper"})
"""The processors that put a source photo's face in: a run of none of them needs no source photo."""
DEBUGGER_ITEMS: tuple[str, ...] = (
    "bounding-box", "face-landmark-5", "face-landmark-5/68", "face-landmark-68", "face-landmark-68/5", "face-mask",
)
"""FaceFusion's --face-debugger-items (what the face debugger draws besides each face's score, track and reuse)."""
PROCESSOR_MODELS: Mapping[str, tuple[str, str]] = MappingProxyType({
    "face_enhancer": ("face_enhancer_model", "gfpgan_1.4"), "frame_enhancer": ("frame_enhancer_model", "real_esrgan_x4"),
})
"""The model option of each optional stage, and the model --processors runs when that option is not given
(FaceFusion's own default for the face enhancer; for the frame enhancer, whose FaceFusion default span_kendata_x4 is
not in the catalog, the x4 model that is)."""
LOG_LEVELS: tuple[str, ...] = ("error", "warn", "info", "debug")
COLORIZER_SIZES: tuple[str, ...] = tuple(f"{side}x{side}" for side in FRAME_COLORIZER_SIZES)
"""FaceFusion's --frame-colorizer-size choices."""
BlendMode = Literal["feather", "poisson"]
EyeRegion = Literal["source", "target"]
MaskType = Literal["box", "mesh", "occlusion", "area", "region"]
MASK_TYPES: tuple[MaskType, ...] = ("box", "mesh", "occlusion", "area", "region")
MaskArea = Literal["upper-face", "lower-face", "mouth"]
MASK_AREAS: tuple[MaskArea, ...] = ("upper-face", "lower-face", "mouth")
"""The area mask's parts (their points: slimfuse.faces.landmarks_68.AREA_POINTS); all three by default, as in
FaceFusion."""
Padding = tuple[int, int, int, int]
"""Top, right, bottom, left, in percent of the crop's side."""
DEFAULT_REGIONS: tuple[str, ...] = (
    "skin", "left-eyebrow", "right-eyebrow", "left-eye", "right-eye", "glasses", "nose", "mouth", "upper-lip",
    "lower-lip",
)
"""FaceFusion's default: the face itself, without ears, neck, hair or clothes."""
LOG = logging.getLogger(__name__)
_ENCODING = EncodeSettings()
"""The video writer's own defaults (slimfuse.media.formats), so they are not written twice."""


def _model(name: str, default: str, help: str, **declared: object) -> object:
    return option(default, ModelName(MODEL_CHOICES[name], VARIANTS), help, **declared)


@dataclass(frozen=True)
class FaceOptions(Section):
    title: ClassVar[str] = "finding, following and choosing faces"

    face_detector_model: str = _model(
        "face_detector_model", "auto", "BlazeFace short, full or auto (both), or a neural detector placed with "
        "--models-dir; MODEL.VARIANT (e.g. short.fp16) "
        "runs a variant made with slimfuse optimize")
    face_detector_score: float | None = option(
        None, Number(0, 1, above=True, below=True, metavar="0-1"), "detection score threshold",
        default_text="the model's own: 0.5 short, 0.6 full, 0.5 neural")
    face_detector_size: int = option(
        640, Whole(1, metavar="PX"), "the smallest tile that large images are also searched in, for small faces")
    face_detector_margin: Padding = option(
        (0, 0, 0, 0), Items(Whole(0, 100), most=4, metavar="PERCENT"), "1 to 4 percentages 0-100 of half the "
        "frame's height or width added as a black border before detecting, so faces cut by the frame's edge are "
        "found (all sides; vertical horizontal; top horizontal bottom; top right bottom left)")
    face_detector_angles: tuple[int, ...] = option(
        (0,), Items(Word(DETECTOR_ANGLES), metavar="0|90|180|270"), "also run the detector on the frame turned by "
        "these angles (counter-clockwise), for faces lying on their side or upside down; more angles, more time")
    face_detector_interval: int = option(
        5, Whole(1), "run the detector every N frames, following the faces with FaceMesh in between (sooner when "
        "a face is lost or faces cross)", video=True)
    face_landmarker_model: str = _model(
        "face_landmarker_model", "face_landmark", "FaceMesh, or one of its variants made with slimfuse optimize "
        "(face_landmark.fp16, face_landmark.int8, ...)")
    face_landmarker_score: float = option(
        0.5, Number(0, 1, metavar="0-1"), "the face presence FaceMesh must report for a face to be kept: a "
        "detection whose mesh scores lower (no face after all) is dropped, and a followed face is looked for again")
    face_tracker_score: float | None = option(
        None, Number(0, 0.5, metavar="0-0.5"), "the box overlap (intersection over union) a detection needs to "
        "continue a followed face; above 0 (0 is FaceFusion's 'no tracking': slimfuse always follows faces, "
        "--face-detector-interval 1 detects on every frame)", video=True, default_text="0.3")
    face_recognizer_model: str = _model(
        "face_recognizer_model", "dlib", "the identity model for reference selection and the check that several "
        "sources show one person")
    face_selector_mode: SelectorMode = option(
        "one", Word(SELECTOR_MODES, metavar="one|many|reference"), "one: the largest face (the first in "
        "--face-selector-order); many: every face; reference: the faces that look like the reference face",
        who=CONTROLLED)
    face_selector_order: SelectorOrder = option(
        "large-small", Word(SELECTOR_ORDERS, metavar="ORDER"), "the order of the faces: `one` takes the first, "
        "--reference-face-position counts in it (by the box's left or top edge, its area, or the detector's score)")
    face_selector_gender: str | None = option(
        None, Word(("auto", *GENDERS), metavar="auto|female|male"), "only faces the fairface classifier (placed with "
        "--models-dir) takes for this gender; auto: the source face's", default_text="any")
    face_selector_race: str | None = option(
        None, Word(("auto", *RACES), metavar="RACE"), "only faces the fairface classifier takes for this race; auto: "
        "the source face's", default_text="any")
    face_selector_age_start: int | None = option(
        None, Whole(0, 100, metavar="0-100"), "only faces whose age group (fairface's) reaches this age or more",
        default_text="0")
    face_selector_age_end: int | None = option(
        None, Whole(0, 100, metavar="0-100"), "only faces whose age group (fairface's) starts below this age",
        default_text="100")
    reference_face_image: Path | None = option(
        None, FilePath(), "photo of the person to replace (reference mode)", who=OWNER,
        default_text="the target itself")
    reference_face_position: int = option(0, Whole(0), "which face of the reference photo, counted in "
                                         "--face-selector-order (0 = the largest by default)")
    reference_face_distance: float = option(
        0.6, Number(0, above=True, metavar="D"), "the largest identity distance still counted as the reference "
        "person (dlib: Euclidean distance; arcface: 1 - cosine similarity)")
    reference_frame_number: int | None = option(
        None, Whole(0), "the frame of a video target the reference face is taken from (reference mode without "
        "--reference-face-image)", who=NOT_LIVE, video=True, default_text="the first frame with faces")

    @property
    def classified(self) -> bool:
        """Whether selection filters faces by what the fairface classifier tells (gender, race, age)."""
        return any(value is not None for value in (self.face_selector_gender, self.face_selector_race,
                                                   self.face_selector_age_start, self.face_selector_age_end))

    def check(self) -> None:
        object.__setattr__(self, "face_detector_margin", padding_from(self.face_detector_margin))
        if self.face_tracker_score == 0:
            raise option_error("face_tracker_score", "0 (FaceFusion's 'no tracking') has no equivalent: slimfuse "
                               "always follows faces between detections; give --face-detector-interval 1 to detect "
                               "on every frame")
        start, end = self.face_selector_age_start, self.face_selector_age_end
        if start is not None and end is not None and end <= start:
            raise option_error("face_selector_age_end", f"must be more than --face-selector-age-start, got {end}")


@dataclass(frozen=True)
class SwapOptions(Section):
    title: ClassVar[str] = "the swap"

    face_swapper_model: str = _model(
        "face_swapper_model", MESH_SWAPPER, "mesh (the embedded landmark-mesh swapper) or a neural swapper placed "
        "with --models-dir")
    face_swapper_pixel_boost: int | None = option(
        None, Word(PIXEL_BOOSTS, metavar="SIZE"), "align the face at SIZE px and run the swapper on the N x N "
        "interleaved sub-images of its own size (a multiple of it); cost grows with N squared",
        default_text="the model's size")
    face_swapper_weight: float = option(
        0.5, Number(0, 1, metavar="0-1"), "neural swappers: the source identity as it is at 0.5; lower mixes in the "
        "target face's own identity (0.35 of it at 0), higher pushes away from it (FaceFusion's weight)")
    target_face_size: int = option(
        512, Whole(1, metavar="PX"), "faces are processed at most at this size, then pasted back at full resolution")
    keep_mouth: bool = option(True, Switch(), "keep the target's mouth interior (teeth, tongue)", who=CONTROLLED)
    keep_eyes: bool = option(False, Switch(), "keep the target's eyes")
    eye_region: EyeRegion = option(
        "source", Word(("source", "target"), metavar="source|target"), "the mesh swapper's eyes: the source's, or "
        "the target's whole eye region (its glasses stay in front and a source's never show, at a cost in likeness)")
    keep_occluders: bool = option(
        False, Switch(), "the mesh swapper keeps thin dark lines of the target's eye region that the source lacks "
        "(glasses rims, temple arms) in front of the swapped face")
    remove_source_glasses: bool = option(
        True, Switch(), "the mesh swapper leaves the source's dark glasses frames out (the target's own skin shows "
        "there); --no-remove-source-glasses keeps them")
    blend: BlendMode = option(
        "feather", Word(("feather", "poisson"), metavar="feather|poisson"), "feathered alpha, or Poisson "
        "(gradient-domain) blending")
    processors: tuple[str, ...] | None = option(
        None, Items(Word(FACEFUSION_PROCESSORS), metavar="PROCESSOR"), "the stages each frame goes through, in this "
        "order, by FaceFusion's names: face_enhancer and frame_enhancer run with their model options (else "
        "gfpgan_1.4 and real_esrgan_x4), face_debugger draws what was found on each face last, deep_swapper puts "
        "a DFM face model's person in; a stage not listed does not run, and a run without face_swapper needs no "
        "source photo", default_text="face_swapper, "
        "and an enhancer where its model option names one")
    face_debugger_items: tuple[str, ...] = option(
        ("face-landmark-5/68", "face-mask"), Items(Word(DEBUGGER_ITEMS), metavar="ITEM"), "what the face debugger "
        "(--processors ... face_debugger) draws on each face, besides its score, track and whether its result was "
        "reused: the box, the detector's points (face-landmark-5), the mesh's five points (face-landmark-5/68), its "
        "68 points (face-landmark-68, face-landmark-68/5), the outline of the paste-back mask (face-mask)")

    @property
    def debugger(self) -> bool:
        return self.processors is not None and "face_debugger" in self.processors

    def check(self) -> None:
        if self.processors is None:
            return
        others = [name for name in self.processors if name not in SLIMFUSE_PROCESSORS]
        if others:
            raise option_error("processors", f"{', '.join(others)}: not in slimfuse, which has "
                               f"{', '.join(SLIMFUSE_PROCESSORS)}")
        if len(set(self.processors)) < len(self.processors):
            raise option_error("processors", "list each processor once")

    @property
    def neural(self) -> bool:
        return self.face_swapper_model != MESH_SWAPPER


@dataclass(frozen=True)
class EnhanceOptions(Section):
    title: ClassVar[str] = "face and frame enhancers"

    face_enhancer_model: str = _model(
        "face_enhancer_model", NO_MODEL, "enhance each face after the swap (none: no enhancer)", flags=("--enhancer",))
    face_enhancer_blend: int = option(80, Whole(0, 100, metavar="0-100"), "how much of the enhanced face replaces "
                                      "the face")
    face_enhancer_weight: float = option(
        0.5, Number(0, 1, metavar="0-1"), "CodeFormer's fidelity input (0 favours quality, 1 the input face); other "
        "enhancers ignore it")
    frame_enhancer_model: str = _model(
        "frame_enhancer_model", NO_MODEL, "enhance the whole frame after the faces (none: no enhancer)")
    frame_enhancer_blend: int = option(80, Whole(0, 100, metavar="0-100"), "how much of the enhanced frame "
                                       "replaces the frame (the rest is the frame scaled plainly)")
    frame_enhancer_tile_size: int = option(
        256, Whole(1, metavar="PX"), "the frame enhancer runs on tiles of this many input pixels, so its memory "
        "follows the tile, not the frame")
    frame_enhancer_tile_overlap: int = option(
        24, Whole(0, metavar="PX"), "pixels neighbouring tiles share, faded into each other (more than 8, at most "
        "half a tile)")
    frame_enhancer_keep_scale: bool = option(
        False, Switch(), "write the result at the model's scale (x2, x4); off: at the target's size")

    @property
    def face_enhancer(self) -> str | None:
        return None if self.face_enhancer_model == NO_MODEL else self.face_enhancer_model

    @property
    def frame_enhancer(self) -> str | None:
        return None if self.frame_enhancer_model == NO_MODEL else self.frame_enhancer_model


@dataclass(frozen=True)
class DeepSwapOptions(Section):
    """The deep swapper (`--processors deep_swapper`): a DFM face model, trained on one person, needs no source."""

    title: ClassVar[str] = "the deep swapper (DFM face models)"

    deep_swapper_model: str = option(
        DEEP_SWAPPER_DEFAULT, Choice(DEEP_SWAPPER_NAMES, "`slimfuse models list` shows", is_custom_name,
                                     "custom/NAME", metavar="MODEL"),
        "the DFM face model whose person replaces each face: one FaceFusion publishes (SCOPE/NAME, fetched on first "
        "use), or custom/NAME, the user's NAME.dfm in the custom folder of --models-dir")
    deep_swapper_file: Path | None = option(
        None, FilePath(metavar="DFM"), "the user's own DFM file (as DeepFaceLive exports it), by path; runs instead "
        "of --deep-swapper-model, trusted on first use", who=OWNER, default_text="none")
    deep_swapper_morph: int = option(
        100, Whole(0, 100, metavar="0-100"), "how far the face moves toward the model's person, for files trained "
        "with a morph factor (AMP); others ignore it")

    @property
    def model(self) -> str:
        """The catalog name of the model the deep swapper runs (a file's resolved path)."""
        file = self.deep_swapper_file
        return self.deep_swapper_model if file is None else deep_swapper_model_name(str(file))

    def check(self) -> None:
        file = self.deep_swapper_file
        if file is not None and not is_dfm_path(str(file)):
            raise option_error("deep_swapper_file", f"must be a .dfm file, got {str(file)!r}")


@dataclass(frozen=True)
class AgeModifierOptions(Section):
    title: ClassVar[str] = "the age modifier (--processors age_modifier)"

    age_modifier_model: str = _model(
        "age_modifier_model", "fran", "the age modifier's model placed with --models-dir: fran (needs the fairface "
        "classifier for the face's age) or styleganex_age (the face with its surroundings)")
    age_modifier_direction: int = option(
        0, Whole(-100, 100, metavar="-100-100"), "how much older (positive) or younger (negative) each face is made; "
        "fran: years added to the face's age, styleganex_age: the strength of its edit")


@dataclass(frozen=True)
class FrameColorizerOptions(Section):
    title: ClassVar[str] = "the frame colouriser (--processors frame_colorizer)"

    frame_colorizer_model: str = _model(
        "frame_colorizer_model", "ddcolor", "the frame colouriser's model placed with --models-dir")
    frame_colorizer_blend: int = option(
        100, Whole(0, 100, metavar="0-100"), "how much of the coloured frame replaces the frame")
    frame_colorizer_size: str = option(
        "256x256", Word(COLORIZER_SIZES, metavar="|".join(COLORIZER_SIZES)), "the size the colouriser sees the "
        "frame at (its colours are then stretched over the frame, whose own lightness is kept)")

    @property
    def side(self) -> int:
        """The colouriser's square input side in pixels."""
        return int(self.frame_colorizer_size.split("x")[0])


EXPRESSION_RESTORER_AREAS: tuple[str, ...] = ("upper-face", "lower-face")
"""The parts of the face whose expression the expression restorer brings back (FaceFusion's words)."""


@dataclass(frozen=True)
class ExpressionRestorerOptions(Section):
    """The expression restorer (`--processors ... expression_restorer`): the target's own expression, read from
    the frame as it came in, brought back onto the face the stages before it made."""

    title: ClassVar[str] = "the expression restorer"

    expression_restorer_model: str = option(
        "live_portrait", Word(tuple(RESTORER_MODELS), metavar="live_portrait"), "the model set that reads and redraws "
        "the expression (the user's live_portrait files)")
    expression_restorer_factor: int = option(
        80, Whole(0, 100, metavar="0-100"), "how much of the target's expression comes back (100 goes 20 % past "
        "it, as FaceFusion's 0-1.2)")
    expression_restorer_areas: tuple[str, ...] = option(
        EXPRESSION_RESTORER_AREAS, Items(Word(EXPRESSION_RESTORER_AREAS), metavar="AREA"), "the parts whose "
        "expression comes back: upper-face (brows, eyes), lower-face (mouth, chin)")


def _edit(help: str) -> float:
    return option(0.0, Number(-1, 1, metavar="-1-1"), help + " (FaceFusion's steps: 0.05)", who=CONTROLLED)  # type: ignore[no-any-return]


@dataclass(frozen=True)
class FaceEditorOptions(Section):
    """The face editor (`--processors ... face_editor`): each value -1 to 1 moves one part of every face; 0 leaves
    it. A live session changes them while it runs (the page's sliders)."""

    title: ClassVar[str] = "the face editor"

    face_editor_model: str = option(
        "live_portrait", Word(tuple(EDITOR_MODELS), metavar="live_portrait"), "the model set that edits the face "
        "(the user's live_portrait files)")
    face_editor_eyebrow_direction: float = _edit("the brows' direction")
    face_editor_eye_gaze_horizontal: float = _edit("the eyes' gaze, sideways")
    face_editor_eye_gaze_vertical: float = _edit("the eyes' gaze, up or down")
    face_editor_eye_open_ratio: float = _edit("the eyes closed (-1) or wide open (1)")
    face_editor_lip_open_ratio: float = _edit("the lips closed (-1) or open (1)")
    face_editor_mouth_grim: float = _edit("the mouth's grimace")
    face_editor_mouth_pout: float = _edit("the mouth's pout")
    face_editor_mouth_purse: float = _edit("the lips pursed")
    face_editor_mouth_smile: float = _edit("a frown (-1) or a smile (1)")
    face_editor_mouth_position_horizontal: float = _edit("the mouth moved sideways")
    face_editor_mouth_position_vertical: float = _edit("the mouth moved up or down")
    face_editor_head_pitch: float = _edit("the head's pitch (20 degrees either way at -1 and 1)")
    face_editor_head_yaw: float = _edit("the head's yaw (60 degrees either way)")
    face_editor_head_roll: float = _edit("the head's roll (15 degrees either way)")

    def values(self) -> dict[str, float]:
        """Every edit by its option's name, less the `face_editor_` prefix (`mouth_smile`: 0.5)."""
        return {field.name.removeprefix("face_editor_"): getattr(self, field.name) for field in fields(self)
                if field.name != "face_editor_model"}


@dataclass(frozen=True)
class LipSyncOptions(Section):
    """The lip syncer (--processors ... lip_syncer): the target video's mouth follows a sound."""

    title: ClassVar[str] = "the lip syncer"

    lip_syncer_model: str = _model(
        "lip_syncer_model", "wav2lip_gan_96", "the lip sync model placed with --models-dir: wav2lip_96 and "
        "wav2lip_gan_96 redraw the lower face at 96 px, edtalk_256 the whole face at 256 px")
    lip_syncer_weight: float = option(
        0.5, Number(0, 1, metavar="0-1"), "how far the lips follow the sound (FaceFusion's weight): wav2lip hears "
        "the sound 2 x this loud (as it is at 0.5), edtalk takes it as its weight input", video=True)
    voice_extractor_model: str = _model(
        "voice_extractor_model", NO_MODEL, "separate the voice from music and noise before the lips follow it, with "
        "this model placed with --models-dir (kim_vocal_2 is FaceFusion's default; none: the lips follow the whole "
        "sound)", video=True)
    source_audio: Path | None = option(
        None, FilePath(metavar="FILE"), "the sound the lips follow (an audio file or a video), which the output "
        "video carries instead of the target's; FaceFusion's way works too: a sound file (.wav .mp3 .flac .m4a "
        ".ogg .opus) among -s/--source-paths", who=OWNER, video=True,
        default_text="the first sound file or video among the sources")

    @property
    def voice_extractor(self) -> str | None:
        return None if self.voice_extractor_model == NO_MODEL else self.voice_extractor_model


Color = tuple[int, int, int, int]
"""Red, green, blue and alpha, 0-255 each (FaceFusion's fill and despill colours)."""


def color_from(values: Sequence[int]) -> Color:
    """1 to 4 values 0-255 as FaceFusion reads them (as padding_from, opaque unless a fourth gives the alpha):
    grey; red-blue and green; red green blue; red green blue alpha."""
    v = list(values)
    return (v[0], v[0], v[0], 255) if len(v) == 1 else (v[0], v[1], v[0], 255) if len(v) == 2 \
        else (v[0], v[1], v[2], 255) if len(v) == 3 else (v[0], v[1], v[2], v[3])


@dataclass(frozen=True)
class BackgroundOptions(Section):
    """The background remover (--processors ... background_remover): what replaces the background."""

    title: ClassVar[str] = "background remover"

    background_remover_model: str = _model(
        "background_remover_model", SELFIE_SEGMENTATION, "the model that tells the person from the background "
        "(selfie_segmentation: embedded, offline; the others are FaceFusion's, placed by the user)")
    background_remover_fill_color: Color = option(
        (0, 0, 0, 0), Items(Whole(0, 255), most=4, metavar="0-255"), "the colour laid over the background: red "
        "green blue alpha (alpha 255: a solid colour; 0 and no blur: a transparent background, for PNG, WebP or WebM)")
    background_remover_blur: int = option(
        0, Whole(0, 200, metavar="PX"), "blur the background by this many pixels (Gaussian sigma) instead of "
        "making it transparent; the fill colour goes over it at its alpha")
    background_remover_despill_color: Color = option(
        (0, 0, 0, 0), Items(Whole(0, 255), most=4, metavar="0-255"), "take this colour's spill (a green screen's "
        "cast) off the person: red green blue strength")

    def check(self) -> None:
        object.__setattr__(self, "background_remover_fill_color", color_from(self.background_remover_fill_color))
        object.__setattr__(self, "background_remover_despill_color",
                           color_from(self.background_remover_despill_color))

    @property
    def transparent(self) -> bool:
        """The background comes out transparent (an alpha channel): no blur and a fill colour of alpha 0."""
        return self.background_remover_blur == 0 and self.background_remover_fill_color[3] == 0


def padding_from(values: Sequence[int]) -> Padding:
    """1 to 4 values as in CSS (and FaceFusion): all sides; vertical horizontal; top horizontal bottom; or
    top right bottom left."""
    v = list(values)
    return (v[0],) * 4 if len(v) == 1 else (v[0], v[1], v[0], v[1]) if len(v) == 2 \
        else (v[0], v[1], v[2], v[1]) if len(v) == 3 else (v[0], v[1], v[2], v[3])


@dataclass(frozen=True)
class MaskOptions(Section):
    """The paste-back masks of the neural face processors (the mesh swapper keeps its own mesh mask)."""

    title: ClassVar[str] = "face masks of the neural swappers and enhancers"

    face_mask_types: tuple[MaskType, ...] = option(
        ("box", "mesh"), Items(Word(MASK_TYPES), metavar="TYPE"), "the paste-back masks, combined by their "
        "minimum")
    face_mask_blur: float = option(0.3, Number(0, 1, metavar="0-1"), "the box mask's edge blur, as a fraction of "
                                   "half the crop")
    face_mask_padding: Padding = option(
        (0, 0, 0, 0), Items(Whole(0, 100), most=4, metavar="PERCENT"), "1 to 4 percentages 0-100 of the crop kept "
        "out of the box mask (all sides; vertical horizontal; top horizontal bottom; top right bottom left)")
    face_occluder_model: str = _model("face_occluder_model", "xseg_1", "the occlusion mask's model: where hands, "
                                      "hair or objects cover the face")
    face_parser_model: str = _model("face_parser_model", "bisenet_resnet_34", "the region mask's face parser")
    face_mask_regions: tuple[str, ...] = option(
        DEFAULT_REGIONS, Items(Word(tuple(REGIONS)), metavar="REGION"), "the parts the region mask keeps")
    face_mask_areas: tuple[MaskArea, ...] = option(
        MASK_AREAS, Items(Word(MASK_AREAS), metavar="AREA"), "the parts of the face the area mask keeps, drawn "
        "around the face's 68 points")

    def check(self) -> None:
        object.__setattr__(self, "face_mask_padding", padding_from(self.face_mask_padding))


@dataclass(frozen=True)
class RuntimeOptions(Section):
    """ONNX Runtime and where the models are found (sessions are made only by the model pool)."""

    title: ClassVar[str] = "ONNX Runtime and model files"

    execution_providers: tuple[str, ...] = option(
        ("cpu",), Items(Word(tuple(PROVIDERS)), metavar="PROVIDER"), "ONNX Runtime execution providers in priority "
        "order; the CPU is always the last resort, with a warning", flags=("--execution-provider",), who=OWNER)
    execution_device_id: int = option(0, Whole(0), "the GPU the providers use", who=OWNER)
    execution_device_ids: tuple[int, ...] | None = option(
        None, Items(Whole(0), metavar="N"), "FaceFusion's list of GPUs: the first is --execution-device-id; batch "
        "worker processes (--workers) take them in turn", who=OWNER, default_text="--execution-device-id")
    execution_thread_count: int = option(
        0, Whole(0), "ONNX Runtime threads per model; 0 = one per core for images, 1 for videos", who=OWNER)
    strict_provider: bool = option(
        False, Switch(), "fail (exit 17, no output) instead of falling back when a requested provider is missing",
        who=OWNER)
    execution_gpu_memory_limit: int | None = option(
        None, Bytes(), "the most memory the CUDA / ROCm arena may take (and TensorRT's workspace), e.g. 3.5G",
        who=OWNER, default_text="no limit")
    execution_arena_extend_strategy: str = option(
        "kSameAsRequested", Word(("kSameAsRequested", "kNextPowerOfTwo"), metavar="kSameAsRequested|kNextPowerOfTwo"),
        "how the GPU arena grows: only by what is asked for, or in powers of two (faster, hungrier)", who=OWNER)
    execution_cudnn_conv_algo_search: str = option(
        "HEURISTIC", Word(("HEURISTIC", "EXHAUSTIVE", "DEFAULT"), metavar="HEURISTIC|EXHAUSTIVE|DEFAULT"),
        "how cuDNN picks convolution algorithms (EXHAUSTIVE: slower start, more memory)", who=OWNER)
    execution_tensorrt_fp16: bool = option(False, Switch(), "let TensorRT run in fp16", who=OWNER)
    execution_tensorrt_cache_dir: Path | None = option(
        None, FilePath(metavar="DIR"), "keep built TensorRT engines and timing caches here between runs", who=OWNER)
    models_dir: Path | None = option(None, FilePath(metavar="DIR"), "a folder searched first for model files "
                                     "placed by hand", who=OWNER)

    def check(self) -> None:
        ids = self.execution_device_ids
        if ids is None:
            return
        if self.execution_device_id not in (0, ids[0]):
            raise option_error("execution_device_ids", f"give it or --execution-device-id {self.execution_device_id},"
                               " not both")
        object.__setattr__(self, "execution_device_id", ids[0])

    @property
    def on_gpu(self) -> bool:
        return any(provider != "cpu" for provider in self.execution_providers)


@dataclass(frozen=True)
class VideoOptions(Section):
    title: ClassVar[str] = "video targets (.mp4 .m4v .mov .mkv .webm .avi)"

    trim_frame_start: int = option(0, Whole(0), "the first frame to process (0-based)", who=NOT_LIVE, video=True)
    trim_frame_end: int | None = option(None, Whole(1), "the frame to stop before", who=NOT_LIVE, video=True,
                                        default_text="the end")
    reuse_threshold: float | None = option(
        None, Number(0, metavar="G"), "reuse a generated face while its crop changed less than this many grey "
        "levels; 0 = off", video=True, default_text="2 when a neural model makes the faces, off for mesh")
    reuse_max_frames: int = option(3, Whole(0, metavar="K"), "at most this many reuses in a row", video=True)
    temp_frame_format: str | None = option(
        None, Word(FRAME_FORMATS, metavar="|".join(FRAME_FORMATS)), "go through frame files of this format in a "
        "temporary folder instead of streaming", flags=("--temp-frame-type",), who=FILE_OWNER, video=True,
        default_text="stream, no temp files")
    temp_path: Path | None = option(None, FilePath(metavar="DIR"), "where disk mode puts its temporary folder",
                                    who=FILE_OWNER, video=True, default_text="the system's temp folder")
    keep_temp: bool = option(False, Switch(), "keep disk mode's temporary folder", who=FILE_OWNER, video=True)


@dataclass(frozen=True)
class EncodeOptions(Section):
    """How an output video is encoded (the writer takes them as EncodeSettings, with its threads)."""

    title: ClassVar[str] = "video outputs"

    output_video_encoder: str | None = option(
        _ENCODING.encoder, Word(ENCODERS, metavar="ENCODER"), "the video encoder (NVENC needs an FFmpeg built with "
        "it)", who=NOT_LIVE, video=True,
        default_text="libvpx-vp9 for .webm, libx264 otherwise")
    output_video_quality: int = option(
        _ENCODING.quality, Whole(0, 100, metavar="0-100"), "mapped linearly onto the encoder's constant quality "
        "(x264/x265: CRF 51 - 0.51 x quality)", who=NOT_LIVE, video=True)
    output_video_preset: str = option(_ENCODING.preset, Word(PRESETS, metavar="PRESET"), "the encoder's speed "
                                      "preset", who=NOT_LIVE, video=True)
    output_video_fps: Fraction | None = option(
        _ENCODING.fps, Rate(), "a constant output frame rate (frames duplicated or dropped by timestamp)",
        who=NOT_LIVE, video=True, default_text="every input frame's own timestamp")
    output_video_scale: float = option(_ENCODING.scale, Number(0.05, 8, metavar="F"), "the output size factor, "
                                       "e.g. 0.5", who=NOT_LIVE, video=True)
    skip_audio: bool = option(_ENCODING.skip_audio, Switch(), "write no audio track", who=NOT_LIVE, video=True)
    output_audio_encoder: str | None = option(
        _ENCODING.audio_encoder, Word(AUDIO_ENCODERS, metavar="ENCODER"), "re-encode the audio with this encoder",
        who=NOT_LIVE, video=True, default_text="copy the input's audio; re-encode only what the container cannot "
        "hold (to aac, libopus for .webm, libmp3lame for .avi)")
    output_audio_quality: int | None = option(
        _ENCODING.audio_quality, Whole(0, 100, metavar="0-100"), "re-encode the audio at this quality, mapped "
        "linearly onto the encoder's bit rate (aac, libmp3lame, libvorbis: 64-320 kb/s; libopus: 64-256 kb/s; flac "
        "and PCM are lossless)", who=NOT_LIVE, video=True, default_text="copy; 192 kb/s where re-encoded")
    output_audio_volume: int = option(
        _ENCODING.audio_volume, Whole(0, 100, metavar="0-100"), "the audio's volume in percent (below 100 the audio "
        "is re-encoded)", who=NOT_LIVE, video=True)

    def settings(self, threads: int) -> EncodeSettings:
        return EncodeSettings(encoder=self.output_video_encoder, quality=self.output_video_quality,
                              preset=self.output_video_preset, fps=self.output_video_fps,
                              scale=self.output_video_scale, skip_audio=self.skip_audio, threads=threads,
                              audio_encoder=self.output_audio_encoder, audio_quality=self.output_audio_quality,
                              audio_volume=self.output_audio_volume)


@dataclass(frozen=True)
class MemoryOptions(Section):
    title: ClassVar[str] = "memory and hardware"

    profile: str | None = option(
        None, Word(tuple(PROFILES), metavar="PROFILE"), "set a group of options for a kind of machine (explicit "
        "options still win): " + "; ".join(f"{p.name}: {p.summary}" for p in PROFILES.values()), who=OWNER,
        default_text="none")
    system_memory_limit: float | None = option(
        None, Amount("GB", "8 or 0.5", metavar="GB"), "a hard cap on this process's memory in GB (2^30 bytes); "
        "running out under it is exit 40 with no output", who=OWNER, default_text="no limit")
    memory_budget: float | None = option(
        None, Amount("MB", "400", metavar="MB"), "plan the run within this many MB (process RSS on the CPU provider, "
        "device memory on a GPU provider): which models stay loaded, batch sizes, frames in flight; a job that "
        "cannot fit is refused before any work (exit 41) with the smallest budget that works",
        default_text="no budget")
    video_memory_level: int = option(
        DEFAULT_LEVEL, Word(tuple(LEVELS), metavar="0-3"), "how much speed the run gives up for a lower peak: 0 keeps "
        "every model loaded and batches widely, 1 releases what no stage needs, 2 runs one generator at a time over "
        "chunks of frames, 3 adds the gated fp16 (GPU) / int8 (CPU) variants and 512-px caps")

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
class OutputOptions(Section):
    title: ClassVar[str] = "output files"

    output_image_quality: int = option(95, Whole(1, 100, metavar="1-100"), "JPEG and WebP quality of an image "
                                       "output (PNG and BMP are lossless)", who=NOT_LIVE)
    output_image_scale: float = option(
        1.0, Number(0.05, 8, metavar="F"), "an image output's size as a factor of the target's, e.g. 0.5 or 2 (other "
        "than 1, it also sets the size a frame enhancer that keeps its scale writes)", who=NOT_LIVE)
    provenance: bool = option(
        True, Switch(), "label the output as synthetic in its metadata (--no-provenance: leave it unlabelled)",
        who=FILE_OWNER)
    c2pa_key: Path | None = option(
        None, FilePath(metavar="PEM"), "also sign a C2PA manifest into the output with this private key (needs "
        "--c2pa-certificates and the c2pa extra)", who=FILE_OWNER)
    c2pa_certificates: Path | None = option(
        None, FilePath(metavar="PEM"), "the key's certificate chain, the signing certificate first", who=FILE_OWNER)

    def check(self) -> None:
        if (self.c2pa_key is None) != (self.c2pa_certificates is None):
            raise option_error("c2pa_key", "give --c2pa-key and --c2pa-certificates together")


@dataclass(frozen=True)
class ProgramOptions(Section):
    """What the command line does around its runs: where options also come from, what it says, when a batch stops."""

    title: ClassVar[str] = "the program: config file, messages, batches"

    config_path: Path | None = option(
        None, FilePath(metavar="INI"), "also read the options of FaceFusion's ini file (facefusion.ini's sections and "
        "keys; a blank value is not set); options given here win", who=OWNER, default_text="none")
    log_level: str | None = option(
        None, Word(LOG_LEVELS, metavar="|".join(LOG_LEVELS)), "the messages shown on stderr: errors only, warnings "
        "too, notices too, or debugging lines too (error and warn also hide the progress)", who=COMMAND_LINES,
        default_text="info (warn with --quiet)")
    halt_on_error: bool = option(
        False, Switch(), "stop a batch at its first failed item (the items not started are left, and the exit code "
        "is 50)", who=BATCHES)


SECTIONS: Mapping[str, type[Section]] = {
    "faces": FaceOptions, "swap": SwapOptions, "enhance": EnhanceOptions, "deep_swap": DeepSwapOptions,
    "expression_restorer": ExpressionRestorerOptions, "face_editor": FaceEditorOptions, "masks": MaskOptions,
    "background": BackgroundOptions,
    "runtime": RuntimeOptions, "video": VideoOptions, "encode": EncodeOptions, "memory": MemoryOptions,
    "output": OutputOptions, "program": ProgramOptions, "age_modifier": AgeModifierOptions,
    "frame_colorizer": FrameColorizerOptions, "lip_sync": LipSyncOptions,
}
OPTIONS: tuple[Declared, ...] = declared_in(dict(SECTIONS), aliases=(
    alias("video_memory_strategy", "memory", Word(tuple(STRATEGIES), metavar="|".join(STRATEGIES)),
          "FaceFusion's names for levels 0, 1 and 2: " + ", ".join(f"{name} = {level}"
                                                                   for name, level in STRATEGIES.items()),
          of="video_memory_level"),
))
"""The table: every run option, in the order of the sections."""
OPTION_SECTIONS: Mapping[str, str] = {entry.name: entry.section for entry in OPTIONS if entry.option.alias_of is None}
"""Each option's section (`face_enhancer_blend` -> "enhance")."""
_DEFAULTS: Mapping[str, object] = {entry.name: entry.default for entry in OPTIONS if entry.name in PROFILE_OPTIONS}


def declared(name: str) -> Option:
    """The declaration of the option `name`."""
    return next(entry.option for entry in OPTIONS if entry.name == name)


@dataclass(frozen=True)
class RunConfig:
    sources: tuple[Path, ...] = ()
    """Photos of the person whose face is put in (several photos of one person are combined)."""
    faces: FaceOptions = FaceOptions()
    swap: SwapOptions = SwapOptions()
    enhance: EnhanceOptions = EnhanceOptions()
    deep_swap: DeepSwapOptions = DeepSwapOptions()
    expression_restorer: ExpressionRestorerOptions = ExpressionRestorerOptions()
    face_editor: FaceEditorOptions = FaceEditorOptions()
    masks: MaskOptions = MaskOptions()
    background: BackgroundOptions = BackgroundOptions()
    runtime: RuntimeOptions = RuntimeOptions()
    video: VideoOptions = VideoOptions()
    encode: EncodeOptions = EncodeOptions()
    memory: MemoryOptions = MemoryOptions()
    output: OutputOptions = OutputOptions()
    program: ProgramOptions = ProgramOptions()
    age_modifier: AgeModifierOptions = AgeModifierOptions()
    frame_colorizer: FrameColorizerOptions = FrameColorizerOptions()
    lip_sync: LipSyncOptions = LipSyncOptions()
    model_variants: tuple[tuple[str, str], ...] = ()
    """(catalog name, NAME.VARIANT): stored variants the pool loads in those models' place, from the
    `--face-*-model NAME.VARIANT` options."""

    @classmethod
    def from_options(cls, sources: Sequence[Path | str] = (), **options: object) -> RunConfig:
        """A config from options named as the swap command's (face_swapper_model=, memory_budget=, ...): an
        option given (not None) wins over the profile's value, the profile's over the default. Unknown names and
        bad values are UsageErrors naming the option."""
        unknown = sorted(set(options) - set(OPTION_SECTIONS) - {"video_memory_strategy"})
        if unknown:
            raise UsageError(detail=f"unknown option{'s' if len(unknown) > 1 else ''} {', '.join(unknown)}")
        given = {name: value for name, value in options.items() if value is not None}
        config_path = given.get("config_path")
        if config_path is not None:
            read = read_config_file(_checked("config_path", config_path), OPTIONS)  # type: ignore[arg-type]
            read.warn_unused()
            given = {**read.values, **given}
        if "processors" in given:
            given = _with_processors(given)
        strategy = given.pop("video_memory_strategy", None)
        if strategy is not None:
            given.setdefault("video_memory_level", STRATEGIES[_checked("video_memory_strategy", strategy)])
        profile = given.get("profile")
        if profile is not None:
            _checked("profile", profile)
        resolved = resolve(given, None if profile is None else str(profile), _DEFAULTS)
        merged = {**given, **{name: value for name, value in resolved.items() if value is not None}}
        plain, variants = split_variants(merged)
        sections: dict[str, dict[str, object]] = {}
        for name, value in plain.items():
            sections.setdefault(OPTION_SECTIONS[name], {})[name] = value
        built = {section: SECTIONS[section](**values) for section, values in sections.items()}
        return cls(sources=tuple(Path(source) for source in sources), model_variants=variants,
                   **built)  # type: ignore[arg-type]

    @property
    def stages(self) -> tuple[str, ...]:
        """The chain's stages in the order frames go through them (the face debugger included, drawn last):
        --processors as given, else the face swapper and each enhancer a model option names."""
        if self.swap.processors is not None:
            return self.swap.processors
        chosen = {"face_swapper": True, "face_enhancer": self.enhance.face_enhancer is not None,
                  "frame_enhancer": self.enhance.frame_enhancer is not None}
        return tuple(stage for stage, on in chosen.items() if on)

    @property
    def transparent_output(self) -> bool:
        """Whether the output keeps an alpha channel: the background remover runs with a transparent background."""
        return "background_remover" in self.stages and self.background.transparent

    def check_alpha(self) -> None:
        """UsageError when a transparent background would go through temporary frames that drop its alpha."""
        fmt = self.video.temp_frame_format
        if self.transparent_output and fmt not in (None, "png"):
            raise UsageError(detail=f"--temp-frame-format {fmt} holds no alpha: give png for a transparent background")

    def check_opaque(self) -> None:
        """UsageError for a transparent background where frames are shown (live): they hold no alpha."""
        if self.transparent_output:
            raise UsageError(detail="live frames hold no alpha: give the background remover a colour "
                                    "(--background-remover-fill-color R G B) or a blur (--background-remover-blur PX)")

    @property
    def needs_source(self) -> bool:
        """Whether a stage puts a source photo's face in (a run of none of them needs no source photo)."""
        return any(stage in SOURCE_PROCESSORS for stage in self.stages)

    @property
    def sound(self) -> Path | None:
        """The lip syncer's sound, when it runs: --source-audio, else the first sound file or video among the
        sources (FaceFusion takes the first audio file of its source paths)."""
        if "lip_syncer" not in self.stages:
            return None
        if self.lip_sync.source_audio is not None:
            return self.lip_sync.source_audio
        return next((path for path in self.sources if path.suffix.lower() in (*AUDIO_SUFFIXES, *CONTAINERS)), None)

    @property
    def photos(self) -> tuple[Path, ...]:
        """The source photos: the sources less the sound files and the lip syncer's sound."""
        sound = self.sound
        return tuple(path for path in self.sources if path.suffix.lower() not in AUDIO_SUFFIXES and path != sound)

    def encode_settings(self, threads: int) -> EncodeSettings:
        """How an output video is encoded (EncodeOptions.settings), carrying the lip syncer's sound when it runs and
        the alpha of a transparent background."""
        return replace(self.encode.settings(threads), audio_path=self.sound, alpha=self.transparent_output)

    def check_sources(self) -> None:
        """UsageError when a stage needs a source photo and none is given."""
        if self.needs_source and not self.photos:
            wanting = ", ".join(stage for stage in self.stages if stage in SOURCE_PROCESSORS)
            raise UsageError(detail=f"give a source photo: {wanting} puts its face in")

    @property
    def inputs(self) -> tuple[Path, ...]:
        """The files the run reads besides its target (an output must be none of them)."""
        reference = self.faces.reference_face_image
        return self.sources if reference is None else (*self.sources, reference)

    def options(self) -> dict[str, object]:
        """Every option by its flat name (what the run report and the server record)."""
        return {item.name: getattr(getattr(self, section), item.name)
                for section, kind in SECTIONS.items() for item in fields(kind)}


def _with_processors(given: dict[str, object]) -> dict[str, object]:
    """FaceFusion's --processors as slimfuse's stages: a listed enhancer runs with its model option (FaceFusion's
    default model when none is given), one not listed does not run, as in FaceFusion (said once when its model
    option was given)."""
    processors = _checked("processors", given["processors"])
    mapped = {**given, "processors": processors}
    for stage, (name, model) in PROCESSOR_MODELS.items():
        if stage in processors:  # type: ignore[operator]
            mapped.setdefault(name, model)
            continue
        if mapped.get(name, NO_MODEL) != NO_MODEL:
            LOG.warning(f"--{name.replace('_', '-')} {mapped[name]}: not run, as --processors does not list {stage}")
        mapped[name] = NO_MODEL
    return mapped


def _checked(name: str, value: object) -> object:
    try:
        return declared(name).kind.check(value)
    except ValueError as exc:
        raise option_error(name, str(exc)) from None
