"""Where the neural models users bring are published, and a short way to write their catalog entries.

FaceFusion publishes these files as release assets of the public repository facefusion/facefusion-assets
(one tag per model generation, e.g. models-3.0.0) and mirrors them on Hugging Face, each with NAME.hash beside it
(the file's CRC32). Every entry here is trust-on-first-use: the store records the hash of the first file it
fetches or is given and verifies every later load against it. A download is checked first: against the sha256
public sources state for FaceFusion's file where there is one (slimfuse.models.neural.published), else against
FaceFusion's NAME.hash.
"""
from __future__ import annotations

from slimfuse.models.neural.published import PUBLISHED
from slimfuse.models.spec import KIND_GATES, ModelIO, ModelSpec

GITHUB_RELEASES = "https://github.com/facefusion/facefusion-assets/releases/download"
HUGGING_FACE = "https://huggingface.co/facefusion"


def facefusion_urls(release: str, filename: str) -> tuple[str, ...]:
    """The public addresses of `filename` in FaceFusion's asset release `release` (e.g. "models-3.0.0")."""
    return (f"{GITHUB_RELEASES}/{release}/{filename}", f"{HUGGING_FACE}/{release}/resolve/main/{filename}")


def neural_spec(name: str, kind: str, licence: str, description: str, release: str, io: ModelIO,
                size: int | None = None) -> ModelSpec:
    """A trust-on-first-use catalog entry for `NAME.onnx` from FaceFusion's release `release`."""
    filename = f"{name}.onnx"
    return ModelSpec(
        name=name,
        kind=kind,
        licence=licence,
        filename=filename,
        sha256=None,
        size=size,
        description=description,
        source_name=filename,
        source_sha256=None,
        urls=facefusion_urls(release, filename),
        io=io,
        gate=KIND_GATES.get(kind),
        published=PUBLISHED.get(name),
        publisher_crc32=True,
    )
