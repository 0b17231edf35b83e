"""Typed configuration: YAML file + ``--set key=value`` overrides onto a dataclass.

Every command has one config dataclass (nested dataclasses allowed), and ``load_config`` is the one
loader of every command: defaults, then flags, then a YAML file, then dotted overrides, checking
every key and coercing every value to the field's annotated type, so a typo is an error instead of
a silently ignored knob. An error names the key, and the line of the YAML file that sets it
(``FILE line N``); a YAML syntax error is ``FILE:LINE:COLUMN``. A ``Literal`` annotation is the
list of a key's choices: the loader checks it, and ``check_choices`` checks an object built in
Python the same way. ``Section`` types a section whose target is built later (``section_of``);
``Renamed`` is the one deprecation rule for keys. ``to_dict`` gives the resolved config that is
written next to every output.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import logging
import re
import types
import typing
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, ClassVar, TypeVar

import yaml

from paravt.errors import ConfigError, deprecated

__all__ = [
    "Renamed",
    "Section",
    "build",
    "check_choices",
    "load_config",
    "read_yaml",
    "section_of",
    "to_data",
    "to_dict",
    "with_line",
]

logger = logging.getLogger(__name__)

T = TypeVar("T")


def to_dict(cfg: object) -> dict:
    """The config as plain JSON-able data (recorded with every output); a ``Section`` records the
    keys the config set."""
    out = to_data(cfg)
    if not isinstance(out, dict):
        raise TypeError(f"to_dict takes a dataclass or a mapping, not {type(cfg).__name__}")
    return out


def to_data(value: object) -> object:
    """``value`` as plain JSON-able data: dataclasses and mappings become dicts, sequences lists,
    paths strings; anything else is returned as it is."""
    if isinstance(value, Section):
        return to_data(value.given())
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_data(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, (list, tuple)):
        return [to_data(v) for v in value]
    if isinstance(value, dict):
        return {str(k): to_data(v) for k, v in value.items()}
    if isinstance(value, Path):
        return str(value)
    return value


def _fields(cls_or_obj: object) -> tuple[dataclasses.Field, ...]:
    """The fields of a dataclass (class or instance); anything else is the caller's bug."""
    if not dataclasses.is_dataclass(cls_or_obj):
        raise TypeError(f"{cls_or_obj!r} is not a dataclass")
    return dataclasses.fields(cls_or_obj)


def _type_hints(cls: type) -> dict[str, Any]:
    try:
        return typing.get_type_hints(cls)
    except Exception:  # pragma: no cover - exotic annotations
        logger.warning(
            "cannot resolve the type hints of %s; using its fields' raw annotations",
            cls.__name__,
            exc_info=True,
        )
        return {f.name: f.type for f in dataclasses.fields(cls)}


def _coerce(value: object, tp: Any, key: str) -> Any:
    """Convert ``value`` (from YAML or a ``--set`` string) to the annotated type ``tp``: one
    converter per kind of annotation; an annotation none of them knows takes the value as is."""
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if tp is Any:
        return value
    if origin in (typing.Union, types.UnionType):
        return _coerce_union(value, args, key)
    if origin is typing.Literal:
        return _coerce_literal(value, args, key)
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        return _coerce_dataclass(value, tp, key)
    if origin in (list, tuple, typing.Sequence) or tp in (list, tuple):
        return _coerce_sequence(
            value, args[0] if args else Any, origin is tuple or tp is tuple, key
        )
    if origin is dict or tp is dict:
        return _coerce_mapping(value, key)
    scalar = _SCALARS.get(tp)
    return scalar(value, key) if scalar is not None else value


def _coerce_union(value: object, args: tuple, key: str) -> Any:
    """``X | None`` and other unions: ``None`` (or the strings none / null) where allowed, else
    the first member type that takes the value; its error when none does."""
    if type(None) in args and (
        value is None or (isinstance(value, str) and value.lower() in ("none", "null"))
    ):
        return None
    errors = []
    for a in args:
        if a is type(None):
            continue
        try:
            return _coerce(value, a, key)
        except ConfigError as e:
            errors.append(str(e))
    raise ConfigError(errors[0] if errors else f"config key '{key}': cannot take {value!r}")


