"""`slimfuse models`: list, fetch, verify and locate model files."""
from __future__ import annotations

import argparse
from pathlib import Path

from slimfuse.cli.commands import HELP
from slimfuse.cli.common import add_common_options, make_store
from slimfuse.errors import ModelCorruptError, UsageError
from slimfuse.models.files import size_text
from slimfuse.models.store import PINNED, ModelStatus, Store, sha256_file
from slimfuse.models.validate import check_file
from slimfuse.models.variants import PASS, UNGATED, VariantRecord, variant_problem


def add_parser(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser("models", help=HELP["models"])
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    listing = actions.add_parser("list", help="every model: name, kind, licence, size, sha256, pinning, state, "
                                              "location")
    fetch = actions.add_parser("fetch", help="fetch models (every pinned model when no NAME is given)")
    fetch.add_argument("names", nargs="*", metavar="NAME")
    verify = actions.add_parser("verify", help="check every present model file against its sha256")
    path = actions.add_parser("path", help="print where model NAME is stored")
    path.add_argument("name", metavar="NAME")
    for sub in (listing, fetch, verify, path):
        add_common_options(sub)
    parser.set_defaults(command=run)


def run(args: argparse.Namespace) -> int:
    store = make_store(args)
    if args.action == "list":
        return _list(store)
    if args.action == "fetch":
        _check_names(store, args.names)
        for location in store.fetch(args.names or None):
            print(location)
        for name in args.names:  # a model users bring is checked before it is called fetched
            problem = check_file(store.catalog.get(name), store.path(name))
            if problem is not None:
                store.reject(name, store.path(name), problem)
        return 0
    if args.action == "verify":
        return _verify(store)
    if args.name not in store.catalog.names():
        try:  # a variant: NAME.VARIANT
            print(store.variant_location(args.name))
            return 0
        except KeyError:
            pass
    _check_names(store, [args.name])
    print(store.location(args.name))
    return 0


def _check_names(store: Store, names: list[str]) -> None:
    unknown = [name for name in names if name not in store.catalog.names()]
    if unknown:
        raise UsageError(detail=f"unknown model {', '.join(unknown)}; known: {', '.join(store.catalog.names())}")


def _list(store: Store) -> int:
    header = ("name", "kind", "licence", "size", "sha256", "pinning", "state", "location")
    rows = [header]
    variants: dict[str, list[tuple[str, Path, VariantRecord | None]]] = {}
    for variant in store.variants():
        variants.setdefault(variant[0].rpartition(".")[0], []).append(variant)
    for name in store.catalog.names():
        status = store.status(name)
        spec = status.spec
        digest = spec.sha256 or status.recorded or (spec.published.sha256 if spec.published else None)
        pinning = status.pinning + (", recorded" if status.recorded else "")
        rows.append((name, spec.kind, spec.licence, _size(spec.known_size), digest[:16] if digest else "-", pinning,
                     _state(status), str(status.path)))
        for variant, path, record in variants.get(name, []):  # stored variants follow their original
            rows.append((variant, spec.kind, spec.licence, _size(path.stat().st_size),
                         record.sha256[:16] if record else "-", f"variant of {name}",
                         _variant_state(store, name, path, record), str(path)))
    widths = [max(len(row[i]) for row in rows) for i in range(len(header) - 1)]
    for row in rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=False)) + "  " + row[-1])
    return 0


def _verify(store: Store) -> int:
    bad = []
    for name in store.catalog.names():
        status = store.status(name)
        unrecorded = status.present and status.pinning != PINNED and status.recorded is None and not status.verified
        if unrecorded:
            state = "present, sha256 not yet recorded (trust on first use)"
        else:
            state = "verified" if status.verified else ("FAILED sha256" if status.present else "missing")
        print(f"{name}: {state}")
        if status.present and not status.verified and not unrecorded:
            bad.append(name)
    for name, path, record in store.variants():
        intact = record is not None and sha256_file(path) == record.sha256
        print(f"{name}: {'verified' if intact else 'FAILED sha256'}")
        if not intact:
            bad.append(name)
    if bad:
        raise ModelCorruptError(detail=f"{', '.join(bad)} failed sha256 verification; "
                                       "run 'slimfuse models fetch' to replace them")
    return 0


def _state(status: ModelStatus) -> str:
    if status.verified:
        return "verified"
    if not status.present:
        return "missing"
    if status.pinning != PINNED and status.recorded is None:
        return "present"
    return "CORRUPT"


def _variant_state(store: Store, base: str, path: Path, record: VariantRecord | None) -> str:
    """"gate pass (landmark_error_px 0.026 <= 0.5)", "gate FAILED (...)", "ungated", or why it is refused."""
    spec = store.catalog.get(base)
    problem = variant_problem(record, sha256_file(path), spec.sha256 or store.recorded(base))
    if problem is not None or record is None:
        return "CORRUPT" if record is not None and record.sha256 != sha256_file(path) else "REFUSED"
    if record.verdict == UNGATED or record.gate is None:
        return "ungated"
    gate = record.gate
    relation = ">=" if gate.get("higher_is_better") else "<="
    value = gate.get("value")
    shown = f"{value:.3g}" if isinstance(value, float) else str(value)
    words = "gate pass" if record.verdict == PASS else "gate FAILED (stored with --force)"
    return f"{words} ({gate.get('metric')} {shown} {relation} {gate.get('threshold')})"


def _size(size: int | None) -> str:
    return "?" if size is None else size_text(size)
