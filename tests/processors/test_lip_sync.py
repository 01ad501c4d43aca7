"""The lip syncer on the astronaut photo with a generated voice (syllables of a buzz) and a stand-in whose black
mouth opens with the loudness of the mel window it is fed (tests/neural_models.py: `mouth_lip_syncer`): loud
frames open the mouth, silent ones leave it shut, the window follows each frame's own time (variable frame rates),
and sound that cannot be used is one line with exit 36."""
from __future__ import annotations

from functools import partial
from pathlib import Path

import numpy as np
import pytest

import neural_models as nm
from processor_parts import make_lip_syncer
from slimfuse.errors import InputMissingError, LipSyncAudioError
from slimfuse.faces.analyse import FaceAnalyser
from slimfuse.faces.types import Face
from slimfuse.media.voice import WINDOW_COLUMNS, COLUMNS_PER_SECOND, Voice, log_mel, voice_of
from slimfuse.models.pool import ModelPool
from slimfuse.models.store import Store
from slimfuse.processors.base import FaceCrop
from slimfuse.config import MaskOptions, RunConfig
from slimfuse.processors.lip_sync import LipSyncProcessor, check_target, read_sound
from slimfuse.processors.voice_extract import VoiceExtractor
from slimfuse.memory.batching import AdaptiveBatcher
from voices import buzz, with_tone, write_sound, write_still_clip

FPS = 25
SECONDS = 3.2
SYLLABLES = ((0.32, 0.88, 1.0), (1.2, 1.68, 0.6), (2.0, 2.6, 1.0))
WINDOW_S = WINDOW_COLUMNS / COLUMNS_PER_SECOND


@pytest.fixture(scope="module")
def mouth_pool(tmp_path_factory: pytest.TempPathFactory, store: Store) -> ModelPool:
    root = tmp_path_factory.mktemp("lip_sync")
    nm.save(nm.mouth_lip_syncer(), root / "placed", "wav2lip_gan_96")
    return ModelPool(nm.isolated_store(root / "home", store, root / "placed"))


@pytest.fixture(scope="module")
def voice() -> Voice:
    return voice_of(buzz(SECONDS, SYLLABLES))


@pytest.fixture(scope="module")
def face(mouth_pool: ModelPool, astronaut: np.ndarray) -> Face:
    return FaceAnalyser(mouth_pool).faces(astronaut)[0]


def opening(processor: LipSyncProcessor, astronaut: np.ndarray, face: Face, seconds: float) -> int:
    """The pixels of the stand-in's black mouth that the paste mask shows, for a frame at `seconds`."""
    crop = processor.crop(astronaut, face)
    result = processor.process([FaceCrop(crop.image, crop.landmarks, crop.crop_from_frame, time=seconds)], None)[0]
    return int(((result.image.max(axis=2) < 8) & (result.alpha > 0.5) & (crop.image.max(axis=2) >= 8)).sum())


def inside(start: float, end: float) -> bool:
    """Whether the window from `start` to `end` s lies within a syllable (with the STFT's 25 ms reach)."""
    return any(begin + 0.03 <= start and end <= finish - 0.03 for begin, finish, _ in SYLLABLES)


def silent(start: float, end: float) -> bool:
    return all(end + 0.03 <= begin or finish + 0.03 <= start for begin, finish, _ in SYLLABLES)


def test_loud_frames_open_the_mouth_and_silent_ones_keep_it_shut(mouth_pool: ModelPool, voice: Voice,
                                                                 astronaut: np.ndarray, face: Face) -> None:
    processor = make_lip_syncer(mouth_pool, "wav2lip_gan_96", voice)
    times = [index / FPS for index in range(round(SECONDS * FPS))]
    openings = np.array([opening(processor, astronaut, face, time) for time in times])
    loud = [index for index, time in enumerate(times) if inside(time, time + WINDOW_S)]
    quiet = [index for index, time in enumerate(times) if silent(time, time + WINDOW_S)]
    assert len(loud) >= 12 and len(quiet) >= 12
    assert openings[quiet].max() == 0
    assert openings[loud].min() > 300
    # The softer second syllable opens it less than the others, as the stand-in's loudness says.
    second = [index for index in loud if 1.2 <= times[index] <= 1.68]
    assert np.mean(openings[second]) < 0.95 * np.mean([openings[index] for index in loud if index not in second])
    expected = [float(np.clip((log_mel(voice.window(time)).mean() + 4) / 4, 0, 1)) for time in times]
    assert np.corrcoef(openings, expected)[0, 1] > 0.98