def _coerce_literal(value: object, args: tuple, key: str) -> Any:
    """One of the ``Literal``'s values; else ``KEY=VALUE: use A, B or C``."""
    if value in args:
        return value
    choices = [repr(a) for a in args]
    listed = ", ".join(choices[:-1]) + f" or {choices[-1]}" if len(choices) > 1 else choices[0]
    raise ConfigError(f"{key}={value!r}: use {listed}")


def check_choices(obj: Any) -> None:
    """Every ``Literal``-typed field of the dataclass ``obj`` holds one of its values: what the
    loader checks as it reads YAML and ``--set``, for an object built in Python (call it in
    ``__post_init__``). The error is the loader's: ``KEY=VALUE: use A, B or C``."""
    for name, tp in _type_hints(type(obj)).items():
        members = typing.get_args(tp) if typing.get_origin(tp) in _UNIONS else (tp,)
        choices = [t for t in members if t is not type(None)]
        if not choices or any(typing.get_origin(t) is not typing.Literal for t in choices):
            continue  # not a list of choices (a str | Literal[False] takes any text)
        value = getattr(obj, name)
        if not (value is None and type(None) in members):
            _coerce_literal(value, tuple(a for t in choices for a in typing.get_args(t)), name)


_UNIONS = (typing.Union, types.UnionType)


def _coerce_dataclass(value: object, tp: type, key: str) -> Any:
    if isinstance(value, tp):
        return value
    if not isinstance(value, Mapping):
        raise ConfigError(f"config key '{key}': expected a mapping, got {value!r}")
    return build(tp, value, prefix=f"{key}.")


def _coerce_sequence(value: object, item: Any, as_tuple: bool, key: str) -> list | tuple:
    """A list (or tuple) of ``item``: from YAML, from ``--set`` as ``[a, b]`` YAML or as
    ``a,b``."""
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("["):
            value = yaml.safe_load(text)
        else:
            value = [v for v in text.split(",") if v.strip()] if text else []
    if not isinstance(value, (list, tuple)):
        raise ConfigError(f"config key '{key}': expected a list, got {value!r}")
    out = [_coerce(v, item, f"{key}[{i}]") for i, v in enumerate(value)]
    return tuple(out) if as_tuple else out


def _coerce_mapping(value: object, key: str) -> dict:
    """A free mapping (a ``dict`` field: HF's ``fsdp_config``, a backend's options): its text
    leaves are read as YAML (``--set trainer.fsdp_config.version=2`` is the number 2), since the
    field has no types to coerce them to."""
    if isinstance(value, str):
        value = yaml.safe_load(value)
    if not isinstance(value, Mapping):
        raise ConfigError(f"config key '{key}': expected a mapping, got {value!r}")
    return _typed_set_leaves(dict(value))


def _typed_set_leaves(tree: dict) -> dict:
    """``tree`` with its ``--set`` leaves read as YAML (``"2"`` → 2, ``"false"`` → False); the
    YAML file's own values stay as the file typed them."""
    out = {}
    for k, v in tree.items():
        if isinstance(v, dict):
            out[k] = _typed_set_leaves(v)
        elif isinstance(v, SetText):
            try:
                out[k] = yaml.safe_load(v) if v.strip() else str(v)
            except yaml.YAMLError:
                out[k] = str(v)
        else:
            out[k] = v
    return out


def _coerce_bool(value: object, key: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "1", "yes", "on"):
        return True
    if isinstance(value, str) and value.lower() in ("false", "0", "no", "off"):
        return False
    raise ConfigError(f"config key '{key}': {value!r} is not a boolean (use true/false)")


def _coerce_int(value: object, key: str) -> int:
    """An integer, also from ``4.0`` or ``"4"``; ``4.5`` and booleans are errors."""
    if isinstance(value, bool):
        raise ConfigError(f"config key '{key}': {value!r} is not a number")
    try:
        f = float(value) if isinstance(value, int | float | str) else None
        if f is not None and f.is_integer():
            return int(f)
    except (TypeError, ValueError):
        pass
    raise ConfigError(f"config key '{key}': {value!r} is not an integer")


def _coerce_float(value: object, key: str) -> float:
    if not isinstance(value, bool) and isinstance(value, int | float | str):
        try:
            return float(value)
        except (TypeError, ValueError):
            pass
    raise ConfigError(f"config key '{key}': {value!r} is not a number")


def _coerce_str(value: object, key: str) -> str:
    if isinstance(value, (dict, list)):
        raise ConfigError(f"config key '{key}': expected a string, got {value!r}")
    return str(value)


