"""What may change while a live session runs, and the one place where it is applied to the run's frame loop.

`Controls` is what the terminal's keys (live/keys.py) and the page's controls (serve/live_worker.py) set, each from
its own thread; `LiveLoop` reads it before each frame and applies what changed: swap on/off, the selector mode,
the source face (another person's processor state, prepared once on the run's pool and kept), the target's mouth
kept or swapped, the face enhancer on/off, the face debugger's drawing on/off (the terminal's key only), the face
editor's values (the page's sliders). Each change
is said in one line; one that the run cannot make is said in one warning line, and its control goes back to what the
run does.
"""
from __future__ import annotations

import logging
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from slimfuse.errors import NoSourceFaceError
from slimfuse.config import SelectorMode
from slimfuse.pipeline.frames import FrameLoop
from slimfuse.pipeline.run import Run, SourceImage
from slimfuse.processors.base import EditsFaces

LOG = logging.getLogger(__name__)


@dataclass
class Controls:
    """What may change while a session runs (keys in the terminal, controls in the page). Fields left None take
    the run's configuration when the LiveLoop starts."""

    swap: bool = True
    selector_mode: SelectorMode | None = None
    face: int = 0
    """The source face asked for: 0 the -s photos, then each further face in turn."""
    faces: int = 1
    """How many source faces there are (the LiveLoop keeps it up to date)."""
    keep_mouth: bool | None = None
    enhancer: bool = True
    debugger: bool = True
    face_editor: dict[str, float] = field(default_factory=dict)
    """The face editor's values asked for (by the options' names less `face_editor_`); those not named stay as
    the run has them."""
    stop: threading.Event = field(default_factory=threading.Event)

    def toggle_swap(self) -> None:
        self.swap = not self.swap

    def next_face(self) -> None:
        self.face = (self.face + 1) % max(1, self.faces)

    def toggle_mouth(self) -> None:
        self.keep_mouth = not self.keep_mouth

    def toggle_enhancer(self) -> None:
        self.enhancer = not self.enhancer

    def toggle_debugger(self) -> None:
        self.debugger = not self.debugger

    def toggle_selector_mode(self) -> None:
        self.selector_mode = "one" if self.selector_mode == "many" else "many"


@dataclass(frozen=True)
class Capabilities:
    """What a run can change while it runs (the page shows only those controls)."""

    keep_mouth: bool
    enhancer: bool
    face_editor: Mapping[str, float] | None
    """The face editor's values as the session starts, when it has one."""


