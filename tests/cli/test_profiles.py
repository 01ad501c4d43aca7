"""--profile sets a group of options; options given on the command line win over it; defaults fill the rest."""
from __future__ import annotations

import argparse

import pytest

from slimfuse.cli.main import build_parser
from slimfuse.cli.swap import DEFAULTS, build_config
from slimfuse.config import RunConfig
from slimfuse.profiles import GIB, PROFILE_OPTIONS, PROFILES, recommend


def _config(*options: str) -> tuple[RunConfig, argparse.Namespace]:
    args = build_parser().parse_args(["swap", "-s", "a.jpg", "-t", "b.mp4", "-o", "c.mp4", *options])
    return build_config(args), args


def test_the_4gb_recipe() -> None:
    config, args = _config("--profile", "low-vram-4g")
    assert config.execution_providers == ("cuda",) and config.execution_gpu_memory_limit == 3 * GIB
    assert config.target_face_size == 720 and config.system_memory_limit == 8.0
    assert config.face_enhancer_model == "none" and args.temp_frame_format == "jpg" and config.profile == "low-vram-4g"


def test_explicit_options_override_the_profile() -> None:
    config, args = _config("--profile", "low-vram-4g", "--target-face-size", "300", "--execution-provider", "cpu",
                           "--temp-frame-format", "png", "--system-memory-limit", "2")
    assert config.target_face_size == 300 and config.execution_providers == ("cpu",)
    assert args.temp_frame_format == "png" and config.system_memory_limit == 2.0
    assert config.execution_gpu_memory_limit == 3 * GIB  # not given: still the profile's


def test_without_a_profile_the_defaults_apply() -> None:
    config, args = _config()
    for option in PROFILE_OPTIONS & {field for field in vars(DEFAULTS)}:
        assert getattr(config, option) == getattr(DEFAULTS, option), option
    assert args.temp_frame_format is None and config.profile is None


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
