"""The stage registry and the chain's order: every processor slimfuse has is registered, stages run in --processors
order (a frame stage before a face stage changes what the face stage is given), a ReadsOriginal stage is given each
face as it came into the chain, a ChangesOverTime stage its frame's time and never a reused result."""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from scenes import GRACE_HOPPER_FACE, frame_loop, place
from slimfuse.config import SLIMFUSE_PROCESSORS, RunConfig
from slimfuse.faces.types import Face
from slimfuse.memory.levels import LEVELS
from slimfuse.models.pool import ModelPool
from slimfuse.models.store import Store
from slimfuse.pipeline.chain import Chain, ChainSpec, FrameWork
from slimfuse.pipeline.frames import FrameLoop
from slimfuse.pipeline.residency import Residency
from slimfuse.pipeline.run import run_models
from slimfuse.pipeline.stages import STAGES
from slimfuse.processors.base import FaceCrop, Processed, SourcePhoto, upright_crop


class Darken:
    """A frame stage that halves every pixel."""

    models: tuple[str, ...] = ()
    frame_scale = 1

    def load(self) -> None:
        pass

    def process_frame(self, frame: np.ndarray, time: float) -> np.ndarray:
        return frame // 2


class Recorder:
    """A face stage that keeps what it was given and paints each face white."""

    preparation_models: tuple[str, ...] = ()
    generator_models: tuple[str, ...] = ()

    def __init__(self, reads_original: bool = False, changes_over_time: bool = False) -> None:
        self.reads_original = reads_original
        self.changes_over_time = changes_over_time
        self.given: list[FaceCrop] = []

    def prepare(self, sources: Sequence[SourcePhoto]) -> None:
        return None

    def crop(self, frame: np.ndarray, face: Face) -> FaceCrop:
        return upright_crop(frame, face, 96)

    def process(self, crops: Sequence[FaceCrop], prepared: None) -> list[Processed]:
        self.given += crops
        return [Processed(np.full_like(crop.image, 255), np.ones(crop.image.shape[:2], np.float32)) for crop in crops]


def _scene(grace_hopper: np.ndarray) -> np.ndarray:
    canvas = np.full((360, 640, 3), 90, dtype=np.uint8)
    place(canvas, grace_hopper, GRACE_HOPPER_FACE, 120, (320, 180))
    return canvas


def _loop(pool: ModelPool, astronaut_path: Path, stages: Sequence[tuple[str, object]]) -> FrameLoop:
    loop = frame_loop(astronaut_path, reuse_threshold=2)
    loop.chain = Chain(pool, stages, Residency(pool, LEVELS[1]))  # type: ignore[arg-type]
    loop.prepared = loop.chain.prepare([])
    return loop


def test_every_processor_slimfuse_has_is_a_registered_stage() -> None:
    assert set(STAGES) | {"face_debugger"} == set(SLIMFUSE_PROCESSORS)
    config = RunConfig.from_options([], processors=["face_debugger", "frame_enhancer", "face_swapper"],
                                    frame_enhancer_model="real_esrgan_x2")
    assert ChainSpec.of(config).stages == ("frame_enhancer", "face_swapper")  # the debugger draws last, outside them


def test_stages_run_in_their_order(pool: ModelPool, astronaut_path: Path, grace_hopper: np.ndarray) -> None:
    scene = _scene(grace_hopper)
    first_faces, then_frames = Recorder(), Recorder()
    faces_first = _loop(pool, astronaut_path, [("face_enhancer", first_faces), ("frame_enhancer", Darken())])
    out = faces_first.process(scene, 0.0)
    assert out.max() == 127  # the white face was darkened after
    frames_first = _loop(pool, astronaut_path, [("frame_enhancer", Darken()), ("face_enhancer", then_frames)])
    out = frames_first.process(scene, 0.0)
    assert out.max() == 255  # the face painted over the darkened frame
    assert then_frames.given[0].image.mean() < first_faces.given[0].image.mean() * 0.6  # it saw the darkened face


def test_a_reads_original_stage_sees_the_face_before_the_chain(pool: ModelPool, astronaut_path: Path,
                                                               grace_hopper: np.ndarray) -> None:
    scene = _scene(grace_hopper)
    plain, reader = Recorder(), Recorder(reads_original=True)
    loop = _loop(pool, astronaut_path, [("face_swapper", plain), ("face_enhancer", reader)])
    loop.process(scene, 0.0)
    assert plain.given[0].original is None
    given = reader.given[0]
    assert given.image.mean() > 240  # the swapper's white face
    assert given.original is not None and given.original.shape == given.image.shape
    assert np.abs(given.original.astype(int) - plain.given[0].image).mean() < 1  # the face as it came in


def test_a_stage_that_changes_over_time_gets_each_frames_time_and_no_reused_result(
        pool: ModelPool, astronaut_path: Path, grace_hopper: np.ndarray) -> None:
    scene = _scene(grace_hopper)
    steady, timed = Recorder(), Recorder(changes_over_time=True)
    loop = _loop(pool, astronaut_path, [("face_swapper", steady), ("face_enhancer", timed)])
    times = [0.0, 0.04, 0.1, 0.133]
    for time in times:
        loop.process(scene.copy(), time)
    assert [crop.time for crop in timed.given] == times
    assert len(steady.given) < len(times)  # the same still face: the steady stage's result was reused
    assert loop.stats().generated == len(steady.given) + len(timed.given)  # each timed result counts as generated
    chunk = [FrameWork(scene.copy(), loop.analyse(scene, time), time) for time in (0.2, 0.24)]
    loop.render_many(chunk)
    assert [crop.time for crop in timed.given[-2:]] == [0.2, 0.24]


def test_a_chain_of_frame_stages_alone_looks_for_no_face(pool: ModelPool, store: Store, astronaut_path: Path,
                                                         grace_hopper: np.ndarray) -> None:
    alone = RunConfig.from_options([], processors=["frame_colorizer"])
    assert run_models(alone, ChainSpec.of(alone), store.catalog) == ("ddcolor",)  # no detector, mesh or recognizer
    drawn = RunConfig.from_options([], processors=["frame_colorizer", "face_debugger"])
    assert "face_landmark" in run_models(drawn, ChainSpec.of(drawn), store.catalog)
    loop = _loop(pool, astronaut_path, [("frame_enhancer", Darken())])
    assert loop.analyse(_scene(grace_hopper), 0.0) == [] and loop.stats().detections_run == 0
    assert loop.process(_scene(grace_hopper), 0.0).max() <= 127  # the frame stage still ran
