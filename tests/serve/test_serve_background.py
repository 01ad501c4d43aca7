"""A server job with the background remover: a transparent background gives a PNG with alpha for a JPEG target
(the output type that keeps it), an opaque one the target's own type."""
from __future__ import annotations

import io
from pathlib import Path

from PIL import Image
from served import finish, samples, serving, submit, upload


def test_background_jobs(tmp_path: Path) -> None:
    with serving(tmp_path / "serve") as server, server.client() as client:
        target = upload(client, samples()[1])["id"]  # Grace Hopper's portrait, a JPEG
        transparent = submit(client, [], target, processors=["background_remover"])
        coloured = submit(client, [], target, processors=["background_remover"],
                          background_remover_fill_color=[0, 0, 255])
        for job, mode in ((transparent, "RGBA"), (coloured, "RGB")):
            assert finish(client, job["id"])["state"] == "succeeded"
            download = client.get(f"/v1/jobs/{job['id']}/output")
            with Image.open(io.BytesIO(download.content)) as image:
                assert image.mode == mode and image.format == ("PNG" if mode == "RGBA" else "JPEG")
