"""Server mode (``vllm_mode=server``) without TRL's client: the generator ``VLLMBackend`` samples
through, the checks made before the first episode, and the weights check after every push.

``ServerGeneration`` has the interface ``VLLMBackend`` drives (TRL's ``VLLMGeneration``'s:
``generate(prompts, images, num_generations)``, ``sync_weights()``, ``mode``, settable
``max_completion_length``/``temperature``/``top_p``, ``generation_kwargs``) over
``paravt.rollout.vllm_server_client``. Two things differ from TRL's server mode:

- no collective: every rank sends its own requests (``collective = False``), so ``VLLMBackend``
  runs no lockstep — no handshake before a generate call, no filler prompts, no ``drain``. TRL
  gathered every rank's prompts to the main process because only it held the client; here each
  rank holds one, and the server batches whatever arrives. The only point where the ranks meet is
  the weight push (``paravt.rollout.weight_push``: every rank waits until the server holds the
  step's weights, and a failed push stops them all).
- the prompt holds one image pad per frame (``expands_image_pads``): the server expands it, as
  colocated vLLM does, and the expanded prompt it reports must be the learner's stream.

Checks before the first episode (``check_server``; ``ConfigError`` naming the server and the
fix): the server answers; its vLLM release is a tested one (``paravt.rollout.vllm_stack``); it runs
in dev mode (the reload endpoint); it serves this model (its served name or root is the trainer's
``model``); and its weights are the policy's: on a fixed probe (one image and a line of text) the
server's logprob of every text token after the image must be the policy's within
``WEIGHTS_TOLERANCE`` (the colocate test's: mean < 0.03, max < 0.1 nats). Another model, another
revision of the weights, or a resumed run whose server was started from the base folder fails
there. The same probe runs after every push (``check_push``): a server that did not take the
weights (a folder it cannot read, names it did not load) stops the run with ``WeightPushError``
instead of sampling from stale weights. A revision closer to the policy than the tolerance is not
told apart (the first push replaces it anyway).
"""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from paravt.errors import ConfigError
from paravt.rollout.lockstep import exchange
from paravt.rollout.vllm_server_client import (
    ServerReply,
    ServerUnreachable,
    VLLMServerClient,
    png_data_url,
)
from paravt.rollout.vllm_servers import NotReady, ServerPool, as_list, pool_of
from paravt.rollout.vllm_stack import TESTED_SERVER_SERIES, series
from paravt.rollout.weight_gather import gathered_buckets, torch_dtype
from paravt.rollout.weight_push import (
    FolderReloadPush,
    NCCLPush,
    Pushed,
    WeightPush,
    WeightPushError,
    outcome_broadcast,
)

__all__ = ["ServerGeneration", "server_generation", "server_urls"]

logger = logging.getLogger(__name__)

#: |server − policy| logprob per probe token (nats) that still counts as the same weights: the
#: colocate test's bound (tests/train/test_vllm_colocate.py), met by vLLM in bfloat16
WEIGHTS_TOLERANCE = {"mean": 0.03, "max": 0.1}
PROBE_TEXT = "A fixed probe: the frame above shows a red and blue square on grey."


