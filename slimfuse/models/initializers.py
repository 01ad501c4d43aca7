"""Read an initializer of an ONNX file without loading the whole model (inswapper's 512 x 512 "emap" is the
last initializer of a 550 MB graph): the file is memory-mapped and only the protobuf framing is walked.

ModelProto field 7 is the graph; GraphProto field 5 holds the initializers (TensorProto). Nothing is executed
and nothing pickled is read.
"""
from __future__ import annotations

import mmap
from collections.abc import Iterator
from pathlib import Path

import numpy as np

_MODEL_GRAPH = 7
_GRAPH_INITIALIZER = 5


def last_initializer(path: Path) -> np.ndarray:
    """The graph's last initializer as a numpy array; ValueError for a file that is not a (complete) ONNX model."""
    from onnx import TensorProto, numpy_helper

    with path.open("rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
        graph = None
        for number, wire, start, end in _fields(data, 0, len(data)):
            if number == _MODEL_GRAPH and wire == 2:
                graph = (start, end)
        if graph is None:
            raise ValueError(f"{path}: no ONNX graph found")
        last = None
        for number, wire, start, end in _fields(data, *graph):
            if number == _GRAPH_INITIALIZER and wire == 2:
                last = (start, end)
        if last is None:
            raise ValueError(f"{path}: the graph has no initializers")
        tensor = TensorProto()
        tensor.ParseFromString(bytes(data[last[0]:last[1]]))
    if tensor.data_location == TensorProto.EXTERNAL:
        raise ValueError(f"{path}: the initializer {tensor.name} is stored outside the file")
    return numpy_helper.to_array(tensor)


def _varint(data: mmap.mmap | bytes, pos: int, end: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= end:
            raise ValueError("truncated protobuf varint")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise ValueError("malformed protobuf varint")


def _fields(data: mmap.mmap | bytes, start: int, end: int) -> Iterator[tuple[int, int, int, int]]:
    """(field number, wire type, value start, value end) of each field in data[start:end]."""
    pos = start
    while pos < end:
        key, pos = _varint(data, pos, end)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value_start = pos
            _, pos = _varint(data, pos, end)
        elif wire == 1:
            value_start, pos = pos, pos + 8
        elif wire == 2:
            length, value_start = _varint(data, pos, end)
            pos = value_start + length
        elif wire == 5:
            value_start, pos = pos, pos + 4
        else:
            raise ValueError(f"unsupported protobuf wire type {wire}")
        if pos > end or number == 0:
            raise ValueError("truncated or malformed protobuf")
        yield number, wire, value_start, pos
