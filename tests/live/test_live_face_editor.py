"""The face editor's values while a live session runs (live/controls.py, the worker's and the socket's controls),
with the live_portrait parity stand-ins placed in --models-dir: a value sent moves the face from the next frame on
and is said in one line; a value the editor has not, or outside -1..1, is refused; a run without an editor says so
in one line."""
from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from parity import standins
from live.said import Said
from slimfuse.config import RunConfig
from slimfuse.live.controls import Controls, LiveLoop
from slimfuse.pipeline.run import Run, build_run
from slimfuse.serve.live_socket import _checked_edits
from slimfuse.serve.live_worker import apply_control


@pytest.fixture
def editing_run(models_dir: Path, astronaut_path: Path) -> Iterator[Run]:
    for contract in standins.LIVE_PORTRAIT:
        standins.write(contract.name, models_dir)
    run = build_run(RunConfig.from_options([astronaut_path], processors=("face_swapper", "face_editor"),
                                           models_dir=models_dir, face_editor_mouth_smile=0.5))
    yield run
    run.close()


def test_the_editors_values_follow_the_controls(editing_run: Run, grace_hopper: np.ndarray, said: Said) -> None:
    controls = Controls()
    loop = LiveLoop(editing_run, controls)
    values = loop.capabilities.face_editor
    assert values is not None and values["mouth_smile"] == 0.5 and len(values) == 14
    face = editing_run.faces(grace_hopper)[0]
    x0, y0, x1, y1 = (int(value) for value in face.box)
    first = loop.process(grace_hopper, 0.0)[y0:y1, x0:x1].astype(int)
    again = loop.process(grace_hopper, 1 / 15)[y0:y1, x0:x1].astype(int)
    apply_control({"face_editor": {"head_yaw": 1, "mouth_smile": -1}}, loop)
    edited = loop.process(grace_hopper, 2 / 15)[y0:y1, x0:x1].astype(int)
    assert said.lines == [(logging.INFO, "face editor: head yaw 1, mouth smile -1")]
    steady = np.abs(again - first).mean()
    assert np.abs(edited - first).mean() > 5 * max(steady, 0.5)
    apply_control({"face_editor": {"head_yaw": 0, "mouth_smile": 0.5}}, loop)
    back = loop.process(grace_hopper, 3 / 15)[y0:y1, x0:x1].astype(int)
    assert np.abs(back - first).mean() < np.abs(edited - first).mean() / 5


def test_a_value_the_editor_cannot_take_is_refused(editing_run: Run, said: Said) -> None:
    controls = Controls()
    loop = LiveLoop(editing_run, controls)
    controls.face_editor = {"mouth_smile": 2.0}
    loop.apply()
    assert said.lines == [(logging.WARNING, "face editor: mouth_smile must lie between -1 and 1, got 2.0")]
    assert controls.face_editor["mouth_smile"] == 0.5  # the control says what the run does
    assert _checked_edits({"mouth_smile": 0.25, "mouth_grin": 1, "head_yaw": 3, "head_roll": True}) == (
        {"mouth_smile": 0.25}, "face_editor: head_roll, head_yaw, mouth_grin: not a value of the editor, or not within "
                               "-1..1")
    assert _checked_edits([0.5])[1] == "face_editor takes an object of values by name"


def test_a_run_without_an_editor_says_so(astronaut_path: Path, said: Said) -> None:
    run = build_run(RunConfig.from_options([astronaut_path]))
    try:
        loop = LiveLoop(run, Controls())
        assert loop.capabilities.face_editor is None
        apply_control({"face_editor": {"mouth_smile": 0.5}}, loop)
        assert said.lines == [(logging.WARNING, "there is no face editor to change: start with --processors ... "
                                                "face_editor")]
        assert loop.controls.face_editor == {}
    finally:
        run.close()
