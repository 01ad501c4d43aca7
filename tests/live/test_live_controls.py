"""What changes while a live session runs, on the run's own frame loop (live/controls.py) with the packaged photos:
another source face (the output's identity follows it, each face prepared once, a photo without a face keeps the
current one with one line), the target's mouth kept or swapped (the mouth region follows), the face enhancer on
and off (a generated ONNX enhancer that shows), and the one line for what a run cannot change."""
from __future__ import annotations

import logging
from pathlib import Path

import cv2
import numpy as np
import onnx
import pytest
from PIL import Image

import neural_models as nm
from streams import moving_face
from live.said import Said
from slimfuse.config import RunConfig
from slimfuse.faces.analyse import FaceAnalyser
from people import who
from slimfuse.faces.identity import IdentityModel
from slimfuse.models.mesh_topology import MeshTopology
from slimfuse.live.controls import Controls, LiveLoop
from slimfuse.live.keys import HELP, KEYS, apply_key
from slimfuse.models.pool import ModelPool
from slimfuse.pipeline.run import Run, SourceImage, build_run
from slimfuse.processors.debug import BOX



def _identity(pool: ModelPool, image: np.ndarray) -> np.ndarray:
    return IdentityModel(pool).descriptor(image, FaceAnalyser(pool).faces(image)[0])


def _frames(loop: LiveLoop, frames: list[np.ndarray], start: int) -> np.ndarray:
    """The frames through the loop (15 fps); the last output."""
    out = frames[0]
    for number, frame in enumerate(frames):
        out = loop.process(frame, (start + number) / 15)
    return out


@pytest.fixture
def run_of(request: pytest.FixtureRequest):  # type: ignore[no-untyped-def]
    """build_run for the test, closed at its end."""
    runs: list[Run] = []

    def build(sources: list[Path], **options: object) -> Run:
        runs.append(build_run(RunConfig.from_options(sources, **options)))
        return runs[-1]

    yield build
    for run in runs:
        run.close()


def test_another_source_face_is_switched_to_and_a_photo_without_a_face_keeps_the_current_one(
        tmp_path: Path, run_of, astronaut_path: Path, grace_hopper_path: Path, astronaut: np.ndarray,  # type: ignore[no-untyped-def]
        grace_hopper: np.ndarray, pool: ModelPool, said: Said) -> None:
    blank = tmp_path / "wall.png"
    Image.fromarray(np.full((300, 300, 3), 128, np.uint8)).save(blank)
    run = run_of([astronaut_path])
    prepared: list[str] = []
    prepare = run.prepare_sources

    def counted(sources: list[SourceImage], keep_identity: bool = True) -> list[object]:
        prepared.append(sources[0].label)
        return prepare(sources, keep_identity)

    run.prepare_sources = counted  # type: ignore[method-assign]
    controls = Controls()
    loop = LiveLoop(run, controls, [[SourceImage.read(blank)], [SourceImage.read(grace_hopper_path)]])
    camera = moving_face(grace_hopper, 24)
    people = {"astronaut": _identity(pool, astronaut), "grace_hopper": _identity(pool, grace_hopper)}

    def person(out: np.ndarray) -> str:
        return who(_identity(pool, out), people)

    assert person(_frames(loop, camera[:4], 0)) == "astronaut" and controls.faces == 3
    apply_key("f", controls)  # the wall: no face there, the astronaut stays
    assert person(_frames(loop, camera[4:8], 4)) == "astronaut" and loop.face == 0
    assert said.lines == [(logging.WARNING, f"{blank}: no face found in the source image; keeping source face 1")]
    apply_key("f", controls)  # on to the next one: grace_hopper's face
    assert person(_frames(loop, camera[8:12], 8)) == "grace_hopper" and loop.face == 2
    assert said.lines[-1] == (logging.INFO, f"source face 3 of 3: {grace_hopper_path}")
    apply_key("f", controls)  # round again: the -s photos
    assert person(_frames(loop, camera[12:16], 12)) == "astronaut" and loop.face == 0
    apply_key("f", controls)  # the wall passed over again (one line again)
    assert person(_frames(loop, camera[16:18], 16)) == "astronaut" and loop.face == 0
    apply_key("f", controls)
    assert person(_frames(loop, camera[18:22], 18)) == "grace_hopper" and loop.face == 2
    assert [line for level, line in said.lines if level == logging.WARNING] == [said.lines[0][1]] * 2
    assert prepared == [str(astronaut_path), str(blank), str(grace_hopper_path)]  # each face once


def test_the_mouth_region_follows_the_mouth_control(run_of, grace_hopper_path: Path,  # type: ignore[no-untyped-def]
                                                    astronaut: np.ndarray) -> None:
    run = run_of([grace_hopper_path])  # onto the astronaut's open smile: her teeth are the mouth to keep
    controls = Controls()
    loop = LiveLoop(run, controls)
    assert controls.keep_mouth is True and loop.capabilities.keep_mouth
    topology = MeshTopology.from_json(run.store.path("face_mesh_topology").read_text(encoding="utf-8"))
    face = run.faces(astronaut)[0]
    assert face.landmarks is not None
    mouth = np.zeros(astronaut.shape[:2], np.uint8)
    cv2.fillPoly(mouth, [np.round(face.landmarks[list(topology.lips_inner), :2]).astype(np.int32)], 1)
    assert mouth.sum() > 150

    times = iter(range(100))

    def changed() -> float:
        out = loop.process(astronaut, next(times) / 15)
        return float(np.abs(out.astype(np.int16) - astronaut)[mouth > 0].mean())

    kept = changed()
    apply_key("m", controls)
    swapped = changed()
    apply_key("m", controls)
    again = changed()
    assert kept < 20 and again < 20 and swapped > 2.5 * max(kept, again), (kept, swapped, again)


