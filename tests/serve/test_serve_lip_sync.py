"""The lip syncer through the server: a generated voice uploaded as a sound (or a talking clip's sound), a lip_syncer
job on a silent clip of the astronaut with the mouth stand-in placed in the server's --models-dir, the output
carrying the voice with the mouth in sync; and the refusals (bad sounds, a job without a sound, another user's
sound, a sound in use)."""
from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import httpx
import numpy as np
import pytest
from served import (SYLLABLES, TALK_S, TALK_TIMES, VOICE_S, Server, create_token, finish, lip_sync_inputs,
                    serving_lip_syncer, upload)
from voices import assert_in_sync, buzz, output_sound, sync_scores, write_sound

from slimfuse.errors import LipSyncAudioError
from slimfuse.models.store import Store
from slimfuse.processors.lip_sync import require_sound
from slimfuse.samples import ASTRONAUT_FACE
from slimfuse.serve.store import SCHEMA, JobStore
from slimfuse.serve.uploads import AUDIO_TYPES, describe, sniff
from slimfuse.media.formats import AUDIO_SUFFIXES

LIP_SYNC = {"processors": ["lip_syncer"]}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, store: Store) -> Iterator[Server]:
    """A server with the mouth stand-in placed as wav2lip_gan_96, its client one user's (tokens)."""
    with serving_lip_syncer(tmp_path_factory.mktemp("lip-sync-serve"), store, "alice") as running:
        yield running


@pytest.fixture(scope="module")
def client(server: Server) -> Iterator[httpx.Client]:
    with server.client(timeout=120) as opened:
        yield opened


@pytest.fixture(scope="module")
def inputs(client: httpx.Client, tmp_path_factory: pytest.TempPathFactory, astronaut: np.ndarray) -> dict[str, str]:
    """Asset ids: the silent clip, the voice (a .wav) and a clip that talks (the voice as its sound)."""
    files = lip_sync_inputs(tmp_path_factory.mktemp("lip-sync-inputs"), astronaut)
    return {name: upload(client, path)["id"] for name, path in files.items()}


def _refused(response: httpx.Response, status: int, error: str, exit_code: int | None) -> str:
    assert response.status_code == status, response.text
    body = response.json()
    assert body["error"] == error and body["exit_code"] == exit_code, body
    return str(body["message"])


def test_a_sound_upload_is_an_audio_asset_with_its_duration(client: httpx.Client, inputs: dict[str, str]) -> None:
    voice = client.get(f"/v1/assets/{inputs['voice']}").json()
    assert voice["kind"] == "audio" and voice["name"] == "voice.wav"
    assert voice["duration"] == pytest.approx(VOICE_S, abs=0.01)
    assert voice["width"] is None and voice["frames"] is None
    assert client.get(f"/v1/assets/{inputs['talking']}").json()["kind"] == "video"


@pytest.mark.parametrize("sound", ["voice", "talking"])
def test_a_lip_sync_job_follows_the_uploaded_sound(client: httpx.Client, inputs: dict[str, str], tmp_path: Path,
                                                   sound: str) -> None:
    """From a sound file, or from a video's sound (as `-s talking.mkv` on the command line): no source photo."""
    created = client.post("/v1/jobs", json={"target": inputs["clip"], "audio": inputs[sound], "options": LIP_SYNC})
    assert created.status_code == 202, created.text
    assert created.json()["audio"] == inputs[sound] and created.json()["sources"] == []
    ended = finish(client, created.json()["id"])
    assert ended["state"] == "succeeded", ended
    output = tmp_path / "dubbed.mkv"
    output.write_bytes(client.get(f"/v1/jobs/{ended['id']}/output").content)
    times, scores = sync_scores(output, ASTRONAUT_FACE)
    assert np.allclose(times, TALK_TIMES, atol=0.002)
    assert_in_sync(scores)
    samples, start = output_sound(output)
    assert abs(start + samples.size / 48_000 - TALK_S) < 0.1  # the voice, cut where the video ends
    assert "placed" not in str(ended["report"]["options"])  # no path of the server's


