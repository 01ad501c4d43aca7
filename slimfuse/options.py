"""How a run option is declared: once, with everything the command line, the config's checks, the server's
allowlist, the page's form and the README test derive from it.

A section of RunConfig (slimfuse.config) is a frozen dataclass whose fields are declared with `option(...)`: the
field's name is the option's name (`--face-enhancer-blend` is `face_enhancer_blend`), its default is the option's
default, and the declaration holds the rest: how a value is read from the command line and checked (`Kind`), the
help, other spellings, and who may set it (`Audience`). Standard library only, so `slimfuse --help` can read the
table before numpy, ONNX Runtime or PyAV are imported.
"""
from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Callable, Collection, Iterator, Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any, ClassVar, Literal, NamedTuple, Protocol

from slimfuse.errors import UsageError

Audience = Literal["swap", "live", "api", "client", "control"]
"""Who may set an option: `swap` the `slimfuse swap` and `slimfuse batch` command lines, `live` the `slimfuse live`
command line, `api` the Python API, `client` a client of `slimfuse serve` (a job's options, the page's form),
`control` a live session while it runs (a key, a control of the live page)."""
EVERYONE: frozenset[Audience] = frozenset({"swap", "live", "api", "client"})
"""The usual audience: every option of a frame can be set by everybody who starts work."""
NOT_LIVE: frozenset[Audience] = EVERYONE - {"live"}
"""Options of files (videos, outputs): the live command has none."""
CONTROLLED: frozenset[Audience] = EVERYONE | {"control"}
"""Options a live session also changes while it runs."""
FILE_OWNER: frozenset[Audience] = frozenset({"swap", "api"})
"""Options of the files the command line and the Python API write, of the machine they run on (live mode writes
none of them; a server's clients never name its files)."""
OWNER: frozenset[Audience] = frozenset({"swap", "live", "api"})
"""Options of the machine a run uses (its files, its hardware, the synthetic label): a server's clients never set
these; the server does."""
COMMAND_LINES: frozenset[Audience] = frozenset({"swap", "live"})
"""Options of what a command prints (its messages): the Python API leaves that to the application's logging."""
BATCHES: frozenset[Audience] = frozenset({"swap"})
"""Options of batch work on the command line (`slimfuse batch`, and `slimfuse swap` with several targets)."""
OPTION = "slimfuse.option"
"""The key of a field's declaration in its dataclass metadata."""


class Kind(Protocol):
    """How an option's values are read and checked (each kind is a NamedTuple: immutable, and quick to define, as the
    table is read at every start). `parse` reads the command line's text, `check` takes a value
    from any caller (the Python API, JSON, a profile, `parse`'s result) and gives it in its one stored form; both
    raise ValueError with the problem (the section names the option)."""

    metavar: str

    def parse(self, text: str) -> object: ...

    def check(self, value: object) -> object: ...

    def describe(self) -> dict[str, object]: ...


def _shown(value: object) -> str:
    return repr(value) if isinstance(value, str) else str(value)


class Whole(NamedTuple):
    """A whole number, at least `low` and at most `high` where given."""

    low: int | None = None
    high: int | None = None
    metavar: str = "N"

    def parse(self, text: str) -> int:
        try:
            return int(text)
        except ValueError:
            raise ValueError(f"must be a whole number, got {text!r}") from None

    def check(self, value: object) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"must be a whole number, got {_shown(value)}")
        if self.low is not None and self.high is not None and not self.low <= value <= self.high:
            raise ValueError(f"must lie between {self.low} and {self.high}, got {value}")
        if self.low == 1 and value < 1:
            raise ValueError(f"must be a positive whole number, got {value}")
        if self.low is not None and value < self.low:
            raise ValueError(f"must be {self.low} or more, got {value}")
        return value

    def describe(self) -> dict[str, object]:
        return {"type": "integer", "minimum": self.low, "maximum": self.high}


