"""The run options on the command line: every option of the table (slimfuse.config.OPTIONS) that a command's
audience may set becomes an argument, grouped by its section, with its help and default; the values given (and
only those: absent options are not in the namespace) go to RunConfig.from_options, which checks them.

Also the options every run command shares: --report, --log-format, --workers and --ray of batch work."""
from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

from slimfuse.config import OPTIONS, SECTIONS, RunConfig
from slimfuse.config_file import ConfigFile, read_config_file
from slimfuse.errors import UsageError
from slimfuse.options import Audience, Declared, Items, Switch, for_audience

RUN_OPTIONS = frozenset(entry.name for entry in OPTIONS)
"""The names of the table's options (aliases included): what a namespace passes on to RunConfig."""


def add_run_options(parser: argparse.ArgumentParser, audience: Audience) -> None:
    """Every option `audience` ("swap" or "live") may set, in its section's group."""
    groups: dict[str, argparse._ArgumentGroup] = {}
    exclusive: dict[str, argparse._MutuallyExclusiveGroup] = {}
    for entry in OPTIONS:
        if not entry.allows(audience):
            continue
        if entry.section not in groups:
            groups[entry.section] = parser.add_argument_group(SECTIONS[entry.section].title)
        container: argparse._ActionsContainer = groups[entry.section]
        paired = entry.option.alias_of or next((other.name for other in OPTIONS if other.option.alias_of == entry.name),
                                               None)
        if paired is not None:  # an option and its alias: one or the other
            key = entry.option.alias_of or entry.name
            if key not in exclusive:
                exclusive[key] = groups[entry.section].add_mutually_exclusive_group()
            container = exclusive[key]
        _add(container, entry)
    parser.set_defaults(run_audience=audience)


def _add(container: argparse._ActionsContainer, entry: Declared) -> None:
    kind = entry.option.kind
    help = _help(entry).replace("%", "%%")
    if isinstance(kind, Switch):
        container.add_argument(*entry.flags, dest=entry.name, action=argparse.BooleanOptionalAction, help=help)
        return
    metavar = kind.metavar or None
    if isinstance(kind, Items):
        container.add_argument(*entry.flags, dest=entry.name, nargs="+", type=_reader(kind.item.parse),
                               metavar=metavar, help=help)
        return
    container.add_argument(*entry.flags, dest=entry.name, type=_reader(kind.parse), metavar=metavar, help=help)


def _help(entry: Declared) -> str:
    """The option's help, the words it takes (where its metavar does not show them) and its default, as the help
    screen shows them."""
    kind = entry.option.kind
    words = kind.item if isinstance(kind, Items) else kind
    choices = getattr(words, "choices", None)
    help = entry.option.help
    if choices is not None and "|" not in kind.metavar:
        help += f"; one of: {', '.join(map(str, choices))}"
    text = entry.option.default_text
    if text is None:
        default = entry.default
        if isinstance(default, bool):
            text = "on" if default else "off"
        elif isinstance(default, tuple):
            text = " ".join(map(str, default))
        elif entry.option.alias_of is not None:
            return help
        else:
            text = "none" if default is None else str(default)
    return f"{help} (default: {text})"


def _reader(parse: Callable[[str], object]) -> Callable[[str], object]:
    """An argparse type from a kind's parse: its problem becomes argparse's one-line error for the option."""

    def read(text: str) -> object:
        try:
            return parse(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    return read


def apply_config_file(args: argparse.Namespace) -> ConfigFile | None:
    """--config-path: the ini file's options that the command takes, set where the command line did not set them
    (absent options are not in the namespace); the file is read here, once, and --config-path then dropped, so the
    run (and each item of a batch) takes the options as they stand. The file read (its caller says what was not
    read once the log level is set), or None without --config-path."""
    path = getattr(args, "config_path", None)
    if path is None:
        return None
    read = read_config_file(path, tuple(for_audience(OPTIONS, args.run_audience)))
    for name, value in read.values.items():
        if name not in vars(args):
            setattr(args, name, value)
    del args.config_path
    return read


def config_from_args(args: argparse.Namespace) -> RunConfig:
    """The run's config from the options given on the command line (with the profile and the defaults); a bad
    value is a one-line usage error that says where the help is, as the parser's own are."""
    try:
        config = RunConfig.from_options(getattr(args, "sources", ()),
                                        **{name: value for name, value in vars(args).items() if name in RUN_OPTIONS})
        config.check_sources()
        return config
    except UsageError as exc:
        raise UsageError(detail=f"{exc.message}; see {args.help_prog} --help") from None


def add_command_options(parser: argparse.ArgumentParser, log_formats: bool = True) -> None:
    """What the run commands share besides the run's options: the run report and the progress's format."""
    group = parser.add_argument_group("reports")
    group.add_argument("--report", type=Path, default=None, metavar="PATH",
                       help="write a JSON run report here (also on error): options, providers used, models loaded "
                       "and evicted, memory and time per stage")
    if log_formats:
        group.add_argument("--log-format", choices=["text", "json"], default="text",
                           help="json: progress and the summary as JSON lines on stderr")


def add_batch_options(parser: argparse.ArgumentParser) -> None:
    """Where batch work runs (slimfuse batch, and swap with several targets or --workers)."""
    group = parser.add_argument_group("batches and long videos")
    group.add_argument("--workers", type=int, metavar="N",
                       help="run in N worker processes (a long video in keyframe segments); fewer when "
                       "--memory-budget does not fit N")
    group.add_argument("--ray", metavar="auto|ADDRESS",
                       help="run the workers as actors on a Ray cluster (the ray extra; auto: this machine's "
                       "cluster, or a new local one)")
