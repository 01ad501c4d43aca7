"""Video memory levels (--video-memory-level 0-3, or --video-memory-strategy tolerant|moderate|strict).

Each level trades speed for a lower peak, and each adds to the one before:
- 0 (tolerant): every model stays resident for the whole run, ONNX Runtime keeps its arenas, and frames are
  rendered in chunks so the generators run wide batches across frames.
- 1 (moderate, the default): models are released as soon as no stage needs them (the source's recognizer after
  the source is prepared), batches are sized to the budget, the CPU arena is shrunk after every generator run, and
  frames stream one at a time through two render threads.
- 2 (strict): stage by stage over chunks of frames: the swapper runs over the whole chunk, is released, then the
  enhancer does; one generator is resident at a time, the light analysis models run on the CPU, ONNX Runtime keeps
  no arenas or memory patterns. Chunks are as long as the queues (8 frames): a generator is reloaded once a chunk,
  and the frames cost little beside the models.
- 3: level 2 plus the stored reduced-precision variants that passed their quality gate (fp16 on a GPU provider,
  int8 on the CPU), frame-enhancer tiles of at most 128 px, face crops of at most 512 px, batch 1 and chunks of 4.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType


@dataclass(frozen=True)
class MemoryLevel:
    level: int
    keep_resident: bool
    """Every model stays loaded for the whole run (nothing is released between stages)."""
    chunked: bool
    """Frames are rendered in chunks, each processor over the whole chunk before the next."""
    one_generator: bool
    """Generators are released after their stage of each chunk, so only one is resident at a time."""
    cpu_arena: bool
    """ONNX Runtime's CPU arena (fast reuse of activation memory, which it keeps until the session ends)."""
    shrink_arenas: bool
    """Ask ONNX Runtime to give its arenas' free memory back after each generator run."""
    memory_patterns: bool
    analysis_on_cpu: bool
    """The detectors, landmarkers, recognizers and mask models run on the CPU even with a GPU provider."""
    reduced_precision: bool
    """Use the stored fp16 / int8 variants that passed their gate."""
    max_face_size: int | None
    """Cap on the face crop (--target-face-size, --face-swapper-pixel-boost); None: as given."""
    max_frame_tile: int | None
    """Cap on --frame-enhancer-tile-size; None: as given."""
    max_batch: int
    """Most items per generator call (the budget may lower it)."""
    queue_frames: int
    """Frames each video queue holds (and each chunk, when chunked)."""
    render_workers: int


LEVELS: Mapping[int, MemoryLevel] = MappingProxyType({level.level: level for level in (
    MemoryLevel(0, keep_resident=True, chunked=True, one_generator=False, cpu_arena=True, shrink_arenas=False,
                memory_patterns=True, analysis_on_cpu=False, reduced_precision=False, max_face_size=None,
                max_frame_tile=None, max_batch=8, queue_frames=8, render_workers=1),
    MemoryLevel(1, keep_resident=False, chunked=False, one_generator=False, cpu_arena=True, shrink_arenas=True,
                memory_patterns=True, analysis_on_cpu=False, reduced_precision=False, max_face_size=None,
                max_frame_tile=None, max_batch=8, queue_frames=8, render_workers=2),
    MemoryLevel(2, keep_resident=False, chunked=True, one_generator=True, cpu_arena=False, shrink_arenas=True,
                memory_patterns=False, analysis_on_cpu=True, reduced_precision=False, max_face_size=None,
                max_frame_tile=None, max_batch=2, queue_frames=8, render_workers=1),
    MemoryLevel(3, keep_resident=False, chunked=True, one_generator=True, cpu_arena=False, shrink_arenas=True,
                memory_patterns=False, analysis_on_cpu=True, reduced_precision=True, max_face_size=512,
                max_frame_tile=128, max_batch=1, queue_frames=4, render_workers=1),
)})
DEFAULT_LEVEL = 1
STRATEGIES: Mapping[str, int] = MappingProxyType({"tolerant": 0, "moderate": 1, "strict": 2})
"""--video-memory-strategy names (FaceFusion's) for levels 0-2."""