def test_the_window_follows_each_frames_own_time(mouth_pool: ModelPool, voice: Voice, astronaut: np.ndarray,
                                                 face: Face) -> None:
    """Frames at uneven times (a variable frame rate, a dropped stretch) get the sound at their time, not at
    their index times a nominal rate: the mouth is open at 0.4 s and 2.2 s, shut at 0.05 s and 2.8 s whatever
    order and spacing they come in."""
    processor = make_lip_syncer(mouth_pool, "wav2lip_gan_96", voice)
    uneven = [2.2, 0.05, 0.4, 2.8]
    openings = [opening(processor, astronaut, face, time) for time in uneven]
    assert openings[0] > 300 and openings[2] > 300 and openings[1] == 0 and openings[3] == 0
    by_index = [opening(processor, astronaut, face, index / FPS) for index in range(len(uneven))]
    assert by_index == [0, 0, 0, 0]


def test_the_weight_scales_what_wav2lip_hears(mouth_pool: ModelPool, voice: Voice) -> None:
    """wav2lip hears the log-mel window times 2 x the weight: 1 at FaceFusion's default 0.5."""
    default = make_lip_syncer(mouth_pool, "wav2lip_gan_96", voice).mel(0.4)
    assert np.array_equal(default[0], log_mel(voice.window(0.4)))
    for weight in (0.0, 0.25, 1.0):
        scaled = make_lip_syncer(mouth_pool, "wav2lip_gan_96", voice, weight=weight).mel(0.4)
        assert np.allclose(scaled, default * 2 * weight)


def test_the_sound_past_its_end_is_silence(voice: Voice) -> None:
    assert np.array_equal(voice.window(SECONDS - 0.1), np.zeros((80, WINDOW_COLUMNS)))
    assert voice.window(2.2).max() > 0


def test_the_sound_of_a_run(tmp_path: Path) -> None:
    """--source-audio, else the first sound file or video among the sources (FaceFusion's way); the photos, the
    sources less sound files and the sound; no sound when the lip syncer does not run."""
    photo, sound, video = tmp_path / "me.jpg", tmp_path / "voice.MP3", tmp_path / "talk.mp4"
    lip = {"processors": ["face_swapper", "lip_syncer"]}
    config = RunConfig.from_options([photo, sound, video], **lip)
    assert config.sound == sound and config.photos == (photo, video)  # a second video is read as a photo (an error)
    assert RunConfig.from_options([photo, video], **lip).sound == video
    other = RunConfig.from_options([photo, sound], source_audio=tmp_path / "other.wav", **lip)
    assert other.sound == tmp_path / "other.wav" and other.encode_settings(0).audio_path == other.sound
    assert RunConfig.from_options([photo], **lip).sound is None
    assert RunConfig.from_options([photo, sound]).sound is None
    assert RunConfig.from_options([photo, sound]).encode_settings(0).audio_path is None