def _negative_enhancer(name: str = "gfpgan_1.4") -> onnx.ModelProto:
    """An enhancer whose face is the negative of its input: where it ran shows."""
    return nm.image_model(name, "Neg")


def test_the_face_enhancer_runs_only_while_it_is_on(models_dir: Path, run_of, astronaut_path: Path,  # type: ignore[no-untyped-def]
                                                    grace_hopper: np.ndarray) -> None:
    nm.save(_negative_enhancer(), models_dir, "gfpgan_1.4")
    run = run_of([astronaut_path], face_enhancer_model="gfpgan_1.4", models_dir=models_dir)
    plain = run_of([astronaut_path])
    controls = Controls()
    loop, reference = LiveLoop(run, controls), LiveLoop(plain, Controls())
    assert loop.capabilities.enhancer and not reference.capabilities.enhancer
    face = run.faces(grace_hopper)[0]
    x0, y0, x1, y1 = (int(value) for value in face.box)
    times = iter(range(100))

    def off_by() -> float:
        """How far the face is from the same swap without an enhancer."""
        at = next(times) / 15
        swapped = reference.process(grace_hopper, at)[y0:y1, x0:x1].astype(np.int16)
        return float(np.abs(loop.process(grace_hopper, at)[y0:y1, x0:x1] - swapped).mean())

    enhanced = off_by()
    apply_key("e", controls)
    skipped = off_by()
    assert not run.chain.is_on("face_enhancer")
    apply_key("e", controls)
    back = off_by()
    assert skipped < 1.0 < 30 < min(enhanced, back), (enhanced, skipped, back)


def test_the_face_debugger_draws_only_while_it_is_on(run_of, astronaut_path: Path,  # type: ignore[no-untyped-def]
                                                    grace_hopper: np.ndarray, said: Said) -> None:
    run = run_of([astronaut_path], processors=("face_swapper", "face_debugger"),
                 face_debugger_items=("bounding-box",))
    controls = Controls()
    loop, reference = LiveLoop(run, controls), LiveLoop(run_of([astronaut_path]), Controls())
    face = run.faces(grace_hopper)[0]
    box, perimeter = np.array(BOX), 2 * (face.box[2] - face.box[0] + face.box[3] - face.box[1])

    def edge_drawn(at: float) -> bool:
        """Whether a box's worth of pixels has the box's colour, which the plain swap has none of."""
        out, plain = loop.process(grace_hopper, at), reference.process(grace_hopper, at)
        assert not np.all(plain == box, axis=2).any()
        return bool(np.all(out == box, axis=2).sum() > 0.9 * perimeter)

    assert edge_drawn(0.0)
    apply_key("d", controls)
    assert not edge_drawn(1 / 15) and not run.chain.is_on("face_debugger")
    apply_key("d", controls)
    assert edge_drawn(2 / 15)
    assert said.lines == [(logging.INFO, "face debugger off"), (logging.INFO, "face debugger on")]
    without = LiveLoop(run_of([astronaut_path]), Controls(debugger=False))
    assert without.controls.debugger is True  # the control says what the run does
    assert said.lines[-1] == (logging.WARNING, "there is no face debugger to switch on or off: start with --processors "
                                               "face_swapper face_debugger")


def test_what_a_run_cannot_change_is_said_in_one_line(models_dir: Path, run_of, astronaut_path: Path,  # type: ignore[no-untyped-def]
                                                      grace_hopper: np.ndarray, said: Said) -> None:
    nm.save(nm.inswapper(), models_dir, "inswapper_128")
    nm.save(nm.recognizer(), models_dir, "arcface_w600k_r50")
    run = run_of([astronaut_path], face_swapper_model="inswapper_128", models_dir=models_dir)
    controls = Controls()
    loop = LiveLoop(run, controls)
    assert loop.capabilities.keep_mouth is False and loop.capabilities.enhancer is False
    apply_key("m", controls)
    apply_key("e", controls)
    loop.process(grace_hopper, 0.0)
    assert said.lines == [
        (logging.WARNING, "the inswapper_128 swapper cannot keep the target's mouth while it runs (its masks have no "
                          "mouth); start it with --face-mask-types region and --face-mask-regions without mouth"),
        (logging.WARNING, "there is no face enhancer to switch on or off: start with --face-enhancer-model")]
    assert controls.keep_mouth is True and controls.enhancer is True  # the controls say what the run does


def test_every_key_is_in_the_help() -> None:
    for key in KEYS:
        assert f" {key} " in HELP.replace(":", " ").replace(",", " "), key
    controls = Controls(selector_mode="one")
    for key in "svq":
        apply_key(key, controls)
    assert not controls.swap and controls.selector_mode == "many" and controls.stop.is_set()
