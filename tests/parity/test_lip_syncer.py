"""Parity with FaceFusion 3.8.1's lip syncer, model by model, stage by stage (the recorded stages:
tools/facefusion_reference/record_lip_syncer.py).

Both programs hear the parity sound (`standins.parity_voice`), FaceFusion's from its own spectrogram functions,
without a voice extractor and with each voice extractor's stand-in (on 6 s of it, so that the extractor's
overlapping pieces meet). slimfuse's LipSyncProcessor runs the parity stand-ins, loaded
through a store, with the box mask type (FaceFusion's default), blur 0.3 and weight 0.5; each frame K of the
recording is given the time K / 25 s, so the window follows the frame's timestamp and lands where FaceFusion's
frame number puts it. The face has geometry.json's five and 68 points, as FaceFusion was given.

The one deliberate difference is edtalk's box mask: FaceFusion's still holds about 5 % along the crop's border;
slimfuse lowers it by that border value and stretches it back to 1 (as for the face enhancers). edtalk's
end-to-end comparison is where both masks are whole; wav2lip's lower-face mask is FaceFusion's, compared whole.
"""
from __future__ import annotations

from functools import partial

import cv2
import numpy as np
import pytest

from parity import standins
from parity.faces import mesh_face
from parity.reference import MAX_PIXELS, Figures, mask_float, recorded, standin_pool
from processor_parts import make_lip_syncer
from slimfuse.media.voice import Voice, voice_of
from slimfuse.memory.batching import AdaptiveBatcher
from slimfuse.models.pool import ModelPool
from slimfuse.models.store import Store
from slimfuse.processors.base import FaceCrop
from slimfuse.processors.blend import paste_back
from slimfuse.faces.landmarks_68 import landmarks_68
from slimfuse.processors.lip_sync import LipSyncProcessor, lower_face
from slimfuse.processors.voice_extract import VoiceExtractor
from slimfuse.processors.mask_types import box_mask

AREA = "lip_syncer"
MODELS = tuple(contract.name for contract in standins.LIP_SYNCERS)
WAV2LIPS = ("wav2lip_96", "wav2lip_gan_96")
FRAMES = (0, 12, 22, 32)
LOUD = 12
STRIDE = 4
VOICE_REPEATS = 3
VOICE_STRIDE = 97


@pytest.fixture(scope="module")
def parity_pool(tmp_path_factory: pytest.TempPathFactory, store: Store) -> ModelPool:
    return standin_pool(tmp_path_factory.mktemp("parity_lip_syncer"), store, MODELS)


@pytest.fixture(scope="module")
def voice() -> Voice:
    return voice_of(standins.parity_voice())


@pytest.mark.parametrize("model", tuple(contract.name for contract in standins.VOICE_EXTRACTORS))
def test_voice_extractor(tmp_path_factory: pytest.TempPathFactory, store: Store, model: str,
                         figures: Figures) -> None:
    """The voice the extractor's stand-in gives, and the spectrogram of it, as FaceFusion's (float32 precision)."""
    reference = recorded(AREA, "voice")
    pool = standin_pool(tmp_path_factory.mktemp(f"parity_{model}"), store, (model,))
    extractor = VoiceExtractor(partial(AdaptiveBatcher(pool).run, model))
    sound = standins.parity_voice(VOICE_REPEATS)
    voice = extractor(sound)
    theirs = reference[f"voice_{model}"]
    peak = float(np.abs(theirs).max())
    figures.within(AREA, model, f"extracted voice (every {VOICE_STRIDE}th sample, share of its peak)",
                   voice[::VOICE_STRIDE] / peak, theirs / peak, 1e-5, "")
    assert np.abs(voice - sound / 32767).max() > 0.1  # the stand-in changed the sound
    spectrogram = voice_of(sound, extractor).spectrogram
    expected = reference[f"spectrogram_{model}"]
    top = float(expected.max())
    figures.within(AREA, model, "mel spectrogram of the voice (share of its peak)", spectrogram / top,
                   expected / top, 1e-4, "")


def seconds(frame: int) -> float:
    return frame / standins.VOICE_FPS


