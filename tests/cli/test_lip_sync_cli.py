"""The lip syncer through the command line, on a variable-rate clip of the astronaut with a generated voice and
the mouth stand-in placed as wav2lip_gan_96: FaceFusion's line (the voice among -s), --source-audio, a voice
extractor (a low-pass stand-in), the face swapper and the lip syncer in one run, and the one-line refusals (exit 36
and, live, exit 2)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import neural_models as nm
from slimfuse.cli.main import main
from slimfuse.samples import ASTRONAUT_FACE
from voices import assert_in_sync, buzz, output_sound, sync_scores, write_sound, write_still_clip

SYLLABLES = ((0.3, 0.75, 1.0), (1.1, 1.35, 0.8), (1.62, 2.1, 1.0))
SECONDS = 2.4


def uneven_times() -> list[float]:
    times, time = [], 0.0
    while time < SECONDS - 0.06:
        times.append(round(time, 3))
        time += (0.04, 0.03, 0.05)[len(times) % 3]
    return times


@pytest.fixture
def placed(models_dir: Path) -> Path:
    nm.save(nm.mouth_lip_syncer(), models_dir, "wav2lip_gan_96")
    nm.save(nm.lowpass_voice_extractor(), models_dir, "kim_vocal_2")
    return models_dir


@pytest.fixture
def clip(tmp_path: Path, astronaut: np.ndarray) -> Path:
    return write_still_clip(tmp_path / "talk.mkv", astronaut, uneven_times())


@pytest.fixture
def voice(tmp_path: Path) -> Path:
    return write_sound(tmp_path / "voice.wav", buzz(SECONDS + 0.3, SYLLABLES))


def swap(capsys: pytest.CaptureFixture[str], *argv: str | Path) -> tuple[int, str]:
    code = main(["swap", "--quiet", *map(str, argv)])
    return code, capsys.readouterr().err


@pytest.mark.parametrize("how", ["facefusion", "source-audio", "voice-extractor", "trimmed"])
def test_the_mouth_follows_the_voice_in_sync(capsys: pytest.CaptureFixture[str], tmp_path: Path, placed: Path,
                                             clip: Path, voice: Path, how: str) -> None:
    """In sync whichever way the sound comes, and when the video is trimmed (the sound is laid along the target's
    timeline, so the same window of both is kept)."""
    output = tmp_path / "dubbed.mp4"
    sound = {"facefusion": ["-s", voice], "source-audio": ["--source-audio", voice],
             "voice-extractor": ["-s", voice, "--voice-extractor-model", "kim_vocal_2"],
             "trimmed": ["-s", voice, "--trim-frame-start", "12", "--trim-frame-end", "50"]}[how]
    code, err = swap(capsys, "--processors", "lip_syncer", *sound, "-t", clip, "-o", output, "--models-dir", placed)
    assert code == 0, err
    times, scores = sync_scores(output, ASTRONAUT_FACE)
    kept = uneven_times()[12:50] if how == "trimmed" else uneven_times()
    assert np.allclose(times, np.array(kept) - kept[0], atol=0.002)
    assert_in_sync(scores)
    sound_samples, start = output_sound(output)
    end = uneven_times()[50] - kept[0] if how == "trimmed" else SECONDS
    assert abs(start + sound_samples.size / 48_000 - end) < 0.1  # the voice, cut where the video ends


def test_the_swapper_and_the_lip_syncer_in_one_run(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                   placed: Path, clip: Path, voice: Path,
                                                   grace_hopper_path: Path) -> None:
    output = tmp_path / "both.mp4"
    code, err = swap(capsys, "--processors", "face_swapper", "lip_syncer", "-s", grace_hopper_path, voice,
                     "-t", clip, "-o", output, "--models-dir", placed)
    assert code == 0, err
    _, scores = sync_scores(output, ASTRONAUT_FACE)
    assert_in_sync(scores)


def test_unusable_sound_is_exit_36(capsys: pytest.CaptureFixture[str], tmp_path: Path, placed: Path, clip: Path,
                                   voice: Path, astronaut_path: Path) -> None:
    short = write_sound(tmp_path / "short.wav", buzz(1.0, SYLLABLES[:1]))
    cases = {
        "image target": (["-s", voice, "-t", astronaut_path, "-o", tmp_path / "out.png"], "needs a video target"),
        "no audio stream": (["--source-audio", clip, "-t", clip, "-o", tmp_path / "a.mp4"], "has no audio stream"),
        "shorter": (["-s", short, "-t", clip, "-o", tmp_path / "b.mp4"], "shorter than the target video"),
        "no sound": (["-t", clip, "-o", tmp_path / "c.mp4"], "needs a sound"),
    }
    for name, (argv, message) in cases.items():
        code, err = swap(capsys, "--processors", "lip_syncer", "--models-dir", placed, *argv)
        assert code == 36 and message in err and err.count("\n") == 1, (name, err)
    assert not list(tmp_path.glob("*.mp4")) and not (tmp_path / "out.png").exists()


def test_live_refuses_the_lip_syncer(capsys: pytest.CaptureFixture[str], voice: Path, clip: Path) -> None:
    code = main(["live", "--processors", "lip_syncer", "--source-audio", str(voice), "--input", str(clip),
                 "--max-frames", "1"])
    err = capsys.readouterr().err
    assert code == 2 and "--processors lip_syncer: not live" in err and err.count("\n") == 1, err
