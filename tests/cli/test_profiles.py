"""--profile sets a group of options; options given on the command line win over it; defaults fill the rest."""
from __future__ import annotations

import argparse

import pytest

from slimfuse.cli.main import build_parser
from slimfuse.cli.options import config_from_args
from slimfuse.config import RunConfig
from slimfuse.profiles import GIB, PROFILE_OPTIONS, PROFILES, recommend


def _config(*options: str) -> tuple[RunConfig, argparse.Namespace]:
    args = build_parser().parse_args(["swap", "-s", "a.jpg", "-t", "b.mp4", "-o", "c.mp4", *options])
    return config_from_args(args), args


def test_the_4gb_recipe() -> None:
    options = _config("--profile", "low-vram-4g")[0].options()
    assert options["execution_providers"] == ("cuda",) and options["execution_gpu_memory_limit"] == 3 * GIB
    assert options["target_face_size"] == 720 and options["system_memory_limit"] == 8.0
    assert options["face_enhancer_model"] == "none" and options["temp_frame_format"] == "jpg"
    assert options["profile"] == "low-vram-4g"


def test_explicit_options_override_the_profile() -> None:
    options = _config("--profile", "low-vram-4g", "--target-face-size", "300", "--execution-provider", "cpu",
                      "--temp-frame-format", "png", "--system-memory-limit", "2")[0].options()
    assert options["target_face_size"] == 300 and options["execution_providers"] == ("cpu",)
    assert options["temp_frame_format"] == "png" and options["system_memory_limit"] == 2.0
    assert options["execution_gpu_memory_limit"] == 3 * GIB  # not given: still the profile's


def test_without_a_profile_the_defaults_apply() -> None:
    options, defaults = _config()[0].options(), RunConfig().options()
    for option in PROFILE_OPTIONS:
        assert options[option] == defaults[option], option
    assert options["temp_frame_format"] is None and options["profile"] is None


def test_the_api_applies_profiles_as_the_command_line_does() -> None:
    from_api = RunConfig.from_options(["a.jpg"], profile="low-vram-4g", target_face_size=300)
    assert from_api == _config("--profile", "low-vram-4g", "--target-face-size", "300")[0]


@pytest.mark.parametrize("name", list(PROFILES))
def test_every_profile_sets_only_swap_options(name: str) -> None:
    destinations = {action.dest for action in build_parser()._subparsers._group_actions[0]  # type: ignore[union-attr]
                    .choices["swap"]._actions}
    assert set(PROFILES[name].settings) <= destinations
    _config("--profile", name)  # builds a valid RunConfig


def test_recommended_profiles() -> None:
    assert recommend(None, False, False) == "cpu"
    assert recommend(4 * GIB, False, False) == "cpu"  # a GPU the CUDA provider cannot use is no help
    assert recommend(4 * GIB, False, True) == "low-vram-4g"
    assert recommend(6 * GIB, False, True) == "vram-6g"
    assert recommend(8 * GIB, False, True) == "vram-8g"
    assert recommend(80 * GIB, False, True) == "server"
    assert recommend(None, True, True) == "jetson"