def test_lip_sync_jobs_are_refused_as_on_the_command_line(server: Server, client: httpx.Client,
                                                          inputs: dict[str, str], astronaut_path: Path) -> None:
    with pytest.raises(LipSyncAudioError) as expected:
        require_sound(None)
    silent = {"target": inputs["clip"], "options": LIP_SYNC}
    assert _refused(client.post("/v1/jobs", json=silent), 422, "LipSyncAudioError", 36) == expected.value.message
    debugged = {**silent, "audio": inputs["voice"], "options": {"processors": ["face_debugger"]}}
    assert "only the lip syncer" in _refused(client.post("/v1/jobs", json=debugged), 422, "UsageError", 2)
    photo = upload(client, astronaut_path)["id"]
    assert "is an image, not an audio or video" in _refused(client.post("/v1/jobs", json={**silent, "audio": photo}),
                                                            422, "UsageError", None)
    as_photo = {**silent, "sources": [inputs["voice"]], "audio": inputs["voice"]}
    assert "is an audio, not an image" in _refused(client.post("/v1/jobs", json=as_photo), 422, "UsageError", None)
    named = {**silent, "options": {**LIP_SYNC, "source_audio": "/etc/passwd"}}  # a path: the server's owner's only
    assert "source_audio" in _refused(client.post("/v1/jobs", json=named), 422, "UsageError", 2)
    played = {**silent, "target": inputs["voice"], "audio": inputs["voice"]}
    assert "not an image or video" in _refused(client.post("/v1/jobs", json=played), 422, "UsageError", None)
    with server.client(token=create_token(server.data_dir, "carol")) as carol:
        theirs = upload(carol, server.data_dir / "assets" / f"{inputs['voice']}.wav", "theirs.wav")["id"]
    _refused(client.post("/v1/jobs", json={**silent, "audio": theirs}), 404, "NotFound", None)


def test_a_sound_in_use_is_kept(client: httpx.Client, inputs: dict[str, str], tmp_path: Path) -> None:
    voice = upload(client, write_sound(tmp_path / "again.wav", buzz(VOICE_S, SYLLABLES)))["id"]
    created = client.post("/v1/jobs", json={"target": inputs["clip"], "audio": voice, "options": LIP_SYNC})
    assert created.status_code == 202, created.text
    _refused(client.delete(f"/v1/assets/{voice}"), 409, "AssetInUse", None)
    assert finish(client, created.json()["id"])["state"] == "succeeded"
    retried = client.post(f"/v1/jobs/{created.json()['id']}/retry")
    assert retried.status_code == 202 and retried.json()["audio"] == voice  # run again with the same sound
    assert finish(client, retried.json()["id"])["state"] == "succeeded"
    assert client.delete(f"/v1/assets/{voice}").status_code == 204


def test_an_older_data_dir_gains_the_duration_column(tmp_path: Path) -> None:
    older = SCHEMA.replace(", duration REAL)", ")")
    assert older != SCHEMA
    db = sqlite3.connect(tmp_path / "slimfuse.db")
    db.executescript(older)
    db.close()
    store = JobStore(tmp_path)
    store.add_asset({"id": "a" * 20, "user": "alice", "kind": "audio", "suffix": ".wav", "name": "voice.wav",
                     "bytes": 10, "width": None, "height": None, "frames": None, "duration": 2.5, "created": 0.0})
    assert (store.asset("alice", "a" * 20) or {})["duration"] == 2.5
    JobStore(tmp_path)  # opened again: nothing to add


def test_a_sound_shorter_than_the_video_fails_the_job_by_its_name(server: Server, client: httpx.Client,
                                                                  inputs: dict[str, str], tmp_path: Path) -> None:
    short = upload(client, write_sound(tmp_path / "short.wav", buzz(1.0, SYLLABLES[:1])))["id"]
    created = client.post("/v1/jobs", json={"target": inputs["clip"], "audio": short, "options": LIP_SYNC})
    ended = finish(client, created.json()["id"])
    assert ended["state"] == "failed" and ended["error"] == "LipSyncAudioError" and ended["exit_code"] == 36, ended
    assert ended["message"].startswith("short.wav: ") and "shorter than the target video" in ended["message"]
    assert str(server.data_dir) not in ended["message"]


def test_bad_sounds_are_refused(client: httpx.Client, tmp_path: Path) -> None:
    flac = write_sound(tmp_path / "voice.flac", buzz(1.0, SYLLABLES[:1]), "flac").read_bytes()
    cut = client.post("/v1/assets", params={"name": "cut.flac"}, content=flac[: len(flac) // 2])
    assert "cut.flac" in _refused(cut, 422, "InputCorruptError", 6)
    wav = write_sound(tmp_path / "voice.wav", buzz(1.0, SYLLABLES[:1])).read_bytes()
    header = wav[: wav.index(b"data") + 8]  # a sound of no samples
    _refused(client.post("/v1/assets", params={"name": "silence.wav"}, content=header), 422, "InputEmptyError", 5)


@pytest.mark.parametrize("codec, suffix", [("pcm_s16le", ".wav"), ("flac", ".flac"), ("libmp3lame", ".mp3"),
                                           ("libopus", ".ogg"), ("aac", ".m4a")])
def test_sound_types_are_told_from_their_content(tmp_path: Path, codec: str, suffix: str) -> None:
    path = write_sound(tmp_path / f"voice{suffix}", buzz(1.0, SYLLABLES[:1]), codec)
    named = tmp_path / "voice.bin"  # the name says nothing
    path.rename(named)
    assert sniff(named, "voice") == ("audio", suffix) and suffix in AUDIO_SUFFIXES
    assert describe(named, "audio", "voice")["duration"] == pytest.approx(1.0, abs=0.05)
    assert set(AUDIO_TYPES.values()) <= set(AUDIO_SUFFIXES)
