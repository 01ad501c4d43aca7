"""build_run: the one place where a run is assembled (store, plan, pool, batcher, report, analysis, processor chain).

The command line, the benchmarks, the Python API (slimfuse.Swapper) and the server, live and batch callers all
build their runs here; what they differ in is where frames come from and go to.
"""
from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from slimfuse.config import RunConfig
from slimfuse.errors import NoSourceFaceError, NoTargetFaceError
from slimfuse.faces.analyse import FaceAnalyser
from slimfuse.faces.blazeface import DetectorOptions
from slimfuse.faces.recognize import Recognizer, build_recognizer, recognizer_models
from slimfuse.faces.classify import FaceClasses
from slimfuse.faces.select import ClassFilter, FaceSelector, in_order
from slimfuse.faces.track import TrackerOptions
from slimfuse.faces.types import Face
from slimfuse.log import notice
from slimfuse.media.c2pa_sign import check_signer
from slimfuse.media.image_io import read_image
from slimfuse.media.provenance import C2paSigner, ProvenanceLabel
from slimfuse.memory.batching import AdaptiveBatcher
from slimfuse.models.catalog import Catalog
from slimfuse.models.neural.classifiers import FAIRFACE
from slimfuse.models.pool import ModelPool
from slimfuse.models.store import Notify, Store, default_home
from slimfuse.pipeline.chain import Chain, ChainSpec, PreparedChain
from slimfuse.pipeline.frames import FrameLoop
from slimfuse.pipeline.plan import RunPlan, plan_run
from slimfuse.pipeline.report import RunReport
from slimfuse.pipeline.residency import Residency
from slimfuse.pipeline.reuse import ReuseOptions
from slimfuse.processors.base import SourcePhoto

LOG = logging.getLogger(__name__)
# Reuse threshold when --reuse-threshold is not given and the swapper is a neural generator (grey levels).
NEURAL_REUSE_THRESHOLD = 2.0


@dataclass(frozen=True)
class SourceImage:
    """A source photo: where it came from (a path, or a caller's label) and its RGB pixels."""

    label: str
    rgb: np.ndarray

    @classmethod
    def read(cls, path: Path) -> SourceImage:
        """The photo at `path` (typed errors naming it when it is missing or cannot be read)."""
        return cls(str(path), read_image(path).rgb)