class Number(NamedTuple):
    """A number between `low` and `high` (either end left open with `above`: more than `low`, not equal)."""

    low: float | None = None
    high: float | None = None
    above: bool = False
    below: bool = False
    metavar: str = "X"

    def parse(self, text: str) -> float:
        try:
            return float(text)
        except ValueError:
            raise ValueError(f"must be a number, got {text!r}") from None

    def check(self, value: object) -> float:
        if isinstance(value, bool) or not isinstance(value, int | float | Fraction):
            raise ValueError(f"must be a number, got {_shown(value)}")
        number = float(value)
        if not math.isfinite(number):
            raise ValueError(f"must be a finite number, got {value}")
        too_low = self.low is not None and (number <= self.low if self.above else number < self.low)
        too_high = self.high is not None and (number >= self.high if self.below else number > self.high)
        if too_low or too_high:
            if self.low is not None and self.high is not None:
                raise ValueError(f"must lie between {self.low:g} and {self.high:g}, got {value}")
            if self.low == 0 and self.above:
                raise ValueError(f"must be positive, got {value}")
            raise ValueError(f"must be {self.low:g} or more, got {value}")
        return number

    def describe(self) -> dict[str, object]:
        return {"type": "number", "minimum": self.low, "maximum": self.high, "exclusive_minimum": self.above,
                "exclusive_maximum": self.below}


class Word(NamedTuple):
    """One of a fixed set of words (or, for `numbers`, of whole numbers)."""

    choices: Sequence[str | int]
    metavar: str = ""

    def parse(self, text: str) -> str | int:
        if all(isinstance(choice, int) for choice in self.choices) and text.strip().lstrip("-").isdigit():
            return int(text)
        return text

    def check(self, value: object) -> object:
        if isinstance(value, bool) or value not in self.choices:
            raise ValueError(f"invalid choice: {value!r} (choose from {', '.join(map(repr, self.choices))})")
        return value

    def describe(self) -> dict[str, object]:
        numbers = all(isinstance(choice, int) for choice in self.choices)
        return {"type": "integer" if numbers else "string", "choices": list(self.choices)}


class Choice(NamedTuple):
    """One of many `names` (the help does not list them; `listed` says where they are), or a value `other` accepts
    (`other_text` says which: a user's own file's name)."""

    names: Sequence[str]
    listed: str
    other: Callable[[str], bool]
    other_text: str
    metavar: str = ""

    def parse(self, text: str) -> str:
        return text

    def check(self, value: object) -> str:
        if not isinstance(value, str) or not (value in self.names or self.other(value)):
            raise ValueError(f"invalid choice: {_shown(value)} (one of the {len(self.names)} names {self.listed}, "
                             f"or {self.other_text})")
        return value

    def describe(self) -> dict[str, object]:
        return {"type": "string", "choices": list(self.names), "or": self.other_text}


class ModelName(NamedTuple):
    """A model option's value: one of its choices, or CHOICE.VARIANT (a stored variant of that model; the config
    strips the variant, see slimfuse.model_choices)."""

    choices: Collection[str]
    variants: Sequence[str]
    metavar: str = "MODEL"

    def parse(self, text: str) -> str:
        return text

    def check(self, value: object) -> str:
        if not isinstance(value, str) or value not in self.choices:
            raise ValueError(f"invalid choice: {value!r} (choose from {', '.join(map(repr, list(self.choices)))}, "
                             "or CHOICE.VARIANT)")
        return value

    def describe(self) -> dict[str, object]:
        return {"type": "string", "choices": list(self.choices), "variants": list(self.variants)}


class Switch(NamedTuple):
    """On or off (the command line has `--NAME` and `--no-NAME`)."""

    metavar: str = ""

    def parse(self, text: str) -> bool:
        raise ValueError("a switch takes no value")

    def check(self, value: object) -> bool:
        if not isinstance(value, bool):
            raise ValueError(f"must be true or false, got {_shown(value)}")
        return value

    def describe(self) -> dict[str, object]:
        return {"type": "boolean"}


