"""Every output says that it is synthetic: XMP in JPEG, PNG and WebP, container tags in videos, and a signed
C2PA manifest where the c2pa extra is installed. Each label is read back with an independent reader (the file's
bytes parsed as XML, PyAV's container metadata, c2pa's own Reader)."""
from __future__ import annotations

import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from provenance_readers import CREATOR, IPTC, RDF_DESCRIPTION, c2pa_report, created_source_type, tags_of, xmp_of
from slimfuse.bench.clips import make_clip, still
from slimfuse.errors import C2paSigningError
from slimfuse.media.provenance import C2paSigner
from slimfuse.media.c2pa_sign import check_signer, make_test_credentials
from slimfuse.media.image_io import write_image_atomic
from slimfuse.media.provenance import MESH_SWAP, NEURAL_SWAP, ProvenanceLabel, tool_version
from slimfuse.media.formats import EncodeSettings
from slimfuse.media.video_probe import probe
from slimfuse.media.video_reader import VideoReader
from slimfuse.media.video_writer import VideoWriter

FAST = EncodeSettings(preset="ultrafast")


@pytest.fixture(scope="module")
def signer(tmp_path_factory: pytest.TempPathFactory) -> C2paSigner:
    pytest.importorskip("c2pa", reason="the c2pa extra is not installed")
    return make_test_credentials(tmp_path_factory.mktemp("credentials"))


@pytest.mark.parametrize("suffix", [".jpg", ".png", ".webp"])
@pytest.mark.parametrize("neural", [True, False])
def test_images_carry_the_digital_source_type_in_xmp(tmp_path: Path, grace_hopper: np.ndarray, suffix: str,
                                                     neural: bool) -> None:
    path = tmp_path / f"out{suffix}"
    write_image_atomic(Image.fromarray(grace_hopper), path, provenance=ProvenanceLabel.for_swapper(neural))
    described = xmp_of(path)
    assert described is not None
    assert described[IPTC] == (NEURAL_SWAP if neural else MESH_SWAP)
    assert described[IPTC].startswith("http://cv.iptc.org/newscodes/digitalsourcetype/")
    assert described[CREATOR] == f"slimfuse {tool_version()}" and tool_version() != "unknown"
    with Image.open(path) as opened:  # Pillow's own reader finds the same packet where the format keeps it
        packet = opened.info.get("xmp") or opened.info.get("XML:com.adobe.xmp")
        assert packet is not None
        text = packet.decode("utf-8") if isinstance(packet, bytes) else packet
        found = ET.fromstring(text[text.index("<x:xmpmeta"):text.index("</x:xmpmeta>") + 12]).find(
            f".//{RDF_DESCRIPTION}")
        assert found is not None and found.attrib[IPTC] == described[IPTC]
        assert np.asarray(opened.convert("RGB")).shape == grace_hopper.shape


@pytest.mark.parametrize("suffix", [".jpg", ".png", ".webp", ".bmp"])
def test_no_label_writes_no_xmp(tmp_path: Path, grace_hopper: np.ndarray, suffix: str) -> None:
    path = tmp_path / f"out{suffix}"
    write_image_atomic(Image.fromarray(grace_hopper), path, provenance=None)
    assert xmp_of(path) is None


def test_bmp_cannot_hold_a_label(tmp_path: Path, grace_hopper: np.ndarray) -> None:
    path = tmp_path / "out.bmp"
    write_image_atomic(Image.fromarray(grace_hopper), path, provenance=ProvenanceLabel())
    assert xmp_of(path) is None and b"slimfuse" not in path.read_bytes()
    assert np.array_equal(np.asarray(Image.open(path).convert("RGB")), grace_hopper)


def _video(tmp_path: Path, photo: np.ndarray, suffix: str, label: ProvenanceLabel | None,
           notices: list[str] | None = None) -> Path:
    source = make_clip(tmp_path / f"in{suffix}", still(photo, size=(160, 120), count=5), codec=(
        "libvpx-vp9" if suffix == ".webm" else "libx264"))
    target = tmp_path / f"out{suffix}"
    settings = EncodeSettings(preset="ultrafast", encoder="libvpx-vp9" if suffix == ".webm" else None)
    notify = notices.append if notices is not None else (lambda message: None)
    with VideoReader(source) as reader, VideoWriter(target, probe(source), settings, notify=notify,
                                                    provenance=label) as writer:
        for frame in reader:
            writer.write(frame)
    return target


@pytest.mark.parametrize("suffix", [".mp4", ".mov", ".mkv", ".webm"])
def test_videos_carry_the_digital_source_type_in_container_tags(tmp_path: Path, grace_hopper: np.ndarray,
                                                                 suffix: str) -> None:
    path = _video(tmp_path, grace_hopper, suffix, ProvenanceLabel.for_swapper(False))
    tags = tags_of(path)
    assert tags["digital_source_type"] == MESH_SWAP
    assert MESH_SWAP in tags["comment"] and "synthetic" in tags["comment"]
    assert tags["encoded_by"] == f"slimfuse {tool_version()}"
    assert probe(path).frame_count in (5, None)