class ServerGeneration:
    """The server-mode generator (module doc). ``push`` moves the weights; ``check_start`` runs
    before the first push and ``check_push`` after each (None: no check); both raise when the
    server does not hold the policy's weights."""

    mode = "server"
    collective = False
    expands_image_pads = True

    def __init__(
        self,
        client: ServerPool | VLLMServerClient,
        push: WeightPush,
        *,
        max_completion_length: int = 256,
        temperature: float = 1.0,
        top_p: float = 1.0,
        top_k: int = 0,
        min_p: float = 0.0,
        repetition_penalty: float = 1.0,
        generation_kwargs: dict | None = None,
        check_start: Callable[[], None] | None = None,
        check_push: Callable[[int], None] | None = None,
    ):
        # one server or several: the pool routes, and outlives their outages
        # (paravt.rollout.vllm_servers)
        self.client = client if isinstance(client, ServerPool) else ServerPool([client])
        self.push = push
        self.max_completion_length = max_completion_length
        self.temperature, self.top_p, self.top_k = temperature, top_p, top_k
        self.min_p, self.repetition_penalty = min_p, repetition_penalty
        self.generation_kwargs = dict(generation_kwargs or {})
        self.check_start, self.check_push = check_start, check_push
        self.step = -1
        self.last_cached_tokens: list[int | None] = []  # of the last generate call, per prompt
        self._urls: dict[int, tuple[Any, tuple[str, str]]] = {}
        self._landing: Pushed | None = None  # an overlapped push not landed yet
        self._landing_lock = threading.Lock()

    def sync_weights(self) -> None:
        """The step's push: the start check before the first one (a fresh run), the weights
        into every server that answers, then the probe of each (``check_push``); the pool then
        routes to the servers that hold them. An overlapped push (``paravt.rollout.weight_push``)
        is still landing when it returns: the first request waits for it (``_land``)."""
        self.step += 1
        if self.step == 0 and self.check_start is not None:
            self.check_start()  # the server's weights, before the first push replaces them
        pushed = self.push.push(self.step)
        self._urls = {}
        if pushed.wait is not None:
            with self._landing_lock:
                self._landing = pushed
            return
        self.client.begin_step(pushed.folder, pushed.holders)
        if self.check_push is not None:
            self.check_push(self.step)

    def _land(self) -> None:
        """Before a request: wait for an overlapped push to land (``WeightPushError``, on every
        request, if it failed), then the pool learns which servers hold its weights."""
        with self._landing_lock:
            if self._landing is None or self._landing.wait is None:
                return
            landed = self._landing.wait()
            self.client.begin_step(landed.folder, landed.holders)
            self._landing = None

    def settle(self) -> None:
        """On every rank after the step's old and reference log-probs, before its optimizer
        step: the step's push has landed, and the push's own ``settle`` (the weights check of an
        overlapped push)."""
        self._land()
        self.push.settle()

    def _sampling(
        self,
        max_tokens: int | None = None,
        temperature: float | None = None,
        top_p: float | None = None,
    ) -> dict:
        """The request's sampling parameters: the generator's settings, or the ones given (a
        request on its own sets none of the shared attributes: ``generate_one``)."""
        sp = {
            "n": 1,
            "max_tokens": int(self.max_completion_length if max_tokens is None else max_tokens),
            "temperature": float(self.temperature if temperature is None else temperature),
            "top_p": float(self.top_p if top_p is None else top_p),
            "top_k": int(self.top_k or 0) or -1,
            "min_p": float(self.min_p),
            "repetition_penalty": float(self.repetition_penalty),
            "logprobs": 0,
        }
        sp.update(self.generation_kwargs)
        return sp

    def _url(self, image: Any) -> tuple[str, str]:
        hit = self._urls.get(id(image))
        if hit is None or hit[0] is not image:
            hit = (image, png_data_url(image))  # the entry keeps the image alive: ids stay unique
            self._urls[id(image)] = hit
        return hit[1]

    def generate(self, prompts: list, images: list | None, num_generations: int = 1):
        """TRL's return shape: ``(prompt_ids, completion_ids, logprobs, logprob_token_ids)``,
        one candidate (the sampled token) per position."""
        if num_generations != 1:
            raise ValueError("ServerGeneration samples one completion per prompt")
        self._land()
        sp = self._sampling()
        jobs = []
        for j, ids in enumerate(prompts):
            ims = (images[j] if images is not None else None) or []
            jobs.append((ids, [self._url(im) for im in ims], sp, f"prompt {j} of the batch"))
        replies = self.client.generate_many(jobs)
        self.last_cached_tokens = [r.cached_tokens for r in replies]
        reported = [r.prompt_ids for r in replies]
        completions = [r.token_ids for r in replies]
        logprobs = [[[lp] for lp in r.logprobs] for r in replies]
        logprob_ids = [[[t] for t in r.token_ids] for r in replies]
        return reported, completions, logprobs, logprob_ids

    def generate_one(
        self,
        prompt: list[int],
        images: list | None,
        *,
        max_tokens: int,
        temperature: float,
        top_p: float,
        what: str = "",
    ) -> ServerReply:
        """One prompt's reply, with its own sampling settings and no shared state touched: the
        call an episode that advances on its own makes from its own thread
        (``VLLMBackend.agenerate``, ``engine.schedule``); many run at once, and the server
        batches them."""
        self._land()
        sp = self._sampling(max_tokens, temperature, top_p)
        urls = [self._url(im) for im in images or []]
        return self.client.generate(prompt, urls, sp, what=what)


