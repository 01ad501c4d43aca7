"""The expression restorer's and the face editor's options: FaceFusion's names and ranges on the command line, in
FaceFusion's ini file (its [processors] keys) and the Python API, a value out of range refused naming the option."""
from __future__ import annotations

from pathlib import Path

import pytest

from slimfuse.cli.main import main
from slimfuse.config import RunConfig
from slimfuse.errors import UsageError


def test_the_ini_files_processors_keys_are_read(tmp_path: Path) -> None:
    ini = tmp_path / "facefusion.ini"
    ini.write_text("[processors]\nprocessors = face_swapper expression_restorer face_editor\n"
                   "expression_restorer_factor = 60\nexpression_restorer_areas = lower-face\n"
                   "face_editor_mouth_smile = 0.35\nface_editor_head_yaw = -1\n")
    config = RunConfig.from_options([], config_path=ini)
    assert config.swap.processors == ("face_swapper", "expression_restorer", "face_editor")
    assert config.expression_restorer.expression_restorer_factor == 60
    assert config.expression_restorer.expression_restorer_areas == ("lower-face",)
    assert config.face_editor.values()["mouth_smile"] == 0.35 and config.face_editor.values()["head_yaw"] == -1


@pytest.mark.parametrize(("option", "value", "problem"), [
    ("face_editor_mouth_smile", 1.5, "--face-editor-mouth-smile: must lie between -1 and 1, got 1.5"),
    ("expression_restorer_factor", 101, "--expression-restorer-factor: must lie between 0 and 100, got 101"),
    ("expression_restorer_areas", ["mouth"], "--expression-restorer-areas: invalid choice: 'mouth'"),
    ("face_editor_model", "live_portrait_v2", "--face-editor-model: invalid choice: 'live_portrait_v2'"),
])
def test_a_value_out_of_range_is_refused(option: str, value: object, problem: str) -> None:
    with pytest.raises(UsageError) as raised:
        RunConfig.from_options([], **{option: value})
    assert raised.value.detail.startswith(problem)


def test_the_command_lines_help_has_them(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["swap", "--help"])
    text = capsys.readouterr().out
    for flag in ("--expression-restorer-model", "--expression-restorer-factor", "--expression-restorer-areas",
                 "--face-editor-model", "--face-editor-eyebrow-direction", "--face-editor-head-roll"):
        assert flag in text