@dataclass
class Run:
    """An assembled run: its models are loaded on first use and shared by every target it swaps."""

    config: RunConfig
    plan: RunPlan
    store: Store
    pool: ModelPool
    batcher: AdaptiveBatcher
    chain: Chain
    analyser: FaceAnalyser
    recognizer: Recognizer
    residency: Residency
    report: RunReport | None
    provenance: ProvenanceLabel | None
    """The label every output of the run carries (None: --no-provenance)."""
    _sources: Sequence[SourceImage] | None = None
    """The source photos already in memory; None: read from config.sources on first use."""
    _prepared: PreparedChain | None = field(default=None, init=False)
    _reference: np.ndarray | None = field(default=None, init=False)
    _source_classes: FaceClasses | None = field(default=None, init=False)

    @property
    def notify(self) -> Notify:
        return self.store.notify

    def mark(self, stage: str) -> None:
        """The end of a stage (models, sources, processing, write), for the run report."""
        if self.report is not None:
            self.report.stage(stage, self.pool)

    def faces(self, rgb: np.ndarray) -> list[Face]:
        """Every face of an image with its mesh, largest first."""
        return self.analyser.faces(rgb)

    def prepare(self, keep_identity: bool) -> PreparedChain:
        """Each processor's state from the source photos, computed once a run; then the models only preparation
        used are released (the identity model too unless `keep_identity`)."""
        if self._prepared is None:
            self._prepared = self.prepare_sources(self._source_images(), keep_identity)
        return self._prepared

    def prepare_sources(self, sources: Sequence[SourceImage], keep_identity: bool = True) -> PreparedChain:
        """Each processor's state from these photos of one person, on the run's pool (nothing but what preparing
        needs is loaded again): the -s photos' (`prepare` keeps it), or another person's to switch to while
        frames go through (FrameLoop.use_sources; its caller keeps it). NoSourceFaceError naming the first photo
        without a face."""
        found: list[tuple[SourceImage, Face]] = []
        for source in sources:
            faces = self.analyser.faces(source.rgb)
            if not faces:
                raise NoSourceFaceError(Path(source.label))
            found.append((source, faces[0]))
        if len(found) > 1:
            self._warn_if_mixed_identities(found)
        prepared = self.chain.prepare([SourcePhoto(image=source.rgb, face=face) for source, face in found])
        self.residency.after_sources(self.chain.preparation_models,
                                     recognizer_models(self.config.faces.face_recognizer_model), keep_identity)
        return prepared

    def loop(self, prepared: PreparedChain, reference: np.ndarray | None = None,
             origin: Path = Path("reference image")) -> FrameLoop:
        """A fresh frame loop (tracks, selection, reuse) for one target or stream. reference: an RGB picture of the
        person to swap (reference selection for this loop; `origin` names it in an error), else the config's
        --reference-face-image or mode."""
        faces = self.config.faces
        mode = "reference" if reference is not None else faces.face_selector_mode
        descriptor = self._descriptor_of(reference, origin) if reference is not None else self._configured_reference()
        selector = FaceSelector(mode, descriptor, faces.reference_face_position, faces.reference_face_distance,
                                self.recognizer.distance, faces.face_selector_order, self._class_filter())
        tracking = TrackerOptions(detect_interval=faces.face_detector_interval)
        if faces.face_tracker_score is not None:
            tracking = replace(tracking, match_iou=faces.face_tracker_score)
        return FrameLoop(self.chain, prepared, self.analyser, self.recognizer, selector, tracking,
                         self.reuse_options())

    def reuse_options(self) -> ReuseOptions:
        threshold = self.config.video.reuse_threshold
        if threshold is None:
            threshold = NEURAL_REUSE_THRESHOLD if self._neural_faces else 0.0
        return ReuseOptions(threshold=threshold, max_frames=self.config.video.reuse_max_frames)

    @property
    def _neural_faces(self) -> bool:
        """Whether a neural model makes the faces: a neural swapper, or, without the face swapper, a face stage
        that runs a generator (the deep swapper, the age modifier, ...). The mesh swapper is fast enough to run
        every frame, and a face enhancer after it follows its faces."""
        if "face_swapper" in self.config.stages:
            return self.config.swap.neural
        return any(processor.generator_models for processor in self.chain.processors)

    def close(self) -> None:
        """Release every model and arena the run holds."""
        self.pool.release_all()

    def _source_images(self) -> Sequence[SourceImage]:
        if self._sources is None:
            self._sources = [SourceImage.read(path) for path in self.config.photos]
        return self._sources

    def _warn_if_mixed_identities(self, found: list[tuple[SourceImage, Face]]) -> None:
        """Each source photo against every other: the mean of several people would look like none of them."""
        recognizer = self.recognizer
        descriptors = [recognizer.descriptor(source.rgb, face) for source, face in found]
        for later in range(1, len(found)):
            for earlier in range(later):
                if recognizer.distance(descriptors[later], descriptors[earlier]) > recognizer.same_person:
                    LOG.warning(f"{found[later][0].label}: this face looks like a different "
                                f"person from {found[earlier][0].label}")
                    break

    def _configured_reference(self) -> np.ndarray | None:
        """The reference person's identity from --reference-face-image (computed once a run); None when the
        selector takes it from the target's own faces."""
        image = self.config.faces.reference_face_image
        if self.config.faces.face_selector_mode != "reference" or image is None:
            return None
        if self._reference is None:
            self._reference = self._descriptor_of(read_image(image).rgb, image)
        return self._reference

    def _descriptor_of(self, rgb: np.ndarray, origin: Path) -> np.ndarray:
        """The identity of the reference face of a picture: the face at --reference-face-position, in the
        selector's order, among the faces its class filter keeps."""
        faces = self.config.faces
        candidates = in_order(self.analyser.faces(rgb), faces.face_selector_order, lambda face: face)
        keep = self._class_filter()
        if keep is not None:
            classifier = self.analyser.classifier()
            candidates = [face for face in candidates if keep.keeps(classifier.classify(rgb, face))]
        if not candidates:
            raise NoTargetFaceError(origin, "no face found to use as the reference face")
        position = min(faces.reference_face_position, len(candidates) - 1)
        return self.recognizer.descriptor(rgb, candidates[position])

    def _class_filter(self) -> ClassFilter | None:
        """What --face-selector-gender, -race and -age-start/-end keep; `auto` takes the first source photo's face's
        (classified once a run)."""
        faces = self.config.faces
        if self._source_classes is None and "auto" in (faces.face_selector_gender, faces.face_selector_race):
            source = self._source_images()[0]
            found = self.analyser.faces(source.rgb)
            if not found:
                raise NoSourceFaceError(Path(source.label))
            self._source_classes = self.analyser.classifier().classify(source.rgb, found[0])
        return ClassFilter.of(faces, self._source_classes)


