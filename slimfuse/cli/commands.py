"""The sub-commands of `slimfuse`, in the order the help lists them, and their one-line help: the command line
imports a command's module only when that command runs (or asks for its help), so `slimfuse --help` and a usage
error stay quick whatever the commands themselves import."""
from __future__ import annotations

HELP: dict[str, str] = {
    "swap": "swap faces in images and videos",
    "batch": "swap the items of a manifest (CSV or JSON lines), resumable",
    "live": "swap faces on a camera or stream, live",
    "models": "list, fetch, verify or locate models",
    "bench": "measure speed and memory",
    "optimize": "make a reduced-precision or quantised variant of a model, checked by a quality gate",
    "doctor": "hardware, working execution providers, recommended profile",
    "serve": "the web app and HTTP API, with a persistent job queue",
}
"""Each command's module is slimfuse.cli.NAME; its add_parser adds it with this help."""