def test_unusable_sound_is_one_line_with_exit_36(tmp_path: Path, astronaut: np.ndarray) -> None:
    voice_file = write_sound(tmp_path / "voice.wav", buzz(1.0, [(0.2, 0.6, 1.0)]))
    silent_clip = write_still_clip(tmp_path / "silent.mkv", astronaut[:64, :64], [0.0, 0.04, 0.08])
    garbage = tmp_path / "noise.wav"
    garbage.write_bytes(b"RIFF" + bytes(range(256)) * 8)
    target = tmp_path / "target.mkv"
    voice = read_sound(voice_file)
    cases = {
        "no sound": (lambda: read_sound(None), "needs a sound"),
        "no audio stream": (lambda: read_sound(silent_clip), "has no audio stream"),
        "undecodable": (lambda: read_sound(garbage), "cannot be"),
        "image target": (lambda: check_target(voice, voice_file, target, False, None), "needs a video target"),
        "shorter": (lambda: check_target(voice, voice_file, target, True, 1.5),
                    r"lasts 1.00 s, shorter than the target video \(1.50 s\)"),
    }
    for name, (call, message) in cases.items():
        with pytest.raises(LipSyncAudioError, match=message) as caught:
            call()
        assert caught.value.exit_code == 36 and "\n" not in caught.value.message, name
    check_target(voice, voice_file, target, True, 1.05)
    check_target(voice, voice_file, target, True, None)
    with pytest.raises(InputMissingError):
        read_sound(tmp_path / "missing.wav")


def test_the_occlusion_mask_cuts_the_paste_mask(mouth_pool: ModelPool, voice: Voice, astronaut: np.ndarray,
                                                face: Face, tmp_path: Path, store: Store) -> None:
    """With --face-mask-types ... occlusion, what the occluder sees covered keeps the target (here: the crop's
    left half); elsewhere the lower-face mask stands. The other mask types do not apply, as in FaceFusion."""
    visible = np.ones((256, 256), np.float32)
    visible[:, :128] = 0
    nm.save(nm.occluder("xseg_1", visible=visible), tmp_path / "placed", "xseg_1")
    nm.save(nm.mouth_lip_syncer(), tmp_path / "placed", "wav2lip_gan_96")
    pool = ModelPool(nm.isolated_store(tmp_path / "home", store, tmp_path / "placed"))
    plain = make_lip_syncer(mouth_pool, "wav2lip_gan_96", voice)
    occluded = make_lip_syncer(pool, "wav2lip_gan_96", voice,
                               masks=MaskOptions(face_mask_types=("box", "mesh", "occlusion")))
    crop = plain.crop(astronaut, face)
    crop = FaceCrop(crop.image, crop.landmarks, crop.crop_from_frame, time=0.4)
    alone, cut = plain.process([crop], None)[0].alpha, occluded.process([crop], None)[0].alpha
    assert alone[:, :240].max() == 1 and alone[:, 300:].max() == 1
    assert cut[:, :240].max() == 0 and np.array_equal(cut[:, 300:], alone[:, 300:])  # past the softened edge


def test_the_voice_extractor_keeps_music_from_moving_the_mouth(mouth_pool: ModelPool, astronaut: np.ndarray,
                                                               face: Face, tmp_path: Path, store: Store) -> None:
    """A 3 kHz tone (the music) alone between two syllables opens the mouth when the whole sound is heard; the
    extractor's stand-in (a low-pass: the voice) takes it away, and the syllables still open the mouth."""
    nm.save(nm.lowpass_voice_extractor(), tmp_path / "placed", "kim_vocal_2")
    pool = ModelPool(nm.isolated_store(tmp_path / "home", store, tmp_path / "placed"))
    sound = with_tone(buzz(SECONDS, SYLLABLES), 0.9, 1.15, 3000.0, 0.5)
    path = write_sound(tmp_path / "song.wav", sound)
    heard = read_sound(path)
    separated = read_sound(path, VoiceExtractor(partial(AdaptiveBatcher(pool).run, "kim_vocal_2")))
    whole = make_lip_syncer(mouth_pool, "wav2lip_gan_96", heard)
    voice = make_lip_syncer(mouth_pool, "wav2lip_gan_96", separated)
    music, syllable = 0.92, 0.45  # windows within the tone alone, and within the first syllable
    assert opening(whole, astronaut, face, music) > 100 and opening(voice, astronaut, face, music) == 0
    assert opening(voice, astronaut, face, syllable) > 300