def own_crop(processor: LipSyncProcessor, astronaut: np.ndarray, frame: int) -> FaceCrop:
    crop = processor.crop(astronaut, mesh_face("target", points_68=True))
    return FaceCrop(crop.image, crop.landmarks, crop.crop_from_frame, time=seconds(frame))


def paste_box(frame: np.ndarray, box: np.ndarray) -> np.ndarray:
    x1, y1, x2, y2 = (int(value) for value in box)
    return frame[y1:y2, x1:x2]


def test_spectrogram_and_windows(voice: Voice) -> None:
    """The whole mel spectrogram, and each frame's window picked by its time, as FaceFusion's."""
    reference = recorded(AREA, "voice")
    assert voice.spectrogram.shape == reference["spectrogram"].shape
    assert np.allclose(voice.spectrogram, reference["spectrogram"], rtol=1e-9, atol=1e-12)
    for frame in FRAMES:
        assert np.allclose(voice.window(seconds(frame)), reference[f"window_{frame}"], rtol=1e-9, atol=1e-12)
    assert reference[f"window_{LOUD}"].max() > 10 * reference["window_0"].max()  # the tone against the hiss


@pytest.mark.parametrize("model", MODELS)
def test_model_source_input(parity_pool: ModelPool, voice: Voice, model: str) -> None:
    """The `source` tensor: FaceFusion's log, clip and (wav2lip) weight scaling, at weight 0.5 and 1."""
    reference = recorded(AREA, model)
    for frame in FRAMES:
        mine = make_lip_syncer(parity_pool, model, voice).mel(seconds(frame))
        assert np.allclose(mine[None], reference[f"source_{frame}"], atol=1e-5)
    louder = make_lip_syncer(parity_pool, model, voice, weight=1.0).mel(seconds(LOUD))
    assert np.allclose(louder[None], reference[f"source_{LOUD}_w100"], atol=1e-5)
    assert np.array_equal(louder, make_lip_syncer(parity_pool, model, voice).mel(seconds(LOUD))) == (model not in
                                                                                                    WAV2LIPS)


def test_crop(parity_pool: ModelPool, voice: Voice, astronaut: np.ndarray, figures: Figures) -> None:
    processor = make_lip_syncer(parity_pool, "wav2lip_96", voice)
    crop = own_crop(processor, astronaut, 0)
    theirs = recorded(AREA, "wav2lip_96")["matrix"]
    corners = np.array([[0, 0], [512, 0], [512, 512], [0, 512]], dtype=np.float64)
    in_frame = cv2.transform(corners[None], cv2.invertAffineTransform(theirs))[0]
    assert np.abs(cv2.transform(in_frame[None], crop.crop_from_frame)[0] - corners).max() <= MAX_PIXELS
    figures.image(AREA, "all", "ffhq_512 crop", crop.image, recorded(AREA, "crops")["ffhq_512"])


@pytest.mark.parametrize("model", WAV2LIPS)
def test_wav2lip_stages(parity_pool: ModelPool, voice: Voice, astronaut: np.ndarray, model: str,
                        figures: Figures) -> None:
    """The 68 points' box, the 96 px lower face, the model's answer to FaceFusion's input, its warp back into the
    crop, and the lower-face area mask."""
    reference = recorded(AREA, model)
    processor = make_lip_syncer(parity_pool, model, voice)
    crop = own_crop(processor, astronaut, LOUD)
    figures.within(AREA, model, "box of the 68 points", landmark_box(crop), reference["box"], MAX_PIXELS, "px")
    face = lower_face(crop.image, landmark_box(crop), processor.size)
    figures.image(AREA, model, "96 px lower face", face, reference["lower_face"])
    theirs = FaceCrop(recorded(AREA, "crops")["ffhq_512"], crop.landmarks, reference["matrix"], time=seconds(LOUD))
    result = processor.process([theirs], None)[0]
    figures.image(AREA, model, "lower-face mask", result.alpha * 255, mask_float(reference["mask"]) * 255)
    for frame in FRAMES:
        theirs = FaceCrop(theirs.image, theirs.landmarks, theirs.crop_from_frame, time=seconds(frame))
        image = processor.process([theirs], None)[0].image
        figures.image(AREA, model, f"frame {frame}: crop with the answer (every {STRIDE}th pixel)",
                      image[::STRIDE, ::STRIDE], reference[f"crop_output_{frame}"])