#: converters for plain annotations, by type
_SCALARS: dict[Any, typing.Callable[[Any, str], Any]] = {
    bool: _coerce_bool,
    int: _coerce_int,
    float: _coerce_float,
    str: _coerce_str,
    Path: lambda value, key: Path(value),
}


def build(cls: type[T], data: Mapping[str, Any], prefix: str = "") -> T:
    """Instantiate dataclass ``cls`` from a mapping, rejecting unknown keys."""
    hints = _type_hints(cls)
    fields = {f.name: f for f in _fields(cls) if f.init}
    unknown = [k for k in data if k not in fields]
    if unknown:
        known = ", ".join(sorted(fields))
        owner = cls.TARGET.__name__ if issubclass(cls, Section) else cls.__name__
        raise ConfigError(
            f"unknown config key '{prefix}{unknown[0]}' for {owner}; known keys: {known}"
        )
    kwargs = {k: _coerce(v, hints.get(k, Any), prefix + k) for k, v in data.items()}
    try:
        obj = cls(**kwargs)
    except (TypeError, ValueError) as e:
        raise ConfigError(f"invalid {cls.__name__} config: {e}") from e
    return obj


@dataclasses.dataclass(frozen=True)
class Renamed:
    """The one deprecation rule for a config key (TRL's): the old key ``old`` (dotted) still
    works until the release ``removed_in``, moved to ``new`` with a ``FutureWarning`` that names
    that release (``paravt.errors.deprecated``); with ``removed_in=None`` it is removed already,
    and a config that sets it is a ``ConfigError`` naming ``new``, ended by ``why``.

    A config class lists its renamed keys in ``RENAMED: ClassVar[tuple[Renamed, ...]]`` (dotted
    from the class itself); ``load_config`` applies them before it builds the class. Setting the
    old key and the new one to different values is a ``ConfigError``: which was meant cannot be
    told."""

    old: str
    new: str
    removed_in: str | None = "0.2"
    why: str = ""


def _pop_dotted(tree: dict, key: str) -> tuple[bool, Any]:
    *parents, leaf = key.split(".")
    node = tree
    for p in parents:
        node = node.get(p)
        if not isinstance(node, dict):
            return False, None
    return (True, node.pop(leaf)) if leaf in node else (False, None)


def _get_dotted(tree: dict, key: str) -> tuple[bool, Any]:
    node: Any = tree
    for p in key.split("."):
        if not isinstance(node, dict) or p not in node:
            return False, None
        node = node[p]
    return True, node


def _field_type(cls: type, key: str) -> Any:
    """The annotated type of the dotted ``key`` of dataclass ``cls`` (``Any`` where unknown)."""
    tp: Any = cls
    for p in key.split("."):
        if not (dataclasses.is_dataclass(tp) and isinstance(tp, type)):
            return Any
        tp = _type_hints(tp).get(p, Any)
    return tp


def apply_renamed(cls: type, data: dict) -> dict:
    """``data`` with ``cls.RENAMED`` applied (see ``Renamed``): deprecated keys moved to their
    new names with a ``FutureWarning``, removed ones refused in one line naming every new home."""
    rules: tuple[Renamed, ...] = getattr(cls, "RENAMED", ())  # a ClassVar; most classes have none
    data = copy.deepcopy(data)
    removed = [r for r in rules if r.removed_in is None and _get_dotted(data, r.old)[0]]
    if removed:
        homes = ", ".join(f"{r.old} → {r.new}" for r in removed)
        raise ConfigError(f"{homes}: {removed[0].why}" if removed[0].why else homes)
    moved = []
    for rule in (r for r in rules if r.removed_in is not None):
        found, value = _pop_dotted(data, rule.old)
        if not found:
            continue
        has_new, current = _get_dotted(data, rule.new)
        tp = _field_type(cls, rule.new)
        if has_new and _coerce(current, tp, rule.new) != _coerce(value, tp, rule.old):
            raise ConfigError(
                f"{rule.old}={value!r} and {rule.new}={current!r} disagree: set it once, as "
                f"{rule.new}"
            )
        _set_dotted(data, rule.new, value)
        moved.append(rule)
    for release in sorted({str(r.removed_in) for r in moved}):  # one warning per release
        names = [r for r in moved if r.removed_in == release]
        use = f"set {', '.join(r.new for r in names)} instead (read as that now)"
        use += f"; {names[0].why}" if names[0].why else ""
        deprecated(", ".join(r.old for r in names), use, release, stacklevel=4)
    return data


