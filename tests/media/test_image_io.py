"""Reading and writing images: orientation, alpha, grey, 16-bit, bad files, and atomic writes."""
from __future__ import annotations

import errno
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from slimfuse.errors import (
    ImageTooLargeError,
    InputCorruptError,
    InputEmptyError,
    InputMissingError,
    NoSpaceError,
    OutputDirMissingError,
    UnsupportedTypeError,
)
from slimfuse.media.image_io import compose_output, read_image, write_image_atomic


def test_exif_orientation_is_applied(tmp_path: Path, grace_hopper: np.ndarray) -> None:
    path = tmp_path / "rotated.jpg"
    exif = Image.Exif()
    exif[0x0112] = 6  # stored sideways: viewers turn it 90 degrees clockwise
    Image.fromarray(grace_hopper).save(path, exif=exif, quality=95)
    loaded = read_image(path)
    assert loaded.rgb.shape == (grace_hopper.shape[1], grace_hopper.shape[0], 3)
    expected = np.rot90(grace_hopper, k=-1)
    assert np.abs(loaded.rgb.astype(int) - expected.astype(int)).mean() < 4


def test_alpha_and_grey_survive_a_round_trip(tmp_path: Path, astronaut: np.ndarray) -> None:
    alpha = np.tile(np.linspace(0, 255, astronaut.shape[1]).astype(np.uint8), (astronaut.shape[0], 1))
    grey = np.asarray(Image.fromarray(astronaut).convert("L"))
    path = tmp_path / "grey_alpha.png"
    Image.fromarray(np.dstack([grey, alpha]), "LA").save(path)
    loaded = read_image(path)
    assert loaded.grey and loaded.alpha is not None and loaded.rgb.shape == (*grey.shape, 3)
    out = tmp_path / "out.png"
    write_image_atomic(compose_output(loaded, loaded.rgb), out)
    written = Image.open(out)
    assert written.mode == "LA"
    assert np.array_equal(np.asarray(written)[..., 1], alpha)
    assert np.array_equal(np.asarray(written)[..., 0], grey)


def test_sixteen_bit_pixels_are_kept_where_unchanged(tmp_path: Path, astronaut: np.ndarray) -> None:
    grey16 = np.asarray(Image.fromarray(astronaut).convert("L")).astype(np.uint16) * 257 + 3
    path = tmp_path / "deep.png"
    Image.fromarray(grey16).save(path)
    loaded = read_image(path)
    assert loaded.high is not None
    changed = loaded.rgb.copy()
    changed[:10, :10] = 0
    image = compose_output(loaded, changed)
    values = np.asarray(image).astype(np.uint16)
    assert np.array_equal(values[20:, 20:], grey16[20:, 20:])
    assert np.all(values[:10, :10] == 0)


@pytest.mark.parametrize(
    ("name", "content", "error"),
    [
        ("empty.jpg", b"", InputEmptyError),
        ("text.png", b"this is not an image at all", InputCorruptError),
        ("notes.txt", b"hello", UnsupportedTypeError),
    ],
)
def test_bad_files_raise_their_error(tmp_path: Path, name: str, content: bytes, error: type) -> None:
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(error) as caught:
        read_image(path)
    assert str(path) in caught.value.message


def test_truncated_and_missing_files(tmp_path: Path, grace_hopper_path: Path) -> None:
    truncated = tmp_path / "cut.jpg"
    truncated.write_bytes(grace_hopper_path.read_bytes()[:5000])
    with pytest.raises(InputCorruptError):
        read_image(truncated)
    with pytest.raises(InputMissingError):
        read_image(tmp_path / "absent.jpg")


def test_huge_image_is_refused_before_decoding(tmp_path: Path) -> None:
    path = tmp_path / "huge.png"
    Image.new("L", (20000, 14000)).save(path, optimize=False)
    with pytest.raises(ImageTooLargeError):
        read_image(path)


def test_failed_write_leaves_nothing_behind(tmp_path: Path, astronaut: np.ndarray,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    def disk_full(self: Image.Image, *args: object, **kwargs: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(Image.Image, "save", disk_full)
    with pytest.raises(NoSpaceError):
        write_image_atomic(Image.fromarray(astronaut), tmp_path / "out.jpg")
    assert list(tmp_path.iterdir()) == []


def test_output_directory_must_exist(tmp_path: Path, astronaut: np.ndarray) -> None:
    with pytest.raises(OutputDirMissingError):
        write_image_atomic(Image.fromarray(astronaut), tmp_path / "missing" / "out.png")