def landmark_box(crop: FaceCrop) -> np.ndarray:
    points = landmarks_68(crop.landmarks)
    return np.concatenate([points.min(axis=0), points.max(axis=0)])


def test_edtalk_output(parity_pool: ModelPool, voice: Voice, figures: Figures) -> None:
    reference = recorded(AREA, "edtalk_256")
    processor = make_lip_syncer(parity_pool, "edtalk_256", voice)
    for frame in FRAMES:
        crop = FaceCrop(recorded(AREA, "crops")["ffhq_512"], np.zeros((468, 3), np.float32), reference["matrix"],
                        time=seconds(frame))
        image = processor.process([crop], None)[0].image
        figures.image(AREA, "edtalk_256", f"frame {frame}: the answer at 512 px (every {STRIDE}th pixel)",
                      image[::STRIDE, ::STRIDE], reference[f"output_{frame}"])


def test_edtalk_box_mask() -> None:
    theirs = mask_float(recorded(AREA, "edtalk_256")["mask"])
    border = max(theirs[0].max(), theirs[-1].max(), theirs[:, 0].max(), theirs[:, -1].max())
    assert 0.03 < border < 0.08  # FaceFusion's seam, which slimfuse takes away
    mine = box_mask(512, 512, 0.3)
    assert np.abs(mine - np.clip((theirs - border) / (1 - border), 0, 1)).max() <= 2 / 255


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("weight", (0.5, 1.0))
def test_end_to_end(parity_pool: ModelPool, voice: Voice, astronaut: np.ndarray, model: str, weight: float,
                    figures: Figures) -> None:
    """slimfuse's own stages (crop, process, paste) against FaceFusion's sync_lip, frame by frame: for wav2lip
    in the whole paste area, for edtalk where both box masks are whole. Outside the paste area nothing changes."""
    reference = recorded(AREA, model)
    processor = make_lip_syncer(parity_pool, model, voice, weight)
    whole = np.ones_like(reference["mask"], dtype=np.float32)
    if model not in WAV2LIPS:
        whole = (reference["mask"] == 255).astype(np.float32)
    x1, y1, x2, y2 = (int(value) for value in reference["paste_box"])
    box_from_crop = np.vstack([reference["matrix"], [0, 0, 1]]) @ np.array([[1, 0, x1], [0, 1, y1], [0, 0, 1]])
    inside = cv2.warpAffine(whole, box_from_crop[:2], (x2 - x1, y2 - y1),
                            flags=cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP) == 1
    assert inside.mean() > 0.2
    keys = FRAMES if weight == 0.5 else (LOUD,)
    for frame in keys:
        crop = own_crop(processor, astronaut, frame)
        result = processor.process([crop], None)[0]
        pasted = paste_back(astronaut, result.image, result.alpha, crop.crop_from_frame)
        key = f"frame_{frame}" + ("" if weight == 0.5 else "_w100")
        figures.image(AREA, model, f"{key}: sync_lip's frame" + (" where both masks are 1" if model not in WAV2LIPS
                                                                   else ""),
                      paste_box(pasted, reference["paste_box"])[inside], reference[key][inside])
        outside = np.ones(astronaut.shape[:2], dtype=bool)
        outside[y1:y2, x1:x2] = False
        assert np.array_equal(pasted[outside], astronaut[outside])


def test_the_sound_and_the_weight_move_the_answer() -> None:
    """The stand-ins hear the window (and the weight), so the comparisons above are of different answers per frame
    and weight."""
    for model in MODELS:
        reference = recorded(AREA, model)
        for frame in FRAMES[1:]:
            assert np.abs(reference[f"output_{frame}"].astype(int) - reference["output_0"]).mean() > 2
        assert np.abs(reference[f"frame_{LOUD}_w100"].astype(int) - reference[f"frame_{LOUD}"]).max() > 5