class Section:
    """A config section typed by another dataclass's keys (``section_of``) and built into that
    class later, where building it has to happen (HF's ``TrainingArguments`` sets up the
    devices and the process group as it is built). The loader reads and checks every key and
    coerces every value to its annotated type, as for any section; ``name in section`` says
    whether the config set the key, ``given()`` holds those keys and their values."""

    _given: frozenset[str] = frozenset()
    #: the class the section's keys are the fields of
    TARGET: ClassVar[type]

    def __contains__(self, name: object) -> bool:
        return name in self._given

    #: paravt's own defaults of some of the target's keys (``section_of``'s ``defaults``)
    DEFAULTS: ClassVar[Mapping[str, Any]] = {}

    def given(self) -> dict[str, Any]:
        """The keys the config set, in field order, with their (typed) values."""
        return {f.name: getattr(self, f.name) for f in _fields(self) if f.name in self}

    def arguments(self) -> dict[str, Any]:
        """What to build ``TARGET`` with: paravt's own defaults, then the keys the config set
        (every other key keeps the target's default)."""
        return {**copy.deepcopy(dict(self.DEFAULTS)), **self.given()}


def section_of(
    target: type, name: str, exclude: Iterable[str] = (), defaults: Mapping[str, Any] | None = None
) -> type:
    """A ``Section`` class named ``name`` whose fields are ``target``'s (its annotations, its
    defaults and its ``help`` metadata), less ``exclude``, with ``defaults`` overriding some."""
    hints, skip, own = _type_hints(target), set(exclude), dict(defaults or {})
    specs = []
    for f in dataclasses.fields(target):
        if not f.init or f.name in skip:
            continue
        if f.name in own:
            value = own[f.name]
            spec = dataclasses.field(default_factory=lambda v=value: copy.deepcopy(v))
        elif f.default is not dataclasses.MISSING:
            spec = dataclasses.field(default=f.default, metadata=f.metadata)
        elif f.default_factory is not dataclasses.MISSING:
            spec = dataclasses.field(default_factory=f.default_factory, metadata=f.metadata)
        else:
            spec = dataclasses.field(default=None, metadata=f.metadata)
        specs.append((f.name, hints.get(f.name, Any), spec))
    namespace = {"TARGET": target, "DEFAULTS": own}
    # a class made at run time: what pyright knows of it is ``type``, which has no settable
    # ``__init__``; its fields are the ``specs`` above
    cls: Any = dataclasses.make_dataclass(name, specs, bases=(Section,), namespace=namespace)
    init = cls.__init__

    def __init__(self, **kwargs: Any) -> None:
        init(self, **kwargs)
        self._given = frozenset(kwargs)

    cls.__init__ = __init__
    return cls


def _set_dotted(tree: dict, key: str, value: Any) -> None:
    parts = key.split(".")
    node = tree
    for p in parts[:-1]:
        nxt = node.get(p)
        if not isinstance(nxt, dict):
            nxt = {}
            node[p] = nxt
        node = nxt
    node[parts[-1]] = value


class SetText(str):
    """A ``--set`` value: text that the field's type reads (``"2"`` is 2 for an ``int``, and in a
    free mapping it is read as YAML), where a YAML file's values come typed already."""


def parse_overrides(pairs: typing.Iterable[str]) -> dict:
    """``["a.b=1", "c=x"]`` → ``{"a": {"b": "1"}, "c": "x"}`` (values stay text, ``SetText``;
    coerced later)."""
    tree: dict = {}
    for pair in pairs:
        if "=" not in pair:
            raise ConfigError(f"--set {pair!r}: expected key=value, e.g. --set max_turns=3")
        key, value = pair.split("=", 1)
        key = key.strip()
        if not key:
            raise ConfigError(f"--set {pair!r}: empty key")
        _set_dotted(tree, key, SetText(value))
    return tree


def merge(base: dict, extra: Mapping) -> dict:
    """``extra`` laid over ``base``: nested mappings merge key by key, anything else replaces
    (how a YAML file lands on flags, and ``--set`` on both)."""
    out = dict(base)
    for k, v in extra.items():
        if isinstance(v, Mapping) and isinstance(out.get(k), dict):
            out[k] = merge(out[k], v)
        else:
            out[k] = v
    return out


