"""The label every output carries to say that it is synthetic, in the file's own metadata.

Images (JPEG, PNG, WebP) get an XMP packet with the IPTC digital source type (`Iptc4xmpExt:DigitalSourceType`)
and the tool (`xmp:CreatorTool`); BMP has no place for metadata. Videos get container tags: `comment` (every
container keeps it), `digital_source_type` (mp4/mov through `movflags=use_metadata_tags`, Matroska/WebM as they
are; AVI drops it) and `encoded_by`. A `c2pa` signer adds a signed C2PA manifest as well (slimfuse.media.c2pa_sign).
"""
from __future__ import annotations

from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from xml.sax.saxutils import quoteattr

IPTC_SOURCE_TYPES = "http://cv.iptc.org/newscodes/digitalsourcetype/"
NEURAL_SWAP = IPTC_SOURCE_TYPES + "compositeWithTrainedAlgorithmicMedia"
"""A composite made with a trained model (the neural swappers and enhancers)."""
MESH_SWAP = IPTC_SOURCE_TYPES + "compositeSynthetic"
"""A composite of synthetic elements made without a trained generator (the embedded mesh swapper)."""
TOOL = "slimfuse"
IPTC_EXT_NS = "http://iptc.org/std/Iptc4xmpExt/2008-02-29/"
XMP_NS = "http://ns.adobe.com/xap/1.0/"
XMP_FORMATS = frozenset({"JPEG", "PNG", "WEBP"})
"""The image formats (PIL names) that hold XMP; BMP does not."""
SOURCE_TYPE_TAG = "digital_source_type"


def tool_version() -> str:
    try:
        return version(TOOL)
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown"


@dataclass(frozen=True)
class C2paSigner:
    """The user's signing credentials: a PEM private key, and a PEM certificate chain (the signing certificate
    first, then its issuers; c2pa refuses a self-signed leaf). algorithm: c2pa's name (es256, es384, ps256, ed25519...).
    timestamp_url: an RFC 3161 time-stamp authority, or None."""

    key: Path
    certificates: Path
    algorithm: str = "es256"
    timestamp_url: str | None = None


@dataclass(frozen=True)
class ProvenanceLabel:
    """What an output says about how it was made: an IPTC digital source type (a full URI) and the tool."""

    source_type: str = NEURAL_SWAP
    tool: str = TOOL
    tool_version: str = ""
    c2pa: C2paSigner | None = None
    """Also sign a C2PA manifest into the file (the `c2pa` extra); None: the metadata label only."""

    def __post_init__(self) -> None:
        if not self.source_type.startswith(IPTC_SOURCE_TYPES):
            raise ValueError(f"digital source type must be an IPTC URI under {IPTC_SOURCE_TYPES}")
        if not self.tool_version:
            object.__setattr__(self, "tool_version", tool_version())

    @classmethod
    def for_swapper(cls, neural: bool, c2pa: C2paSigner | None = None) -> ProvenanceLabel:
        """The label of a run. neural: a trained generator made pixels of the output (a neural swapper, or a face
        or frame enhancer after the mesh swapper): trained algorithmic media; else (the mesh swapper alone)
        synthetic."""
        return cls(NEURAL_SWAP if neural else MESH_SWAP, c2pa=c2pa)

    @property
    def source_code(self) -> str:
        """The code alone, e.g. 'compositeWithTrainedAlgorithmicMedia'."""
        return self.source_type.removeprefix(IPTC_SOURCE_TYPES)

    @property
    def creator_tool(self) -> str:
        return f"{self.tool} {self.tool_version}"

    def xmp(self) -> bytes:
        """An XMP packet holding the digital source type and the tool."""
        return (
            '<?xpacket begin="\ufeff" id="W5M0MpCehiHzreSzNTczkc9d"?>\n'
            '<x:xmpmeta xmlns:x="adobe:ns:meta/">\n'
            ' <rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">\n'
            f'  <rdf:Description rdf:about="" xmlns:Iptc4xmpExt="{IPTC_EXT_NS}" xmlns:xmp="{XMP_NS}"\n'
            f"   Iptc4xmpExt:DigitalSourceType={quoteattr(self.source_type)}\n"
            f"   xmp:CreatorTool={quoteattr(self.creator_tool)}/>\n"
            " </rdf:RDF>\n"
            "</x:xmpmeta>\n"
            '<?xpacket end="w"?>'
        ).encode()

    def container_tags(self) -> dict[str, str]:
        """Video container metadata: a sentence any player shows, and the URI and the tool as their own tags."""
        return {
            "comment": f"synthetic media: IPTC digital source type {self.source_type}, made with {self.creator_tool}",
            SOURCE_TYPE_TAG: self.source_type,
            "encoded_by": self.creator_tool,
        }