# -- the checks ---------------------------------------------------------------------------------
def _same_model(trainer_model: str, served: list[dict]) -> bool:
    names = {str(m.get(k)) for m in served for k in ("id", "root") if m.get(k)}
    if trainer_model in names:
        return True
    mine = Path(trainer_model)
    return mine.exists() and any(
        Path(n).exists() and Path(n).resolve() == mine.resolve() for n in names
    )


def check_server(
    client: VLLMServerClient, model_name: str, *, wait_s: float, by_probe: bool = False
) -> dict:
    """Everything but the weights (module doc); returns the server's model config. With
    ``by_probe`` (the weights probe runs) a server under another name is let through with a
    warning: a server started from a checkpoint folder names that folder, and its weights decide
    (the probe before the first push, or after it on a resume)."""
    client.wait_until_up(wait_s)
    version = client.version()
    if series(version) not in TESTED_SERVER_SERIES:
        raise ConfigError(
            f"the vLLM server {client.base_url} runs vLLM {version}; paravt's server mode was "
            f"checked against vLLM {', '.join(TESTED_SERVER_SERIES)} (docs/train/VLLM.md): "
            "start the server from one of those releases"
        )
    served = client.models()
    if not _same_model(model_name, served):
        names = ", ".join(str(m.get("id")) for m in served) or "nothing"
        if not by_probe:
            raise ConfigError(
                f"the vLLM server {client.base_url} serves {names}, not this run's model "
                f"{model_name!r}: start it with --model {model_name} (or --served-model-name "
                f"{model_name} when both name the same weights)"
            )
        logger.warning(
            "the vLLM server %s serves %s, not %r by name: its weights decide (the weights probe)",
            client.base_url,
            names,
            model_name,
        )
    try:
        info = client.server_info()
    except Exception as e:  # noqa: BLE001 - re-raised as the fix to make; the cause is kept
        raise ConfigError(
            f"the vLLM server {client.base_url} does not answer /server_info ({e}): start it "
            "with VLLM_SERVER_DEV_MODE=1 in its environment (the weight reload is a dev-mode "
            "endpoint) and --enable-scale-out (the token-in generate endpoint)"
        ) from e
    return dict(info.get("model_config") or {})


def check_servers(
    pool: ServerPool, model_name: str, *, wait_s: float, by_probe: bool = False
) -> None:
    """``check_server`` for every server of ``pool`` (each must answer within ``wait_s``)."""
    for client in pool.clients:
        check_server(client, model_name, wait_s=wait_s, by_probe=by_probe)


def probe_image() -> Any:
    """The probe's frame: a fixed 64x64 picture (a red and a blue square on grey)."""
    import numpy as np
    from PIL import Image

    a = np.full((64, 64, 3), 128, dtype=np.uint8)
    a[8:30, 8:30] = (220, 30, 30)
    a[34:58, 30:60] = (30, 40, 210)
    return Image.fromarray(a)