class FilePath(NamedTuple):
    """A path of the machine the run is on."""

    metavar: str = "PATH"

    def parse(self, text: str) -> Path:
        return Path(text)

    def check(self, value: object) -> Path:
        if not isinstance(value, str | os.PathLike) or not str(value):
            raise ValueError(f"must be a path, got {_shown(value)}")
        return Path(value)

    def describe(self) -> dict[str, object]:
        return {"type": "path"}


class Items(NamedTuple):
    """One or more values of `item` (a list on the command line and in JSON, a tuple in the config)."""

    item: Kind
    most: int | None = None
    metavar: str = ""

    def parse(self, text: str) -> object:
        return self.item.parse(text)

    def check(self, value: object) -> tuple[object, ...]:
        if isinstance(value, str) or not isinstance(value, list | tuple):
            raise ValueError(f"must be a list, got {_shown(value)}")
        if self.most is not None and not 1 <= len(value) <= self.most:
            raise ValueError(f"takes 1 to {self.most} values, got {len(value)}")
        return tuple(self.item.check(each) for each in value)

    def describe(self) -> dict[str, object]:
        return {"type": "list", "item": self.item.describe(), "most": self.most}


UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


class Bytes(NamedTuple):
    """A positive number of bytes; text may carry a unit: `3.5G`, `512M`, `1048576` (K, M, G, T in powers of
    1024)."""

    metavar: str = "SIZE"

    def parse(self, text: str) -> int:
        cleaned = text.strip().upper().removesuffix("IB").removesuffix("B")
        unit = cleaned[-1:] if cleaned[-1:] in "KMGT" else ""
        try:
            value = float(cleaned[:-1] if unit else cleaned)
        except ValueError:
            raise ValueError(f"not a size (like 3.5G or 512M): {text}") from None
        return int(value * UNITS[unit])

    def check(self, value: object) -> int:
        if isinstance(value, str):
            value = self.parse(value)
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise ValueError(f"must be a positive number of bytes, got {_shown(value)}")
        return value

    def describe(self) -> dict[str, object]:
        return {"type": "integer", "minimum": 1, "unit": "bytes"}


class Amount(NamedTuple):
    """A positive amount of `unit` (MB or GB); text may end in the unit's name or letter: `400`, `400MB`."""

    unit: Literal["MB", "GB"]
    example: str
    metavar: str = ""

    def parse(self, text: str) -> float:
        try:
            return float(text.strip().upper().removesuffix(self.unit).removesuffix(self.unit[0]))
        except ValueError:
            raise ValueError(f"not a size in {self.unit} (like {self.example}): {text}") from None

    def check(self, value: object) -> float:
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < math.inf:
            raise ValueError(f"must be positive, got {_shown(value)}")
        return float(value)

    def describe(self) -> dict[str, object]:
        return {"type": "number", "minimum": 0, "exclusive_minimum": True, "unit": self.unit}


class Rate(NamedTuple):
    """Frames per second, exact: `25`, `29.97`, `30000/1001`; above 0 and at most `high`."""

    high: int = 1000
    metavar: str = "FPS"

    def parse(self, text: str) -> Fraction:
        try:
            return Fraction(text.strip())
        except (ValueError, ZeroDivisionError):
            raise ValueError(f"not a frame rate (like 25, 29.97 or 30000/1001): {text}") from None

    def check(self, value: object) -> Fraction:
        if isinstance(value, str):
            value = self.parse(value)
        if isinstance(value, bool) or not isinstance(value, int | float | Fraction):
            raise ValueError(f"must be a frame rate, got {_shown(value)}")
        rate = Fraction(value).limit_denominator(1_000_000) if isinstance(value, float) else Fraction(value)
        if not 0 < rate <= self.high:
            raise ValueError(f"must be above 0 and at most {self.high}, got {value}")
        return rate

    def describe(self) -> dict[str, object]:
        return {"type": "number", "minimum": 0, "exclusive_minimum": True, "maximum": self.high}