def test_avi_keeps_the_comment(tmp_path: Path, grace_hopper: np.ndarray) -> None:
    path = _video(tmp_path, grace_hopper, ".avi", ProvenanceLabel())
    assert NEURAL_SWAP in tags_of(path)["comment"]


def test_no_label_writes_no_tags(tmp_path: Path, grace_hopper: np.ndarray) -> None:
    tags = tags_of(_video(tmp_path, grace_hopper, ".mp4", None))
    assert "digital_source_type" not in tags and "comment" not in tags


@pytest.mark.parametrize("suffix", [".jpg", ".png", ".webp"])
def test_images_get_a_signed_c2pa_manifest(tmp_path: Path, grace_hopper: np.ndarray, signer: C2paSigner,
                                           suffix: str) -> None:
    path = tmp_path / f"out{suffix}"
    write_image_atomic(Image.fromarray(grace_hopper), path, provenance=ProvenanceLabel(c2pa=signer))
    manifest, failures, successes = c2pa_report(path)
    assert created_source_type(manifest) == NEURAL_SWAP
    assert manifest["claim_generator_info"][0]["name"] == "slimfuse"
    # The signature and the hash of the pixels hold; only the test CA is, rightly, not a trusted one.
    assert failures == ["signingCredential.untrusted"]
    assert "claimSignature.validated" in successes and "assertion.dataHash.match" in successes
    assert xmp_of(path) is not None and xmp_of(path)[IPTC] == NEURAL_SWAP  # the XMP label is kept too
    assert [p.name for p in tmp_path.iterdir()] == [path.name]


def test_a_changed_pixel_breaks_the_manifest(tmp_path: Path, grace_hopper: np.ndarray, signer: C2paSigner) -> None:
    path = tmp_path / "out.png"
    write_image_atomic(Image.fromarray(grace_hopper), path, provenance=ProvenanceLabel(c2pa=signer))
    data = bytearray(path.read_bytes())
    data[-100] ^= 0xFF  # inside the image data, far from the manifest
    path.write_bytes(bytes(data))
    _, failures, _ = c2pa_report(path)
    assert "assertion.dataHash.mismatch" in failures


@pytest.mark.parametrize("suffix", [".mp4", ".mov"])
def test_videos_get_a_signed_c2pa_manifest(tmp_path: Path, grace_hopper: np.ndarray, signer: C2paSigner,
                                           suffix: str) -> None:
    path = _video(tmp_path, grace_hopper, suffix, ProvenanceLabel.for_swapper(False, c2pa=signer))
    manifest, failures, _ = c2pa_report(path)
    assert created_source_type(manifest) == MESH_SWAP
    assert failures == ["signingCredential.untrusted"]
    assert tags_of(path)["digital_source_type"] == MESH_SWAP
    assert len(list(VideoReader(path))) == 5


def test_a_container_without_room_for_c2pa_says_so(tmp_path: Path, grace_hopper: np.ndarray,
                                                   signer: C2paSigner) -> None:
    notices: list[str] = []
    path = _video(tmp_path, grace_hopper, ".mkv", ProvenanceLabel(c2pa=signer), notices)
    assert any("cannot hold a C2PA manifest" in notice for notice in notices)
    assert tags_of(path)["digital_source_type"] == NEURAL_SWAP


def test_a_refused_key_leaves_no_output(tmp_path: Path, grace_hopper: np.ndarray, signer: C2paSigner) -> None:
    wrong = tmp_path / "wrong"
    other = make_test_credentials(wrong)
    mixed = C2paSigner(key=other.key, certificates=signer.certificates)  # a key that is not the certificate's
    out = tmp_path / "out"
    out.mkdir()
    with pytest.raises(C2paSigningError) as caught:
        write_image_atomic(Image.fromarray(grace_hopper), out / "out.jpg", provenance=ProvenanceLabel(c2pa=mixed))
    assert caught.value.exit_code == 22 and "out.jpg" in caught.value.message
    assert list(out.iterdir()) == []
    with pytest.raises(C2paSigningError, match="C2PA signing failed"):  # what a run can check before any work
        check_signer(mixed, ProvenanceLabel())
    check_signer(signer, ProvenanceLabel())
    missing = C2paSigner(key=tmp_path / "no-such-key.pem", certificates=signer.certificates)
    with pytest.raises(C2paSigningError, match="cannot read the C2PA credentials"):
        check_signer(missing, ProvenanceLabel())


def test_without_the_extra_signing_names_the_install(tmp_path: Path, grace_hopper: np.ndarray, signer: C2paSigner,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "c2pa", None)  # as if c2pa-python were not installed
    with pytest.raises(C2paSigningError, match=r"pip install 'slimfuse\[c2pa\]'"):
        check_signer(signer, ProvenanceLabel())
    with pytest.raises(C2paSigningError):
        write_image_atomic(Image.fromarray(grace_hopper), tmp_path / "out.png", provenance=ProvenanceLabel(c2pa=signer))
    assert list(tmp_path.iterdir()) == []
