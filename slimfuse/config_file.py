"""--config-path: the options of FaceFusion's ini file (facefusion.ini), read as FaceFusion's config.py reads it.

FaceFusion keeps each option under a section (`[face_selector] face_selector_order = left-right`); a key slimfuse
has an option of the same name for is read from that section, through the option's own kind (a list is separated
by spaces, a switch is configparser's true/false/yes/no/on/off/1/0), and a blank value is not set. Keys slimfuse
has no option for are listed in one warning. Options given to the run win over the file's (the caller merges).
Standard library only: the option table reads it before numpy is imported.
"""
from __future__ import annotations

import configparser
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import NamedTuple

from slimfuse.errors import InputMissingError, InputUnreadableError, UsageError
from slimfuse.options import Declared, Items, Switch

LOG = logging.getLogger(__name__)


def _keys(text: str) -> tuple[str, ...]:
    return tuple(text.split())


FACEFUSION_KEYS: Mapping[str, tuple[str, ...]] = MappingProxyType({
    "paths": _keys("temp_path jobs_path source_paths target_path output_path"),
    "patterns": _keys("source_pattern target_pattern output_pattern"),
    "face_detector": _keys("face_detector_model face_detector_size face_detector_margin face_detector_angles "
                           "face_detector_score"),
    "face_landmarker": _keys("face_landmarker_model face_landmarker_score"),
    "face_selector": _keys("face_selector_mode face_selector_order face_selector_age_start face_selector_age_end "
                           "face_selector_gender face_selector_race reference_face_position reference_face_distance "
                           "reference_frame_number"),
    "face_tracker": _keys("face_tracker_score"),
    "face_masker": _keys("face_occluder_model face_parser_model face_mask_types face_mask_areas face_mask_regions "
                         "face_mask_blur face_mask_padding"),
    "voice_extractor": _keys("voice_extractor_model"),
    "frame_extraction": _keys("trim_frame_start trim_frame_end temp_frame_format temp_pixel_format"),
    "frame_distribution": _keys("target_frame_amount"),
    "output_creation": _keys("output_image_quality output_image_scale output_audio_encoder output_audio_quality "
                             "output_audio_volume output_video_encoder output_video_preset output_video_quality "
                             "output_video_scale output_video_fps"),
    "workflow": _keys("workflow_mode workflow_strategy"),
    "processors": _keys("processors face_enhancer_model face_enhancer_blend face_enhancer_weight face_swapper_model "
                        "face_swapper_pixel_boost face_swapper_weight frame_enhancer_model frame_enhancer_blend "
                        "face_debugger_items deep_swapper_model deep_swapper_morph age_modifier_model "
                        "age_modifier_direction frame_colorizer_model frame_colorizer_blend frame_colorizer_size "
                        "expression_restorer_model expression_restorer_factor expression_restorer_areas "
                        "face_editor_model face_editor_eyebrow_direction face_editor_eye_gaze_horizontal "
                        "face_editor_eye_gaze_vertical face_editor_eye_open_ratio face_editor_lip_open_ratio "
                        "face_editor_mouth_grim face_editor_mouth_pout face_editor_mouth_purse face_editor_mouth_smile "
                        "face_editor_mouth_position_horizontal face_editor_mouth_position_vertical "
                        "face_editor_head_pitch face_editor_head_yaw face_editor_head_roll lip_syncer_model "
                        "lip_syncer_weight background_remover_model background_remover_fill_color "
                        "background_remover_despill_color"),
    "execution": _keys("execution_device_ids execution_providers execution_thread_count"),
    "memory": _keys("video_memory_strategy"),
    "misc": _keys("log_level halt_on_error"),
})
"""Where FaceFusion 3.8.1's config.py reads each key that slimfuse may have an option for (its other processors'
keys, its interface's, download's and benchmark's keys are none of slimfuse's)."""
_BOOLEANS = configparser.ConfigParser.BOOLEAN_STATES


class ConfigFile(NamedTuple):
    """What an ini file sets: the options by their names, and the keys slimfuse has no option for."""

    path: Path
    values: dict[str, object]
    unused: tuple[str, ...]

    def warn_unused(self) -> None:
        """One warning naming the keys that were not read (said once the log level is known: the file may set it)."""
        if self.unused:
            LOG.warning(f"{self.path}: not options of slimfuse, so not read: {', '.join(self.unused)}")


def read_config_file(path: Path, table: Sequence[Declared]) -> ConfigFile:
    """The options set in the ini file at `path`, by their names in `table` (checked by their kinds); an error names
    the file, the section and the key."""
    parser = configparser.ConfigParser(interpolation=None)
    try:
        with path.open(encoding="utf-8") as file:
            parser.read_file(file)
    except FileNotFoundError:
        raise InputMissingError(path, "config file not found (--config-path)") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputUnreadableError(path, f"cannot read the config file ({exc})") from None
    except configparser.Error as exc:
        raise UsageError(path, f"not an ini file ({str(exc).splitlines()[0]})") from None
    options = {entry.name: entry for entry in table}
    found: dict[str, object] = {}
    unused: list[str] = []
    for section in parser.sections():
        for key, text in parser.items(section):
            if not text.strip():
                continue
            entry = options.get(key) if key in FACEFUSION_KEYS.get(section, ()) else None
            if entry is None:
                unused.append(f"[{section}] {key}")
                continue
            try:
                found[key] = entry.option.kind.check(_parsed(entry, text))
            except ValueError as exc:
                raise UsageError(path, f"[{section}] {key}: {exc}") from None
    return ConfigFile(path, found, tuple(unused))


def _parsed(entry: Declared, text: str) -> object:
    kind = entry.option.kind
    if isinstance(kind, Switch):
        word = text.strip().lower()
        if word not in _BOOLEANS:
            raise ValueError(f"must be true or false, got {text.strip()!r}")
        return _BOOLEANS[word]
    if isinstance(kind, Items):
        return [kind.parse(word) for word in text.split()]
    return kind.parse(text.strip())
