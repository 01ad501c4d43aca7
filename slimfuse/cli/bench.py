"""`slimfuse bench`: measured tables of speed and memory."""
from __future__ import annotations

import argparse


def add_parser(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser("bench", help="measure speed and memory")
    parser.set_defaults(command=lambda args: 0)
