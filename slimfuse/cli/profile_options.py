"""The swap options of memory and hardware: --profile, --memory-budget, --system-memory-limit and --report, and
the precedence of an explicit option over the profile over the default."""
from __future__ import annotations

import argparse
from collections.abc import Callable
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
    group.add_argument("--memory-budget", type=_megabytes, default=None, metavar="MB",
                       help="plan the run within this many MB (2^20 bytes; process RSS on the CPU provider, device "
                       "memory on a GPU provider): which models stay loaded, batch sizes, frames in flight; a job "
                       "that cannot fit is refused before any work (exit 41) with the smallest budget that works")
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


def _in_units(unit: str, example: str) -> Callable[[str], float]:
    """An argparse type: a positive number of `unit` (MB, GB), the unit's name or letter allowed after it."""

    def parse(text: str) -> float:
        try:
            value = float(text.strip().upper().removesuffix(unit).removesuffix(unit[0]))
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a size in {unit} (like {example}): {text}") from None
        if value <= 0:
            raise argparse.ArgumentTypeError(f"must be positive, got {text}")
        return value

    return parse


_megabytes = _in_units("MB", "400")
_gigabytes = _in_units("GB", "8 or 0.5")