class WeightsProbe:
    """The server's and the policy's logprobs of one fixed sequence (module doc).

    ``policy`` is the model to compare (called on every rank: a collective forward under
    sharding); only the main process asks the servers, and the verdict is exchanged. The
    policy's logprobs of the last comparison stay (``reference``, on every rank), so a server
    that comes back mid-step is checked without a forward (``server_gap``)."""

    def __init__(
        self,
        client: ServerPool | VLLMServerClient,
        processor: Any,
        *,
        is_main: bool = True,
        gather: Callable[[list], list] | None = None,
    ):
        import torch

        self.pool = client if isinstance(client, ServerPool) else None
        self.clients = client.clients if isinstance(client, ServerPool) else [client]
        self.client, self.is_main = self.clients[0], is_main
        self.reference: list[float] | None = None
        self._gather = gather or (lambda shares: shares)
        tok = getattr(processor, "tokenizer", processor)
        image = probe_image()
        feats = processor.image_processor(images=[image], return_tensors="pt")
        self.pixel_values = feats["pixel_values"]
        self.grid = feats["image_grid_thw"]
        merge = int(getattr(processor.image_processor, "merge_size", 2)) ** 2
        n = int(self.grid.prod()) // merge
        ids = tok.convert_tokens_to_ids
        self.pad = ids("<|image_pad|>")
        head = [ids("<|vision_start|>")]
        tail = [ids("<|vision_end|>")] + list(tok.encode(PROBE_TEXT, add_special_tokens=False))
        self.ids = head + [self.pad] * n + tail
        self.sent = head + [self.pad] + tail  # one pad: the server expands it
        self.text_from = len(head) + n + 1  # logprobs compared on the text after the image
        self.image_url = png_data_url(image)
        self._torch = torch

    def policy_logprobs(self, model: Any) -> list[float]:
        torch = self._torch
        ids = torch.tensor([self.ids], device=_device(model))
        was = model.training
        model.eval()
        try:
            with torch.no_grad():
                logits = model(
                    input_ids=ids,
                    attention_mask=torch.ones_like(ids),
                    pixel_values=self.pixel_values.to(ids.device, _dtype(model)),
                    image_grid_thw=self.grid.to(ids.device),
                    mm_token_type_ids=(ids == self.pad).long(),
                ).logits[0]
        finally:
            model.train(was)
        lp = torch.log_softmax(logits[:-1].float(), -1).gather(-1, ids[0, 1:, None])[:, 0]
        return [math.nan] + lp.cpu().tolist()

    def server_logprobs(self, client: VLLMServerClient | None = None) -> list[float]:
        client = client or self.client
        reported, lps = client.prompt_logprobs(
            self.sent, [self.image_url], what="the weights probe"
        )
        if reported != self.ids:
            raise ConfigError(
                f"the vLLM server {client.base_url} expanded the probe's image into "
                f"{sum(1 for t in reported if t == self.pad)} image pads where this run's "
                f"processor gives {sum(1 for t in self.ids if t == self.pad)}: its image "
                "processor settings differ from the model folder's (--mm-processor-kwargs?)"
            )
        return lps

    def _compare(self, mine: list[float], theirs: list[float]) -> tuple[float, float]:
        d = [
            abs(a - b)
            for a, b in zip(mine[self.text_from :], theirs[self.text_from :], strict=True)
        ]
        d = [x for x in d if math.isfinite(x)] or [math.inf]
        return sum(d) / len(d), max(d)

    def take_reference(self, model: Any) -> None:
        """The policy's logprobs of the probe, kept as the ``reference`` (every rank: a
        collective forward under sharding): the folder push takes them once the weights are
        gathered, before any server reloads them, and its check compares the servers with them
        (``push_checker(referenced=True)``)."""
        self.reference = self.policy_logprobs(model)

    def gaps(self, model: Any | None) -> dict[str, tuple[float, float]]:
        """Each server's ``(mean, max)`` |server − policy| over the probe's text tokens, the same
        on every rank; the policy's logprobs become the ``reference`` (``model`` None: the
        ``reference`` taken already, ``take_reference``). A server of a pool that does not
        answer the probe is down there (on every rank), not a failed check: it rejoins once it
        answers again and holds the step's weights."""
        mine = self.policy_logprobs(model) if model is not None else self.reference
        assert mine is not None, "no reference taken"
        self.reference = mine
        verdict: dict[str, tuple[float, float] | str] | None = None
        if self.is_main:  # the servers that hold the step's weights (a down one rejoins later)
            live = set(self.pool.live()) if self.pool is not None else None
            verdict = {}
            for c in self.clients:
                if live is not None and c.base_url not in live:
                    continue
                try:
                    verdict[c.base_url] = self._compare(mine, self.server_logprobs(c))
                except ServerUnreachable as e:  # an outage, not other weights: down, not fatal
                    if self.pool is None:
                        raise
                    verdict[c.base_url] = f"it did not answer the weights probe: {e}"
        shares = exchange(self._gather, verdict)
        every = next(s for s in shares if s is not None)
        for url, why in every.items():  # every rank's pool: down, it rejoins once it holds them
            if isinstance(why, str) and self.pool is not None:
                self.pool.mark_down(url, why)
        return {url: g for url, g in every.items() if not isinstance(g, str)}

    def gap(self, model: Any) -> tuple[float, float]:
        """The worst server's ``(mean, max)`` (``gaps``)."""
        every = list(self.gaps(model).values()) or [(math.inf, math.inf)]
        return max(g[0] for g in every), max(g[1] for g in every)

    def server_gap(self, client: VLLMServerClient) -> tuple[float, float] | None:
        """``client``'s gap to the last ``reference`` (this rank only; None before any)."""
        if self.reference is None:
            return None
        return self._compare(self.reference, self.server_logprobs(client))


