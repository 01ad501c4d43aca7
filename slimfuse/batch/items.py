"""What a batch is made of: items (sources, a target, an output, per-item option overrides), from targets named on
the command line (files, folders, globs) or from a manifest (CSV or JSON lines)."""
from __future__ import annotations

import csv
import glob
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from slimfuse.config import OPTION_SECTIONS
from slimfuse.media.destination import is_video
from slimfuse.errors import InputMissingError, UsageError
from slimfuse.media.formats import IMAGE_SUFFIXES

GLOB_CHARACTERS = frozenset("*?[")
# Manifest columns (keys) that are not run options.
ITEM_FIELDS = ("source", "sources", "target", "output", "options")


@dataclass(frozen=True)
class BatchItem:
    """One job of a batch: `target` swapped with `sources` into `output`, with these option overrides on top of
    the batch's options."""

    sources: tuple[Path, ...]
    target: Path
    output: Path
    overrides: Mapping[str, object] = field(default_factory=dict)

    @property
    def video(self) -> bool:
        return is_video(self.target)


def is_media(path: Path) -> bool:
    return path.suffix.lower() in IMAGE_SUFFIXES or is_video(path)


def names_many(targets: Sequence[Path], output: Path) -> bool:
    """Whether `slimfuse swap -t ... -o ...` names a batch: several targets, a folder, a glob, or a folder output."""
    return len(targets) > 1 or output.is_dir() or any(target.is_dir() or _is_glob(target) for target in targets)


def items_from_targets(sources: Sequence[Path], targets: Sequence[Path], output_dir: Path) -> list[BatchItem]:
    """An item per media file the targets name (a folder: its media files, recursively, their relative paths
    kept under `output_dir`; a glob: the files it matches), each written under the same name in `output_dir`."""
    items: list[BatchItem] = []
    for target in targets:
        for path, relative in _expand(target):
            items.append(BatchItem(tuple(sources), path, output_dir / relative))
    _refuse_duplicate_outputs(items)
    return items


def read_manifest(manifest: Path, output_dir: Path | None = None) -> list[BatchItem]:
    """Items from a CSV file (a header row: source or sources, target, output, and any option names; several
    sources separated by ';') or JSON lines (`{"sources": [...], "target": ..., "output": ..., "options": {...}}`,
    or the options as keys of their own). Relative paths: inputs from the manifest's folder, outputs from
    `output_dir` (default: the manifest's folder). A cell or value that reads as JSON (numbers, true, lists) is
    taken as that value."""
    if not manifest.is_file():
        raise InputMissingError(manifest, "manifest not found")
    base = manifest.parent
    out_base = output_dir if output_dir is not None else base
    text = manifest.read_text(encoding="utf-8")
    rows = _json_rows(manifest, text) if manifest.suffix.lower() in (".jsonl", ".json", ".ndjson") else _csv_rows(text)
    items = [_item(manifest, line, row, base, out_base) for line, row in rows]
    if not items:
        raise UsageError(manifest, "the manifest holds no items")
    _refuse_duplicate_outputs(items)
    return items


def _is_glob(path: Path) -> bool:
    return any(character in GLOB_CHARACTERS for character in str(path))


def _expand(target: Path) -> list[tuple[Path, Path]]:
    if _is_glob(target):
        matches = sorted(Path(name) for name in glob.glob(str(target), recursive=True))
        found = [(path, Path(path.name)) for path in matches if path.is_file() and is_media(path)]
        if not found:
            raise InputMissingError(target, "the pattern matches no image or video")
        return found
    if target.is_dir():
        found = [(path, path.relative_to(target)) for path in sorted(target.rglob("*"))
                 if path.is_file() and is_media(path) and not path.name.startswith(".")]
        if not found:
            raise InputMissingError(target, "the folder holds no image or video")
        return found
    return [(target, Path(target.name))]


def _refuse_duplicate_outputs(items: Sequence[BatchItem]) -> None:
    seen: dict[Path, Path] = {}
    for item in items:
        other = seen.setdefault(item.output.resolve(), item.target)
        if other != item.target:
            raise UsageError(item.output, f"two targets would be written here ({other} and {item.target})")


def _csv_rows(text: str) -> list[tuple[int, dict[str, object]]]:
    reader = csv.DictReader(text.splitlines())
    return [(index + 2, {key.strip(): _value(value) for key, value in row.items() if key and value not in (None, "")})
            for index, row in enumerate(reader)]


def _json_rows(manifest: Path, text: str) -> list[tuple[int, dict[str, object]]]:
    rows = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise UsageError(f"{manifest}:{number}", f"not a JSON object ({exc.msg})") from None
        if not isinstance(row, dict):
            raise UsageError(f"{manifest}:{number}", "not a JSON object")
        rows.append((number, row))
    return rows


def _value(text: str) -> object:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text.strip()


def _item(manifest: Path, line: int, row: Mapping[str, object], base: Path, out_base: Path) -> BatchItem:
    where = f"{manifest}:{line}"
    sources = row.get("sources", row.get("source"))
    if isinstance(sources, str):
        sources = [part for part in sources.split(";") if part.strip()]
    if not isinstance(sources, list) or not sources or "target" not in row or "output" not in row:
        raise UsageError(where, "each item needs source(s), target and output")
    options = dict(row.get("options") or {})  # type: ignore[call-overload]
    options.update({key: value for key, value in row.items() if key not in ITEM_FIELDS})
    unknown = sorted(set(options) - set(OPTION_SECTIONS) - {"video_memory_strategy"})
    if unknown:
        raise UsageError(where, f"unknown option{'s' * (len(unknown) > 1)} {', '.join(unknown)}")
    return BatchItem(tuple(base / str(source).strip() for source in sources), base / str(row["target"]),
                     out_base / str(row["output"]), options)
