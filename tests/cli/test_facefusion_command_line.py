"""FaceFusion's command line as its users type it, through slimfuse's: a headless-run line from FaceFusion's own
documentation run as `slimfuse swap`, its ini file (--config-path), --processors, --log-level, --halt-on-error,
--output-image-scale, --execution-device-ids and --reference-frame-number; and the server's clients kept from the
options of the machine."""
from __future__ import annotations

import json
import shlex
from pathlib import Path

import av
import numpy as np
import pytest
from PIL import Image

import neural_models as nm
from scenes import place
from slimfuse.batch.worker import Task, Worker
from slimfuse.bench.clips import make_clip
from slimfuse.cli.main import main
from slimfuse.config import FACEFUSION_PROCESSORS, OPTIONS, SLIMFUSE_PROCESSORS, RunConfig
from slimfuse.models import download as download_module
from slimfuse.models.download import SourceFailed
from slimfuse.options import for_audience
from slimfuse.pipeline.run import plan_for
from slimfuse.samples import ASTRONAUT_FACE, GRACE_HOPPER_FACE

FACEFUSION_LINE = (
    "python facefusion.py headless-run --processors face_swapper face_enhancer -s {source} -t {target} -o {output} "
    "--face-swapper-model inswapper_128 --face-enhancer-model gfpgan_1.4 --face-enhancer-blend 80 "
    "--face-selector-mode reference --reference-face-position 0 --face-selector-order left-right "
    "--face-detector-angles 0 --face-detector-margin 0 0 0 0 --face-detector-score 0.5 --face-landmarker-score 0.5 "
    "--face-mask-types box --face-mask-blur 0.3 --face-mask-padding 0 0 0 0 --output-image-quality 80 "
    "--output-image-scale 1 --execution-providers cpu --execution-device-ids 0 --execution-thread-count 2 "
    "--video-memory-strategy strict --log-level info"
)
"""A headless-run line as FaceFusion's documentation and tests write them (tests/test_cli_face_swapper.py: its
processors, -s -t -o), with the options of the face swapper, enhancer, detector, selector and masker."""


