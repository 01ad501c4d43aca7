"""The neural face swappers (inswapper, hyperswap, simswap, ghost, blendswap, uniface) as a FaceProcessor.

crop: the target face aligned to the model's template at the model's size (times the pixel boost).
prepare: the source identity the model takes (see slimfuse.models.neural.swappers): the ArcFace embedding of the
source photos (through the emap or an embedding converter where the model needs it), or a picture of the
source face. process: all crops of a frame (and all pixel-boost sub-images) in batches where the model's batch
axis allows, one by one where it does not; the alpha is the run's face masks (`paste_masks.FaceMasker`; a run's
default is the crop's blurred box and the mesh's face oval). Sessions and the emap come from the pool; nothing
here reads files or parses options.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from slimfuse.config import SwapOptions
from slimfuse.faces.align import five_points, warp_face
from slimfuse.faces.analyse import frontalness
from slimfuse.faces.recognize import ArcFaceRecognizer, normalise
from slimfuse.faces.types import Face
from slimfuse.memory.batching import AdaptiveBatcher
from slimfuse.models.initializers import last_initializer
from slimfuse.models.neural.swappers import RECIPES, RECOGNIZER, TARGET_NORMALISED, SwapperRecipe
from slimfuse.models.pool import ModelPool
from slimfuse.models.tensors import run_batched, to_images, to_tensor
from slimfuse.processors.base import FaceCrop, Processed, SourcePhoto, aligned_crop
from slimfuse.processors.paste_masks import FaceMasker
from slimfuse.processors.pixel_boost import boost_factor, explode, implode

EMAP_BYTES = 512 * 512 * 4


@dataclass(frozen=True)
class SwapSource:
    """What the swapper feeds as its `source` input, the same for every target face of the run."""

    tensor: np.ndarray
    embedding: np.ndarray | None
    """The L2-normalised ArcFace embedding of the source photos (None for picture-taking models)."""


def emap_of(pool: ModelPool, model: str) -> np.ndarray:
    """inswapper's emap: the graph's last initializer (512 x 512), held by the pool."""

    def read(path: Path) -> np.ndarray:
        try:
            emap = last_initializer(path)
        except ValueError as exc:
            pool.store.reject(model, path, f"expected a 512x512 emap as the graph's last initializer, found {exc}")
        if emap.shape != (512, 512):
            pool.store.reject(model, path, "expected a 512x512 emap as the graph's last initializer, "
                              f"found one of shape {'x'.join(map(str, emap.shape))}")
        return emap.astype(np.float32)

    return pool.get(model, read, key=f"{model}#emap", nbytes=EMAP_BYTES)


def inswapper_latent(embedding: np.ndarray, emap: np.ndarray) -> np.ndarray:
    """(1, 512): the normalised embedding times the emap, normalised again (insightface's INSwapper.get; FaceFusion
    3.8.1 leaves out the second normalisation: the direction is the same, the length differs)."""
    return normalise(normalise(np.asarray(embedding, dtype=np.float32)).reshape(1, -1) @ emap.astype(np.float32))


def identity_latent(recipe: SwapperRecipe, raw: np.ndarray, emap: Callable[[], np.ndarray],
                    convert: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
    """(1, 512): the `source` tensor of an embedding-taking swapper for the raw ArcFace embeddings `raw` (N, 512) of
    one person's photos; emap: inswapper's (read only when needed); convert: the recipe's embedding converter."""
    if recipe.source == "emap":
        return inswapper_latent(normalise(normalise(raw).mean(axis=0)), emap())
    if recipe.source == "embedding":
        return normalise(normalise(raw).mean(axis=0)).reshape(1, -1)
    converted = np.asarray(convert(raw.mean(axis=0, keepdims=True).astype(np.float32)), dtype=np.float32)
    return (normalise(converted) if recipe.source == "converted_normed" else converted).reshape(1, -1)


NEUTRAL_WEIGHT = 0.5
"""--face-swapper-weight at which the source identity goes in as it is."""


def balance_identity(latent: np.ndarray, target_raw: np.ndarray, weight: float, family: str) -> np.ndarray:
    """FaceFusion's --face-swapper-weight: the source latent mixed with the target face's own embedding, by
    0.35 of the target at weight 0, none at 0.5, and -0.35 (away from the target) at 1. Families in
    TARGET_NORMALISED mix the target's normalised embedding, the others its raw one (as FaceFusion does)."""
    shift = np.float32(np.interp(weight, (0.0, 1.0), (0.35, -0.35)))
    target = np.asarray(target_raw, dtype=np.float32).reshape(1, -1)
    if family in TARGET_NORMALISED:
        target = normalise(target)
    return (np.asarray(latent, dtype=np.float32).reshape(1, -1) * (1 - shift) + target * shift).astype(np.float32)


