"""Where a ``--model`` value points, found before anything loads: a local folder, a Hub id in the
local Hugging Face cache, or a Hub id the Hub can be asked about, in about a second.

Why: transformers resolves a model id it cannot find by asking the Hub for every file, with
retries and back-off: a typo (``toy-dmeo``) on a machine without a network took 145 s and 66
lines before it failed, and an empty folder ended as an internal error. Here a folder must hold a
``config.json`` and a tokenizer or processor file; an id that is neither a folder nor cached is
looked up on the Hub once, with a short timeout and no retry. A cached model whose Hub cannot be
reached is loaded from the cache alone (``huggingface_hub``'s offline switch, for this process),
instead of waiting for the same retries.
"""

from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass
from pathlib import Path

from huggingface_hub import HfApi, constants, try_to_load_from_cache
from huggingface_hub.errors import (
    GatedRepoError,
    HfHubHTTPError,
    OfflineModeIsEnabled,
    RepositoryNotFoundError,
)

from paravt.errors import UserError

__all__ = ["LocatedModel", "locate_model", "weights_error"]

#: seconds the one Hub lookup may take (connect and answer); past it the Hub counts as unreachable
HUB_TIMEOUT_S = 1.0
#: files of which a model folder must hold at least one besides config.json: what
#: ``AutoProcessor`` reads
PROCESSOR_FILES = (
    "processor_config.json",
    "preprocessor_config.json",
    "tokenizer_config.json",
    "tokenizer.json",
)
#: ``owner/name`` or ``name`` of the Hub's repository ids
HUB_ID = re.compile(r"^(?:[\w.-]+/)?[\w.-]+$")
#: the names a user may have meant (``paravt.toy.demo.DEMO_MODEL`` among them)
KNOWN_NAMES = ("toy-demo",)


@dataclass(frozen=True)
class LocatedModel:
    """A model spec and where it was found: ``folder`` (a local folder), ``cache`` (a Hub id
    in the local cache), ``hub`` (a Hub id the Hub knows, not cached yet) or ``tiny`` (built
    at run time). ``config`` is its config.json when that could be read without a download."""

    spec: str
    where: str
    config: dict | None = None
    note: str | None = None

    @property
    def arch(self) -> str | None:
        """``qwen3-vl`` / ``qwen2.5-vl`` from the config's ``model_type``, else None."""
        kind = str((self.config or {}).get("model_type", "")).lower()
        if "qwen2_5" in kind or "qwen2.5" in kind:
            return "qwen2.5-vl"
        if "qwen3" in kind:
            return "qwen3-vl"
        return None

    @property
    def context_length(self) -> int | None:
        """The language model's ``max_position_embeddings`` (a VLM keeps it in ``text_config``)."""
        cfg = self.config or {}
        for section in (cfg.get("text_config") or {}, cfg):
            value = section.get("max_position_embeddings")
            if isinstance(value, int) and value > 0:
                return value
        return None


def _looks_like_path(spec: str) -> bool:
    return spec.startswith(("/", "./", "../", "~", ".")) or "\\" in spec or spec.count("/") > 1


def _read_config(path: Path) -> dict | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _suggestion(spec: str) -> str:
    close = difflib.get_close_matches(spec, KNOWN_NAMES, n=1, cutoff=0.6)
    return f" (did you mean {close[0]}?)" if close else ""


def check_folder(folder: Path, spec: str, label: str = "--model ") -> LocatedModel:
    """A local model folder: it holds config.json and what the processor reads."""
    if not folder.is_dir():
        raise UserError(f"{label}{spec}: a file, not a model folder; pass the folder it is in")
    names = sorted(p.name for p in folder.iterdir())
    if not names:
        raise UserError(
            f"{label}{spec}: the folder is empty; pass a model folder (config.json, "
            "weights, tokenizer), a Hub id, or build one with paravt make-tiny-model"
        )
    config = _read_config(folder / "config.json")
    if config is None:
        shown = ", ".join(names[:6]) + (", ..." if len(names) > 6 else "")
        raise UserError(
            f"{label}{spec}: the folder holds no readable config.json, so it is not a model "
            f"folder (it holds {shown}); pass the folder that holds config.json (a training "
            "run's model is in its final/ or checkpoint-N/ folder)"
        )
    if not any((folder / name).is_file() for name in PROCESSOR_FILES):
        raise UserError(
            f"{label}{spec}: the folder has a config.json but no tokenizer or processor files "
            f"({', '.join(PROCESSOR_FILES)}); copy them in from the base model's folder"
        )
    return LocatedModel(spec, "folder", config)


