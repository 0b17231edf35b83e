"""The vLLM names paravt calls, checked in a release's source without importing it (a CUDA wheel
cannot be imported on a machine without CUDA): the files are read from the installed package or
straight out of a wheel (a zip) and parsed with ``ast``.

``USES`` lists what paravt depends on: HTTP routes its server client calls, the fields of the
token-in generate request it sends, the worker/runner methods it reaches (colocated reload,
``collective_rpc("reload_weights")``), what the NCCL push reaches through TRL 1.16's
``WeightTransferClient`` and ``VLLMClient`` (the trainer-side rendezvous and packed broadcast
functions, the worker's init and update info fields, the weight-update and pause routes), the
server flags ``VLLMServe`` passes. ``problems(source)`` returns what is missing, one line each.
"""

from __future__ import annotations

import ast
import zipfile
from pathlib import Path


class Source:
    """The ``vllm`` package's ``.py`` files from a folder (the installed package) or a wheel."""

    def __init__(self, where: str | Path):
        self.where = Path(where)
        if self.where.suffix == ".whl":
            self._zip = zipfile.ZipFile(self.where)
            self.names = [n for n in self._zip.namelist() if n.endswith(".py")]
        else:
            self._zip = None
            root = self.where.parent
            self.names = [str(p.relative_to(root)) for p in self.where.rglob("*.py")]
        self._trees: dict[str, ast.Module] = {}

    def tree(self, name: str) -> ast.Module | None:
        if name not in self._trees:
            if name not in self.names:
                return None
            if self._zip is not None:
                text = self._zip.read(name).decode("utf-8")
            else:
                text = (self.where.parent / name).read_text(encoding="utf-8")
            self._trees[name] = ast.parse(text)
        return self._trees[name]

    def under(self, prefix: str) -> list[str]:
        return [n for n in self.names if n.startswith(prefix)]


def routes(src: Source) -> set[str]:
    """Every path a FastAPI router of ``vllm/entrypoints`` declares (decorators and
    ``add_api_route``)."""
    out: set[str] = set()
    for name in src.under("vllm/entrypoints/"):
        for node in ast.walk(src.tree(name)):
            if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
                f = node.func
                attr = f.attr if isinstance(f, ast.Attribute) else None
                if attr in ("get", "post", "put", "api_route", "add_api_route") and isinstance(
                    node.args[0].value, str
                ):
                    out.add(node.args[0].value)
    return out


def find_class(src: Source, names: list[str], cls: str) -> ast.ClassDef | None:
    for name in names:
        tree = src.tree(name)
        if tree is None:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and node.name == cls:
                return node
    return None


def function_params(src: Source, name: str, fn: str) -> list[str] | None:
    """The keyword-reachable parameter names of the module-level function ``fn`` of file
    ``name`` (``["**"]`` added when it takes ``**kwargs``); None when it is not there."""
    tree = src.tree(name)
    for node in tree.body if tree is not None else ():
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == fn:
            names = [a.arg for a in node.args.args] + [a.arg for a in node.args.kwonlyargs]
            return names + (["**"] if node.args.kwarg is not None else [])
    return None


def fields(node: ast.ClassDef) -> set[str]:
    return {
        n.target.id
        for n in node.body
        if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)
    }


def method_params(node: ast.ClassDef, method: str) -> tuple[list[str], bool] | None:
    """The parameter names of ``method`` that a keyword can reach (``self``/``cls`` dropped),
    and whether it takes ``**kwargs`` (then any keyword reaches it)."""
    for n in node.body:
        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and n.name == method:
            names = [a.arg for a in n.args.args][1:] + [a.arg for a in n.args.kwonlyargs]
            return names, n.args.kwarg is not None
    return None


#: route paths paravt's server client and VLLMServe's health wait call
ROUTES = ("/inference/v1/generate", "/collective_rpc", "/reset_prefix_cache",
          "/reset_encoder_cache", "/reset_mm_cache", "/server_info", "/version", "/v1/models",
          "/health", "/get_world_size", "/init_weight_transfer_engine", "/update_weights",
          "/start_weight_update", "/finish_weight_update", "/pause", "/resume")  # fmt: skip