def within(gap: tuple[float, float]) -> bool:
    return gap[0] < WEIGHTS_TOLERANCE["mean"] and gap[1] < WEIGHTS_TOLERANCE["max"]


def _gap_text(gap: Sequence[float]) -> str:
    return (
        f"mean {gap[0]:.4f}, max {gap[1]:.4f} nats a token on the weights probe (the same "
        f"weights: mean < {WEIGHTS_TOLERANCE['mean']}, max < {WEIGHTS_TOLERANCE['max']})"
    )


def _worst(gaps: dict[str, tuple[float, float]]) -> tuple[str, tuple[float, float]] | None:
    """The first server whose gap is outside the tolerance, or None."""
    return next(((url, g) for url, g in gaps.items() if not within(g)), None)


def refuse_other_weights(probe: WeightsProbe, model: Any, model_name: str) -> None:
    """``ConfigError`` unless every server's weights are the policy's (before the first push):
    a server of another model or revision, alone or in a list, is refused."""
    bad = _worst(probe.gaps(model))
    if bad is not None:
        url, gap = bad
        raise ConfigError(
            f"the vLLM server {url} serves {model_name!r} with other weights than this run's "
            f"policy: {_gap_text(gap)}. Start every server from the weights the run starts "
            "from (one model and revision for the whole list)"
        )


def push_checker(
    probe: WeightsProbe, model: Any, *, referenced: bool = False
) -> Callable[[int], None]:
    """``check_push(step)`` for ``ServerGeneration``: ``WeightPushError`` when a server's
    logprobs are not the policy's after a push. ``referenced``: against the policy's logprobs
    taken when the push started (``WeightsProbe.take_reference``; an overlapped push checks
    once it has landed, and the weights did not change in between)."""

    def check(step: int) -> None:
        bad = _worst(probe.gaps(None if referenced else model))
        if bad is not None:
            url, gap = bad
            raise WeightPushError(
                f"weight push of step {step}: the vLLM server {url} does not hold the pushed "
                f"weights ({_gap_text(gap)})"
            )

    return check


