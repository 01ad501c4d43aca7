"""The swap options of memory and hardware: --profile, --memory-budget, --system-memory-limit and --report, and
the precedence of an explicit option over the profile over the default."""
from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

from slimfuse.memory.levels import STRATEGIES
from slimfuse.profiles import PROFILES

GB = 1 << 30


def add_profile_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("memory and hardware")
    group.add_argument("--profile", default=None, metavar="PROFILE",
                       help="set a group of options for a kind of machine (explicit options still win): "
                       + "; ".join(f"{p.name}: {p.summary}" for p in PROFILES.values()))
    group.add_argument("--memory-budget", type=_megabytes, default=None, metavar="MB",
                       help="plan the run within this many MB (2^20 bytes; process RSS on the CPU provider, device "
                       "memory on a GPU provider): which models stay loaded, batch sizes, frames in flight; a job "
                       "that cannot fit is refused before any work (exit 41) with the smallest budget that works")
    group.add_argument("--system-memory-limit", type=_gigabytes, default=None, metavar="GB",
                       help="a hard cap on this process's memory in GB (2^30 bytes); running out under it is "
                       "exit 40 with no output (Linux: RLIMIT_DATA; Windows: a job object)")
    level = group.add_mutually_exclusive_group()
    level.add_argument("--video-memory-level", type=int, default=None, metavar="0-3",
                       help="0: every model resident, wide batches (fastest, most memory); 1: release what a stage "
                       "no longer needs, batches sized to the budget (default); 2: stage by stage over chunks of "
                       "frames, one generator resident at a time, analysis models on the CPU; 3: 2 plus the gated "
                       "fp16 (GPU) / int8 (CPU) variants, 128-px frame-enhancer tiles and faces of at most 512 px")
    level.add_argument("--video-memory-strategy", default=None, metavar="STRATEGY",
                       help="the same as levels 0, 1 and 2: " + ", ".join(f"{name} = {number}"
                                                                          for name, number in STRATEGIES.items()))
    group.add_argument("--report", type=Path, default=None, metavar="PATH",
                       help="write a JSON run report here (also on error): options, providers used, models "
                       "loaded and evicted, memory and time per stage")


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