class Option(NamedTuple):
    """An option's declaration (its name, section and default come from the field that holds it)."""

    kind: Kind
    help: str
    flags: tuple[str, ...] = ()
    """Other spellings on the command line (FaceFusion's, short ones)."""
    who: frozenset[Audience] = EVERYONE
    default_text: str | None = None
    """How the help names the default where the value itself says little (None: the value)."""
    video: bool = False
    """It applies to video targets only."""
    alias_of: str | None = None
    """Another option this one sets, through `kind`'s words: each word is a value of that option."""


def option(default: object, kind: Kind, help: str, **declared: Any) -> Any:
    """A section field declared as an option (see Option for the rest of `declared`)."""
    return dataclasses.field(default=default, metadata={OPTION: Option(kind, help, **declared)})


class Declared(NamedTuple):
    """One option as the table lists it: its declaration, where it lives and its default."""

    name: str
    section: str
    default: object
    option: Option

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    @property
    def flags(self) -> tuple[str, ...]:
        return (self.flag, *self.option.flags)

    def allows(self, audience: Audience) -> bool:
        return audience in self.option.who

    def describe(self) -> dict[str, object]:
        """What a form needs to show and check the option (the page's form is built from this)."""
        default = self.default
        if isinstance(default, tuple):
            default = list(default)
        elif isinstance(default, Path | Fraction):
            default = str(default)
        return {"name": self.name, "flag": self.flag, "section": self.section, "default": default,
                "help": self.option.help, "video": self.option.video, "control": self.allows("control"),
                "alias_of": self.option.alias_of,
                **{key: value for key, value in self.option.kind.describe().items() if value is not None}}


class Section:
    """A frozen dataclass of options: each value is checked by its kind as the section is made, and stored in
    its one form (lists as tuples, paths as Path); a problem is a UsageError naming the option. `check` adds the
    checks that span several options."""

    title: ClassVar[str]
    """How the help and the page head the section's options."""

    def __post_init__(self) -> None:
        for field in dataclasses.fields(self):  # type: ignore[arg-type]
            declared = field.metadata.get(OPTION)
            value = getattr(self, field.name)
            if declared is None or value is None:
                continue
            try:
                checked = declared.kind.check(value)
            except ValueError as exc:
                raise option_error(field.name, str(exc)) from None
            if checked is not value:
                object.__setattr__(self, field.name, checked)
        self.check()

    def check(self) -> None:
        """Checks across the section's options (option_error)."""


def option_error(name: str, problem: str) -> UsageError:
    """An option's value is wrong: a UsageError (exit 2, as every usage error) naming the option and the problem."""
    return UsageError(detail=f"--{name.replace('_', '-')}: {problem}")


def declared_in(sections: dict[str, type], aliases: Sequence[Declared] = ()) -> tuple[Declared, ...]:
    """Every option of `sections` (name -> Section class) in their order, each alias after the option it sets."""
    found: list[Declared] = []
    for section, kind in sections.items():
        for field in dataclasses.fields(kind):
            declaration = field.metadata.get(OPTION)
            if declaration is not None:
                found.append(Declared(field.name, section, field.default, declaration))
                found += [entry for entry in aliases if entry.option.alias_of == field.name]
    return tuple(found)


def alias(name: str, section: str, kind: Kind, help: str, of: str, **declared: Any) -> Declared:
    """An option that sets another one through its words (`--video-memory-strategy strict` is level 2)."""
    return Declared(name, section, None, Option(kind, help, alias_of=of, **declared))


def for_audience(table: Sequence[Declared], audience: Audience) -> Iterator[Declared]:
    """The options `audience` may set, in the table's order."""
    return (entry for entry in table if entry.allows(audience))
