"""The background remover (`--processors ... background_remover`): a frame stage that tells the person from the
background and replaces the background with a colour, a blur of the frame, or transparency (an alpha channel).

- The model sees the whole frame resized (not letterboxed) to its input, and gives the foreground's alpha, which is
  clipped to 0..1, truncated to 8 bits at the model's size and resized back to the frame bilinearly (FaceFusion's
  steps, so the embedded model and FaceFusion's models go the same way). Frames are resized bilinearly, as
  FaceFusion does (area averaging cost 6 ms a 720p frame and changed no mask's IoU by more than 0.002). The embedded
  MediaPipe selfie segmenter takes the frame channels-last in 0..1; FaceFusion's models take it channels-first,
  normalised by their mean and std.
- Result: frame x alpha + background x (1 - alpha), where the background is the frame itself, or its blur with
  the person left out (no halo), with the fill colour laid over it at the colour's alpha. FaceFusion's formula is
  the case without blur. A transparent background (no blur, a fill alpha of 0) comes out as RGBA: the frame's
  colours and the alpha.
- The despill colour (a green screen's cast) is taken off the whole frame first, as in FaceFusion: each channel
  is pulled towards the mean of the other two where it exceeds it, weighted by the colour.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import cv2
import numpy as np
import onnxruntime as ort

from slimfuse.config import BackgroundOptions
from slimfuse.models.choices import SELFIE_SEGMENTATION
from slimfuse.models.neural.background_removers import BY_NAME

BLUR_SHRINK = 4
"""A blurred background is blurred at a quarter of the frame's size and scaled back: the same look at a sixteenth
of the work (a blur's sigma of a few pixels or more hides the scaling)."""


@dataclass(frozen=True)
class RemoverInput:
    """How a model is fed the frame and how its output is read."""

    width: int
    height: int
    channels_last: bool
    mean: tuple[float, float, float] = (0.0, 0.0, 0.0)
    std: tuple[float, float, float] = (1.0, 1.0, 1.0)
    family: str = "plain"
    """FaceFusion's type where its reading differs: "u2net_cloth" (class scores), "corridor_key" (a key channel in,
    a foreground out)."""


SELFIE_INPUT = RemoverInput(256, 256, channels_last=True)


def remover_input(model: str) -> RemoverInput:
    """How catalog model `model` is called (the embedded segmenter or one of FaceFusion's)."""
    if model == SELFIE_SEGMENTATION:
        return SELFIE_INPUT
    remover = BY_NAME[model]
    return RemoverInput(remover.size, remover.size, channels_last=False, mean=remover.mean, std=remover.std,
                        family=remover.family)


def coarse_key(frame: np.ndarray) -> np.ndarray:
    """corridor_key's extra input: 1 where the frame is not green-screen green, towards 0 where green dominates."""
    unit = frame.astype(np.float32) / np.float32(255)
    bias = unit[:, :, 1] - np.maximum(unit[:, :, 0], unit[:, :, 2])
    return 1 - np.clip(bias * 2, 0, 1)


def despill(frame: np.ndarray, color: tuple[int, int, int, int]) -> np.ndarray:
    """The frame with `color`'s spill taken off at its alpha (unchanged at alpha 0)."""
    if color[3] == 0:
        return frame
    pixels = frame.astype(np.float32)
    weight = np.asarray(color[:3], np.float32) / max(max(color[:3]), 1)
    others = (np.roll(pixels, 1, axis=2) + np.roll(pixels, -1, axis=2)) * np.float32(0.5)
    pulled = pixels + (np.minimum(pixels, others) - pixels) * np.float32(color[3] / 255) * weight
    return pulled.astype(np.uint8)


class BackgroundRemover:
    """A frame stage: `process_frame(frame, time)` gives the frame with its background replaced (RGB), or RGBA when
    the background is transparent."""

    frame_scale = 1

    def __init__(self, session: Callable[[], ort.InferenceSession], model: str, options: BackgroundOptions) -> None:
        """session: gives the model's session for each frame (the run's pool may release it between frames)."""
        self.session = session
        self.model = model
        self.options = options
        self.contract = remover_input(model)

    @property
    def models(self) -> tuple[str, ...]:
        return (self.model,)

    @property
    def transparent(self) -> bool:
        return self.options.transparent

    def load(self) -> None:
        self.session()

    def segment(self, frame: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The foreground's alpha at the frame's size (uint8, 255: the person) and the person's colours: the frame,
        or corridor_key's unmixed foreground (its second output)."""
        session = self.session()
        outputs = session.run(None, {session.get_inputs()[0].name: self._tensor(frame)})
        size = (frame.shape[1], frame.shape[0])
        scores = outputs[0]
        if self.contract.family == "u2net_cloth":
            scores = np.argmax(scores, axis=1)  # class 0 is the background: any other class counts in full
        alpha = cv2.resize((np.clip(np.squeeze(scores), 0, 1) * 255).astype(np.uint8), size)
        if self.contract.family != "corridor_key":
            return alpha, frame
        unmixed = (np.clip(np.squeeze(outputs[1], 0).transpose(1, 2, 0), 0, 1) * 255).astype(np.uint8)
        return alpha, cv2.resize(unmixed, size)

    def process_frame(self, frame: np.ndarray, time: float = 0.0) -> np.ndarray:
        """RGB uint8 in; RGB uint8 out, or RGBA for a transparent background (`time` is not used)."""
        alpha, colours = self.segment(frame)
        colours = despill(colours, self.options.background_remover_despill_color)
        if self.transparent:
            return np.dstack([colours, alpha])
        weight = alpha.astype(np.float32) / np.float32(255)
        return cv2.blendLinear(colours, self._background(colours, weight), weight, 1 - weight)

    def _tensor(self, frame: np.ndarray) -> np.ndarray:
        contract = self.contract
        size = (contract.width, contract.height)
        resized = cv2.resize(frame, size).astype(np.float32) / np.float32(255)
        normalised = (resized - np.float32(contract.mean)) / np.float32(contract.std)
        if contract.family == "corridor_key":
            key = cv2.resize(coarse_key(frame), size)
            normalised = np.dstack([normalised, key])
        layout = normalised if contract.channels_last else normalised.transpose(2, 0, 1)
        return np.ascontiguousarray(layout[None], dtype=np.float32)

    def _background(self, frame: np.ndarray, weight: np.ndarray) -> np.ndarray:
        """What shows where the person is not: the frame or its blur, under the fill colour at its alpha."""
        options = self.options
        fill = options.background_remover_fill_color
        colour = np.empty_like(frame)
        colour[...] = fill[:3]
        if fill[3] == 255:
            return colour
        sigma = options.background_remover_blur
        background = frame if sigma == 0 else blurred_background(frame, 1 - weight, sigma)
        if fill[3] == 0:
            return background
        opacity = fill[3] / 255
        return cv2.addWeighted(background, 1 - opacity, colour, opacity, 0)


def blurred_background(frame: np.ndarray, background: np.ndarray, sigma: int) -> np.ndarray:
    """The frame's background (`background`: its weight, 0..1 per pixel) blurred with a Gaussian of `sigma` pixels,
    the person left out (a normalised convolution: the blur of the weighted frame over the blur of the weights), so
    no halo of the person's colours spreads around them; done at 1/BLUR_SHRINK of the size. Where no background is
    near, the plain blur."""
    height, width = frame.shape[:2]
    size = (max(1, width // BLUR_SHRINK), max(1, height // BLUR_SHRINK))
    small = cv2.resize(frame, size, interpolation=cv2.INTER_AREA).astype(np.float32)
    weight = cv2.resize(background, size, interpolation=cv2.INTER_AREA)[:, :, None]
    spread = max(sigma / BLUR_SHRINK, 0.5)
    plain = cv2.GaussianBlur(small, (0, 0), spread, borderType=cv2.BORDER_REFLECT)
    weighted = cv2.GaussianBlur(small * weight, (0, 0), spread, borderType=cv2.BORDER_REFLECT)
    total = cv2.GaussianBlur(weight, (0, 0), spread, borderType=cv2.BORDER_REFLECT)[:, :, None]
    blurred = np.where(total > 0.05, weighted / np.maximum(total, 1e-6), plain)
    return cv2.resize(np.clip(blurred, 0, 255).astype(np.uint8), (width, height), interpolation=cv2.INTER_LINEAR)
