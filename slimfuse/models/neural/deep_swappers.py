"""Catalog entries: the deep swapper's DFM files (DeepFaceLive's face models, each trained on one person), the ones
FaceFusion publishes and the ones a user brings.

Facts (FaceFusion 3.8.1's deep_swapper processor and DeepFaceLive's DFMModel; read, not copied): a DFM file is an
ONNX graph as DeepFaceLab exports it. Inputs: `in_face:0` [N, H, W, 3], the face aligned to the `dfl_whole_face`
template at the model's own H x W (read from the file), BGR / 255, channels last; and, in the files trained with
a morph factor (AMP), `morph_value:0` [1], 0..1. Outputs, read by position as both programs do:
`out_face_mask:0` [N, H, W, 1] (the input face's mask), `out_celeb_face:0` [N, H, W, 3] (the person's face, BGR
0..1) and `out_celeb_face_mask:0` [N, H, W, 1] (the person's face mask).

FaceFusion publishes 157 of them in the Hugging Face repositories facefusion/deepfacelive-models-SCOPE (SCOPE the
person who trained them), NAME.dfm with NAME.hash (the CRC32) beside it; `--deep-swapper-model SCOPE/NAME`.
Neither repository states a licence (no model card); DeepFaceLab and DeepFaceLive, which train and export them, are
GPL-3.0. A user's own file: `custom/NAME` (NAME.dfm in the `custom` folder of --models-dir, or of the model folder,
as FaceFusion's `.assets/models/custom`), or a path of a .dfm file. All are trust-on-first-use.
"""
from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path
from types import MappingProxyType

from slimfuse.models.spec import ModelIO, ModelSpec, TensorSpec

FACE_INPUT = "in_face:0"
MORPH_INPUT = "morph_value:0"
TEMPLATE = "dfl_whole_face"
HUGGING_FACE = "https://huggingface.co/facefusion"
CUSTOM = "custom"
"""The scope of a user's own files (FaceFusion's `custom/NAME`)."""
SUFFIX = ".dfm"

_PUBLISHED: MappingProxyType[str, str] = MappingProxyType({
    "druuzil": "adam_levine_320 adrianne_palicki_384 agnetha_falskog_224 alan_ritchson_320 alicia_vikander_320 "
    "amber_midthunder_320 andras_arato_384 andrew_tate_320 angelina_jolie_384 anne_hathaway_320 anya_chalotra_320 "
    "arnold_schwarzenegger_320 benjamin_affleck_320 benjamin_stiller_384 bradley_pitt_224 brie_larson_384 "
    "bruce_campbell_384 bryan_cranston_320 catherine_blanchett_352 christian_bale_320 christopher_hemsworth_320 "
    "christoph_waltz_384 cillian_murphy_320 cobie_smulders_256 dwayne_johnson_384 edward_norton_320 "
    "elisabeth_shue_320 elizabeth_olsen_384 elon_musk_320 emily_blunt_320 emma_stone_384 emma_watson_320 "
    "erin_moriarty_384 eva_green_320 ewan_mcgregor_320 florence_pugh_320 freya_allan_320 gary_cole_224 "
    "gigi_hadid_224 harrison_ford_384 hayden_christensen_320 heath_ledger_320 henry_cavill_448 hugh_jackman_384 "
    "idris_elba_320 jack_nicholson_320 james_carrey_384 james_mcavoy_320 james_varney_320 jason_momoa_320 "
    "jason_statham_320 jennifer_connelly_384 jimmy_donaldson_320 jordan_peterson_384 karl_urban_224 "
    "kate_beckinsale_384 laurence_fishburne_384 lili_reinhart_320 luke_evans_384 mads_mikkelsen_384 "
    "mary_winstead_320 margaret_qualley_384 melina_juergens_320 michael_fassbender_320 michael_fox_320 "
    "millie_bobby_brown_320 morgan_freeman_320 patrick_stewart_224 rachel_weisz_384 rebecca_ferguson_320 "
    "scarlett_johansson_320 shannen_doherty_384 seth_macfarlane_384 thomas_cruise_320 thomas_hanks_384 "
    "william_murray_384 zoe_saldana_384",
    "edel": "emma_roberts_224 ivanka_trump_224 lize_dzjabrailova_224 sidney_sweeney_224 winona_ryder_224",
    "iperov": "alexandra_daddario_224 alexei_navalny_224 amber_heard_224 dilraba_dilmurat_224 elon_musk_224 "
    "emilia_clarke_224 emma_watson_224 erin_moriarty_224 jackie_chan_224 james_carrey_224 jason_statham_320 "
    "keanu_reeves_320 margot_robbie_224 natalie_dormer_224 nicolas_coppola_224 robert_downey_224 rowan_atkinson_224 "
    "ryan_reynolds_224 scarlett_johansson_224 sylvester_stallone_224 thomas_cruise_224 thomas_holland_224 "
    "vin_diesel_224 vladimir_putin_224",
    "jen": "angelica_trae_288 ella_freya_224 emma_myers_320 evie_pickerill_224 kang_hyewon_320 maddie_mead_224 "
    "nicole_turnbull_288",
    "mats": "alica_schmidt_320 ashley_alexiss_224 billie_eilish_224 brie_larson_224 cara_delevingne_224 "
    "carolin_kebekus_224 chelsea_clinton_224 claire_boucher_224 corinna_kopf_224 florence_pugh_224 "
    "hillary_clinton_224 jenna_fischer_224 kim_jisoo_320 mica_suarez_320 shailene_woodley_224 shraddha_kapoor_320 "
    "yu_jimin_352",
    "rumateus": "alison_brie_224 amber_heard_224 angelina_jolie_224 aubrey_plaza_224 bridget_regan_224 "
    "cobie_smulders_224 deborah_woll_224 dua_lipa_224 emma_stone_224 hailee_steinfeld_224 hilary_duff_224 "
    "jessica_alba_224 jessica_biel_224 john_cena_224 kim_kardashian_224 kristen_bell_224 lucy_liu_224 "
    "margot_robbie_224 megan_fox_224 meghan_markle_224 millie_bobby_brown_224 natalie_portman_224 nicki_minaj_224 "
    "olivia_wilde_224 shay_mitchell_224 sophie_turner_224 taylor_swift_224",
})
"""FaceFusion's published DFM files by scope (whoever trained them), in FaceFusion's order."""

