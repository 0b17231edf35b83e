"""The episode engine: one loop that serves ``infer``, ``eval`` and ``train``.

A batch of episodes advances together, round by round:

1. generate for every active episode (one ``backend.generate`` call for the whole batch);
2. parse each turn (``paravt.grammar``); a turn without calls is final;
3. gather every call of every episode and run them all in **one** batched video pass
   (``tools.execute_windows``: one decoder per video, windows de-duplicated);
4. with ``evidence="subagent"``, summarise every successful window in one more batched generate;
5. append each episode's tool turn (one ``role: tool`` message per call block, errors included)
   and, after the last allowed tool round, the forced-answer message; next round.

A corrupt or missing video, or a failed generation, ends that episode with ``status="error"`` and
never stops its siblings. With a token-space backend (one that has a ``codec``) each episode also
carries its token stream — prompt ids, generated ids, rendered tool-turn ids, concatenated, never
re-tokenized — with a loss mask on generated tokens, logprobs, and every image in order.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable
from typing import Any

from paravt.agent.async_engine import run_episodes
from paravt.agent.backend import Backend, check_backend
from paravt.agent.config import EngineConfig
from paravt.agent.prompts import Prompts, load_prompts
from paravt.agent.tool_turns import (
    plan_calls,
    reference_tool_message,
    tool_message,
    truncate_summary,
)
from paravt.agent.vision import at_budget, budget_resizer, preprocess
from paravt.errors import ConfigError, UserError
from paravt.grammar import parse_turn
from paravt.schema.episodes import (
    EpisodeErrorKind,
    EpisodeInput,
    EpisodeRecord,
    Generation,
    GenRequest,
    ImageItem,
    TokenPrompt,
    TokenStream,
    TurnRecord,
    join_rows,
)
from paravt.video.errors import is_read_failure
from paravt.video.nvdec import decode_workers, to_device

__all__ = ["EpisodeEngine"]

logger = logging.getLogger(__name__)


class _Context:
    """The growing conversation of one agent (main or sub-agent): messages, images, tokens."""

    def __init__(
        self, codec: Any, pixel_dtype: Any = None, pixel_device: Any = None, pixel_workers: int = 1
    ):
        self.codec = codec
        self.pixel_dtype = pixel_dtype  # the backend's choice: its model's dtype and device
        self.pixel_device = pixel_device
        self.pixel_workers = pixel_workers  # the crop workers: CPU preprocessing's thread lanes
        self.messages: list[dict] = []
        self.images: list[ImageItem] = []
        self.token_ids: list[int] = []
        self.loss_mask: list[int] = []
        self.logprobs: list[float] = []
        self._joined: tuple[int, Any, Any] | None = None  # (n images, pixel_values, grid_thw)

    def add_images(self, items: list[ImageItem]) -> None:
        if self.codec is not None:
            for it in items:
                _, h, w = it.data.shape
                it.grid_thw = self.codec.grid_for(int(h), int(w), it.min_pixels, it.max_pixels)
        self.images.extend(items)

    def extend(self, ids: list[int], generated: bool, logprobs: list[float] | None = None) -> None:
        self.token_ids.extend(ids)
        self.loss_mask.extend([1 if generated else 0] * len(ids))
        if generated and logprobs is not None and len(logprobs) == len(ids):
            self.logprobs.extend(float(x) for x in logprobs)
        else:
            self.logprobs.extend([0.0] * len(ids))

    def vision_inputs(self, join: bool = True) -> tuple[Any, Any, float]:
        """``pixel_values``/``image_grid_thw`` for all images so far (new ones preprocessed now).

        Each image is preprocessed once: its rows are kept on the ``ImageItem``, which episodes
        that share a video's overview also share (GRPO's generations of one prompt, eval batches).
        The joined ``pixel_values`` is a view of those shared rows where they lie back to back
        (``records.join_rows``), else a copy; ``join=False`` leaves it ``None`` for a backend that
        reads each ``ImageItem.pixels`` itself (no per-episode copy at all).
        """
        if self.codec is None or not self.images:
            return None, None, 0.0
        if self._joined is not None and self._joined[0] == len(self.images):
            if join and self._joined[1] is None:
                self._joined = (len(self.images), join_rows(self.images), self._joined[2])
            return self._joined[1], self._joined[2], 0.0
        import torch

        t0 = time.perf_counter()
        todo = [it for it in self.images if it.pixels is None]
        if todo:
            pv, _ = preprocess(
                todo, self.codec, self.pixel_dtype, self.pixel_device, self.pixel_workers
            )
            offset = 0
            for it in todo:  # each item's rows from its host-side grid (preprocess checked it)
                t, h, w = it.grid
                it.pixels = pv[offset : offset + t * h * w]
                offset += t * h * w
        device = self.images[0].pixels.device
        pv = join_rows(self.images) if join else None
        grid = torch.tensor([list(it.grid) for it in self.images], dtype=torch.long)
        grid = grid.to(device) if device.type == "cpu" else to_device(grid, str(device))
        self._joined = (len(self.images), pv, grid)
        return pv, grid, time.perf_counter() - t0


class _Episode:
    def __init__(self, inp: EpisodeInput, record: EpisodeRecord, ctx: _Context):
        self.input = inp
        self.record = record
        self.ctx = ctx
        self.done = False
        self.turn = 0  # turns generated so far; turn == max_turns is the forced answer
        self.last_closed = True  # did the model end its last turn with the stop token?
        self.t0 = time.perf_counter()
        self.key = ""  # names the backend's kept state of this episode (GenRequest.state_key)


@dataclasses.dataclass
class ToolBatch:
    """One pass of calls through ``_execute``: who asked (``owners``: ``(episode, call record)``),
    each successful call's frames (``frames_of``, by ``id(call record)``) and the window images
    built from them so far (``items``: ``_window_items`` shares them among calls of the batch that
    asked for the same window)."""

    owners: list = dataclasses.field(default_factory=list)
    frames_of: dict[int, Any] = dataclasses.field(default_factory=dict)
    items: dict[tuple, list[ImageItem]] = dataclasses.field(default_factory=dict)


class EpisodeEngine:
    """Runs batches of episodes against one backend under one ``EngineConfig``.

    Two drivers share every step of an episode (``engine.schedule``): synchronous rounds
    (``_round``: one generate call for every active episode, then one tool pass; what a sharded
    model needs, where every rank joins every forward), or one coroutine per episode
    (``paravt.agent.async_engine``: each episode's next turn is submitted as soon as its tools
    return, and tools run while other episodes generate).
    """

    def __init__(
        self,
        backend: Backend,
        config: EngineConfig | None = None,
        prompts: Prompts | None = None,
        *,
        keep_pixels: bool = True,
        frames_at_budget: bool = False,
        keep_subagent_frames: bool = True,
    ):
        self.backend = check_backend(backend)
        #: resize decoded frames to their pixel budget as soon as they become images, and keep
        #: only those (``agent.vision.at_budget``: the same rows, a fraction of the memory);
        #: training turns it on, where every frame of a step stays in its records until the loss
        self.frames_at_budget = frames_at_budget
        #: do sub-agent records keep their window frames after their summary is made? Only a
        #: loss over the sub-agent trajectories reads them (``subagent_in_loss``)
        self.keep_subagent_frames = keep_subagent_frames
        #: do the records of ``run`` keep their preprocessed rows? Training and SFT read them in
        #: their loss forward; infer and eval do not, and pass False (``EpisodeRecord.drop_pixels``)
        self.keep_pixels = keep_pixels
        self.config = config or EngineConfig()
        self.prompts = prompts or load_prompts(self.config.system_prompt, self.config.user_template)
        self.codec = backend.codec
        #: ``tools.execute_windows`` BatchResult.stats of every tool round of the last ``run``.
        self.tool_stats: list[Any] = []
        #: how many times each video was opened during the last ``run`` (1 per readable video)
        self.video_opens: dict[str, int] = {}
        #: called with one line of what a round-by-round ``run`` is doing now (decoding the
        #: overviews, generating turn N, running the calls): a command's progress line
        self.progress: Callable[[str], None] | None = None
        self._sources: dict[str, Any] = {}
        # token-space backends may ask for pixel_values in their model's dtype / on its device
        self.pixel_dtype = backend.pixel_dtype
        self.pixel_device = backend.pixel_device
        self.reads_image_pixels = bool(backend.reads_image_pixels)
        # the tool schema's one place (engine.tool_prompt, per family); a message-only backend
        # is told the family by the size rule its frames are resized under
        cfg = self.config
        arch = self.codec.arch if self.codec is not None else backend.resize_arch
        self.tool_prompt = cfg.resolved_tool_prompt(arch)
        renders_tools = self.codec.renders_tools if self.codec is not None else arch != "qwen2.5-vl"
        self.system_text, self.tools = self.prompts.system_and_tools(
            cfg.mode, cfg.max_turns, cfg.max_parallel, self.tool_prompt, renders_tools
        )
        uses_tool_images = cfg.mode != "direct" and cfg.evidence == "frames"
        if self.codec is not None and uses_tool_images and cfg.tool_response_layout == "template":
            self.codec.check_tool_images()  # at start, never mid-batch
        # a local model keeps each episode's KV cache between its turns (engine.reuse_cache)
        self.backend.keep_episode_state(cfg.reuse_budget_bytes)

    def _prefill(self, prefix: str) -> str:
        """Text a main-agent turn continues: the generation prompt's own opening (``<think>\\n``
        on a Thinking template) merged with ``prefix`` — never doubled (``ChatCodec.prefill``)."""
        return self.codec.prefill(prefix) if self.codec is not None else prefix

    def _context(self) -> _Context:
        # images are resized on as many lanes as windows are decoded on (agent.vision)
        return _Context(self.codec, self.pixel_dtype, self.pixel_device, self.config.crop.workers)

    # -- public -----------------------------------------------------------------------------
    def run(self, inputs: list[EpisodeInput]) -> list[EpisodeRecord]:
        """Run every episode to its final answer (or error); records come back in input order."""
        self.tool_stats = []
        for inp in inputs:
            if not isinstance(inp, EpisodeInput):
                raise UserError(
                    f"EpisodeEngine.run takes EpisodeInput items, got {type(inp).__name__}"
                )
        self.prompts.check_questions(inputs)  # a user template that cannot show them: now
        # One open VideoSource per video for the whole run: the overview and every tool round
        # share it, so metadata and the frame table are read once per video (docs/PROTOCOL.md §3).
        self._sources = {}
        self.video_opens = {}
        episodes: list[_Episode] = []
        try:
            self._say(f"decoding the overviews of {len(inputs)} episode(s)")
            episodes = self._start(inputs)
            if self.episodes_advance_alone():
                run_episodes(self, episodes)  # each frees its kept state as it ends
            else:
                for n in range(self.max_rounds):
                    active = [ep for ep in episodes if not ep.done]
                    if not active:
                        break
                    self._round(active, n)
                    # the backend frees what it kept of episodes that just ended (or failed)
                    self.backend.end_episodes([ep.key for ep in active if ep.done])
        finally:
            for src in self._sources.values():
                src.close()
            self._sources = {}
            self.backend.end_episodes([ep.key for ep in episodes])
        for ep in episodes:
            if not ep.done:  # cannot happen with max_rounds as above; kept as a guard
                ep.done = True
                ep.record.status = "error"
                ep.record.error = "episode did not finish within the turn limit"
                ep.record.error_kind = "engine"
            self._finish(ep)
        if not self.keep_pixels:
            for ep in episodes:
                ep.record.drop_pixels()
        return [ep.record for ep in episodes]

    @property
    def max_rounds(self) -> int:
        """Main-agent turns an episode can take: its tool rounds and the forced answer."""
        return 1 if self.config.mode == "direct" else self.config.max_turns + 1

    def episodes_advance_alone(self) -> bool:
        """Does ``run`` drive one coroutine per episode (``engine.schedule``)? ``auto``: when the
        backend generates asynchronously (``agenerate``: the openai backend, vLLM's async engine)
        and samples without a lockstep (a sharded policy must join every forward)."""
        schedule = self.config.schedule
        lockstep = bool(self.backend.lockstep)
        if schedule == "episodes" and lockstep:
            raise ConfigError(
                f"engine.schedule=episodes: the {type(self.backend).__name__} samples in lockstep "
                "with the other ranks (every rank joins every forward); use schedule=rounds or auto"
            )
        if schedule == "auto":
            return self.backend.agenerate is not None and not lockstep
        return schedule == "episodes"

    # -- episode start: overview frames and the first prompt ---------------------------------
    def _new_record(self, inp: EpisodeInput) -> EpisodeRecord:
        cfg = self.config
        return EpisodeRecord(
            id=inp.id,
            video=str(inp.video),
            question=inp.question,
            question_type=inp.question_type,
            options=list(inp.options) if inp.options else None,
            gold=inp.answer,
            mode=cfg.mode,
            evidence=cfg.evidence,
            frames_k=int(inp.frames_k or cfg.frames),
            prefix=cfg.think_prefix,
            meta=dict(inp.meta),
        )

    def _overview(
        self, path: str, k: int, cache: dict
    ) -> tuple[Any, dict, float, tuple[EpisodeErrorKind, str] | None]:
        """Overview frames of one video (decoded once per run and frame budget); the error, if
        any, is ``(error_kind, message)``: ``video`` for a file the decoder cannot read,
        ``engine`` for anything else (a bug, logged with its traceback)."""
        key = (path, k, self.config.overview_sampling)
        if key in cache:  # decoded already: no decode time for this episode
            frames, meta, _, err = cache[key]
            return frames, meta, 0.0, err
        t0 = time.perf_counter()
        out: tuple[Any, dict, float, tuple[EpisodeErrorKind, str] | None]
        try:
            from paravt.video import VideoSource  # paravt.video loads torch

            crop = self.config.crop  # one source serves the overview and the windows
            src = self._sources.get(path)
            if src is None:
                self.video_opens[path] = self.video_opens.get(path, 0) + 1
                src = VideoSource(
                    path,
                    device=crop.device,  # cuda: NVDEC, for the overview and the windows alike
                    num_threads=crop.decoder_threads,
                    skip_disposable=crop.skip_disposable,
                )
                self._sources[path] = src
            meta = src.meta
            # on the crop pool's lanes (GOP-aligned, same pixels as one decoder); on a GPU the
            # NVDEC pool's (paravt.video.nvdec.decode_workers)
            frames = src.overview(
                k,
                mode=self.config.overview_sampling,
                workers=decode_workers(crop.device, crop.workers),
                resize=self._resizer(self.config),
            )
            # what the container said that the frames contradict (e.g. a truncated file)
            for warning in src.open_warnings:
                if warning not in frames.warnings:
                    frames.warnings.append(warning)
            meta_dict = {
                k2: (str(v) if not isinstance(v, (int, float, str, type(None))) else v)
                for k2, v in dataclasses.asdict(meta).items()
            }
            if len(frames.times) == 0:
                out = (
                    None,
                    meta_dict,
                    time.perf_counter() - t0,
                    ("video", f"no overview frame of {path} could be decoded"),
                )
            else:
                out = (frames, meta_dict, time.perf_counter() - t0, None)
        except Exception as e:  # noqa: BLE001 - one video's failure is its episodes' error only
            if is_read_failure(e):
                logger.warning("cannot read video %s for its overview", path, exc_info=True)
                err: tuple[EpisodeErrorKind, str] = (
                    "video",
                    f"cannot read video {path}: {type(e).__name__}: {e}",
                )
            else:  # a bug, not a bad file: say so, and keep the traceback
                logger.exception("internal error while opening video %s for its overview", path)
                err = (
                    "engine",
                    f"internal error while opening video {path}: {type(e).__name__}: {e}",
                )
            out = (None, {}, time.perf_counter() - t0, err)
        cache[key] = out
        return out

    def _start(self, inputs: list[EpisodeInput]) -> list[_Episode]:
        cfg = self.config
        cache: dict = {}
        shared: dict = {}
        episodes = []
        system = self.system_text
        for inp in inputs:
            rec = self._new_record(inp)
            ep = _Episode(inp, rec, self._context())
            ep.key = f"{len(episodes)}:{inp.id}"
            episodes.append(ep)
            frames, meta, spent, err = self._overview(str(inp.video), rec.frames_k, cache)
            rec.timings.decode_s += spent
            rec.video_meta = meta
            if err is not None:
                kind, message = err
                self._fail(ep, message, kind=kind)
                continue
            rec.warnings.extend(frames.warnings)
            rec.overview_times = [float(t) for t in frames.times]
            key = (str(inp.video), rec.frames_k)
            if key not in shared:  # one set of overview images per video and budget
                parts = self._budget([frames.frame(i) for i in range(len(frames.times))], cfg)
                shared[key] = [
                    ImageItem(part, float(t), "overview", cfg.min_pixels, cfg.max_pixels)
                    for part, t in zip(parts, frames.times, strict=True)
                ]
            items = list(shared[key])
            content = self.prompts.user_content(
                rec.overview_times,
                inp.question,
                inp.options,
                inp.question_type,
                cfg.timestamps,
                video=inp.video,
            )
            ep.ctx.messages = [
                {"role": "system", "content": system},
                {"role": "user", "content": content},
            ]
            rec.tools = self.tools
            try:
                ep.ctx.add_images(items)
                if self.codec is not None:
                    grids = [it.grid for it in ep.ctx.images]
                    ids = self.codec.prompt_ids(
                        ep.ctx.messages, grids, prefill=cfg.think_prefix, tools=self.tools
                    )
                    ep.ctx.extend(ids, generated=False)
                    rec.stream.prompt_len = len(ids)
            except Exception as e:  # noqa: BLE001 - e.g. a frame too small for the pixel budget
                logger.warning("episode %s: cannot build the prompt", inp.id, exc_info=True)
                self._fail(ep, f"cannot build the prompt: {type(e).__name__}: {e}")
        return episodes

    def _fail(self, ep: _Episode, message: str, kind: EpisodeErrorKind = "engine") -> None:
        ep.done = True
        ep.record.status = "error"
        ep.record.error = message
        ep.record.error_kind = kind
        ep.record.prediction = None

    # -- one round ---------------------------------------------------------------------------
    def _request(
        self,
        ep_id: str,
        turn: int,
        role: str,
        ctx: _Context,
        max_new: int,
        forced: bool,
        prefill: str,
        state_key: str = "",
    ) -> GenRequest:
        # a backend that reads each image's rows (``reads_image_pixels``) gets no joined copy
        pv, grid, spent = ctx.vision_inputs(join=not self.reads_image_pixels)
        req = GenRequest(
            episode_id=ep_id,
            turn=turn,
            role=role,  # type: ignore[arg-type]
            messages=ctx.messages,
            images=list(ctx.images),
            max_new_tokens=max_new,
            temperature=self.config.temperature,
            top_p=self.config.top_p,
            forced=forced,
            tokens=TokenPrompt(list(ctx.token_ids), pv, grid) if self.codec is not None else None,
            prefill=prefill,
            key=f"{ep_id}/t{turn}" if role == "main" else f"{ep_id}/t{turn}/{role}",
            preprocess_s=spent,
            tools=self.tools if role == "main" else None,
            # a main turn that may call tools is followed by another turn of the same context
            continues=role == "main" and not forced and self.config.mode != "direct",
            state_key=state_key,
        )
        return req

    def _generate(self, requests: list[GenRequest]) -> list[Generation]:
        if not requests:
            return []
        gens = self.backend.generate(requests)
        if len(gens) != len(requests):
            raise RuntimeError(
                f"backend {type(self.backend).__name__} returned {len(gens)} generations for "
                f"{len(requests)} requests"
            )
        return gens

    def _main_request(self, ep: _Episode) -> GenRequest:
        """The request of ``ep``'s next main-agent turn (its forced answer after the last tool
        round)."""
        cfg = self.config
        forced = ep.turn >= cfg.max_turns  # every tool round used: answer now
        max_new = cfg.forced_tokens(ep.input.question_type) if forced else cfg.max_new_tokens
        # every main-agent turn continues the pre-fill (the forced answer too, as the reference
        # does), merged with the generation prompt's own opening; it is prompt, never generated:
        # turn 0 has it in the prompt ids, later turns at the end of the tool-turn delta
        # (_tool_turn)
        prefill = self._prefill(cfg.think_prefix)
        return self._request(ep.input.id, ep.turn, "main", ep.ctx, max_new, forced, prefill, ep.key)

    def _say(self, line: str) -> None:
        if self.progress is not None:
            self.progress(line)

    def _round(self, active: list[_Episode], n: int = 0) -> None:
        """One synchronous round: every active episode's turn in one generate call, then every
        call of the round in one tool pass (``schedule="rounds"``)."""
        requests = [self._main_request(ep) for ep in active]
        self._say(f"turn {n + 1} of at most {self.max_rounds}: generating ({len(active)} active)")
        gens = self._generate(requests)
        pending: list[tuple[_Episode, list]] = []  # episodes whose calls run this round
        for ep, req, gen in zip(active, requests, gens, strict=True):
            planned = self._take_turn(ep, req, gen)
            if planned is not None:
                pending.append((ep, planned))
        if pending:
            calls = sum(len(planned) for _, planned in pending)
            self._say(f"turn {n + 1}: running {calls} tool call(s)")
            self._run_tools(pending)
        for ep, _ in pending:
            ep.turn += 1

    def _take_turn(self, ep: _Episode, req: GenRequest, gen: Generation) -> list | None:
        """Record one generated main-agent turn of ``ep``: the calls to run next, or None when the
        episode is over (it answered, or the generation failed)."""
        cfg = self.config
        rec = ep.record
        rec.timings.preprocess_s += req.preprocess_s + gen.preprocess_s
        rec.timings.generate_s += gen.generate_s
        if gen.error is not None:
            self._fail(ep, f"generation failed at turn {ep.turn}: {gen.error}", kind="backend")
            return None
        text = req.prefill + gen.text
        turn = TurnRecord(
            index=ep.turn,
            text=text,
            forced=req.forced,
            finish_reason=gen.finish_reason,
            prompt_tokens=len(req.tokens.ids)
            if req.tokens is not None
            else int(gen.prompt_tokens or 0),
            cached_tokens=int(gen.cached_tokens or 0),
            generate_s=gen.generate_s,
            preprocess_s=req.preprocess_s + gen.preprocess_s,
            policy_version=gen.policy_version,
        )
        self._append_generated(ep, gen, turn)
        ep.ctx.messages = ep.ctx.messages + [{"role": "assistant", "content": text}]
        rec.turns.append(turn)
        parsed = parse_turn(text)
        turn.answer = parsed.answer
        turn.has_answer_tag = parsed.has_answer_tag
        if req.forced or cfg.mode == "direct" or not parsed.is_tool_turn:
            self._final_turn(ep, req, parsed)
            return None
        next_tool_turn = ep.turn + 1 < cfg.max_turns  # else the forced answer comes next
        planned = plan_calls(
            parsed, ep.turn, cfg.mode, cfg.max_parallel, next_tool_turn=next_tool_turn
        )
        turn.n_calls = len(planned)
        return planned

    def _final_turn(self, ep: _Episode, req: GenRequest, parsed: Any) -> None:
        """``ep`` answered: calls in its last turn are recorded as not run, the answer read."""
        rec = ep.record
        for call in plan_calls(parsed, ep.turn, "parallel", 10**6, next_tool_turn=False):
            call.record.status = "ignored"
            call.record.error = call.record.error or "not executed: the episode was answering"
            rec.calls.append(call.record)
        rec.prediction = parsed.answer
        rec.forced = req.forced
        rec.answer_source = (
            "forced" if req.forced else ("answer_tag" if parsed.has_answer_tag else "extracted")
        )
        ep.done = True

    def _append_generated(self, ep: _Episode, gen: Generation, turn: TurnRecord) -> None:
        rec = ep.record
        if self.codec is not None:
            ids = gen.token_ids
            if ids is None:  # a text-only backend behind a codec: tokenize once, and say so
                ids = self.codec.encode_text(gen.text)
                rec.warnings.append(
                    f"turn {ep.turn}: backend returned no token ids; text was tokenized"
                )
            ep.ctx.extend(list(ids), generated=True, logprobs=gen.logprobs)
            turn.generated_tokens = len(ids)
            ep.last_closed = bool(ids) and ids[-1] in self.codec.stop_ids
        else:
            turn.generated_tokens = int(gen.completion_tokens or 0)
            ep.last_closed = True

    # -- tools -------------------------------------------------------------------------------
    def _run_tools(self, pending: list[tuple[_Episode, list]]) -> None:
        """Every call of ``pending`` in one video pass, then their summaries (one batched
        generate) and each episode's tool turn."""
        batch = self._execute(pending)
        if self.config.evidence == "subagent":
            jobs, requests = self._summary_requests(batch)
            self._summary_results(jobs, requests, self._generate(requests))
        for ep, planned in pending:
            self._tool_turn(ep, planned, batch)

    def _execute(self, pending: list[tuple[_Episode, list]]) -> ToolBatch:
        """Run the calls of ``pending`` in one batched video pass (``tools.execute_windows``: one
        decoder per video, windows de-duplicated) and write each result into its call record."""
        from paravt.tools.batch import execute_windows  # loads torch
        from paravt.tools.results import WindowRequest

        cfg = self.config
        requests, owners = [], []
        for ep, planned in pending:
            for p in planned:
                if p.run:
                    requests.append(
                        WindowRequest(
                            video=str(ep.input.video), arguments=p.record.arguments, key=len(owners)
                        )
                    )
                    owners.append((ep, p.record))
        t0 = time.perf_counter()
        batch = (
            execute_windows(
                requests, cfg.crop, sources=self._sources, resize=self._resizer(cfg.crop)
            )
            if requests
            else None
        )
        spent = time.perf_counter() - t0
        if batch is not None:
            self.tool_stats.append(batch.stats)
        per_ep: dict[int, int] = {}
        for ep, _ in owners:
            per_ep[id(ep)] = per_ep.get(id(ep), 0) + 1
        # results → call records; frames stay with their call until the tool turn is built
        out = ToolBatch(owners=owners)
        results = batch.results if batch is not None else []
        for (_ep, call), res in zip(owners, results, strict=True):
            call.start, call.end = res.start, res.end
            call.warnings = list(res.warnings)
            if res.ok:
                call.times = [float(t) for t in res.times]
                call.n_frames = len(call.times)
                call.response = res.message()
                out.frames_of[id(call)] = res.clip
            else:
                call.status = "error"
                call.error = res.error or res.message()
                call.error_kind = res.error_kind
        for ep, _ in pending:
            if per_ep.get(id(ep)):
                share = spent * per_ep[id(ep)] / len(owners)
                ep.record.timings.decode_s += share
                ep.record.turns[-1].decode_s += share
        return out

    def _window_items(self, batch: ToolBatch, call: Any) -> list[ImageItem]:
        """The images of one window's frames (a ``paravt.video.Frames``). Calls of a batch that
        asked for the same window share one ``Frames`` (``execute_windows``), and then share
        these items too, so the window is preprocessed once and held once (GRPO's generations
        often ask alike)."""
        frames, times = batch.frames_of[id(call)], call.times
        key = (id(frames), tuple(times))
        items = batch.items.get(key)
        if items is None:
            c = self.config.crop
            parts = self._budget([frames.frame(i) for i in range(len(times))], c)
            items = [
                ImageItem(part, float(t), "tool", c.min_pixels, c.max_pixels)
                for part, t in zip(parts, times, strict=True)
            ]
            batch.items[key] = items
        return list(items)

    def _resizer(self, budget: Any) -> Any:
        """What the decode lanes resize each frame with as it is decoded, for ``budget``'s pixel
        budget (``agent.vision.budget_resizer``): with ``frames_at_budget`` (token space only)
        where ``at_budget`` would resize, so full-size frames are never all held at once (a
        10-minute 720p overview at K = 64 is 177 MB decoded, 9.6 MB at the paper's budget);
        ``None`` (frames as decoded) otherwise."""
        if not self.frames_at_budget or self.codec is None:
            return None
        return budget_resizer(
            self.codec.arch, budget.min_pixels, budget.max_pixels, self.pixel_device
        )

    def _budget(self, parts: list[Any], budget: Any) -> list[Any]:
        """``parts`` at ``budget``'s pixel budget with ``frames_at_budget`` (token space only),
        else as decoded; frames the lanes already resized (``_resizer``) pass through."""
        if not self.frames_at_budget or self.codec is None:
            return parts
        return at_budget(
            parts,
            self.codec.arch,
            budget.min_pixels,
            budget.max_pixels,
            self.pixel_device,
            self.config.crop.workers,
        )

    def _summary_requests(self, batch: ToolBatch) -> tuple[list, list[GenRequest]]:
        """The sub-agent requests of every successful window of ``batch``: one batched generate
        in a round, concurrent ones per episode otherwise (``_summary_results`` reads them)."""
        cfg = self.config
        jobs, requests = [], []
        prefill = self._prefill("")  # a Thinking template's own <think>: the turn continues it
        for ep, call in batch.owners:
            if call.status != "ok":
                continue
            ctx = self._context()
            items = self._window_items(batch, call)
            content = self.prompts.subagent_content(
                call.times, float(call.start), float(call.end), ep.input.question, cfg.timestamps
            )
            ctx.messages = [{"role": "user", "content": content}]
            ctx.add_images(items)
            if self.codec is not None:
                ctx.extend(
                    self.codec.prompt_ids(ctx.messages, [it.grid for it in items]),
                    generated=False,
                )
            sub_id = f"{ep.input.id}/sub{call.turn}.{call.index}"
            requests.append(
                self._request(
                    sub_id, call.turn, "subagent", ctx, cfg.subagent_max_tokens, False, prefill
                )
            )
            jobs.append((ep, call, ctx, sub_id))
        return jobs, requests

    def _summary_results(self, jobs: list, requests: list[GenRequest], gens: list) -> None:
        """Each window's summary (or error) into its call, each sub-agent's record into its
        episode."""
        for (ep, call, ctx, sub_id), req, gen in zip(jobs, requests, gens, strict=True):
            ep.record.timings.generate_s += gen.generate_s
            ep.record.timings.preprocess_s += req.preprocess_s + gen.preprocess_s
            sub = EpisodeRecord(
                id=sub_id,
                video=str(ep.input.video),
                question=ep.input.question,
                question_type=ep.input.question_type,
                options=None,
                gold=None,
                mode="subagent",
                evidence="frames",
                stream=TokenStream(prompt_len=len(ctx.token_ids)),
            )
            if gen.error is not None:
                call.status = "error"
                call.error_kind = "subagent"
                call.error = f"The sub-agent could not summarise this window: {gen.error}"
                sub.status, sub.error = "error", gen.error
            else:
                hit = gen.finish_reason == "length"
                text = req.prefill + gen.text
                # a thinking sub-agent's reasoning stays in its own record, not in the summary
                call.summary = truncate_summary(text.rsplit("</think>", 1)[-1], hit)
                turn = TurnRecord(
                    index=0,
                    text=text,
                    finish_reason=gen.finish_reason,
                    generate_s=gen.generate_s,
                    policy_version=gen.policy_version,
                )
                if self.codec is not None:
                    ids = (
                        gen.token_ids
                        if gen.token_ids is not None
                        else self.codec.encode_text(gen.text)
                    )
                    ctx.extend(list(ids), generated=True, logprobs=gen.logprobs)
                    turn.generated_tokens = len(ids)
                sub.turns.append(turn)
                sub.prediction = call.summary
                ctx.messages = ctx.messages + [{"role": "assistant", "content": text}]
            self._close(sub, ctx)
            if not self.keep_subagent_frames:  # the summary is made: nothing reads them again
                sub.stream.images = []
            ep.record.subagents.append(sub)

    def _tool_turn(self, ep: _Episode, planned: list, batch: ToolBatch) -> None:
        """Append one tool message per call block (+ the forced-answer message if due)."""
        cfg = self.config
        rec = ep.record
        messages: list[dict] = []
        new_items: list[ImageItem] = []
        layout = reference_tool_message if cfg.tool_response_layout == "paravt" else tool_message
        for p in planned:
            call = p.record
            rec.calls.append(call)
            if call.status == "ok" and cfg.evidence == "frames":
                items = self._window_items(batch, call)
                new_items.extend(items)
                messages.append(layout(call.response, n_images=len(items)))
            elif call.status == "ok":
                call.response = f"Summary of {call.start:.1f}s to {call.end:.1f}s: {call.summary}"
                messages.append(layout(call.response))
            else:
                call.response = call.error or "The call failed."
                messages.append(layout(call.response))
        last_round = ep.turn + 1 >= cfg.max_turns
        if last_round:
            messages.append(
                {"role": "user", "content": self.prompts.forced_answer(ep.input.question_type)}
            )
        if self.codec is not None:  # stored as rendered: tool runs wrapped where the template won't
            messages = self.codec.tool_turn(messages)
        ep.ctx.messages = ep.ctx.messages + messages
        try:
            ep.ctx.add_images(new_items)
            if self.codec is not None:
                grids = [it.grid for it in new_items]
                ids = self.codec.turn_delta_ids(
                    messages,
                    grids,
                    closed_by_model=ep.last_closed,
                    prefill=cfg.think_prefix,
                    tools=self.tools,
                )
                ep.ctx.extend(ids, generated=False)
                rec.turns[-1].tool_tokens = len(ids)
        except Exception as e:  # noqa: BLE001 - one episode's template trouble stays its own
            logger.warning(
                "episode %s: cannot build the tool turn %d", ep.input.id, ep.turn, exc_info=True
            )
            self._fail(ep, f"cannot build the tool turn: {type(e).__name__}: {e}")

    # -- closing -----------------------------------------------------------------------------
    def _close(self, rec: EpisodeRecord, ctx: _Context) -> None:
        """Move the context's token stream, images and counts into the record."""
        rec.messages = ctx.messages
        stream = rec.stream
        if self.config.keep_images:
            stream.images = ctx.images
        if self.codec is not None:
            stream.token_ids = ctx.token_ids
            stream.loss_mask = ctx.loss_mask
            stream.logprobs = ctx.logprobs
            if ctx.images and self.config.keep_images:
                # stream.pixel_values joins the kept images' rows when read (no copy held here)
                _, stream.image_grid_thw, _ = ctx.vision_inputs(join=False)
            n_gen = sum(ctx.loss_mask)
            n_img = sum(1 for t in ctx.token_ids if t == self.codec.image_token_id)
            rec.tokens.prompt = stream.prompt_len
            rec.tokens.generated = n_gen
            rec.tokens.image = n_img
            rec.tokens.total = len(ctx.token_ids)
            rec.tokens.tool = len(ctx.token_ids) - stream.prompt_len - n_gen
        else:
            rec.tokens.generated = sum(t.generated_tokens for t in rec.turns)
            rec.tokens.prompt = rec.turns[0].prompt_tokens if rec.turns else 0
            rec.tokens.total = (
                (rec.turns[-1].prompt_tokens + rec.turns[-1].generated_tokens) if rec.turns else 0
            )

    def _finish(self, ep: _Episode) -> None:
        rec = ep.record
        self._close(rec, ep.ctx)
        counts = rec.tool_counts
        for call in rec.calls:
            if call.status == "ignored":
                continue
            if call.name is not None:
                counts.parseable_calls += 1
            else:
                counts.parse_errors += 1
            if call.status == "ok":
                counts.executed_ok += 1
            else:
                counts.errors += 1
            if call.error_kind in ("over_cap", "sequential_extra"):
                counts.over_cap += 1
        rec.timings.total_s = time.perf_counter() - ep.t0