def rejoiner(
    pool: ServerPool,
    probe: WeightsProbe | None,
    *,
    is_main: bool,
    busy: Callable[[], bool] | None = None,
) -> Callable[[VLLMServerClient], str]:
    """``ServerPool.rejoin``: a server that answers again holds the step's weights before it
    takes requests. Already the policy's by the probe: nothing to do. Else the main process has
    it reload the step's folder and probes again (another rank waits for that: ``NotReady``);
    a server that still differs is kept out (``WeightPushError``). Without the probe, every
    rank has it reload the folder (idempotent). While ``busy()`` (a push under way: the
    probe's reference may already be the new step's while the folder is the last one's) it
    waits (``NotReady``); the push itself takes in a server that answers by then."""

    def rejoin(client: VLLMServerClient) -> str:
        if busy is not None and busy():
            raise NotReady
        if probe is not None:
            gap = probe.server_gap(client)
            if gap is None:
                raise NotReady  # before the first push's probe: the push takes it in
            if within(gap):
                return f"it holds this step's weights: probe mean {gap[0]:.4f} nats"
            if not is_main:
                raise NotReady  # the main process reloads it
        if pool.folder is None:
            raise WeightPushError(
                "no weight folder to reload it from (trainer.vllm_weight_push=nccl cannot "
                "give a restarted server the weights mid-run; use folder)"
            )
        client.reload_weights(pool.folder)
        done = f"reloaded {Path(pool.folder).name}"
        if probe is None:
            return done
        gap = probe.server_gap(client)
        if gap is None or not within(gap):
            raise WeightPushError(
                f"{done}, but its logprobs are not the policy's ({_gap_text(gap or (0, 0))})"
            )
        return f"{done}, probe mean {gap[0]:.4f} nats"

    return rejoin


def _device(model: Any) -> Any:
    return next(model.parameters()).device


def _dtype(model: Any) -> Any:
    return next(model.parameters()).dtype


def server_urls(args: Any) -> list[str]:
    """The run's servers: ``vllm_server_base_url`` (one URL or a list), else host and port."""
    urls = as_list(args.vllm_server_base_url)
    return urls or [f"http://{args.vllm_server_host}:{args.vllm_server_port}"]


def server_generation(trainer: Any) -> ServerGeneration:
    """The server-mode generator of a ``ParaGRPOTrainer`` (TRL built no vLLM generator: see
    ``ParaGRPOTrainer.__init__``), after ``check_server`` on every server; the weights are
    compared at the first push (``trainer.vllm_check_weights``), and after every push (in the
    push's ``settle`` when it overlaps). A resumed run (``args.resume_from_checkpoint``, set by
    ``paravt.train.run``) pushes first and probes after: its servers may hold any step's
    weights, or the base model's."""
    a = trainer.args
    acc = trainer.accelerator
    urls = server_urls(a)
    tok = getattr(trainer.processing_class, "tokenizer", trainer.processing_class)
    pool = pool_of(
        urls, timeout_s=a.vllm_server_request_timeout_s, retries=a.vllm_server_retries,
        backoff_s=a.vllm_server_backoff_s, outage_budget_s=a.vllm_outage_budget_s,
        deadline_s=a.vllm_episode_deadline_s,
        image_pad=int(tok.convert_tokens_to_ids("<|image_pad|>")),
    )  # fmt: skip
    model = acc.unwrap_model(trainer.model)
    name = str(getattr(model, "name_or_path", "") or "")
    resumed = bool(a.resume_from_checkpoint)
    several = acc.num_processes > 1
    gather = None
    if several:
        from accelerate.utils import gather_object

        gather = gather_object
    dtype = torch_dtype(_serving_dtype(pool, name, a, acc.is_main_process, gather))
    push, overlap = _weight_push(trainer, pool, dtype, gather)
    start = check = probe = None
    if a.vllm_check_weights:
        probe = WeightsProbe(
            pool, trainer.processing_class, is_main=acc.is_main_process, gather=gather
        )
        if not resumed:  # a resume pushes first: its servers may hold any step's weights
            start = lambda: refuse_other_weights(probe, model, name)  # noqa: E731
        check = push_checker(probe, model)
    busy = None
    if isinstance(push, FolderReloadPush):
        busy = lambda: push.pushing  # noqa: E731 - a server rejoins between pushes (rejoiner)
        if probe is not None:  # the policy's side of the check: taken before any reload
            push.reference = lambda: probe.take_reference(model)
            check = push_checker(probe, model, referenced=True)
            if overlap:  # checked once landed, in the push's settle
                push.check, check = check, None
    pool.rejoin = rejoiner(pool, probe, is_main=acc.is_main_process, busy=busy)
    if resumed:
        logger.info(
            "resuming from %s: the vLLM servers get its weights first, then the probe",
            a.resume_from_checkpoint,
        )
    return ServerGeneration(
        pool, push,
        max_completion_length=a.max_completion_length, temperature=a.temperature,
        top_p=a.top_p, top_k=a.top_k or 0, min_p=a.min_p or 0.0,
        repetition_penalty=a.repetition_penalty, generation_kwargs=a.generation_kwargs,
        check_start=start, check_push=check,
    )  # fmt: skip