def provenance_label(config: RunConfig) -> ProvenanceLabel | None:
    """What every output of the run says it is: composited by a trained model whenever one made pixels (a neural
    swapper or an enhancer), else synthetic; signed with C2PA when credentials are given (checked here, before
    any work: exit 22 when they are refused or the extra is missing). None with --no-provenance."""
    output = config.output
    if not output.provenance:
        return None
    signer = None
    if output.c2pa_key is not None and output.c2pa_certificates is not None:
        signer = C2paSigner(output.c2pa_key, output.c2pa_certificates)
    neural = config.swap.neural or any(stage not in ("face_swapper", "face_debugger") for stage in config.stages)
    label = ProvenanceLabel.for_swapper(neural, signer)
    if signer is not None:
        check_signer(signer, label)
    return label


def run_models(config: RunConfig, spec: ChainSpec, catalog: Catalog) -> tuple[str, ...]:
    """Every catalog model a run of `config` (with its chain `spec`) loads, each once, in first-use order: what the
    analysis (when a stage needs faces) and the processor chain declare."""
    if not spec.works_on_faces:
        return spec.models(catalog)
    faces = config.faces
    classifier = (FAIRFACE,) if faces.classified else ()
    return tuple(dict.fromkeys([*FaceAnalyser.models_for(faces.face_detector_model),
                                *recognizer_models(faces.face_recognizer_model), *classifier, *spec.models(catalog)]))


def default_store(config: RunConfig, notify: Notify | None = None) -> Store:
    """The model store of $SLIMFUSE_HOME, with the config's --models-dir."""
    return Store(home=default_home(), models_dir=config.runtime.models_dir, notify=notify or notice)


def plan_for(config: RunConfig, target: Path | None = None, store: Store | None = None) -> RunPlan:
    """The plan build_run makes for `config` (MemoryBudgetError when it cannot fit), without loading or making
    anything: what the command line does its variant work from, and a server checks a job against before it
    queues it."""
    store = store or default_store(config)
    return plan_run(config, run_models(config, ChainSpec.of(config), store.catalog), store, target)


def build_run(config: RunConfig, target: Path | None = None, report: RunReport | None = None,
              notify: Notify | None = None, sources: Sequence[SourceImage] | None = None,
              store: Store | None = None, plan: RunPlan | None = None) -> Run:
    """Assemble a run. target: the target path when known (the memory plan sizes its frames in flight, and a
    video gets one ONNX Runtime thread per model); report: the run report the run fills in (its caller writes it,
    also when this fails); sources: the source photos already in memory (default: read from config.sources on
    first use); store: the model store (default: $SLIMFUSE_HOME's, with config's --models-dir); plan: the plan
    its caller made for it (plan_for), else made here. Raises MemoryBudgetError before any model is loaded when
    the job cannot fit its --memory-budget. Variants the plan found missing are not made here: the run says so
    and loads the originals in their place."""
    store = store or default_store(config, notify)
    spec = ChainSpec.of(config)
    if plan is None:
        plan = plan_run(config, run_models(config, spec, store.catalog), store, target)
    if plan.variant_work.pending:
        LOG.warning("variants are not ready, so the originals run in their place; make them with: "
                    + "; ".join(plan.variant_work.commands()))
    threads = {} if plan.generator_threads is None else dict.fromkeys(plan.generators, plan.generator_threads)
    pool = ModelPool(store, plan.runtime, budget_bytes=plan.memory.pool_budget_bytes, variants=dict(plan.variants),
                     cpu_only=plan.cpu_only, threads=threads)
    memory = plan.memory
    batcher = AdaptiveBatcher(pool, memory.batch_sizes(), memory.batch_size, store.notify, memory.refine_within_bytes)
    residency = Residency(pool, config.memory.level, plan.generators)
    chain = spec.build(pool, batcher, plan.face_size, plan.pixel_boost, plan.frame_tile, residency)
    faces = config.faces
    analyser = FaceAnalyser(pool, DetectorOptions(model=faces.face_detector_model, score=faces.face_detector_score,
                                                  tile_size=faces.face_detector_size, angles=faces.face_detector_angles,
                                                  margin=faces.face_detector_margin),
                            presence=faces.face_landmarker_score)
    recognizer = build_recognizer(faces.face_recognizer_model, pool)
    run = Run(config, plan, store, pool, batcher, chain, analyser, recognizer, residency, report,
              provenance_label(config), sources)
    run.mark("models")
    return run
