"""The lip syncer through the Python API: no source photo, the sound by `source_audio`, a video dubbed in sync, and
a still refused (LipSyncAudioError)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import neural_models as nm
import slimfuse
from slimfuse.errors import LipSyncAudioError
from slimfuse.samples import ASTRONAUT_FACE
from voices import assert_in_sync, buzz, sync_scores, write_sound, write_still_clip


def test_a_video_dubbed_through_the_python_api(models_dir: Path, tmp_path: Path, astronaut: np.ndarray) -> None:
    nm.save(nm.mouth_lip_syncer(), models_dir, "wav2lip_gan_96")
    clip = write_still_clip(tmp_path / "talk.mkv", astronaut, [index / 25 for index in range(60)])
    voice = write_sound(tmp_path / "voice.wav", buzz(2.6, ((0.3, 0.75, 1.0), (1.1, 1.35, 0.8), (1.62, 2.1, 1.0))))
    swapper = slimfuse.Swapper([], processors=["lip_syncer"], source_audio=str(voice), models_dir=str(models_dir))
    result = swapper.swap_video(clip, tmp_path / "dubbed.mp4")
    assert result.frames_written == 60
    _, scores = sync_scores(tmp_path / "dubbed.mp4", ASTRONAUT_FACE)
    assert_in_sync(scores)
    with pytest.raises(LipSyncAudioError, match="needs a video target"):
        swapper.swap_image(astronaut)
