"""What a server accepts from a client, read from the option table: the allowlist, the form it serves, wrong types
as usage errors, and a job whose variants are not made refused at submission (the server makes none)."""
from __future__ import annotations

from pathlib import Path

import pytest

import neural_models as nm
from slimfuse.config import OPTIONS, RunConfig
from slimfuse.errors import ModelUnavailableError, UsageError, VariantsNotReadyError
from slimfuse.models.store import Store
from slimfuse.pipeline import plan
from slimfuse.serve.errors import STATUS_BY_EXIT
from slimfuse.serve.planning import CLIENT_OPTIONS, client_options, plan_job
from slimfuse.serve.worker import hide_paths

SERVER_ONLY = {"reference_face_image", "models_dir", "temp_path", "keep_temp", "temp_frame_format", "c2pa_key",
               "c2pa_certificates", "provenance", "system_memory_limit", "profile", "execution_providers",
               "execution_device_id", "execution_thread_count", "strict_provider", "execution_gpu_memory_limit",
               "execution_arena_extend_strategy", "execution_cudnn_conv_algo_search", "execution_tensorrt_fp16",
               "execution_tensorrt_cache_dir", "execution_device_ids", "config_path", "log_level", "halt_on_error",
               "deep_swapper_file", "source_audio"}
"""Options that name the server's files, choose its hardware or drop the synthetic label (a profile sets hardware
options too)."""


def test_the_allowlist_is_every_option_but_the_servers_own() -> None:
    assert CLIENT_OPTIONS == {entry.name for entry in OPTIONS} - SERVER_ONLY
    for name in SERVER_ONLY:
        with pytest.raises(UsageError, match=f"not accepted by the server: {name}"):
            client_options({name: None})


@pytest.mark.parametrize(("options", "message"), [
    ({"target_face_size": "huge"}, "--target-face-size: must be a whole number, got 'huge'"),
    ({"face_mask_blur": "0.5"}, "--face-mask-blur: must be a number, got '0.5'"),
    ({"keep_mouth": "yes"}, "--keep-mouth: must be true or false, got 'yes'"),
    ({"face_mask_types": "box"}, "--face-mask-types: must be a list, got 'box'"),
    ({"face_mask_padding": [1, 2, 3, 4, 5]}, "--face-mask-padding: takes 1 to 4 values, got 5"),
    ({"video_memory_level": "3"}, "--video-memory-level: invalid choice: '3'"),
    ({"trim_frame_end": 0}, "--trim-frame-end: must be a positive whole number, got 0"),
    ({"reuse_threshold": float("nan")}, "--reuse-threshold: must be a finite number, got nan"),
    ({"memory_budget": float("inf")}, "--memory-budget: must be positive, got inf"),
])
def test_a_wrong_type_is_a_usage_error_naming_the_option(options: dict, message: str) -> None:  # type: ignore[type-arg]
    with pytest.raises(UsageError) as refused:
        RunConfig.from_options([], **client_options(options))
    assert refused.value.message.startswith(message) and refused.value.exit_code == 2


def test_a_job_whose_variants_are_not_made_is_refused_naming_the_commands(
        tmp_path: Path, store: Store, monkeypatch: pytest.MonkeyPatch, astronaut_path: Path) -> None:
    monkeypatch.setattr(plan, "MIN_VARIANT_BYTES", 0)
    home = nm.isolated_store(tmp_path / "home", store)
    monkeypatch.setenv("SLIMFUSE_HOME", str(home.home))
    placed = nm.place_standins(tmp_path / "placed")
    options = {"face_swapper_model": "inswapper_128", "video_memory_level": 3}
    with pytest.raises(VariantsNotReadyError) as refused:
        plan_job([astronaut_path], astronaut_path, options, placed)
    assert "slimfuse optimize inswapper_128 --int8 --gate" in refused.value.message
    assert refused.value.exit_code == 24 and STATUS_BY_EXIT[24] == 503
    assert not list(home.model_dir.glob("*.int8*")) and not list(placed.glob("*.int8*"))  # nothing was made
    config, peak = plan_job([astronaut_path], astronaut_path, {**options, "video_memory_level": 2}, placed)
    assert config.memory.video_memory_level == 2 and peak > 0  # level 2 runs no variants


def test_a_model_the_server_does_not_hold_is_refused_without_its_paths(
        tmp_path: Path, store: Store, monkeypatch: pytest.MonkeyPatch, astronaut_path: Path) -> None:
    home = nm.isolated_store(tmp_path / "home", store)
    monkeypatch.setenv("SLIMFUSE_HOME", str(home.home))
    with pytest.raises(ModelUnavailableError) as refused:
        plan_job([astronaut_path], astronaut_path, {"face_swapper_model": "inswapper_128"}, tmp_path / "placed")
    assert refused.value.message.startswith("inswapper_128, arcface_w600k_r50: not installed on this server")
    assert str(tmp_path) not in refused.value.message and STATUS_BY_EXIT[14] == 503


def test_server_paths_are_cut_to_file_names() -> None:
    message = hide_paths("/srv/data/assets/a6b.png: no face; put it at /home/sf/.cache/slimfuse/models/x.onnx (or "
                         "/srv/data/scratch)", [Path("/srv/data"), Path("/home/sf/.cache/slimfuse"), Path("/home/sf")])
    assert message == "a6b.png: no face; put it at x.onnx (or scratch)"
