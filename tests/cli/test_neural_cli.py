"""`slimfuse swap` with neural models and execution providers, through the real command line."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

import neural_models as nm
from slimfuse.cli.main import main
from slimfuse.faces.analyse import FaceAnalyser
from slimfuse.models import download as download_module
from slimfuse.models.download import SourceFailed
from slimfuse.models.pool import ModelPool
from slimfuse.models.store import Store
from slimfuse.processors.base import SourcePhoto
from slimfuse.processors.onnx_swap import swap_source
from slimfuse.samples import GRACE_HOPPER_FACE


@pytest.fixture
def placed(models_dir: Path) -> Path:
    folder = models_dir
    nm.save(nm.inswapper(), folder, "inswapper_128")
    nm.save(nm.recognizer(), folder, "arcface_w600k_r50")
    nm.save(nm.identity_enhancer("gfpgan_1.4"), folder, "gfpgan_1.4")
    return folder


def _args(source: Path, target: Path, output: Path, *extra: str) -> list[str]:
    return ["swap", "-s", str(source), "-t", str(target), "-o", str(output), *extra]


TINT = 4.0


def test_neural_swap_and_enhancer(placed: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                  astronaut_path: Path, astronaut: np.ndarray, grace_hopper_path: Path,
                                  grace_hopper: np.ndarray) -> None:
    """The swapper's stand-in tints its face by the source it is fed (identity enhancer): the face in the output
    takes that tint, so a model that never ran, or ran without the source, fails here."""
    nm.save(nm.inswapper(source_tint=TINT), placed, "inswapper_128")
    output = tmp_path / "out.png"
    code = main(_args(astronaut_path, grace_hopper_path, output, "--models-dir", str(placed), "--face-swapper-model",
                      "inswapper_128", "--face-swapper-pixel-boost", "256", "--enhancer", "gfpgan_1.4",
                      "--face-enhancer-blend", "60", "--face-recognizer-model", "arcface_w600k_r50", "--quiet"))
    captured = capsys.readouterr()
    assert code == 0 and captured.out.strip() == str(output) and captured.err == ""
    pool = ModelPool(Store(models_dir=placed, notify=lambda message: None))
    source = swap_source(pool, "inswapper_128", [SourcePhoto(image=astronaut, face=FaceAnalyser(pool).faces(astronaut)[0])])
    tint = nm.tint_of(source.tensor, TINT)[0] * 255.0
    x0, y0, x1, y1 = GRACE_HOPPER_FACE
    result = np.asarray(Image.open(output).convert("RGB")).astype(float)
    change = (result - grace_hopper)[y0:y1, x0:x1].mean(axis=(0, 1))
    assert np.linalg.norm(change) > 5 and change @ tint / (np.linalg.norm(change) * np.linalg.norm(tint)) > 0.95
    outside = np.ones(grace_hopper.shape[:2], dtype=bool)
    outside[y0 - 100:y1 + 100, x0 - 100:x1 + 100] = False  # the aligned crop reaches past the face's box
    assert np.array_equal(result[outside], grace_hopper[outside])  # the rest of the picture is untouched


def test_a_missing_provider_is_loud_and_the_cpu_used(placed: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                     astronaut_path: Path, grace_hopper_path: Path) -> None:
    output = tmp_path / "out.png"
    code = main(_args(astronaut_path, grace_hopper_path, output, "--execution-provider", "cuda", "cpu", "--quiet"))
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 0 and output.exists()
    assert len(err) == 1 and err[0].startswith("slimfuse: warning: CUDA execution provider unavailable (")
    assert err[0].endswith("; using the CPU")


@pytest.mark.parametrize("providers", [["cuda"], ["tensorrt", "cuda"], ["openvino"]])
def test_strict_provider_refuses_with_its_exit_code_and_no_output(placed: Path, tmp_path: Path, providers: list[str],
                                                                  capsys: pytest.CaptureFixture[str],
                                                                  astronaut_path: Path,
                                                                  grace_hopper_path: Path) -> None:
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    code = main(_args(astronaut_path, grace_hopper_path, out_dir / "result.png", "--models-dir", str(placed),
                      "--face-swapper-model", "inswapper_128", "--execution-provider", *providers,
                      "--strict-provider"))
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 17
    assert len(err) == 1 and err[0].startswith("slimfuse: ") and "execution provider unavailable" in err[0]
    assert "--strict-provider" in err[0]
    assert list(out_dir.iterdir()) == []


def test_a_pixel_boost_that_does_not_suit_the_model_is_a_usage_error(placed: Path, tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str],
                                                                      astronaut_path: Path,
                                                                      grace_hopper_path: Path) -> None:
    nm.save(nm.identity_swapper("hyperswap_1a_256"), placed, "hyperswap_1a_256")
    code = main(_args(astronaut_path, grace_hopper_path, tmp_path / "out.png", "--models-dir", str(placed),
                      "--face-swapper-model", "hyperswap_1a_256", "--face-swapper-pixel-boost", "384"))
    err = capsys.readouterr().err
    assert code == 2 and "choose one of 256, 512, 768, 1024" in err and not (tmp_path / "out.png").exists()


def test_a_missing_model_names_where_to_place_it(placed: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                 monkeypatch: pytest.MonkeyPatch, astronaut_path: Path,
                                                 grace_hopper_path: Path) -> None:
    def offline(url: str, *args: object, **kwargs: object) -> None:
        raise SourceFailed("network unreachable")

    monkeypatch.setattr(download_module, "resumable_download", offline)
    args = _args(astronaut_path, grace_hopper_path, tmp_path / "out.png", "--models-dir", str(placed),
                 "--face-swapper-model", "ghost_1_256")
    code = main(args)
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 14 and len(err) == 1 and len(err[0]) < 400
    assert "ghost_1_256" in err[0] and "Place ghost_1_256.onnx in a folder and pass --models-dir" in err[0]
    assert "github.com" not in err[0]
    assert main([*args, "--debug"]) == 14
    assert "github.com/facefusion/facefusion-assets/releases/download/models-3.0.0/ghost_1_256.onnx" in \
        capsys.readouterr().err
    assert not (tmp_path / "out.png").exists()
