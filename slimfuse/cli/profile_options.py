"""The swap options of memory and hardware: --profile, --system-memory-limit and --report, and the precedence of
an explicit option over the profile over the default."""
from __future__ import annotations

import argparse
from dataclasses import fields
from pathlib import Path

from slimfuse.config import RunConfig
from slimfuse.profiles import PROFILE_OPTIONS, PROFILES, resolve

GB = 1 << 30


def add_profile_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("memory and hardware")
    group.add_argument("--profile", choices=list(PROFILES), default=None,
                       help="set a group of options for a kind of machine (explicit options still win): "
                       + "; ".join(f"{p.name}: {p.summary}" for p in PROFILES.values()))
    group.add_argument("--system-memory-limit", type=_gigabytes, default=None, metavar="GB",
                       help="a hard cap on this process's memory in GB (2^30 bytes); running out under it is "
                       "exit 40 with no output (Linux: RLIMIT_DATA; Windows: a job object)")
    group.add_argument("--report", type=Path, default=None, metavar="PATH",
                       help="write a JSON run report here (also on error): options, providers used, models "
                       "loaded and evicted, memory and time per stage")


def apply_profile(args: argparse.Namespace, defaults: RunConfig) -> None:
    """Give every option a profile can set its value: the one given on the command line (the parser leaves these
    None when absent), else the profile's, else RunConfig's default."""
    names = {field.name for field in fields(defaults)}
    default = {option: getattr(defaults, option) for option in PROFILE_OPTIONS if option in names}
    given = {option: getattr(args, option, None) for option in PROFILE_OPTIONS}
    for option, value in resolve(given, args.profile, default).items():
        setattr(args, option, list(value) if isinstance(value, tuple) else value)


def _gigabytes(text: str) -> float:
    try:
        value = float(text.strip().upper().removesuffix("GB").removesuffix("G"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a size in GB (like 8 or 0.5): {text}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be positive, got {text}")
    return value