def _swap(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["swap", *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _changed(before: np.ndarray, after: np.ndarray, box: tuple[float, ...], by: float = 0.5) -> bool:
    x0, y0, x1, y1 = (int(value) for value in box)
    area = (slice(y0, y1), slice(x0, x1))
    return float(np.abs(after[area].astype(float) - before[area]).mean()) > by


@pytest.fixture
def placed(models_dir: Path) -> Path:
    """FaceFusion's models as a user places them: stand-ins of inswapper (tinting by its source), ArcFace and GFPGAN."""
    nm.save(nm.inswapper(source_tint=4.0), models_dir, "inswapper_128")
    nm.save(nm.recognizer(), models_dir, "arcface_w600k_r50")
    nm.save(nm.identity_enhancer("gfpgan_1.4"), models_dir, "gfpgan_1.4")
    return models_dir


def test_a_facefusion_headless_run_line_runs_as_slimfuse_swap(tmp_path: Path, placed: Path, astronaut_path: Path,
                                                              grace_hopper_path: Path, grace_hopper: np.ndarray,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    output = tmp_path / "output.jpg"
    line = FACEFUSION_LINE.format(source=astronaut_path, target=grace_hopper_path, output=output)
    words = shlex.split(line)
    assert words[:3] == ["python", "facefusion.py", "headless-run"]
    code, out, err = _swap(capsys, *words[3:], "--models-dir", str(placed))
    assert code == 0, err
    assert out.strip() == str(output) and "1 face found, 1 swapped" in err
    result = np.asarray(Image.open(output).convert("RGB"))
    assert result.shape == grace_hopper.shape
    assert _changed(grace_hopper, result, GRACE_HOPPER_FACE, by=3.0)  # the tinting stand-in swapped the face
    corner = (0, 0, 100, 100)
    assert not _changed(grace_hopper, result, corner, by=2.0)  # and left the rest (a JPEG's own noise aside)


def _ini(folder: Path, text: str) -> Path:
    path = folder / "facefusion.ini"
    path.write_text(text)
    return path


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory, astronaut: np.ndarray,
         grace_hopper: np.ndarray) -> tuple[Path, np.ndarray, list[tuple[float, ...]]]:
    """Two faces of about one size: the astronaut on the left, Grace Hopper on the right."""
    canvas = np.full((320, 640, 3), 90, np.uint8)
    boxes = [place(canvas, astronaut, ASTRONAUT_FACE, 110, (160, 160)),
             place(canvas, grace_hopper, GRACE_HOPPER_FACE, 110, (480, 160))]
    path = tmp_path_factory.mktemp("pair") / "pair.png"
    Image.fromarray(canvas).save(path)
    return path, canvas, boxes


def test_the_config_file_sets_options_and_the_command_line_wins(tmp_path: Path, grace_hopper_path: Path, pair,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    target, image, boxes = pair
    ini = _ini(tmp_path, "[face_selector]\nface_selector_order = right-left\nface_selector_gender =\n\n"
                         "[output_creation]\noutput_image_scale = 0.5\noutput_image_quality = 90\n\n"
                         "[face_detector]\nface_detector_angles = 0 180\n")
    output = tmp_path / "out.png"
    code, _, err = _swap(capsys, "-s", str(grace_hopper_path), "-t", str(target), "-o", str(output),
                         "--config-path", str(ini))
    assert code == 0, err
    result = np.asarray(Image.open(output).convert("RGB"))
    assert result.shape[:2] == (160, 320)  # the file's 0.5
    halved = np.asarray(Image.fromarray(image).resize((320, 160), Image.Resampling.BOX))
    left, right = ([value / 2 for value in box] for box in boxes)
    assert _changed(halved, result, left, by=3.0) is False and _changed(halved, result, right, by=3.0)  # right-left

    code, _, err = _swap(capsys, "-s", str(grace_hopper_path), "-t", str(target), "-o", str(output),
                         "--config-path", str(ini), "--output-image-scale", "1", "--face-selector-order", "left-right")
    assert code == 0, err
    result = np.asarray(Image.open(output).convert("RGB"))
    assert result.shape == image.shape and _changed(image, result, boxes[0]) and not _changed(image, result, boxes[1])


def test_the_config_file_is_read_by_the_python_api_too(tmp_path: Path) -> None:
    ini = _ini(tmp_path, "[face_selector]\nface_selector_order = top-bottom\nreference_frame_number = 12\n"
                         "[output_creation]\noutput_audio_volume = 40\n[memory]\nvideo_memory_strategy = strict\n"
                         "[processors]\nprocessors = face_swapper frame_enhancer\n[misc]\nhalt_on_error = true\n")
    config = RunConfig.from_options(["a.jpg"], config_path=ini, output_audio_volume=70)
    assert config.faces.face_selector_order == "top-bottom" and config.faces.reference_frame_number == 12
    assert config.encode.output_audio_volume == 70  # given wins over the file
    assert config.memory.video_memory_level == 2 and config.program.halt_on_error is True
    assert config.enhance.frame_enhancer_model == "real_esrgan_x4" and config.enhance.face_enhancer_model == "none"


@pytest.mark.parametrize(("text", "code", "message"), [
    ("[face_selector]\nface_selector_order = diagonal\n", 2,
     "facefusion.ini: [face_selector] face_selector_order: invalid choice: 'diagonal'"),
    ("[misc]\nhalt_on_error = perhaps\n", 2, "facefusion.ini: [misc] halt_on_error: must be true or false, got 'perhaps'"),
    ("face_selector_order = left-right\n", 2, "facefusion.ini: not an ini file (File contains no section headers."),
])
def test_a_wrong_config_file_names_the_file_section_and_key(tmp_path: Path, astronaut_path: Path,
                                                            grace_hopper_path: Path, text: str, code: int,
                                                            message: str, capsys: pytest.CaptureFixture[str]) -> None:
    ini = _ini(tmp_path, text)
    output = tmp_path / "out.png"
    got, _, err = _swap(capsys, "-s", str(astronaut_path), "-t", str(grace_hopper_path), "-o", str(output),
                        "--config-path", str(ini))
    lines = err.strip().splitlines()
    assert got == code and len(lines) == 1 and message in lines[0] and not output.exists()


def test_a_missing_config_file_is_exit_3(tmp_path: Path, astronaut_path: Path, grace_hopper_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _swap(capsys, "-s", str(astronaut_path), "-t", str(grace_hopper_path), "-o",
                         str(tmp_path / "out.png"), "--config-path", str(tmp_path / "absent.ini"))
    assert code == 3 and "absent.ini: config file not found (--config-path)" in err


def test_keys_slimfuse_has_no_option_for_are_named_in_one_warning(tmp_path: Path, astronaut_path: Path,
                                                                  grace_hopper_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    ini = _ini(tmp_path, "[paths]\nsource_paths = a.jpg\njobs_path =\n[download]\ndownload_providers = github\n"
                         "[uis]\nui_layouts = default\n[face_selector]\nface_selector_order = large-small\n")
    code, _, err = _swap(capsys, "-s", str(astronaut_path), "-t", str(grace_hopper_path), "-o",
                         str(tmp_path / "out.png"), "--config-path", str(ini))
    warnings = [line for line in err.splitlines() if "warning" in line]
    assert code == 0 and warnings == [f"slimfuse: warning: {ini}: not options of slimfuse, so not read: [paths] "
                                      "source_paths, [download] download_providers, [uis] ui_layouts"]
    ini.write_text(ini.read_text() + "[misc]\nlog_level = error\n")  # the file's own log level hides it
    code, _, err = _swap(capsys, "-s", str(astronaut_path), "-t", str(grace_hopper_path), "-o",
                         str(tmp_path / "out.png"), "--config-path", str(ini))
    assert code == 0 and err == ""


@pytest.mark.parametrize(("level", "lines"), [(None, 1), ("info", 1), ("debug", 1), ("warn", 0), ("error", 0)])
def test_the_log_level_decides_which_lines_reach_stderr(tmp_path: Path, astronaut_path: Path,
                                                        grace_hopper_path: Path, level: str | None, lines: int,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    extra = () if level is None else ("--log-level", level)
    code, out, err = _swap(capsys, "-s", str(astronaut_path), "-t", str(grace_hopper_path), "-o",
                           str(tmp_path / "out.png"), *extra)
    assert code == 0 and out.strip() == str(tmp_path / "out.png")
    assert len([line for line in err.splitlines() if "1 face found, 1 swapped" in line]) == lines


def test_error_also_hides_warnings_and_keeps_errors(tmp_path: Path, astronaut_path: Path, grace_hopper_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["-s", str(astronaut_path), "-t", str(grace_hopper_path), "-o", str(tmp_path / "out.png"),
            "--execution-providers", "cuda", "cpu"]  # no CUDA here: a warning says so
    assert "warning: CUDA execution provider unavailable" in _swap(capsys, *argv, "--log-level", "warn")[2]
    assert _swap(capsys, *argv, "--log-level", "error")[2] == ""
    code, _, err = _swap(capsys, "-s", str(astronaut_path), "-t", str(tmp_path / "absent.png"), "-o",
                         str(tmp_path / "out.png"), "--log-level", "error")
    assert code == 3 and "absent.png" in err


def test_processors_map_onto_the_stages(tmp_path: Path, models_dir: Path, astronaut_path: Path,
                                        grace_hopper_path: Path, monkeypatch: pytest.MonkeyPatch,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    def offline(url: str, *args: object, **kwargs: object) -> None:
        raise SourceFailed("network unreachable")

    monkeypatch.setattr(download_module, "resumable_download", offline)
    argv = ["-s", str(astronaut_path), "-t", str(grace_hopper_path), "-o", str(tmp_path / "out.png"),
            "--models-dir", str(models_dir)]
    code, _, err = _swap(capsys, *argv, "--processors", "face_swapper", "face_enhancer")
    assert code == 14 and "gfpgan_1.4" in err  # FaceFusion's default face enhancer is run, so it is needed
    code, _, err = _swap(capsys, *argv, "--processors", "face_swapper", "--face-enhancer-model", "gfpgan_1.4")
    assert code == 0 and "warning: --face-enhancer-model gfpgan_1.4: not run, as --processors does not list " \
                         "face_enhancer" in err
    missing = [name for name in FACEFUSION_PROCESSORS if name not in SLIMFUSE_PROCESSORS]
    if missing:
        code, _, err = _swap(capsys, *argv, "--processors", "face_swapper", missing[0])
        assert code == 2 and err.strip().splitlines() == [
            f"slimfuse: --processors: {missing[0]}: not in slimfuse, which has {', '.join(SLIMFUSE_PROCESSORS)}; "
            "see slimfuse swap --help"]
    code, _, err = _swap(capsys, *argv, "--processors", "face_swapper", "face_swapper")
    assert code == 2 and "--processors: list each processor once" in err
    code, _, err = _swap(capsys, *argv[2:], "--processors", "face_swapper", "face_debugger")
    assert code == 2 and err.strip().splitlines() == [
        "slimfuse: give a source photo: face_swapper puts its face in; see slimfuse swap --help"]
    code, _, err = _swap(capsys, *argv, "--processors", "frame_enhancer", "face_swapper", "--frame-enhancer-keep-scale")
    assert code == 2 and "list frame_enhancer after the face stages" in err
    config = RunConfig.from_options(["a.jpg"], processors=["face_swapper", "frame_enhancer"],
                                    frame_enhancer_model="real_esrgan_x2")
    assert config.stages == ("face_swapper", "frame_enhancer")
    assert config.enhance.frame_enhancer == "real_esrgan_x2" and config.enhance.face_enhancer is None
    assert RunConfig.from_options([], face_enhancer_model="gfpgan_1.4").stages == ("face_swapper", "face_enhancer")


def test_a_run_without_the_face_swapper_needs_no_source(tmp_path: Path, models_dir: Path, grace_hopper_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """--processors face_debugger alone: no -s, the target's own faces drawn on, nothing swapped."""
    output = tmp_path / "drawn.png"
    code, _, err = _swap(capsys, "-t", str(grace_hopper_path), "-o", str(output), "--models-dir", str(models_dir),
                         "--processors", "face_debugger")
    assert code == 0 and "1 face found, 1 processed" in err, err
    target = np.asarray(Image.open(grace_hopper_path).convert("RGB"))
    drawn = np.asarray(Image.open(output).convert("RGB"))
    changed = np.any(drawn != target, axis=2)
    assert changed.mean() > 0.002  # the box, points and tag
    rows, cols = np.nonzero(changed)
    assert rows.min() > 50 and cols.min() > 50 and cols.max() < target.shape[1] - 50  # drawn around the face only


@pytest.mark.parametrize(("scale", "size"), [(0.5, (256, 300)), (2.0, (1024, 1200)), (1.5, (768, 900))])
def test_the_output_image_scale_sizes_the_output(tmp_path: Path, astronaut_path: Path, grace_hopper_path: Path,
                                                 scale: float, size: tuple[int, int],
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    plain, scaled = tmp_path / "plain.png", tmp_path / "scaled.png"
    assert _swap(capsys, "-s", str(astronaut_path), "-t", str(grace_hopper_path), "-o", str(plain))[0] == 0
    code, _, err = _swap(capsys, "-s", str(astronaut_path), "-t", str(grace_hopper_path), "-o", str(scaled),
                         "--output-image-scale", str(scale))
    assert code == 0, err
    result = Image.open(scaled).convert("RGB")
    assert result.size == size
    expected = np.asarray(Image.open(plain).convert("RGB").resize(size, Image.Resampling.BICUBIC)).astype(float)
    assert np.abs(np.asarray(result).astype(float) - expected).mean() < 3  # the swapped image, scaled


def test_halt_on_error_stops_a_batch_at_its_first_failure(tmp_path: Path, astronaut_path: Path,
                                                          grace_hopper: np.ndarray,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    photos = tmp_path / "photos"
    photos.mkdir()
    targets = [photos / "a.png", photos / "b.jpg", photos / "c.png"]
    Image.fromarray(grace_hopper).resize((256, 300)).save(targets[0])
    targets[1].write_bytes(b"not a photo")
    Image.fromarray(grace_hopper).resize((256, 300)).save(targets[2])
    out = tmp_path / "out"
    argv = ["-s", str(astronaut_path), "-t", *map(str, targets), "-o", str(out), "--report", str(tmp_path / "r.json")]
    code, stdout, err = _swap(capsys, *argv, "--halt-on-error")
    assert code == 50 and stdout.split() == [str(out / "a.png")]
    assert "not run: an earlier item failed (--halt-on-error)" in err and "1 done, 1 skipped, 1 failed" in err
    assert not (out / "c.png").exists()
    items = json.loads((tmp_path / "r.json").read_text())["items"]
    assert [item["status"] for item in items] == ["done", "failed", "skipped"]
    code, _, err = _swap(capsys, *argv)
    assert code == 50 and (out / "c.png").exists() and "1 done, 1 skipped, 1 failed" in err  # a.png from the journal


def test_execution_device_ids_choose_the_gpu_and_the_workers_take_them_in_turn(tmp_path: Path, astronaut_path: Path,
                                                                               grace_hopper_path: Path,
                                                                               capsys: pytest.CaptureFixture[str]) -> None:
    config = RunConfig.from_options([astronaut_path], execution_device_ids=[1, 0])
    assert config.runtime.execution_device_id == 1 and plan_for(config).runtime.device_id == 1
    code, _, err = _swap(capsys, "-s", str(astronaut_path), "-t", str(grace_hopper_path), "-o",
                         str(tmp_path / "o.png"), "--execution-device-id", "2", "--execution-device-ids", "1")
    assert code == 2 and "--execution-device-ids: give it or --execution-device-id 2, not both" in err
    worker = Worker(device_id=3)
    task = Task(0, (astronaut_path,), {"execution_device_ids": (1, 0)}, grace_hopper_path, tmp_path / "w.png")
    try:
        assert worker.run(task).error is None and (tmp_path / "w.png").exists()
        assert worker._kept is not None and worker._kept.current is not None
        assert worker._kept.current.config.runtime.execution_device_id == 3
    finally:
        worker.close()


def test_the_reference_frame_number_takes_the_reference_face_from_that_frame(tmp_path: Path, astronaut_path: Path,
                                                                             astronaut: np.ndarray,
                                                                             grace_hopper: np.ndarray,
                                                                             capsys: pytest.CaptureFixture[str]) -> None:
    """Both people in every frame; the astronaut is the larger one in frames 0-5, Grace Hopper in 6-11. Reference
    mode takes the largest face of frame 0 (the astronaut, who matches herself only) unless told frame 8; with
    the astronaut as the source, only swapping Grace Hopper shows."""
    frames, boxes = [], []
    for index in range(12):
        canvas = np.full((240, 480, 3), 90, np.uint8)
        big, small = (110, 80) if index < 6 else (80, 110)
        place(canvas, astronaut, ASTRONAUT_FACE, big, (120, 120))
        boxes.append(place(canvas, grace_hopper, GRACE_HOPPER_FACE, small, (360, 120)))
        frames.append(canvas)
    clip = make_clip(tmp_path / "clip.mp4", frames, fps=12, crf=0)

    def grace_swapped(*extra: str) -> bool:
        output = tmp_path / "out.mp4"
        code, _, err = _swap(capsys, "-s", str(astronaut_path), "-t", str(clip), "-o", str(output),
                             "--face-selector-mode", "reference", "--face-detector-interval", "1", *extra)
        assert code == 0, err
        with av.open(str(output)) as container:
            first = next(iter(container.decode(video=0))).to_ndarray(format="rgb24")
        return _changed(frames[0], first, boxes[0], by=4.0)

    assert not grace_swapped()
    assert grace_swapped("--reference-frame-number", "8")
    code, _, err = _swap(capsys, "-s", str(astronaut_path), "-t", str(clip), "-o", str(tmp_path / "o.mp4"),
                         "--face-selector-mode", "reference", "--reference-frame-number", "12")
    assert code == 2 and "--reference-frame-number: " in err and "has 12 frames, so 0 to 11, got 12" in err


def test_a_server_client_cannot_set_the_options_of_the_machine() -> None:
    clients = {entry.name for entry in for_audience(OPTIONS, "client")}
    assert {"config_path", "log_level", "execution_device_ids", "halt_on_error"}.isdisjoint(clients)
    assert {"face_selector_order", "face_selector_gender", "face_detector_angles", "output_image_scale",
            "output_audio_volume", "processors", "reference_frame_number"} <= clients
    lives = {entry.name for entry in for_audience(OPTIONS, "live")}
    assert "log_level" in lives and "config_path" in lives and "halt_on_error" not in lives