def _cached_config(repo_id: str) -> dict | None:
    found = try_to_load_from_cache(repo_id, "config.json", cache_dir=constants.HF_HUB_CACHE)
    return _read_config(Path(found)) if isinstance(found, str) else None


def _ask_hub(repo_id: str) -> tuple[str, str]:
    """``(answer, detail)``: ``found``, ``missing``, ``gated`` or ``unreachable`` (``detail``
    says why), from one request with a short timeout and no retry (``model_info`` does not
    retry; the downloads behind ``from_pretrained`` do, with back-off)."""
    if constants.HF_HUB_OFFLINE:
        return "unreachable", "offline mode is on: HF_HUB_OFFLINE"
    try:
        HfApi(endpoint=constants.ENDPOINT).model_info(repo_id, timeout=HUB_TIMEOUT_S)
    except GatedRepoError:  # first: huggingface_hub derives it from RepositoryNotFoundError
        return "gated", ""
    except RepositoryNotFoundError:
        return "missing", ""
    except OfflineModeIsEnabled:
        return "unreachable", "offline mode is on: HF_HUB_OFFLINE"
    except HfHubHTTPError as e:
        status = getattr(e.response, "status_code", 0) or 0
        if status == 404:
            return "missing", ""
        if status >= 500:  # up but not serving: the load would retry it for minutes
            return "unreachable", f"the Hub answered HTTP {status}"
        return "found", f"HTTP {status}"  # 401, 403 ...: the load says what it needs
    except Exception as e:  # noqa: BLE001 - httpx's connect and timeout errors, DNS failures
        first = str(e).splitlines()[0] if str(e) else ""
        return "unreachable", f"{type(e).__name__}: {first}".rstrip(": ")
    return "found", ""


def use_local_cache_only() -> None:
    """Make this process load Hub models from the local cache without asking the Hub.

    huggingface_hub reads its offline switch at every request (transformers asks it through
    ``is_offline_mode()``), so setting it here spares the load its retries when the Hub cannot
    be reached. Only called for a model that is in the cache."""
    constants.HF_HUB_OFFLINE = True


def locate_model(spec: str, label: str = "--model ") -> LocatedModel:
    """Where ``spec`` is, or a one-line ``UserError`` that starts with ``label`` (the flag or
    config key that gave it: ``--model``, ``model=``)."""
    if spec.startswith("tiny:"):
        return LocatedModel(spec, "tiny")
    folder = Path(spec).expanduser()
    if folder.exists():
        return check_folder(folder, spec, label)
    if _looks_like_path(spec) or not HUB_ID.match(spec):
        raise UserError(
            f"{label}{spec}: model folder not found{_suggestion(spec)}; pass an existing folder "
            "or a Hub id (owner/name)"
        )
    config = _cached_config(spec)
    answer, detail = _ask_hub(spec)
    if config is not None:
        if answer == "unreachable":
            use_local_cache_only()
            note = f"the Hub cannot be reached ({detail}): {spec} loads from the local cache"
            return LocatedModel(spec, "cache", config, note)
        return LocatedModel(spec, "cache", config)
    where = f"not a local folder and not in the local Hugging Face cache ({constants.HF_HUB_CACHE})"
    if answer == "unreachable":
        raise UserError(
            f"{label}{spec}: {where}, and the Hub cannot be reached ({detail})"
            f"{_suggestion(spec)}; pass a local model folder, or download it where there is a "
            "network (hf download ID) and copy the cache or the folder here"
        )
    if answer == "missing":
        raise UserError(
            f"{label}{spec}: no such model on the Hub ({constants.ENDPOINT}){_suggestion(spec)}; "
            "check the id (owner/name), or log in (hf auth login) if it is private"
        )
    return LocatedModel(spec, "hub", None)


def weights_error(err: BaseException, spec: str) -> UserError | None:
    """The one-line error of a model whose weight files cannot be read (a safetensors file cut
    short or not one), or None for anything else (which keeps its traceback)."""
    if type(err).__name__ != "SafetensorError":  # safetensors' own type, raised in Rust
        return None
    return UserError(
        f"--model {spec}: its weights cannot be read ({err}); the file is damaged or not a "
        "safetensors file: copy or download the model again"
    )
