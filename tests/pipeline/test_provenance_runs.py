"""Every swap's output says it is synthetic, by default: the mesh swap as composite synthetic media, a swap with a
trained model as composite trained algorithmic media; --no-provenance writes no label; C2PA credentials add a
signed manifest, and refused ones stop the run before any work. Read back with independent readers."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import neural_models as nm
from provenance_readers import IPTC, c2pa_report, created_source_type, tags_of, xmp_of
from slimfuse import Swapper
from slimfuse.bench.clips import make_clip, pan
from slimfuse.cli.main import main
from slimfuse.errors import C2paSigningError
from slimfuse.media.provenance import C2paSigner
from slimfuse.media.c2pa_sign import make_test_credentials
from slimfuse.media.provenance import MESH_SWAP, NEURAL_SWAP, SOURCE_TYPE_TAG


@pytest.fixture(scope="module")
def clip(tmp_path_factory: pytest.TempPathFactory, grace_hopper: np.ndarray) -> Path:
    return make_clip(tmp_path_factory.mktemp("provenance") / "pan.mp4", pan(grace_hopper, (320, 240), 6), fps=25)


def _swap(source: Path, target: Path, output: Path, *options: str) -> int:
    return main(["swap", "--quiet", "-s", str(source), "-t", str(target), "-o", str(output), *options])


@pytest.mark.parametrize("suffix", [".jpg", ".png", ".webp"])
def test_a_mesh_swap_is_labelled_composite_synthetic(tmp_path: Path, astronaut_path: Path, grace_hopper_path: Path,
                                                     suffix: str) -> None:
    output = tmp_path / f"out{suffix}"
    assert _swap(astronaut_path, grace_hopper_path, output) == 0
    described = xmp_of(output)
    assert described is not None and described[IPTC] == MESH_SWAP


def test_a_neural_swap_is_labelled_trained_algorithmic_media(tmp_path: Path, models_dir: Path, astronaut_path: Path,
                                                             grace_hopper_path: Path) -> None:
    nm.place_standins(models_dir)
    output = tmp_path / "out.jpg"
    assert _swap(astronaut_path, grace_hopper_path, output, "--models-dir", str(models_dir),
                 "--face-swapper-model", "inswapper_128") == 0
    described = xmp_of(output)
    assert described is not None and described[IPTC] == NEURAL_SWAP


def test_a_video_carries_the_label_in_its_container(tmp_path: Path, astronaut_path: Path, clip: Path) -> None:
    output = tmp_path / "out.mp4"
    assert _swap(astronaut_path, clip, output) == 0
    assert tags_of(output)[SOURCE_TYPE_TAG] == MESH_SWAP


def test_no_provenance_writes_no_label(tmp_path: Path, astronaut_path: Path, grace_hopper_path: Path,
                                       clip: Path) -> None:
    image, video = tmp_path / "out.png", tmp_path / "out.mp4"
    assert _swap(astronaut_path, grace_hopper_path, image, "--no-provenance") == 0
    assert _swap(astronaut_path, clip, video, "--no-provenance") == 0
    assert xmp_of(image) is None and SOURCE_TYPE_TAG not in tags_of(video)


def test_the_api_labels_what_it_writes(tmp_path: Path, astronaut_path: Path, grace_hopper: np.ndarray) -> None:
    output = tmp_path / "api.png"
    with Swapper([astronaut_path]) as swapper:
        swapper.swap_image(grace_hopper, output=output)
    described = xmp_of(output)
    assert described is not None and described[IPTC] == MESH_SWAP


@pytest.fixture(scope="module")
def signer(tmp_path_factory: pytest.TempPathFactory) -> C2paSigner:
    pytest.importorskip("c2pa", reason="the c2pa extra is not installed")
    return make_test_credentials(tmp_path_factory.mktemp("credentials"))


def test_c2pa_credentials_sign_a_manifest(tmp_path: Path, astronaut_path: Path, grace_hopper_path: Path,
                                          signer: C2paSigner) -> None:
    output = tmp_path / "signed.jpg"
    assert _swap(astronaut_path, grace_hopper_path, output, "--c2pa-key", str(signer.key),
                 "--c2pa-certificates", str(signer.certificates)) == 0
    manifest, failures, _ = c2pa_report(output)
    assert created_source_type(manifest) == MESH_SWAP
    assert not [code for code in failures if code != "signingCredential.untrusted"]  # a test CA is not trusted


def test_refused_credentials_stop_the_run_before_any_work(tmp_path: Path, astronaut_path: Path,
                                                          grace_hopper_path: Path, signer: C2paSigner,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    wrong_key = tmp_path / "key.pem"
    wrong_key.write_text("not a key")
    output = tmp_path / "out.jpg"
    code = _swap(astronaut_path, grace_hopper_path, output, "--c2pa-key", str(wrong_key),
                 "--c2pa-certificates", str(signer.certificates))
    assert code == C2paSigningError.exit_code and not output.exists()
    assert len(capsys.readouterr().err.strip().splitlines()) == 1