def read_yaml(path: str | Path) -> dict:
    """Read a YAML mapping, with errors that name the file."""
    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"config file not found: {p} (pass an existing YAML file to --config)")
    try:
        data = yaml.safe_load(p.read_text()) or {}
    except yaml.YAMLError as e:
        raise ConfigError(_yaml_error(p, e)) from e
    if not isinstance(data, dict):
        raise ConfigError(f"config file {p} must hold a mapping of keys to values")
    return data


def _yaml_error(path: Path, err: yaml.YAMLError) -> str:
    """``FILE:LINE:COLUMN: is not valid YAML: what`` (the parser's own mark, 1-based)."""
    mark = getattr(err, "problem_mark", None) or getattr(err, "context_mark", None)
    what = " ".join(
        str(x) for x in (getattr(err, "context", None), getattr(err, "problem", None)) if x
    )
    where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark is not None else str(path)
    return f"config file {where}: not valid YAML: {what or str(err).splitlines()[0]}"


def key_lines(path: str | Path) -> dict[str, int]:
    """The 1-based line of every dotted key of a YAML file (``engine.crop.max_frames``), read
    from the parser's nodes; empty when the file cannot be parsed."""
    try:
        root = yaml.compose(Path(path).read_text())
    except (OSError, yaml.YAMLError):
        return {}
    out: dict[str, int] = {}

    def walk(node: Any, prefix: str) -> None:
        if not isinstance(node, yaml.MappingNode):
            return
        for key, value in node.value:
            name = f"{prefix}{key.value}"
            out.setdefault(name, key.start_mark.line + 1)
            walk(value, name + ".")

    walk(root, "")
    return out


#: where a message names its key: ``config key 'a.b'``, or ``a.b=VALUE: ...`` / ``a.b → c.d``
#: at its start
_NAMED_KEY = re.compile(r"config key '([^']+)'|^([A-Za-z_][\w.]*)(?:=| →)")


def with_line(err: ConfigError, path: str | Path | None) -> ConfigError:
    """``err`` with ``(FILE line N)`` added when it names a key (``config key 'a.b'``, ``unknown
    config key 'a.b'``, ``a.b=VALUE: ...``, ``a.b → c.d: ...``) that the YAML file ``path`` sets
    (a key a section's own check names without its section, ``vllm_mode``, is found when one
    key of the file ends with it); else ``err`` unchanged."""
    if path is None:
        return err
    m = _NAMED_KEY.search(str(err))
    key = (m.group(1) or m.group(2)) if m else None
    lines = key_lines(path) if key else {}
    line = lines.get(key) if key else None
    if line is None and key:
        ends = [n for name, n in lines.items() if name.endswith("." + key)]
        line = ends[0] if len(ends) == 1 else None
    if line is None:
        return err
    located = ConfigError(f"{err} ({path} line {line})")
    located.__cause__ = err.__cause__
    return located


def load_config(
    cls: type[T],
    path: str | Path | None = None,
    overrides: typing.Iterable[str] = (),
    base: Mapping[str, Any] | None = None,
    check: Callable[[T], Any] | None = None,
) -> T:
    """The one loader of every command: defaults ← ``base`` (the command's flags; a flag not
    given is ``None`` and left out) ← YAML file ← ``--set`` overrides → a validated ``cls``.

    A key the class has renamed (``cls.RENAMED``, ``Renamed``) is moved to its new name with a
    ``FutureWarning``, or refused with its new home once removed. ``check`` runs on the built
    config (a check that needs more than the dataclass: e.g. building TRL's arguments). Every
    ``ConfigError`` is one line naming the key, with the YAML line that sets it."""
    data: dict = {k: v for k, v in (base or {}).items() if v is not None}
    try:
        if path is not None:
            data = merge(data, read_yaml(path))
        data = merge(data, parse_overrides(overrides))
        data = apply_renamed(cls, data)
        cfg = build(cls, data)
        if check is not None:
            check(cfg)
    except ConfigError as e:
        raise with_line(e, path) from e.__cause__
    return cfg


def dumps(cfg: Any) -> str:
    return json.dumps(to_dict(cfg), indent=2, sort_keys=True)
