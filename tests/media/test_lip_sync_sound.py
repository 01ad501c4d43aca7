"""A dubbed video's sound and picture: the writer carries another file's sound (the lip syncer's) along the video's
timeline, cut where the video ends and to a trimmed window as the target's own sound is; and a variable-rate clip
dubbed through the lip syncer (the mouth stand-in, a generated voice) comes out with every mouth movement at its
sound: the mouth opening per output frame follows the loudness of the output's own audio at that frame's time,
best at no shift (within a frame), not at a shift of a few frames."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

import neural_models as nm
from processor_parts import make_lip_syncer
from slimfuse.faces.analyse import FaceAnalyser
from slimfuse.media.formats import EncodeSettings
from slimfuse.media.video_reader import VideoReader
from slimfuse.media.video_writer import VideoWriter
from slimfuse.models.pool import ModelPool
from slimfuse.models.store import Store
from slimfuse.processors.base import FaceCrop
from slimfuse.processors.blend import paste_back
from slimfuse.processors.lip_sync import read_sound
from voices import RATE, SHIFTS, assert_in_sync, buzz, output_sound, sync_scores, write_sound, write_still_clip

SYLLABLES = ((0.3, 0.75, 1.0), (1.1, 1.35, 0.8), (1.62, 2.1, 1.0), (2.5, 2.7, 0.9))
SECONDS = 3.0


def uneven_times(seconds: float) -> list[float]:
    """Frame times of a variable-rate clip: 40 ms, then 25 ms, then 60 ms steps, in turn."""
    times, time, steps = [], 0.0, (0.04, 0.025, 0.06)
    while time < seconds - 0.06:
        times.append(round(time, 3))
        time += steps[len(times) % 3]
    return times


@pytest.fixture(scope="module")
def voice_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_sound(tmp_path_factory.mktemp("voice") / "voice.wav", buzz(SECONDS + 0.5, SYLLABLES))


def test_the_writer_carries_another_files_sound_cut_to_the_video(tmp_path: Path, astronaut: np.ndarray,
                                                                  voice_file: Path) -> None:
    clip = write_still_clip(tmp_path / "target.mkv", astronaut[:64, :64], [index / 25 for index in range(50)])
    for trim_start, suffix in ((0, ".mp4"), (10, ".mkv")):
        output = tmp_path / f"dubbed{trim_start}{suffix}"
        settings = replace(EncodeSettings(), audio_path=voice_file)
        with VideoReader(clip, start=trim_start) as reader, \
                VideoWriter(output, reader.info, settings, trim_start=trim_start) as writer:
            for frame in reader:
                writer.write(frame)
        sound, start = output_sound(output)
        video_end = (50 - trim_start) / 25
        # Cut where the video ends (the voice is longer): within an AAC frame when re-encoded (.mp4), a packet when
        # copied (.mkv takes the WAV's PCM as it is).
        assert abs(start + sound.size / RATE - video_end) < (0.025 if suffix == ".mp4" else 0.06)
        loud = np.flatnonzero(np.abs(sound) > 0.05)
        onsets = loud[np.diff(loud, prepend=-RATE) > 0.05 * RATE] / RATE + start  # after 50 ms of quiet
        onsets = onsets[onsets > start + 0.01]  # not the syllable the trimmed start cuts into
        expected = [begin - trim_start / 25 for begin, _, _ in SYLLABLES if trim_start / 25 <= begin < 2.0]
        assert np.allclose(onsets[:len(expected)], expected, atol=0.01), (onsets, expected)


def test_a_variable_rate_clip_dubbed_through_the_lip_syncer_stays_in_sync(
        tmp_path: Path, store: Store, astronaut: np.ndarray, voice_file: Path) -> None:
    nm.save(nm.mouth_lip_syncer(), tmp_path / "placed", "wav2lip_gan_96")
    pool = ModelPool(nm.isolated_store(tmp_path / "home", store, tmp_path / "placed"))
    clip = write_still_clip(tmp_path / "target.mkv", astronaut, uneven_times(SECONDS))
    voice = read_sound(voice_file)
    processor = make_lip_syncer(pool, "wav2lip_gan_96", voice)
    face = FaceAnalyser(pool).faces(astronaut)[0]
    cut = processor.crop(astronaut, face)
    output = tmp_path / "dubbed.mkv"
    with VideoReader(clip) as reader, \
            VideoWriter(output, reader.info, replace(EncodeSettings(quality=95), audio_path=voice_file)) as writer:
        for frame in reader:
            crop = FaceCrop(cut.image, cut.landmarks, cut.crop_from_frame, time=frame.time)
            result = processor.process([crop], None)[0]
            writer.write(frame.with_rgb(paste_back(frame.rgb, result.image, result.alpha, crop.crop_from_frame)))
    times, scores = sync_scores(output, face.box, SHIFTS)
    assert np.allclose(times, uneven_times(SECONDS), atol=0.002)  # the variable rate is kept
    assert_in_sync(scores)