class LiveLoop:
    """The run's FrameLoop under Controls. faces: further source faces (each the photos of one person), switched
    to in turn after the run's own."""

    def __init__(self, run: Run, controls: Controls, faces: Sequence[Sequence[SourceImage]] = ()) -> None:
        self.run = run
        self.controls = controls
        self.frames: FrameLoop = run.loop(run.prepare(keep_identity=True))
        self._faces: list[tuple[SourceImage, ...]] = [(), *(tuple(face) for face in faces)]  # 0: the run's own
        self._prepared: dict[int, Sequence[object]] = {0: self.frames.prepared}
        self._unusable: dict[int, str] = {}
        self._face = 0
        """The face in use."""
        self._asked = 0
        """The face last asked for (a face without a face is passed over, the one in use kept)."""
        self._swap = True
        self._mode: SelectorMode = self.frames.selector.mode
        self._keep_mouth = run.config.swap.keep_mouth
        self._enhancer = True
        self._debugger = True
        self._edits = dict(run.config.face_editor.values())
        for processor in self._editors:  # as configured, whatever a loop on this run before left
            processor.edit_faces(self._edits)
        if run.chain.can_keep_mouth:  # as configured, whatever a loop on this run before left
            run.chain.keep_mouth(self._keep_mouth)
        if run.chain.has("face_enhancer"):
            run.chain.switch("face_enhancer", True)
        if run.chain.has("face_debugger"):
            run.chain.switch("face_debugger", True)
        controls.faces = len(self._faces)
        if controls.selector_mode is None:
            controls.selector_mode = self._mode
        if controls.keep_mouth is None:
            controls.keep_mouth = self._keep_mouth
        self.apply()

    @property
    def capabilities(self) -> Capabilities:
        return Capabilities(keep_mouth=self.run.chain.can_keep_mouth, enhancer=self.run.chain.has("face_enhancer"),
                            face_editor=dict(self._edits) if self._editors else None)

    @property
    def _editors(self) -> list[EditsFaces]:
        return [processor for processor in self.run.chain.processors if isinstance(processor, EditsFaces)]

    @property
    def face(self) -> int:
        """The source face in use (0: the run's own)."""
        return self._face

    def add_face(self, sources: Sequence[SourceImage]) -> None:
        """Another person to switch to (a photo sent from the page), switched to at once."""
        self._faces.append(tuple(sources))
        self.controls.faces = len(self._faces)
        self.controls.face = len(self._faces) - 1
        self.apply()

    def process(self, rgb: np.ndarray, time: float) -> np.ndarray:
        """The frame swapped as the controls say now (as it came, with swap off)."""
        self.apply()
        return self.frames.process(rgb, time) if self._swap else rgb

    def apply(self) -> None:
        """Make what changed in the controls since the last frame."""
        controls = self.controls
        if controls.swap != self._swap:
            self._swap = controls.swap
            LOG.info(f"swap {'on' if self._swap else 'off'}")
        if controls.selector_mode is not None and controls.selector_mode != self._mode:
            self._mode = self.frames.selector.mode = controls.selector_mode
            LOG.info(f"face selector mode {self._mode}")
        if controls.face != self._asked:
            self._switch_face(controls.face)
        if controls.keep_mouth is not None and controls.keep_mouth != self._keep_mouth:
            self._switch_mouth(controls.keep_mouth)
        if controls.enhancer != self._enhancer:
            self._switch_enhancer(controls.enhancer)
        if controls.debugger != self._debugger:
            self._switch_debugger(controls.debugger)
        changed = {name: value for name, value in controls.face_editor.items() if self._edits.get(name) != value}
        if changed:
            self._edit_faces(changed)

    def _switch_face(self, index: int) -> None:
        self._asked = index
        if not 0 <= index < len(self._faces):
            return
        prepared = self._prepared.get(index)
        if prepared is None and index not in self._unusable:
            try:
                prepared = self._prepared[index] = self.run.prepare_sources(self._faces[index])
            except NoSourceFaceError as error:
                self._unusable[index] = error.message
        if prepared is None:
            LOG.warning(f"{self._unusable[index]}; keeping source face {self._face + 1}")
            return
        self.frames.use_sources(prepared)
        self._face = index
        LOG.info(f"source face {index + 1} of {len(self._faces)}: {self._label(index)}")

    def _switch_mouth(self, keep: bool) -> None:
        if not self.run.chain.can_keep_mouth:
            LOG.warning(f"the {self.run.config.swap.face_swapper_model} swapper cannot keep the target's mouth while "
                        "it runs (its masks have no mouth); start it with --face-mask-types region and "
                        "--face-mask-regions without mouth")
            self.controls.keep_mouth = self._keep_mouth
            return
        self.run.chain.keep_mouth(keep)
        self._keep_mouth = keep
        self.frames.forget_generated()
        LOG.info("mouth: the target's kept" if keep else "mouth: swapped with the face")

    def _switch_enhancer(self, on: bool) -> None:
        chain = self.run.chain
        if not chain.has("face_enhancer"):
            LOG.warning("there is no face enhancer to switch on or off: start with --face-enhancer-model")
            self.controls.enhancer = self._enhancer
            return
        chain.switch("face_enhancer", on)
        self._enhancer = on
        self.frames.forget_generated()
        LOG.info(f"face enhancer {'on' if on else 'off'}")

    def _switch_debugger(self, on: bool) -> None:
        chain = self.run.chain
        if not chain.has("face_debugger"):
            LOG.warning("there is no face debugger to switch on or off: start with --processors face_swapper "
                        "face_debugger")
            self.controls.debugger = self._debugger
            return
        chain.switch("face_debugger", on)  # it draws over the faces, so what was generated stays usable
        self._debugger = on
        LOG.info(f"face debugger {'on' if on else 'off'}")

    def _edit_faces(self, values: dict[str, float]) -> None:
        editors = self._editors
        if not editors:
            LOG.warning("there is no face editor to change: start with --processors ... face_editor")
            self.controls.face_editor = {}
            return
        try:
            for processor in editors:
                processor.edit_faces(values)
        except ValueError as error:
            LOG.warning(f"face editor: {error}")
            self.controls.face_editor = dict(self._edits)
            return
        self._edits.update(values)
        self.frames.forget_generated()
        LOG.info("face editor: " + ", ".join(f"{name.replace('_', ' ')} {value:g}" for name, value in values.items()))

    def _label(self, index: int) -> str:
        if index == 0:
            return ", ".join(str(path) for path in self.run.config.sources) or "the source photos"
        return ", ".join(source.label for source in self._faces[index])
