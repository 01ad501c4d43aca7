"""Independent readers of the provenance labels, for the tests: the XMP packet parsed from a file's bytes as plain
XML, PyAV's container metadata, and c2pa's own Reader for a manifest and its validation."""
from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import av

IPTC = "{http://iptc.org/std/Iptc4xmpExt/2008-02-29/}DigitalSourceType"
CREATOR = "{http://ns.adobe.com/xap/1.0/}CreatorTool"
RDF_DESCRIPTION = "{http://www.w3.org/1999/02/22-rdf-syntax-ns#}Description"


def xmp_of(path: Path) -> dict[str, str] | None:
    """The XMP packet's Description attributes, found in the file's bytes and parsed as plain XML."""
    data = path.read_bytes()
    match = re.search(rb"<x:xmpmeta.*?</x:xmpmeta>", data, re.DOTALL)
    if match is None:
        return None
    description = ET.fromstring(match.group(0)).find(f".//{RDF_DESCRIPTION}")
    assert description is not None
    return dict(description.attrib)


def tags_of(path: Path) -> dict[str, str]:
    with av.open(str(path)) as container:
        return {key.lower(): value for key, value in container.metadata.items()}


def c2pa_report(path: Path) -> tuple[dict, list[str], list[str]]:
    """The active manifest, and the validation codes that failed and succeeded, by c2pa's Reader."""
    import c2pa

    with c2pa.Reader(str(path)) as reader:
        report = json.loads(reader.json())
    manifest = report["manifests"][report["active_manifest"]]
    results = report["validation_results"]["activeManifest"]
    return manifest, [item["code"] for item in results["failure"]], [item["code"] for item in results["success"]]


def created_source_type(manifest: dict) -> str:
    actions = next(a for a in manifest["assertions"] if a["label"].startswith("c2pa.actions"))["data"]["actions"]
    created = [action for action in actions if action["action"] == "c2pa.created"]
    assert len(created) == 1
    return created[0]["digitalSourceType"]
