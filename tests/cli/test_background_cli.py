"""`slimfuse swap --processors ... background_remover` through the real command line with the embedded model: a
transparent background to PNG and to WebM with alpha, an opaque one to any type, and the one-line refusals of an
output without alpha; and the media pieces under them (the output check, the writers, the temporary frames)."""
from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import av
import numpy as np
import pytest
from PIL import Image

from slimfuse.bench.background import hand_mask, mask_iou
from slimfuse.bench.clips import make_clip, pan
from slimfuse.cli.main import main
from slimfuse.errors import UsageError
from slimfuse.media.destination import check_output
from slimfuse.media.formats import EncodeSettings
from slimfuse.media.image_io import compose_output, read_image
from slimfuse.media.temp_frames import TempFrames
from slimfuse.media.video_probe import probe
from slimfuse.media.video_reader import VideoFrame
from slimfuse.media.video_writer import VideoWriter


def _alpha_frames(path: Path) -> list[np.ndarray]:
    """The RGBA frames of a WebM with alpha (libvpx decodes the alpha FFmpeg's own VP9 decoder drops)."""
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        decoder = av.CodecContext.create("libvpx-vp9", "r")
        return [frame.to_ndarray(format="rgba") for packet in container.demux(stream)
                for frame in decoder.decode(packet)]


def test_a_transparent_png(tmp_path: Path, grace_hopper_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    output = tmp_path / "cut.png"
    assert main(["swap", "--processors", "background_remover", "-t", str(grace_hopper_path), "-o", str(output)]) == 0
    assert capsys.readouterr().err.strip().splitlines()[-1] == f"slimfuse: {grace_hopper_path}: background_remover applied"
    with Image.open(output) as image:
        assert image.mode == "RGBA"
        rgba = np.asarray(image)
    assert mask_iou(rgba[..., 3], hand_mask("grace_hopper")) >= 0.97
    with Image.open(grace_hopper_path) as original:
        kept = rgba[..., 3] == 255
        assert np.abs(rgba[..., :3][kept].astype(int) - np.asarray(original.convert("RGB"))[kept]).max() <= 1


@pytest.mark.parametrize("output", ["cut.jpg", "cut.bmp"])
def test_a_transparent_background_needs_alpha(tmp_path: Path, grace_hopper_path: Path, output: str,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / output
    code = main(["swap", "--processors", "background_remover", "-t", str(grace_hopper_path), "-o", str(path)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "transparent background" in err[0] and not path.exists()


def test_an_opaque_background_after_the_swap(tmp_path: Path, grace_hopper_path: Path, astronaut_path: Path) -> None:
    output = tmp_path / "blue.jpg"
    assert main(["swap", "--processors", "face_swapper", "background_remover", "-s", str(astronaut_path), "-t",
                 str(grace_hopper_path), "-o", str(output), "--background-remover-fill-color", "0", "0", "255",
                 "--quiet"]) == 0
    with Image.open(output) as image:
        rgb = np.asarray(image.convert("RGB")).astype(int)
    corner = rgb[:60, -60:].reshape(-1, 3).mean(axis=0)  # background in the portrait's top right
    assert corner[2] > 230 and corner[0] < 25 and corner[1] < 25


def test_a_video_with_alpha_and_a_blurred_one(tmp_path: Path, grace_hopper: np.ndarray) -> None:
    clip = make_clip(tmp_path / "clip.mp4", pan(grace_hopper, (320, 180), 5, face_px=90), audio=True)
    base = ["swap", "--processors", "background_remover", "-t", str(clip), "--quiet"]
    assert main([*base, "-o", str(tmp_path / "cut.webm")]) == 0
    frames = _alpha_frames(tmp_path / "cut.webm")
    assert len(frames) == 5 and frames[0].shape == (180, 320, 4)
    assert all(frame[..., 3].min() < 10 and frame[..., 3].max() > 245 for frame in frames)
    assert probe(tmp_path / "cut.webm").has_audio
    assert main([*base, "-o", str(tmp_path / "soft.mp4"), "--background-remover-blur", "8"]) == 0
    assert probe(tmp_path / "soft.mp4").frame_count == 5
    assert main([*base, "-o", str(tmp_path / "cut.mp4")]) == 2
    assert main([*base, "-o", str(tmp_path / "disk.webm"), "--temp-frame-format", "jpg"]) == 2


def test_the_output_check() -> None:
    for name in ("a.png", "a.webp"):
        check_output(Path(name), Path("t.jpg"), alpha=True)
    check_output(Path("a.webm"), Path("t.mp4"), alpha=True)
    check_output(Path("a.jpg"), Path("t.jpg"))
    for name, target in (("a.jpg", "t.jpg"), ("a.mp4", "t.mp4"), ("a.mkv", "t.mp4")):
        with pytest.raises(UsageError, match="transparent background needs an output with alpha"):
            check_output(Path(name), Path(target), alpha=True)


def test_writers_keep_the_alpha(tmp_path: Path, grace_hopper_path: Path) -> None:
    rgba = np.zeros((48, 64, 4), np.uint8)
    rgba[..., 0] = 200
    rgba[8:40, 16:48, 3] = 255
    loaded = read_image(grace_hopper_path)
    image = compose_output(loaded, np.zeros((*loaded.rgb.shape[:2], 4), np.uint8))
    assert image.mode == "RGBA"
    with TempFrames("png", root=tmp_path) as stored:
        stored.extract([VideoFrame(0, 0, Fraction(1, 25), rgba)])
        assert np.array_equal(next(iter(stored)).rgb, rgba)
    clip = make_clip(tmp_path / "in.mp4", [rgba[..., :3]] * 3)
    info = probe(clip)
    with VideoWriter(tmp_path / "out.webm", info, EncodeSettings(alpha=True)) as writer:
        for index in range(3):
            writer.write(VideoFrame(index, index, Fraction(1, 25), rgba))
        writer.close()
    decoded = _alpha_frames(tmp_path / "out.webm")
    assert len(decoded) == 3
    assert np.abs(decoded[0][..., 3].astype(int) - rgba[..., 3]).max() <= 8


def test_the_python_api(tmp_path: Path, astronaut_path: Path) -> None:
    from slimfuse.api import Swapper

    transparent = Swapper([], processors=["background_remover"])
    rgba = transparent.swap_image(astronaut_path, tmp_path / "cut.webp")
    assert rgba.shape == (512, 512, 4) and mask_iou(rgba[..., 3], hand_mask("astronaut")) >= 0.9
    with pytest.raises(UsageError, match="transparent background"):
        transparent.swap_image(astronaut_path, tmp_path / "cut.jpg")
    blurred = Swapper([], processors=["background_remover"], background_remover_blur=8)
    assert blurred.swap_image(astronaut_path, tmp_path / "soft.jpg").shape == (512, 512, 3)


def test_frame_stages_alone_look_for_no_faces(grace_hopper: np.ndarray) -> None:
    from slimfuse.config import RunConfig
    from slimfuse.pipeline.run import build_run

    for stages, faces in ((["background_remover"], 0), (["face_debugger", "background_remover"], 1)):
        run = build_run(RunConfig.from_options(processors=stages, background_remover_blur=4))
        loop = run.loop(run.prepare(keep_identity=False))
        assert len(loop.analyse(grace_hopper, 0.0)) == faces, stages
