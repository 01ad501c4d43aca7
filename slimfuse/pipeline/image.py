"""Swap faces in one still image: read, analyse, select, swap each face in a capped-size crop, enhance the whole
frame (optional), write."""
from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import cv2
import numpy as np

from slimfuse.config import RunConfig
from slimfuse.errors import NoSourceFaceError, NoTargetFaceError, OutputIsInputError, UsageError
from slimfuse.faces.analyse import FaceAnalyser
from slimfuse.faces.detect import DetectorOptions
from slimfuse.faces.mesh_topology import MeshTopology
from slimfuse.faces.recognize import build_recognizer, recognizer_models
from slimfuse.faces.select import select_faces
from slimfuse.faces.types import Face
from slimfuse.media.image_io import LoadedImage, check_output_path, compose_output, read_image, write_image_atomic
from slimfuse.memory.batching import AdaptiveBatcher
from slimfuse.models.neural.frame_enhancers import SCALES
from slimfuse.models.pool import ModelPool
from slimfuse.models.store import Notify
from slimfuse.pipeline.report import StageHook
from slimfuse.processors.base import FaceProcessor, SourcePhoto
from slimfuse.processors.blend import paste_back
from slimfuse.processors.enhance import EnhanceProcessor
from slimfuse.processors.face_masks import FaceMasker
from slimfuse.processors.frame_enhance import FrameEnhanceOptions, FrameEnhancer
from slimfuse.processors.mesh_processor import MeshSwapProcessor
from slimfuse.processors.mesh_swap import MeshSwapOptions
from slimfuse.processors.onnx_swap import OnnxSwapProcessor

TOPOLOGY = "face_mesh_topology"


class ImageSwapper:
    """Everything a run needs, loaded once; `run` can be called for many targets."""

    def __init__(self, config: RunConfig, pool: ModelPool, notify: Notify,
                 batcher: AdaptiveBatcher | None = None) -> None:
        """batcher: the run's batch sizes (from its memory plan) and out-of-memory back-off."""
        self.config = config
        self.pool = pool
        self.notify = notify
        self.batcher = batcher if batcher is not None else AdaptiveBatcher(pool, notify=notify)
        self.analyser = FaceAnalyser(pool, DetectorOptions(
            model=config.face_detector_model, score=config.face_detector_score, tile_size=config.face_detector_size))
        self.identity = build_recognizer(config.face_recognizer_model, pool)
        topology = MeshTopology.from_json(pool.store.path(TOPOLOGY).read_text(encoding="utf-8"))
        masker = build_masker(config, pool, topology)
        self.processors: list[FaceProcessor] = [build_swapper(config, pool, topology, masker, self.batcher)]
        if config.face_enhancer_model != "none":
            self.processors.append(build_enhancer(config, pool, masker.for_enhancer(), self.batcher))
        self.frame_enhance = frame_enhance_options(config)

    def prepare_sources(self, keep_identity: bool) -> list[object]:
        """Each processor's state from the source photos (all of one person), computed once a run; then the models
        only preparation used are released (the identity model too unless `keep_identity`: reference selection or
        a video's tracker still need it)."""
        found: list[tuple[LoadedImage, Face]] = []
        for path in self.config.sources:
            loaded = read_image(path)
            faces = self.analyser.faces(loaded.rgb)
            if not faces:
                raise NoSourceFaceError(path)
            found.append((loaded, faces[0]))
        if len(found) > 1:
            self._warn_if_mixed_identities(found)
        photos = [SourcePhoto(image=loaded.rgb, face=face) for loaded, face in found]
        prepared = []
        for processor in self.processors:
            prepared.append(processor.prepare(photos))
            self.stage_done(processor)
        if self.frame_enhance is not None:
            self.pool.session(self.config.frame_enhancer_model)  # load (and check) it before any work
        if self.config.memory_level.keep_resident:
            return prepared
        identity = recognizer_models(self.config.face_recognizer_model)
        done = [name for processor in self.processors for name in processor.preparation_models]
        for name in dict.fromkeys([*done, *identity]):
            if not (keep_identity and name in identity):
                self.pool.release(name)
        return prepared

    def _warn_if_mixed_identities(self, found: list[tuple[LoadedImage, Face]]) -> None:
        descriptors = [self.identity.descriptor(loaded.rgb, face) for loaded, face in found]
        combined = self.identity.combined(descriptors)
        for (loaded, _), descriptor in zip(found, descriptors, strict=True):
            if self.identity.distance(descriptor, combined) > self.identity.same_person:
                self.notify(f"slimfuse: warning: {loaded.path}: this face looks like a different person "
                            "from the other source photos")

    def select(self, image: np.ndarray, faces: list[Face]) -> list[Face]:
        config = self.config
        if config.face_selector_mode != "reference":
            return select_faces(faces, config.face_selector_mode)
        reference = self.reference_descriptor(image, faces)
        return select_faces(faces, "reference", reference, lambda face: self.identity.descriptor(image, face),
                            config.reference_face_distance, self.identity.distance)

    def reference_descriptor(self, image: np.ndarray, faces: list[Face]) -> np.ndarray:
        config = self.config
        if config.reference_face_image is not None:
            reference = read_image(config.reference_face_image).rgb
            candidates = self.analyser.faces(reference)
            origin = config.reference_face_image
        else:
            reference, candidates, origin = image, faces, config.target
        if not candidates:
            raise NoTargetFaceError(origin, "no face found to use as the reference face")
        position = min(config.reference_face_position, len(candidates) - 1)
        return self.identity.descriptor(reference, candidates[position])

    def swap_frame(self, frame: np.ndarray, faces: list[Face], prepared: list[object]) -> np.ndarray:
        """Run every processor over the frame's faces, one batch per processor, pasting each result back."""
        for processor, state in zip(self.processors, prepared, strict=True):
            crops = [processor.crop(frame, face) for face in faces]
            for crop, result in zip(crops, processor.process(crops, state), strict=True):
                frame = paste_back(frame, result.image, result.alpha, crop.crop_from_frame)
            self.stage_done(processor)
        return frame

    def stage_done(self, processor: FaceProcessor) -> None:
        """A processor has run over what there was to do now: at a memory level that keeps one generator
        resident at a time, its generator goes, so the next stage's can load."""
        if self.config.memory_level.one_generator:
            for name in processor.generator_models:
                self.pool.release(name)

    def finish_frame(self, frame: np.ndarray) -> np.ndarray:
        """The whole frame after the face processors: the frame enhancer's result (at the frame's size, or at the
        model's scale with --frame-enhancer-keep-scale), or the frame itself when no frame enhancer is chosen."""
        if self.frame_enhance is None:
            return frame
        model = self.config.frame_enhancer_model
        return FrameEnhancer(self.pool.session(model), SCALES[model], self.frame_enhance).enhance(frame)

    def run(self, stage: StageHook | None = None) -> Path:
        config = self.config
        mark = stage or (lambda name: None)
        check_output_path(config.output)
        refuse_overwriting_inputs(config)
        prepared = self.prepare_sources(keep_identity=config.face_selector_mode == "reference")
        mark("sources")
        target = read_image(config.target)
        faces = self.select(target.rgb, self.analyser.faces(target.rgb))
        if not faces:
            raise NoTargetFaceError(config.target)
        result = self.finish_frame(self.swap_frame(target.rgb.copy(), faces, prepared))
        mark("processing")
        write_image_atomic(compose_output(scaled_like(target, result), result), config.output, target.icc_profile)
        mark("write")
        return config.output


