"""Typed configuration: YAML file + ``--set key=value`` overrides onto a dataclass.

Every command has one config dataclass (nested dataclasses allowed). ``load_config`` builds it from
defaults, then a YAML file, then dotted overrides, checking every key and coercing every value to
the field's annotated type, so a typo is an error instead of a silently ignored knob. ``to_dict``
gives the resolved config that is written next to every output.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import re
import types
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeVar

import yaml

from paravt.errors import ConfigError

logger = logging.getLogger(__name__)

T = TypeVar("T")


def to_dict(cfg: Any) -> dict:
    """The config as plain JSON-able data (recorded with every output)."""
    if dataclasses.is_dataclass(cfg):
        return {f.name: to_dict(getattr(cfg, f.name)) for f in dataclasses.fields(cfg)}
    if isinstance(cfg, (list, tuple)):
        return [to_dict(v) for v in cfg]
    if isinstance(cfg, dict):
        return {str(k): to_dict(v) for k, v in cfg.items()}
    if isinstance(cfg, Path):
        return str(cfg)
    return cfg


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


def _coerce(value: Any, tp: Any, key: str) -> Any:
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


def _coerce_union(value: Any, args: tuple, key: str) -> Any:
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


def _coerce_literal(value: Any, args: tuple, key: str) -> Any:
    if value in args:
        return value
    raise ConfigError(f"config key '{key}': {value!r} is not one of {list(args)}")


def _coerce_dataclass(value: Any, tp: type, key: str) -> Any:
    if isinstance(value, tp):
        return value
    if not isinstance(value, Mapping):
        raise ConfigError(f"config key '{key}': expected a mapping, got {value!r}")
    return build(tp, value, prefix=f"{key}.")


def _coerce_sequence(value: Any, item: Any, as_tuple: bool, key: str) -> list | tuple:
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


def _coerce_mapping(value: Any, key: str) -> dict:
    if isinstance(value, str):
        value = yaml.safe_load(value)
    if not isinstance(value, Mapping):
        raise ConfigError(f"config key '{key}': expected a mapping, got {value!r}")
    return dict(value)


def _coerce_bool(value: Any, key: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "1", "yes", "on"):
        return True
    if isinstance(value, str) and value.lower() in ("false", "0", "no", "off"):
        return False
    raise ConfigError(f"config key '{key}': {value!r} is not a boolean (use true/false)")


def _coerce_int(value: Any, key: str) -> int:
    """An integer, also from ``4.0`` or ``"4"``; ``4.5`` and booleans are errors."""
    if isinstance(value, bool):
        raise ConfigError(f"config key '{key}': {value!r} is not a number")
    try:
        f = float(value)
        if f.is_integer():
            return int(f)
    except (TypeError, ValueError):
        pass
    raise ConfigError(f"config key '{key}': {value!r} is not an integer")


def _coerce_float(value: Any, key: str) -> float:
    if not isinstance(value, bool):
        try:
            return float(value)
        except (TypeError, ValueError):
            pass
    raise ConfigError(f"config key '{key}': {value!r} is not a number")


def _coerce_str(value: Any, key: str) -> str:
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
    fields = {f.name: f for f in dataclasses.fields(cls) if f.init}
    unknown = [k for k in data if k not in fields]
    if unknown:
        known = ", ".join(sorted(fields))
        raise ConfigError(
            f"unknown config key '{prefix}{unknown[0]}' for {cls.__name__}; known keys: {known}"
        )
    kwargs = {k: _coerce(v, hints.get(k, Any), prefix + k) for k, v in data.items()}
    try:
        obj = cls(**kwargs)
    except (TypeError, ValueError) as e:
        raise ConfigError(f"invalid {cls.__name__} config: {e}") from e
    return obj


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


def parse_overrides(pairs: typing.Iterable[str]) -> dict:
    """``["a.b=1", "c=x"]`` → ``{"a": {"b": "1"}, "c": "x"}`` (values stay strings; coerced later)."""
    tree: dict = {}
    for pair in pairs:
        if "=" not in pair:
            raise ConfigError(f"--set {pair!r}: expected key=value, e.g. --set max_turns=3")
        key, value = pair.split("=", 1)
        key = key.strip()
        if not key:
            raise ConfigError(f"--set {pair!r}: empty key")
        _set_dotted(tree, key, value)
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


def with_line(err: ConfigError, path: str | Path | None) -> ConfigError:
    """``err`` with ``(FILE line N)`` added when it names a key (``config key 'a.b'``, ``unknown
    config key 'a.b'``) that the YAML file ``path`` sets; else ``err`` unchanged."""
    if path is None:
        return err
    m = re.search(r"config key '([^']+)'", str(err))
    line = key_lines(path).get(m.group(1)) if m else None
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
) -> T:
    """Defaults ← ``base`` (e.g. flags) ← YAML file ← ``--set`` overrides → a validated ``cls``."""
    data: dict = dict(base or {})
    if path is not None:
        data = merge(data, read_yaml(path))
    data = merge(data, parse_overrides(overrides))
    try:
        return build(cls, data)
    except ConfigError as e:
        raise with_line(e, path) from e.__cause__


def dumps(cfg: Any) -> str:
    return json.dumps(to_dict(cfg), indent=2, sort_keys=True)


def typed_leaves(tree: dict) -> dict:
    """YAML-typed copy of a nested settings dict (``"2"`` → 2, ``"false"`` → False), for the HF
    keys that take a dict HF reads without coercing (``trainer.fsdp_config.version=2``)."""
    out = {}
    for k, v in tree.items():
        if isinstance(v, dict):
            out[k] = typed_leaves(v)
        elif isinstance(v, str):
            try:
                out[k] = yaml.safe_load(v) if v.strip() else v
            except yaml.YAMLError:
                out[k] = v
        else:
            out[k] = v
    return out