DEEP_SWAPPER_NAMES: tuple[str, ...] = tuple(f"{scope}/{name}" for scope, names in _PUBLISHED.items()
                                            for name in names.split())
DEFAULT_MODEL = "iperov/elon_musk_224"
"""FaceFusion's default --deep-swapper-model."""

IO = ModelIO(
    inputs=(TensorSpec(FACE_INPUT, ("batch", "height", "width", 3)),
            TensorSpec(MORPH_INPUT, (1,), optional=True)),
    outputs=(TensorSpec("out_face_mask:0", ("batch", "height", "width", 1)),
             TensorSpec("out_celeb_face:0", ("batch", "height", "width", 3)),
             TensorSpec("out_celeb_face_mask:0", ("batch", "height", "width", 1))),
    template=TEMPLATE,
)
"""Every DFM file's contract; its size is the file's own (FaceFusion reads it from `in_face:0`)."""
_LICENCE = "not stated (made with GPL-3.0 DeepFaceLab); a real person's likeness"
_USER_LICENCE = "the user's own file"
_CUSTOM_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]*")


USER_SIZE = 448
"""The size the memory plan assumes for a user's file before it is loaded (the largest FaceFusion publishes)."""


def _spec(name: str, filename: str, licence: str, description: str, size: int, urls: tuple[str, ...] = (),
          placed: Path | None = None) -> ModelSpec:
    """crop_size: the size the name says (what the memory plan estimates with); the file's in_face:0 decides."""
    return ModelSpec(name=name, kind="deep_swapper", licence=licence, filename=filename, sha256=None, size=None,
                     description=description, source_name=filename, source_sha256=None, urls=urls,
                     io=replace(IO, crop_size=size), publisher_crc32=bool(urls), placed=placed)


def _published(name: str) -> ModelSpec:
    scope, person = name.split("/")
    url = f"{HUGGING_FACE}/deepfacelive-models-{scope}/resolve/main/{person}{SUFFIX}"
    words = person.rsplit("_", 1)
    return _spec(name, f"{name}{SUFFIX}", _LICENCE, f"DFM face model of {words[0].replace('_', ' ').title()} "
                 f"({words[1]} px), trained by {scope}", int(words[1]), (url,))


MODELS: tuple[ModelSpec, ...] = tuple(_published(name) for name in DEEP_SWAPPER_NAMES)


def is_custom_name(name: str) -> bool:
    """Whether `name` is FaceFusion's `custom/NAME`: NAME a plain file name (no folder, no suffix needed)."""
    scope, slash, stem = name.partition("/")
    return bool(slash) and scope == CUSTOM and _CUSTOM_NAME.fullmatch(stem) is not None and ".." not in stem


def is_dfm_path(name: str) -> bool:
    """Whether `name` is the path of a .dfm file (the user's own, used where it is)."""
    return name.lower().endswith(SUFFIX) and not is_custom_name(name)


def user_spec(name: str) -> ModelSpec | None:
    """The catalog entry of a user's own DFM file: `custom/NAME` (NAME.dfm in the custom folder of --models-dir or
    of the model folder) or the path of a .dfm file (the resolved path is its name); None for other names."""
    if is_custom_name(name):
        stem = name.partition("/")[2]
        filename = f"{CUSTOM}/{stem}" if stem.lower().endswith(SUFFIX) else f"{CUSTOM}/{stem}{SUFFIX}"
        return _spec(name, filename, _USER_LICENCE, f"the user's DFM face model {stem}", USER_SIZE)
    if is_dfm_path(name):
        path = Path(name).expanduser().resolve()
        if str(path) != name:
            return None
        return _spec(name, path.name, _USER_LICENCE, f"the user's DFM face model {path}", USER_SIZE, placed=path)
    return None


def model_name(value: str) -> str:
    """The catalog name of a --deep-swapper-model / --deep-swapper-file value (a path becomes its resolved path)."""
    return value if value in DEEP_SWAPPER_NAMES or is_custom_name(value) else str(Path(value).expanduser().resolve())