def _serving_dtype(pool: ServerPool, name: str, a: Any, is_main: bool, gather: Any) -> str:
    """``check_server`` of every server on the main process, then the dtype the weights are
    pushed in, on every rank: the servers' (their ``/server_info``), else
    ``trainer.vllm_dtype``. A server the main process refuses is refused on every rank (the
    others would wait in the push's gathers)."""
    share: tuple[str | None, str | None] = (None, None)
    problem: ConfigError | None = None
    if is_main:
        try:
            share = (_served_dtype(pool, name, a), None)
        except ConfigError as e:
            problem, share = e, (None, str(e))
    served, why = exchange(gather or (lambda s: s), share)[0]
    if problem is not None:
        raise problem
    if why is not None:
        raise ConfigError(why)
    chosen = served or a.vllm_dtype
    logger.info("weights pushed in %s (%s)", chosen, "the server's" if served else "vllm_dtype")
    return chosen


def _served_dtype(pool: ServerPool, name: str, a: Any) -> str | None:
    wait_s, by_probe = float(a.vllm_server_timeout), bool(a.vllm_check_weights)
    served = {
        str(
            check_server(c, name, wait_s=wait_s, by_probe=by_probe).get("dtype") or ""
        ).removeprefix("torch.")
        for c in pool.clients
    } - {""}
    if len(served) > 1:
        raise ConfigError(
            f"the vLLM servers {pool.base_url} serve in {', '.join(sorted(served))}: start every "
            "server with one --dtype (the weights are pushed in it)"
        )
    return next(iter(served), None)


def _weight_push(
    trainer: Any, pool: ServerPool, dtype: Any, gather: Any
) -> tuple[WeightPush, bool]:
    """The push ``trainer.vllm_weight_push`` names, and whether it overlaps."""
    a, acc = trainer.args, trainer.accelerator
    bucket = int(float(a.vllm_push_bucket_mb) * 2**20)

    def policy() -> Any:  # at push time: prepared (sharded) by then
        return acc.unwrap_model(trainer.model)

    if a.vllm_weight_push == "nccl":  # not run here (module doc of vllm_weight_push)
        client = pool.clients[0]  # one server (ParaGRPOConfig refuses several with nccl)

        def reset_caches() -> None:
            for cache in ("prefix", "encoder", "mm"):
                client.call("POST", f"/reset_{cache}_cache", what=f"resetting the {cache} cache")

        nccl = NCCLPush(
            client.base_url, policy, is_main=acc.is_main_process, bucket_bytes=bucket,
            device=acc.device, dtype=dtype, gather=gather, after=reset_caches,
            timeout_s=a.vllm_server_request_timeout_s,
        )  # fmt: skip
        return nccl, False
    overlap = bool(a.vllm_push_overlap)
    several = acc.num_processes > 1
    folder = FolderReloadPush(
        a.vllm_push_dir or str(Path(a.output_dir) / "vllm-weights"),
        reload=pool.reload_weights, is_main=acc.is_main_process, gather=gather,
        server=pool.base_url, threads=a.vllm_push_threads, overlap=overlap,
        # views of the live weights where they are whole already: the trainer settles the
        # push before its optimizer step changes them (ParaGRPOTrainer, after old/ref)
        buckets=lambda: gathered_buckets(
            policy(), dtype=dtype, bucket_bytes=bucket, keep=acc.is_main_process, own=False
        ),
        broadcast=outcome_broadcast(a.ddp_timeout) if several and overlap else None,
    )  # fmt: skip
    return folder, overlap