def build_masker(config: RunConfig, pool: ModelPool, topology: MeshTopology) -> FaceMasker:
    """The face masks of the neural face processors (--face-mask-types and the options that go with them)."""
    try:
        return FaceMasker(pool, config.mask_options(), topology.face_oval, config.face_occluder_model,
                          config.face_parser_model, config.face_mask_regions)
    except ValueError as exc:
        raise UsageError(detail=f"face masks: {exc}") from exc


def build_swapper(config: RunConfig, pool: ModelPool, topology: MeshTopology, masker: FaceMasker,
                  batcher: AdaptiveBatcher | None = None) -> FaceProcessor:
    """The mesh swapper (with its own mesh mask), or the neural swapper named by --face-swapper-model."""
    if config.face_swapper_model != "mesh":
        try:
            return OnnxSwapProcessor(pool, config.face_swapper_model, config.face_swapper_pixel_boost, masker,
                                     batcher)
        except ValueError as exc:
            raise UsageError(detail=f"--face-swapper-model {config.face_swapper_model}: {exc}") from exc
    options = MeshSwapOptions(keep_mouth=config.keep_mouth, keep_eyes=config.keep_eyes, blend=config.blend)
    return MeshSwapProcessor(topology, options, config.target_face_size)


def build_enhancer(config: RunConfig, pool: ModelPool, masker: FaceMasker,
                   batcher: AdaptiveBatcher | None = None) -> FaceProcessor:
    """The face enhancer named by --face-enhancer-model, run after the swapper."""
    try:
        return EnhanceProcessor(pool, config.face_enhancer_model, config.face_enhancer_blend,
                                config.face_enhancer_weight, masker, batcher)
    except ValueError as exc:
        raise UsageError(detail=f"--face-enhancer-model {config.face_enhancer_model}: {exc}") from exc


def frame_enhance_options(config: RunConfig) -> FrameEnhanceOptions | None:
    """The frame enhancer's tiling and blend, checked before any work; None when no frame enhancer is chosen."""
    if config.frame_enhancer_model == "none":
        return None
    if config.frame_enhancer_model not in SCALES:
        raise UsageError(detail=f"--frame-enhancer-model {config.frame_enhancer_model}: not a frame enhancer; "
                         f"choose one of {', '.join(SCALES)}")
    try:
        return config.frame_enhance_options()
    except ValueError as exc:
        raise UsageError(detail=f"--frame-enhancer-tile-size / --frame-enhancer-tile-overlap: {exc}") from exc


def scaled_like(loaded: LoadedImage, rgb: np.ndarray) -> LoadedImage:
    """`loaded` at `rgb`'s size, when the frame enhancer kept its scale: the alpha scaled with it, 16-bit images
    widened from the 8-bit result (no pixel is left unchanged by an upscale)."""
    height, width = rgb.shape[:2]
    if loaded.rgb.shape[:2] == (height, width):
        return loaded
    alpha = None if loaded.alpha is None else cv2.resize(loaded.alpha, (width, height),
                                                         interpolation=cv2.INTER_LINEAR)
    high = None if loaded.high is None else rgb.astype(np.uint16) * np.uint16(257)
    return replace(loaded, rgb=rgb, alpha=alpha, high=high)


def refuse_overwriting_inputs(config: RunConfig) -> None:
    inputs = [*config.sources, config.target]
    if config.reference_face_image is not None:
        inputs.append(config.reference_face_image)
    output = config.output
    for path in inputs:
        same = output.resolve() == path.resolve()
        if not same and output.exists() and path.exists():
            same = os.path.samefile(output, path)
        if same:
            raise OutputIsInputError(output)