#: (file or folder prefix, class, method or None, params that must be accepted, by keyword)
METHODS = (
    ("vllm/entrypoints/", "GenerateRequest", None,
     ("token_ids", "content_parts", "sampling_params", "return_token_ids", "request_id")),
    ("vllm/v1/worker/gpu_worker.py", "Worker", "reload_weights",
     ("weights_iterator", "weights_path", "is_checkpoint_format")),
    ("vllm/v1/worker/", "GPUModelRunner", "reload_weights",
     ("weights_iterator", "weights_path", "is_checkpoint_format")),
    ("vllm/entrypoints/llm.py", "LLM", "reset_prefix_cache", ()),
    # the server's side of TRL's WeightTransferClient: its init_info and update_info dicts
    ("vllm/distributed/weight_transfer/", "NCCLWeightTransferInitInfo", None,
     ("master_address", "master_port", "rank_offset", "world_size", "packed")),
    ("vllm/distributed/weight_transfer/", "NCCLWeightTransferUpdateInfo", None,
     ("names", "dtype_names", "shapes")),
)  # fmt: skip
#: (file, module-level function, params that must be accepted, by keyword): what TRL 1.16's
#: WeightTransferClient calls on the trainer's side (vLLM >= 0.28's stateful path)
FUNCTIONS = (
    ("vllm/utils/network_utils.py", "get_ip", ()),
    ("vllm/utils/network_utils.py", "get_open_port", ()),
    ("vllm/distributed/weight_transfer/nccl_common.py", "trainer_init", ("init_info",)),
    ("vllm/distributed/weight_transfer/packed_tensor.py", "packed_nccl_broadcast_producer",
     ("iterator", "group", "src", "post_iter_func")),
)  # fmt: skip
#: server flags (EngineArgs / the frontend's fields, ``--a-b`` is ``a_b``)
FLAGS = ("enable_scale_out", "logprobs_mode", "max_logprobs", "limit_mm_per_prompt",
         "enforce_eager", "max_model_len", "weight_transfer_config", "mm_processor_kwargs",
         "enable_prompt_tokens_details")  # fmt: skip
MODULES = ("vllm/entrypoints/openai/api_server.py", "vllm/platforms/__init__.py")


def problems(src: Source) -> list[str]:
    out = [f"module {m} is missing" for m in MODULES if m not in src.names]
    have = routes(src)
    out += [f"route {r} is missing" for r in ROUTES if r not in have]
    for where, cls, method, params in METHODS:
        files = src.under(where)
        node = find_class(src, files, cls)
        if node is None:
            out.append(f"class {cls} is missing from {where}")
            continue
        if method is None:
            missing = [p for p in params if p not in fields(node)]
            # a dataclass field may come from a base class in the same file (TrainerInitInfo)
            out += [f"{cls} has no field {p}" for p in missing]
            continue
        sig = method_params(node, method)
        if sig is None:
            out.append(f"{cls}.{method} is missing")
            continue
        names, any_keyword = sig
        out += [
            f"{cls}.{method} takes no {p}" for p in params if p not in names and not any_keyword
        ]
    for where, fn, params in FUNCTIONS:
        names = function_params(src, where, fn)
        if names is None:
            out.append(f"function {fn} is missing from {where}")
            continue
        out += [f"{fn} takes no {p}" for p in params if p not in names and "**" not in names]
    flag_files = ["vllm/engine/arg_utils.py", *src.under("vllm/config/")]
    flag_files += [n for n in src.under("vllm/entrypoints/") if n.endswith("cli_args.py")]
    declared: set[str] = set()
    for name in flag_files:
        tree = src.tree(name)
        for node in ast.walk(tree) if tree is not None else ():
            if isinstance(node, ast.ClassDef):
                declared |= fields(node)
    out += [
        f"server flag --{f.replace('_', '-')} is not declared" for f in FLAGS if f not in declared
    ]
    return out
