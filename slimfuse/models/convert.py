"""Turning a model's original file into the file slimfuse loads (tflite -> ONNX, the mesh topology)."""
from __future__ import annotations

from pathlib import Path

from slimfuse.models.spec import Conversion


def convert(conversion: Conversion, source: Path, destination: Path) -> None:
    if conversion is Conversion.TFLITE_TO_ONNX:
        from slimfuse.models.tflite_import import convert_file

        convert_file(source, destination)
    elif conversion is Conversion.MESH_TOPOLOGY:
        from slimfuse.models.mesh_topology import build_topology

        destination.write_text(build_topology(source.read_text(encoding="utf-8")).to_json(), encoding="utf-8")