def swap_source(pool: ModelPool, model: str, sources: Sequence[SourcePhoto]) -> SwapSource:
    """What swapper `model` takes as its source from the photos (all of one person), by its recipe: a picture of
    the most frontal face, or the ArcFace embedding of them all, through the emap or an embedding converter."""
    if not sources:
        raise ValueError("no source photo")
    recipe, io = RECIPES[model], pool.store.catalog.get(model).io
    if io is None or io.crop_size is None:
        raise ValueError(f"{model} is not a neural face swapper")
    if recipe.source == "image":
        best = max(sources, key=lambda photo: frontalness(photo.face))
        picture, _ = warp_face(best.image, _points(best.face), recipe.source_template or "",
                               recipe.source_size or io.crop_size)
        return SwapSource(tensor=to_tensor([picture]), embedding=None)
    recognizer = ArcFaceRecognizer(pool, RECOGNIZER)
    raw = recognizer.raw_embeddings([recognizer.crop(photo.image, photo.face) for photo in sources])

    def convert(mean: np.ndarray) -> np.ndarray:
        converter_io = pool.store.catalog.get(recipe.converter or "").io
        name = converter_io.inputs[0].name if converter_io is not None else "input"
        return run_batched(pool.session(recipe.converter or ""), {name: mean})

    latent = identity_latent(recipe, raw, lambda: emap_of(pool, model), convert)
    return SwapSource(tensor=latent, embedding=normalise(normalise(raw).mean(axis=0)))


class OnnxSwapProcessor:
    def __init__(self, pool: ModelPool, options: SwapOptions, pixel_boost: int | None, masker: FaceMasker,
                 batcher: AdaptiveBatcher) -> None:
        """options: the run's; pixel_boost: its --face-swapper-pixel-boost as the run's plan capped it (None for the
        model's own size); masker: the run's face masks; batcher: the run's batch sizes and out-of-memory back-off."""
        model = options.face_swapper_model
        spec = pool.store.catalog.get(model)
        if model not in RECIPES or spec.io is None or spec.io.template is None or spec.io.crop_size is None:
            raise ValueError(f"{model} is not a neural face swapper")
        self.pool = pool
        self.model = model
        self.generator_models: tuple[str, ...] = (model,)
        self.io = spec.io
        self.recipe = RECIPES[model]
        self.weight = options.face_swapper_weight
        self.template: str = spec.io.template
        self.model_size: int = spec.io.crop_size
        self.factor = boost_factor(self.model_size, pixel_boost)
        self.size = self.model_size * self.factor
        self.masker = masker
        self.batcher = batcher
        names = [tensor.name for tensor in spec.io.inputs]
        self.target_input, self.source_input = "target", "source"
        if set(names) != {self.target_input, self.source_input}:
            raise ValueError(f"{model}: expected inputs target and source, the catalog says {names}")

    def prepare(self, sources: Sequence[SourcePhoto]) -> SwapSource:
        self.pool.session(self.model)  # load (and check) the swapper and its mask models before any work for them
        self.masker.load()
        return swap_source(self.pool, self.model, sources)

    @property
    def preparation_models(self) -> tuple[str, ...]:
        """Models only `prepare` uses (the source identity's recognizer and converter)."""
        if self.recipe.source == "image":
            return ()
        converter = (self.recipe.converter,) if self.recipe.converter else ()
        return converter if self.balances else (RECOGNIZER, *converter)

    @property
    def balances(self) -> bool:
        """Whether each target face's own identity is mixed in (--face-swapper-weight other than 0.5)."""
        return self.weight != NEUTRAL_WEIGHT and self.recipe.source != "image"

    def crop(self, frame: np.ndarray, face: Face) -> FaceCrop:
        return aligned_crop(frame, face, self.template, self.size)

    def process(self, crops: Sequence[FaceCrop], prepared: SwapSource) -> list[Processed]:
        if not crops:
            return []
        tiles = np.concatenate([implode(crop.image, self.factor) for crop in crops])
        items = {self.target_input: to_tensor(tiles, self.io.mean, self.io.std)}
        shared = {self.source_input: prepared.tensor}
        if self.balances:
            latents = self.balanced_sources(crops, prepared)
            items[self.source_input] = np.repeat(latents, self.factor * self.factor, axis=0)
            shared = {}
        output = self.batcher.run(self.model, items, shared)
        swapped = to_images(output, self.io.output_range)
        per_crop = self.factor * self.factor
        alphas = self.masker.masks(crops)
        results = []
        for index, alpha in enumerate(alphas):
            image = explode(swapped[index * per_crop:(index + 1) * per_crop], self.factor)
            results.append(Processed(image=image, alpha=alpha))
        return results

    def balanced_sources(self, crops: Sequence[FaceCrop], prepared: SwapSource) -> np.ndarray:
        """(len(crops), 512): the source latent balanced with each target face's ArcFace embedding, read from its
        crop (the face realigned to the recognizer's template)."""
        recognizer = ArcFaceRecognizer(self.pool, RECOGNIZER)
        raw = recognizer.raw_embeddings([recognizer.aligned(crop.image, five_points(crop.landmarks))
                                         for crop in crops])
        return np.concatenate([balance_identity(prepared.tensor, target, self.weight, self.recipe.family)
                               for target in raw])

    def mask(self, crop: FaceCrop) -> np.ndarray:
        """The paste-back alpha of one crop."""
        return self.masker.masks([crop])[0]


def _points(face: Face) -> np.ndarray:
    if face.landmarks is None:
        raise ValueError("the face has no landmarks")
    return five_points(face.landmarks)
