"""``ParaGRPOTrainer``: TRL's ``GRPOTrainer`` with the episode engine as its rollout.

What changes against TRL (everything else — loss types, clipping, KL, gradient accumulation,
DDP/FSDP/DeepSpeed, checkpointing, resume — is TRL's and HF Trainer's own code path):

- ``_generate_and_score_completions`` runs the paravt episode engine once for the whole local
  generation batch with the policy as a token-in/token-out backend, so every ``crop_video`` call of
  every episode of a round is decoded and preprocessed together (TRL's own ``tools=`` loop handles
  samples one after another). Each episode's stream is the concatenation the engine recorded:
  prompt ids, then generated ids and tool-turn ids; tool-turn tokens get ``tool_mask = 0`` and
  never reach the loss. The samplers are the rollout room's (``paravt.rollout``); what they
  produce crosses into this learner typed: a ``Rollout`` of ``RolloutGroup``s (the episodes of
  one prompt, with the policy version each was sampled under), one ``LossRow`` per row, the
  padded ``LossBatch``; TRL's input dict is built only at the end, for ``_compute_loss``.
- Frames are images: the ``pixel_values``/``image_grid_thw`` of every image of the episode (overview
  and tool frames) travel with the batch into both the old/ref log-prob passes and the loss
  forward, with ``mm_token_type_ids`` for M-RoPE. The image-pad count of every row is checked
  against its features (a mismatch is a bug, raised, never silently dropped as TRL does).
- nFrames Gating: ``K = gated_frames(seed, prompt id, epoch)`` — a pure function, so the same on
  every rank holding a generation of the group.
- Rewards: ``paravt.rewards.compose`` on the think prefix, one text per turn and the execution
  record; the group advantage is computed over all ranks (gathered), and with ``token_anchor`` the
  per-token anchor bonus (first structural token of each kind per turn, a penalty for a turn left
  inside ``<think>``, none in zero-variance groups) is added to the advantages (which become
  ``(B, T)``, which TRL's loss accepts).
- Sub-agent trajectories (``engine.evidence="subagent"`` + ``subagent_in_loss``) are appended as extra
  rows carrying their episode's advantage.
- docs/PROTOCOL.md §5.7 metrics each step, to the trainer's loggers (and ``MetricsJsonl``).

Distributed use: launch with ``torchrun``/``accelerate launch`` (DDP, FSDP or DeepSpeed configs pass
through ``TrainingArguments``); generation unwraps the model with TRL's
``unwrap_model_for_generation``, which gathers ZeRO-3 parameters once per rollout
(``ds3_gather_for_generation``) but leaves FSDP's sharded: there (and under ZeRO-3 without the
gather) every forward of the rollout is a collective, and the policy backend samples in lockstep
with the other ranks (``paravt.rollout.lockstep``). Under FSDP and ZeRO-3 the loss forwards are
collective too, so every rank holds the same number of loss rows and every row an image. A rank
whose rollout raises tells the others at their next handshake (the lockstep's, or without one a
handshake after the rollout), and they raise ``RankFailedError`` naming it.

vLLM (``use_vllm=true``, ``vllm_mode`` server or colocate, every ``vllm_*`` key TRL's own): TRL
builds its ``VLLMGeneration`` and the engine samples through it (``paravt.rollout.vllm``:
lockstep calls across ranks, weights pushed once per step). The sampler's logprobs feed TRL's
``vllm_importance_sampling_correction`` as TRL computes it for single-turn rollouts: the policy's
old log-probs are computed for every vLLM rollout, the ratio between them and the sampler's
logprobs is taken over the generated tokens (tool-turn tokens excluded) and weighs the loss.
vLLM is not a paravt dependency and needs its own environment; without it ``use_vllm=true`` is a
``ConfigError`` that names the fix, raised before any model loads.
"""

from __future__ import annotations

import json
import logging
import math
from contextlib import nullcontext
from dataclasses import replace
from pathlib import Path
from typing import Any, cast

import torch
from accelerate.utils import gather, gather_object
from transformers import PreTrainedModel
from trl import GRPOTrainer
from trl.models import unwrap_model_for_generation
from trl.trainer.utils import nanmax, nanmin, nanstd, pad

from paravt.agent.engine import EpisodeEngine
from paravt.agent.scoring import episode_reward
from paravt.errors import ConfigError, ParavtError
from paravt.rewards import (
    RewardBreakdown,
    RewardConfig,
    anchor_token_bonus,
    open_think_turns,
    substantive_close_turns,
)
from paravt.rollout.groups import Rollout
from paravt.rollout.lockstep import Lockstep, announce_failure, exchange, filler_image
from paravt.rollout.policy import PolicyBackend
from paravt.rollout.streams import FeatureMismatchError, LossRow, mm_token_type_ids, record_row
from paravt.rollout.vllm import (
    VLLMBackend,
    budget_outside,
    colocated_llm_settings,
    importance_sampling_ratio,
    missing_vllm_message,
    require_vllm,
)
from paravt.rollout.vllm_server import ServerGeneration, server_generation
from paravt.schema.episodes import EpisodeInput, EpisodeRecord
from paravt.train.advantages import (
    GroupAdvantages,
    group_advantages,
    mapped_rewards,
    shaped_advantages,
)
from paravt.train.async_rollout import AsyncRollouts
from paravt.train.config import ParaGRPOConfig
from paravt.train.episode_dump import dump_episodes
from paravt.train.episode_errors import warn_if_every_episode_failed
from paravt.train.gating import EpochOrder, gated_frames
from paravt.train.loss_batch import LossBatch
from paravt.train.metrics import episode_stats, step_metrics

__all__ = ["ParaGRPOTrainer"]

logger = logging.getLogger(__name__)


def para_reward(
    prompts: list | None = None, completions: list | None = None, **kwargs: Any
) -> list[float | None]:
    """Name-holder for TRL's reward bookkeeping; paravt's rewards are computed in the rollout."""
    return [None for _ in prompts or []]


def generation_sync(fsdp: bool, zero3: bool, gather_for_generation: bool) -> bool | None:
    """``synced_gpus`` for the rollout's ``generate``: False when every rank holds full weights
    while generating (no collective in a forward); None (transformers syncs the ranks inside each
    call) when forwards are collective: FSDP, or ZeRO-3 without gathering."""
    if fsdp or (zero3 and not gather_for_generation):
        return None
    return False


def check_strategy(args: Any) -> None:
    """Refuse a parallelism whose collectives the rollout's lockstep does not cover: tensor,
    context or sequence parallelism (accelerate's ``parallelism_config``) makes every forward a
    collective over a group the lockstep does not know."""
    pc = getattr(args, "parallelism_config", None)
    if pc is None:
        return
    split = {
        name: int(getattr(pc, name, 1) or 1)
        for name in ("tp_size", "cp_size", "sp_size")
        if int(getattr(pc, name, 1) or 1) > 1
    }
    if split:
        sizes = ", ".join(f"{k}={v}" for k, v in split.items())
        raise ConfigError(
            f"trainer.parallelism_config with {sizes}: the episode rollout keeps ranks in step "
            "only under DDP, FSDP and DeepSpeed ZeRO, and would hang here; shard the model with "
            "FSDP2 (trainer.fsdp=true, trainer.fsdp_config.version=2) or DeepSpeed ZeRO-3 instead"
        )


def _token_id(tokenizer: Any, token: str) -> int:
    """The id of one special token, or a ConfigError naming the token the tokenizer lacks."""
    got = tokenizer.convert_tokens_to_ids(token)
    if not isinstance(got, int) or got == tokenizer.unk_token_id:
        raise ConfigError(f"the tokenizer has no {token} token: use a Qwen-VL model's tokenizer")
    return got


def _frames(episode: EpisodeInput, args: ParaGRPOConfig) -> int:
    """The overview budget an episode ran with: its own K, or the engine's when it set none."""
    return args.engine.frames if episode.frames_k is None else episode.frames_k


def _zero_stage(trainer) -> int:
    plugin = getattr(getattr(trainer.accelerator, "state", None), "deepspeed_plugin", None)
    return int(getattr(plugin, "zero_stage", 0) or 0) if plugin is not None else 0


def _turn_spans(record) -> list[tuple[int, int]]:
    """``(start, end)`` of each turn's generated ids in the completion (the stream after the
    prompt), from the engine's own per-turn counts: turn i's generated ids, then its tool turn."""
    spans, at = [], 0
    for t in record.turns:
        spans.append((at, at + int(t.generated_tokens)))
        at += int(t.generated_tokens) + int(t.tool_tokens)
    return spans


def _pieces(pixel_values: Any) -> list:
    """A row's pixel rows as a list of tensors (``record_row(join_pixels=False)`` gives a list)."""
    if isinstance(pixel_values, list | tuple):
        return [torch.as_tensor(p) for p in pixel_values]
    return [torch.as_tensor(pixel_values)]


def _joined(parts: list, dtype: torch.dtype, device) -> torch.Tensor:
    """``parts`` as one tensor in ``dtype`` (bf16 / fp16 models; else as they are) on
    ``device``, written once: no float32 copy next to the cast one."""
    want = dtype if dtype in (torch.bfloat16, torch.float16) else parts[0].dtype
    rows = sum(int(p.shape[0]) for p in parts)
    out = torch.empty((rows, int(parts[0].shape[1])), dtype=want, device=device)
    at = 0
    for p in parts:
        out[at : at + p.shape[0]].copy_(p)
        at += int(p.shape[0])
    return out


class ParaGRPOTrainer(GRPOTrainer):
    """GRPOTrainer whose rollout is the paravt episode engine (see the module docstring)."""

    _tag_names = ["trl", "grpo", "paravt", "para-grpo"]  # noqa: RUF012 - TRL reads a list
    # TRL's and transformers' attributes as they are once the trainer is built (their own
    # annotations keep the constructor's Optionals): the model is loaded, the config is
    # ParaGRPOConfig (checked first thing), G and the padding resolved by GRPOConfig
    model: PreTrainedModel
    args: ParaGRPOConfig
    num_generations: int
    num_generations_eval: int
    pad_to_multiple_of: int | None

    def __init__(
        self,
        model,
        args: ParaGRPOConfig,
        train_dataset=None,
        processing_class=None,
        callbacks=None,
        **kwargs,
    ):
        if not isinstance(args, ParaGRPOConfig):
            raise TypeError("ParaGRPOTrainer needs a ParaGRPOConfig")
        if args.use_vllm:
            self._check_vllm(args, processing_class)
        check_strategy(args)
        self._init_trl(model, args, train_dataset, processing_class, callbacks, kwargs)
        self.para_args = args
        self._check_vllm_dtype(args)
        zero3 = getattr(self, "is_deepspeed_enabled", False) and _zero_stage(self) == 3
        fsdp = bool(getattr(self, "is_fsdp_enabled", False))
        several = self.accelerator.num_processes > 1
        if args.fsdp and not fsdp and several:  # accelerate forms FSDP only on accelerators
            logger.warning(
                "trainer.fsdp is set but accelerate prepared the model as %s (on CPU it drops "
                "FSDP): every rank holds the full model",
                self.accelerator.distributed_type,
            )
        # collective loss forwards: every rank the same rows, every row an image (module doc)
        self._lockstep_rows = several and (fsdp or zero3)
        if args.use_vllm:
            self._backend = self._vllm_backend()
        else:
            self._backend = self._policy_backend(args, fsdp, zero3, several)
        ip = getattr(self.processing_class, "image_processor", None)
        self._merge = int(getattr(ip, "merge_size", 2)) ** 2
        self._image_pad = _token_id(self._tokenizer, "<|image_pad|>")
        pad = self._tokenizer.pad_token_id
        #: the id a padded or no-loss position holds
        self._pad_id = int(pad) if isinstance(pad, int) else 0
        # Exposed for tests and the benchmark: what the last rollout saw. Records (frames, pixel
        # tensors) are kept only when asked, so training does not hold a stale batch.
        self.keep_last_rollout = False
        self._dumping = True  # the episode dump until its size bound (train.episode_dump)
        self.last_rollout: dict[str, Any] = {}
        # bounded staleness (trainer.max_staleness >= 1, server mode): rollouts of later steps
        # run while the trainers learn (paravt.train.async_rollout)
        self._async = self._async_rollouts(args) if args.max_staleness > 0 else None

    def _init_trl(self, model, args, train_dataset, processing_class, callbacks, kwargs) -> None:
        """TRL's own construction, with paravt's vLLM choices around it: in server mode TRL
        builds no vLLM generator (its client and NCCL push cannot run on vLLM 0.32+; paravt's
        own client does, ``paravt.rollout.vllm_server``); colocated, vLLM is built in the
        learner's dtype and seeded by the trainer's seed (``colocated_llm_settings``)."""
        own_server = bool(args.use_vllm and args.vllm_mode == "server")
        colocated = args.use_vllm and args.vllm_mode == "colocate"
        # the KL as a reward (rewards.kl_in_reward, trainer.beta 0) needs the reference model,
        # which TRL builds only for a non-zero beta: built with it, the loss term then off
        kl_reward = args.beta == 0.0 and args.rewards.kl_in_reward > 0
        try:
            if kl_reward:
                args.beta = args.rewards.kl_in_reward
            if own_server:
                args.use_vllm = False
            with (
                colocated_llm_settings(args.vllm_dtype, args.vllm_seed)
                if colocated
                else nullcontext()
            ):
                super().__init__(
                    model=model,
                    reward_funcs=[para_reward],
                    args=args,
                    train_dataset=train_dataset,
                    processing_class=processing_class,
                    callbacks=callbacks,
                    **kwargs,
                )
        except ImportError as e:  # TRL's own "vLLM is not available" (e.g. a broken install)
            if args.use_vllm and "vllm" in str(e).lower():
                raise ConfigError(f"{missing_vllm_message(args.vllm_mode)} ({e})") from e
            raise
        finally:
            if own_server:
                args.use_vllm = True
            if kl_reward:
                args.beta = 0.0
        self.beta = float(args.beta)
        if own_server:
            self.use_vllm = True
            self.vllm_generation = server_generation(self)

    def _check_vllm_dtype(self, args: ParaGRPOConfig) -> None:
        """Colocated: says which dtype and seed vLLM was built with, and warns where it samples
        in another dtype than the learner's (their log-probs then differ by the rounding)."""
        if not (args.use_vllm and args.vllm_mode == "colocate"):
            return
        logger.info(
            "colocated vLLM built in %s, seed %d + process index // tensor-parallel size",
            args.vllm_dtype,
            args.vllm_seed,
        )
        if args.vllm_dtype != "auto" and self.model.dtype != getattr(torch, args.vllm_dtype):
            logger.warning(
                "colocated vLLM samples in %s, the learner is %s: their log-probs differ by the "
                "rounding (trainer.vllm_dtype=learner samples in the learner's own)",
                args.vllm_dtype,
                self.model.dtype,
            )

    def _policy_backend(
        self, args: ParaGRPOConfig, fsdp: bool, zero3: bool, several: bool
    ) -> PolicyBackend:
        """The in-process sampler: the policy itself, synced or in lockstep under sharding."""
        synced = generation_sync(fsdp, zero3, args.ds3_gather_for_generation)
        return PolicyBackend(
            self.model,
            self.processing_class,
            temperature=args.temperature,
            top_p=args.top_p,
            top_k=args.top_k or 0,
            eos_token_ids=list(self.eos_token_ids),
            suppress_vision_tokens=args.suppress_vision_tokens,
            first_turn_text=args.first_turn_text,
            with_logprobs=args.sampling_logprobs,
            batch_size=max(1, args.per_device_train_batch_size * self._generation_steps),
            synced_gpus=synced,
            lockstep=Lockstep(gather_object) if synced is None and several else None,
        )

    # -- vLLM --------------------------------------------------------------------------------
    @staticmethod
    def _check_vllm(args: ParaGRPOConfig, processing_class) -> None:
        """Before TRL builds anything: vLLM importable, and frames vLLM can take as they are."""
        require_vllm(args)
        if processing_class is None:
            return
        e = args.engine
        conflict = budget_outside(processing_class, e.min_pixels, e.max_pixels) or budget_outside(
            processing_class,
            e.crop.min_pixels,
            e.crop.max_pixels,
            keys="engine.crop.min_pixels / max_pixels",
        )
        if conflict is None:
            return
        if args.vllm_mode == "colocate":  # vLLM loads the model folder's processor settings
            raise ConfigError(
                f"{conflict}. Set the image processor's size in the model folder to cover the "
                "budget (processor.image_processor.size = {'shortest_edge': MIN, 'longest_edge': "
                "MAX}; processor.save_pretrained(MODEL)), or change the frame budget "
                "(engine.min_pixels/max_pixels, engine.crop.min_pixels/max_pixels)"
            )
        logger.warning(  # a server may have been started with its own processor settings
            "%s, unless the vLLM server was started with --mm-processor-kwargs covering the "
            'budget (docs/train/VLLM.md, "Server mode")',
            conflict,
        )

    def _vllm_backend(self):
        a = self.para_args
        return VLLMBackend(
            self.vllm_generation,
            self.processing_class,
            eos_token_ids=list(self.eos_token_ids),
            suppress_vision_tokens=a.suppress_vision_tokens,
            first_turn_text=a.first_turn_text,
            world_size=self.accelerator.num_processes,
            gather=gather_object,
        )

    def _async_rollouts(self, args: ParaGRPOConfig) -> AsyncRollouts:
        """The producer side of bounded staleness: the step's episodes run by the engine without
        a push (the learner pushes at the start of each step), on the trainer's own step
        batches (a fresh copy of its data loader)."""

        def run(rows: list[dict], epoch: int) -> tuple[list, list]:
            inputs = self.episode_inputs(rows, epoch, "train")
            return inputs, self._make_engine("train").run(inputs)

        return AsyncRollouts(
            self._backend,
            max_staleness=args.max_staleness,
            group_size=self.num_generations,
            every=self._generation_steps * self.num_iterations,
            run=run,
            rerun=lambda inputs: self._make_engine("train").run(inputs),
            dataloader=self.get_train_dataloader,
            gather=gather_object,
            rank=self.accelerator.process_index,
            pause_s=float(args.max_staleness_pause_s or 0.0),
            spawn=self._spawn_producer if args.producer == "process" else None,
            episode_inputs=lambda rows, epoch: self.episode_inputs(rows, epoch, "train"),
        )

    def _spawn_producer(self, version: int):
        """``trainer.producer: process``: this rank's rollout process (paravt.rollout.
        producer_process), sampling from ``version`` on."""
        from paravt.rollout.producer_process import RolloutChild

        pool = self.vllm_generation.client

        def rejoin(url: str) -> str:
            # the child's server came back: the learner's pool gives it the step's weights
            client = next(c for c in pool.clients if c.base_url == url)
            return pool.rejoin(client) if pool.rejoin is not None else "no weights check"

        return RolloutChild(self._producer_spec(version), rejoin=rejoin)

    def _producer_spec(self, version: int):
        """What the rollout process needs to sample as the server generator does, without the
        push (``paravt.rollout.producer_process``)."""
        from paravt.rollout.producer_process import ChildSpec
        from paravt.rollout.vllm_server import server_urls

        a, p = self.args, self.para_args
        return ChildSpec(
            urls=server_urls(a),
            pool=dict(
                timeout_s=a.vllm_server_request_timeout_s, retries=a.vllm_server_retries,
                backoff_s=a.vllm_server_backoff_s, outage_budget_s=a.vllm_outage_budget_s,
                deadline_s=a.vllm_episode_deadline_s,
                image_pad=self._image_pad,
            ),
            sampling=dict(
                max_completion_length=a.max_completion_length, temperature=a.temperature,
                top_p=a.top_p, top_k=a.top_k or 0, min_p=a.min_p or 0.0,
                repetition_penalty=a.repetition_penalty, generation_kwargs=a.generation_kwargs,
            ),
            processing_class=self.processing_class,
            engine=self._engine_config("train"),
            eos_token_ids=list(self.eos_token_ids),
            suppress_vision_tokens=p.suppress_vision_tokens,
            first_turn_text=p.first_turn_text,
            keep_subagent_frames=p.subagent_in_loss,
            version=int(version),
            log_level=logging.getLogger("paravt").getEffectiveLevel(),
        )  # fmt: skip

    @property
    def _generation_steps(self) -> int:
        """TRL's ``steps_per_generation``: optimizer micro-steps one rollout feeds (GRPOConfig
        resolves a None to the accumulation steps in ``__post_init__``)."""
        a = self.args
        return int(a.steps_per_generation or a.gradient_accumulation_steps)

    def _gathered(self, value: torch.Tensor) -> torch.Tensor:
        """``value`` gathered over the ranks (accelerate types its gather for nested
        containers too; a tensor in is a tensor out)."""
        return cast(torch.Tensor, self.accelerator.gather(value))

    def train(self, *args, **kwargs):
        """TRL's training loop; the rollout producer (bounded staleness) stops with it, however
        it ends."""
        try:
            return super().train(*args, **kwargs)
        finally:
            if self._async is not None:
                self._async.close()

    # -- engine ------------------------------------------------------------------------------
    def _engine_config(self, mode: str):
        """``args.engine`` as the engine runs it: sampled at the trainer's temperature and top-p
        in training, greedy in evaluation (sampling is the trainer's, not the engine's)."""
        a = self.para_args
        return replace(
            a.engine, temperature=a.temperature if mode == "train" else 0.0, top_p=a.top_p
        )

    def _get_train_sampler(self, dataset=None):
        # each epoch's prompt order from (seed, epoch): a resumed run sees the K sequence of an
        # uninterrupted one (paravt.train.gating, EpochOrder)
        return EpochOrder(super()._get_train_sampler(dataset))

    def _make_engine(self, mode: str):
        # host memory: frames kept at their pixel budget only, and a sub-agent's window frames
        # let go once its summary is made unless the loss trains on sub-agent trajectories
        return EpisodeEngine(
            self._backend,
            self._engine_config(mode),
            frames_at_budget=True,
            keep_subagent_frames=self.para_args.subagent_in_loss,
        )

    def episode_inputs(self, inputs: list[dict], epoch: int, mode: str) -> list:
        """One EpisodeInput per row; K from gating (train) or the fixed budget (eval)."""
        a = self.para_args
        out = []
        for i, x in enumerate(inputs):
            k = gated_frames(
                a.seed,
                x["prompt_id"],
                epoch,
                a.gating_choices,
                enabled=a.frames_gating and mode == "train",
                fixed=a.engine.frames,
            )
            out.append(
                EpisodeInput(
                    id=str(x["prompt_id"]),
                    video=x["video"],
                    question=x["prompt"],
                    options=json.loads(x["options_json"]),
                    question_type=x["question_type"],
                    frames_k=k,
                    answer=json.loads(x["answer_json"]),
                    meta={"row": i, "rank": self.accelerator.process_index},
                )
            )
        return out

    def run_episodes(self, episode_inputs: list, mode: str) -> list:
        """All episodes of the local batch through the engine, with the policy unwrapped once
        (or, with vLLM, with the step's weights pushed to vLLM once)."""
        backend = self._backend
        if isinstance(backend, VLLMBackend):
            with backend.rollout(int(self.state.global_step)):
                return self._make_engine(mode).run(episode_inputs)
        checkpointing = self.args.gradient_checkpointing_kwargs
        ctx = unwrap_model_for_generation(
            cast(Any, self.model_wrapped),  # TRL annotates DDP / DeepSpeed; a bare model works too
            self.accelerator,
            gather_deepspeed3_params=self.args.ds3_gather_for_generation,
            gradient_checkpointing_kwargs=json.loads(checkpointing)
            if isinstance(checkpointing, str)
            else checkpointing,
        )
        with ctx as unwrapped, torch.no_grad():
            unwrapped = cast(torch.nn.Module, unwrapped)
            backend.model = unwrapped
            was_training = unwrapped.training
            unwrapped.eval()
            try:
                records = self._make_engine(mode).run(episode_inputs)
                backend.drain()  # join the other ranks' sampling until every rank is done
                return records
            except Exception as e:
                if backend.lockstep is not None:  # the others wait in a handshake
                    backend.lockstep.fail(e)
                raise
            finally:
                if was_training:
                    unwrapped.train()

    # -- rewards -----------------------------------------------------------------------------
    def _reward_config(self) -> RewardConfig:
        """The run's reward constants (``rewards`` section of the recipe), every field."""
        return self.para_args.rewards

    def score_episode(self, record: EpisodeRecord, cfg: RewardConfig) -> RewardBreakdown | None:
        """RewardBreakdown of one episode, or None when the episode failed (unscorable)."""
        if record.status != "ok" or not record.stream.token_ids:
            return None
        return episode_reward(record, cfg)

    def _token_bonus(
        self,
        completion_ids: list[int],
        turns: list[tuple[int, int]] | None = None,
        open_think: list[bool] | tuple = (),
        think_closed: list[bool] | None = None,
    ) -> list[float]:
        return list(
            anchor_token_bonus(
                completion_ids,
                self._tokenizer,
                dict(self.para_args.rewards.token_anchor_values),
                turns=turns,
                open_think=open_think,
                think_closed=think_closed,
            )
        )

    def token_anchor_bonus(
        self, rows: list[LossRow], completion_ids: torch.Tensor, loss_mask: torch.Tensor
    ) -> torch.Tensor:
        """``(B, T)`` per-token bonus: per turn, ``token_anchor_values`` at the first occurrence of
        each structural token the model generated, and the unclosed-think penalty at the end of a
        turn that leaves ``<think>`` open (``anchor_token_bonus``). A row of a zero-variance group
        (``flat``) gets none: GRPO leaves such a group alone, and so does the anchor. A tag inside
        a tool turn, the forced-answer message or the padding is context, not the model's doing,
        so ``loss_mask`` (generated ∧ not padding) zeroes it."""
        bonus = torch.zeros(completion_ids.shape, dtype=torch.float32, device=completion_ids.device)
        for i, r in enumerate(rows):
            if not r.ok or r.flat:
                continue
            b = self._token_bonus(r.completion, r.turns, r.open_think, r.think_closed)
            b = b[: completion_ids.size(1)]
            bonus[i, : len(b)] = torch.tensor(b, dtype=torch.float32)
        return bonus * loss_mask.float()

    # -- the rollout -------------------------------------------------------------------------
    def _no_loss_row(self) -> LossRow:
        """A one-pad-token row that contributes nothing to the loss (failed episode, filler);
        with collective loss forwards it also carries the filler image, so that every chunk runs
        the vision tower on every rank."""
        filler = [self._pad_id]
        row = LossRow(prompt=filler, completion=filler, mask=[0], logps=[0.0], ok=False)
        if self._lockstep_rows:
            ids, pixels, grid = filler_image(self._backend.codec, self._tokenizer)
            row = replace(row, prompt=ids + filler, pixel_values=pixels, grid=grid)
        return row

    def _row_from_record(self, record) -> LossRow:
        """The record's row (``paravt.rollout.streams.record_row``), or a no-loss row; with, per
        turn, where its generated ids sit in the completion and whether it leaves ``<think>`` open
        (the token-level anchor's first-occurrence rule and penalty)."""
        # the rows stay pieces here: ``_collate`` joins the whole batch's once
        row = record_row(record, self._image_pad, self._merge, join_pixels=False)
        if row is None:
            return self._no_loss_row()
        texts, prefix = [t.text for t in record.turns], record.prefix or ""
        rewards = self.para_args.rewards
        return replace(
            row,
            turns=_turn_spans(record),
            # TRL's mask_truncated_completions: an episode whose last turn was cut at the token
            # limit stays out of the loss (its tokens still count in the metrics)
            truncated=bool(record.turns) and record.turns[-1].finish_reason == "length",
            open_think=open_think_turns(texts, prefix),
            think_closed=substantive_close_turns(
                texts, prefix, rewards.think_min_chars, rewards.think_min_words
            ),
        )

    def _generate_and_score_completions(self, inputs: list[dict]) -> dict[str, Any]:
        """TRL's step input, in named steps: rollout → rewards → group advantages → loss rows →
        batch collation → per-row advantages → old/ref log-probs → metrics and logs → TRL's dict.
        The collective calls (gathers, forwards) keep one order on every rank."""
        device = self.accelerator.device
        mode = "train" if self.model.training else "eval"
        rollout = self._rollout(inputs, mode)
        records = rollout.records
        breakdowns, all_rewards = self._rewards(records, device)
        G = self.num_generations if mode == "train" else self.num_generations_eval
        r = self.para_args.rewards
        mapped = mapped_rewards(all_rewards, r.reward_bias, r.reward_scale, r.reward_clip)
        scored = group_advantages(mapped, G, self.scale_rewards)
        start = self.accelerator.process_index * len(inputs)
        local_adv = scored.advantages[start : start + len(inputs)]
        # ``flat``: the episode's group has zero reward variance (no token-level anchor there)
        local_flat = scored.zero_var[start : start + len(inputs)].tolist()
        rows = self._loss_rows(records, local_adv.tolist(), local_flat, mode)
        batch = self._collate(rows, device)
        adv, anchor_bonus_total = self._row_advantages(rows, batch, device)
        old_logps, ref_logps = self._old_and_ref_logps(batch, mode)
        if self.use_vllm and isinstance(self.vllm_generation, ServerGeneration):
            # the step's weights, written while the passes above ran, are the server's
            self.vllm_generation.settle()  # (paravt.rollout.weight_push)
        sampling_logps, is_ratio = batch.sampling_logps, None
        if self.use_vllm:
            assert old_logps is not None  # computed for every vLLM rollout (_old_and_ref_logps)
            # a forced turn's tokens (NaN: sampled by no one) count as on-policy
            sampling_logps = torch.where(torch.isnan(sampling_logps), old_logps, sampling_logps)
            if self.vllm_importance_sampling_correction:
                is_ratio = self._vllm_sampling_correction(
                    old_logps, sampling_logps, batch.loss_mask, mode
                )
        # the reference's per-token steps (rewards.kl_in_reward, advantage_norm), off by default
        behaviour = sampling_logps if self._backend.with_logprobs else old_logps
        adv = shaped_advantages(
            adv, batch.loss_mask, r, behaviour, ref_logps, lambda t: self._gathered(t[None]).sum(0)
        )
        m = self._log_step(mode, rollout, breakdowns, rows, batch, all_rewards, scored,
                           local_adv, anchor_bonus_total)  # fmt: skip
        ep_inputs = rollout.inputs
        self.last_rollout = {
            "metrics": m,
            "epoch": rollout.epoch,
            "k": [e.frames_k for e in ep_inputs],
        }
        if self.keep_last_rollout:
            self.last_rollout.update(
                {
                    "groups": rollout.groups,
                    "records": records,
                    "episode_inputs": ep_inputs,
                    "breakdowns": breakdowns,
                    "flat": local_flat,
                    "advantages": adv.detach().cpu(),
                    "tool_mask": batch.tool_mask.cpu(),
                    "completion_ids": batch.completion_ids.cpu(),
                    "num_images": batch.num_images,
                }
            )
        return batch.trl_inputs(
            adv,
            # only real sampling logprobs may feed TRL's off-policy mask
            sampling_logps=sampling_logps if self._backend.with_logprobs else None,
            old_logps=old_logps,
            ref_logps=ref_logps,
            importance_sampling_ratio=is_ratio,
        )

    def _rollout(self, inputs: list[dict], mode: str) -> Rollout:
        """The local batch's episodes, run by the engine, as groups of one prompt each, every
        episode sampled under the weights of the current optimizer step."""
        epoch = math.floor(self.state.epoch or 0.0) if mode == "train" else 0
        # Without a lockstep (DDP, ZeRO-3 gathered, local vLLM) the rollout has no collective: a
        # rank whose rollout raises would leave the others in the rewards' gather. One handshake
        # after the rollout carries its failure instead (with a lockstep the backend's does).
        handshake = self.accelerator.num_processes > 1 and not self._backend.lockstep
        step = int(self.state.global_step)
        try:
            if self._async is not None and mode == "train":
                rollout = self._async_rollout(inputs, step, epoch)
                records = rollout.records
            else:
                ep_inputs = self.episode_inputs(inputs, epoch, mode)
                records = self.run_episodes(ep_inputs, mode)
                if len(records) != len(inputs):
                    raise ParavtError(
                        f"engine returned {len(records)} records for {len(inputs)} episodes"
                    )
                rollout = Rollout.of_batch(epoch, ep_inputs, records, step)
        except Exception as e:
            if handshake:
                announce_failure(gather_object, e)
            raise
        if handshake:
            exchange(gather_object, None)
        warn_if_every_episode_failed(records, int(self.state.global_step) + 1)
        return rollout

    def _async_rollout(self, inputs: list[dict], step: int, epoch: int) -> Rollout:
        """The rollout of ``step`` from the producer (``paravt.train.async_rollout``), as groups
        with each episode's policy version, and the step's ``async/*`` metrics."""
        assert self._async is not None
        got = self._async.step(inputs, step)
        if got.epoch != epoch:
            logger.warning(
                "step %d: the rollout gated K for epoch %d, the trainer is in epoch %d",
                step,
                got.epoch,
                epoch,
            )
        for key, value in got.log.metrics().items():
            self._metrics["train"][key].append(value)
        return Rollout.of_batch(got.epoch, got.inputs, got.records, got.versions)

    def _rewards(self, records: list, device) -> tuple[list, torch.Tensor]:
        """``(local breakdowns, all ranks' rewards)``: NaN for a failed episode; gathered because
        a group's generations may sit on several ranks."""
        rcfg = self._reward_config()
        breakdowns = [self.score_episode(r, rcfg) for r in records]
        local = torch.tensor(
            [[b.total if b is not None else math.nan] for b in breakdowns],
            dtype=torch.float32,
            device=device,
        )
        return breakdowns, gather(local)[:, 0]

    def _loss_rows(
        self,
        records: list[EpisodeRecord],
        local_adv: list[float],
        local_flat: list[bool],
        mode: str,
    ) -> list[LossRow]:
        """One row per episode, then (optionally) one per sub-agent trajectory with its episode's
        advantage, then no-loss rows (advantage 0) up to a multiple of ``steps_per_generation``
        (TRL splits the batch evenly across accumulation steps)."""
        a = self.para_args
        rows = []
        for r, adv, flat in zip(records, local_adv, local_flat, strict=True):
            rows.append(replace(self._row_from_record(r), flat=flat, advantage=adv))
        if a.subagent_in_loss and a.engine.evidence == "subagent":
            for r, adv, flat in zip(records, local_adv, local_flat, strict=True):
                for sub in r.subagents:
                    rows.append(replace(self._row_from_record(sub), flat=flat, advantage=adv))
        spg = self._generation_steps if mode == "train" else 1
        # as many rows (log-prob chunks, loss forwards) on every rank when forwards are collective
        n = max(gather_object([len(rows)])) if self._lockstep_rows else len(rows)
        while len(rows) < n or len(rows) % spg:
            rows.append(self._no_loss_row())
        return rows

    def _collate(self, rows: list[LossRow], device) -> LossBatch:
        """The rows as TRL's padded tensors (prompts left-padded, completions right-padded), the
        loss mask (generated ∧ not padding), and every row's images in stream order with the
        M-RoPE token types; a patch-row count that disagrees with the grids is refused."""
        pad_id = self._pad_id

        def padded(values, value, side: str, dtype=torch.long) -> torch.Tensor:
            tensors = [torch.as_tensor(v, dtype=dtype) for v in values]
            # TRL's pad_to_multiple_of ("auto": 128 on Neuron, else none) pads as TRL's rollout does
            return pad(
                tensors,
                padding_value=value,
                padding_side=side,
                pad_to_multiple_of=self.pad_to_multiple_of,
            ).to(device)

        tool_mask = padded([r.mask for r in rows], 0, "right")
        if self.mask_truncated_completions:
            kept = [not r.truncated for r in rows]
            tool_mask = tool_mask * torch.tensor(kept, device=device).unsqueeze(1).long()
        prompt_ids = padded([r.prompt for r in rows], pad_id, "left")
        prompt_mask = padded([[1] * len(r.prompt) for r in rows], 0, "left")
        completion_ids = padded([r.completion for r in rows], pad_id, "right")
        completion_mask = padded([[1] * len(r.completion) for r in rows], 0, "right")
        loss_mask = completion_mask * tool_mask
        b = LossBatch(
            prompt_ids=prompt_ids,
            prompt_mask=prompt_mask,
            completion_ids=completion_ids,
            completion_mask=completion_mask,
            tool_mask=tool_mask,
            sampling_logps=padded([r.logps for r in rows], 0.0, "right", torch.float32),
            loss_mask=loss_mask,
            num_items_in_batch=self._gathered(loss_mask.sum()).sum(),
            prompt_completion_ids=torch.cat([prompt_ids, completion_ids], dim=1),
            attention_mask=torch.cat([prompt_mask, completion_mask], dim=1),
            logits_to_keep=completion_ids.size(1),
            num_images=[0 if r.grid is None else int(r.grid.shape[0]) for r in rows],
        )
        if sum(b.num_images):
            self._collate_images(b, rows, device)
        return b

    def _collate_images(self, b: LossBatch, rows: list[LossRow], device) -> None:
        """Every row's images into ``b``, in stream order: the joined pixel rows (one copy, cast
        on the way when the model is bf16 / fp16), the grids and the M-RoPE token types."""
        parts = [p for r in rows if r.grid is not None for p in _pieces(r.pixel_values)]
        if not parts:
            raise FeatureMismatchError("the rows have image grids but no pixel rows")
        b.pixel_values = _joined(parts, self.model.dtype, device)
        b.image_grid_thw = torch.cat([r.grid for r in rows if r.grid is not None]).to(device)
        b.mm_token_type_ids = mm_token_type_ids(b.prompt_completion_ids, self._image_pad)
        rows_needed = int(b.image_grid_thw.prod(-1).sum())
        if rows_needed != b.pixel_values.shape[0]:
            raise FeatureMismatchError(
                f"pixel_values has {b.pixel_values.shape[0]} patch rows, grids need {rows_needed}"
            )

    def _row_advantages(
        self, rows: list[LossRow], batch: LossBatch, device
    ) -> tuple[torch.Tensor, float]:
        """``(advantages, |anchor bonus| sum)``: one per row, or ``(B, T)`` with the token-level
        anchor bonus at the structural tokens (``token_anchor``)."""
        adv = torch.tensor([r.advantage for r in rows], dtype=torch.float32, device=device)
        if not self.para_args.rewards.token_anchor:
            return adv, 0.0
        bonus = self.token_anchor_bonus(rows, batch.completion_ids, batch.loss_mask)
        return adv.unsqueeze(1) + bonus, float(bonus.abs().sum())

    def _old_and_ref_logps(self, batch: LossBatch, mode: str):
        """``(old, ref)`` per-token log-probs of the batch, each None when TRL's loss does not need
        it (old: only when a rollout is reused across optimizer steps, and always with vLLM)."""
        batch_size = (
            self.args.per_device_train_batch_size
            if mode == "train"
            else self.args.per_device_eval_batch_size
        )

        def per_token_logps(model) -> torch.Tensor:
            logps, _, _ = self._get_per_token_logps_and_entropies(
                model,
                batch.prompt_completion_ids,
                batch.attention_mask,
                batch.logits_to_keep,
                batch_size=batch_size,
                num_images=batch.num_images,
                **batch.forward_kwargs,
            )
            return logps

        with torch.no_grad():
            generate_every = self._generation_steps * self.num_iterations
            old_logps = None
            # with vLLM always (as TRL does): the sampler's logprobs are measured against them
            # the KL as a reward reads the behaviour policy's log-probs: the old ones when the
            # sampler gave none
            kl_reward = self.para_args.rewards.kl_in_reward > 0
            behaviour = kl_reward and not self._backend.with_logprobs
            reused = self.args.gradient_accumulation_steps % generate_every != 0
            if reused or self.use_vllm or behaviour:
                old_logps = per_token_logps(self.model)
            ref_logps = None
            wants_ref = self.beta != 0.0 or kl_reward
            if wants_ref and self.ref_model is not None:
                ref_logps = per_token_logps(self.ref_model)
            elif wants_ref:
                from trl.trainer.utils import use_adapter

                model = cast(Any, self.accelerator.unwrap_model(self.model))  # a PEFT model here
                with use_adapter(model, adapter_name="ref" if "ref" in model.peft_config else None):
                    ref_logps = per_token_logps(self.model)
        return old_logps, ref_logps

    def _log_step(
        self,
        mode: str,
        rollout: Rollout,
        breakdowns: list,
        rows: list[LossRow],
        batch: LossBatch,
        all_rewards: torch.Tensor,
        groups: GroupAdvantages,
        local_adv: torch.Tensor,
        anchor_bonus_total: float,
    ) -> dict:
        """docs/PROTOCOL.md §5.7's step metrics (all ranks' episodes) into TRL's ``_metrics``, the episode
        log, and TRL's completions table; returns the metrics. ``breakdowns``: the local
        episodes' rewards; ``all_rewards``: all ranks', with their group advantages ``groups``;
        ``local_adv``: the local episodes' advantages."""
        a = self.para_args
        records, ep_inputs, epoch = rollout.records, rollout.inputs, rollout.epoch
        device = self.accelerator.device
        # rows: one per episode first, then sub-agent and padding rows, which have no episode
        episode_rows = rows[: len(records)]
        stats = [
            episode_stats(r, b, _frames(e, a), int(sum(row.mask)), len(row.completion))
            for r, b, e, row in zip(records, breakdowns, ep_inputs, episode_rows, strict=True)
        ]
        all_stats = gather_object(stats)
        m = step_metrics(all_stats, groups.zero_var_share, list(a.gating_choices))
        valid = all_rewards[~torch.isnan(all_rewards)]
        m["reward"] = valid.mean().item() if valid.numel() else 0.0
        m["reward_std"] = nanstd(all_rewards).item() if valid.numel() > 1 else 0.0
        m["frac_reward_zero_std"] = groups.zero_var.float().mean().item()
        m["anchor/token_bonus_abs_sum"] = (
            self._gathered(torch.tensor(anchor_bonus_total, device=device)).sum().item()
        )
        num_images = batch.num_images
        # a failed episode's row may carry the lockstep's filler image: not the episode's
        shown = [n for n, row in zip(num_images, episode_rows, strict=False) if row.ok]
        m["images/per_episode"] = sum(shown) / max(1, len(records))
        if mode == "train":
            self.state.num_input_tokens_seen += int(
                self._gathered(batch.attention_mask.sum()).sum().item()
            )
        self._metrics[mode]["num_tokens"] = [self.state.num_input_tokens_seen]
        for key, value in m.items():
            self._metrics[mode][key].append(float(value))

        self._log_episodes(records, breakdowns, ep_inputs, local_adv.tolist(), epoch, mode)
        # TRL's completions table (printed / saved when log_completions=True), all ranks gathered.
        self._logs["prompt"].extend(gather_object([e.question for e in ep_inputs]))
        self._logs["completion"].extend(gather_object([r.completion_text for r in records]))
        self._logs["rewards"]["para_reward"].extend(all_rewards.tolist())
        self._logs["advantages"].extend(groups.advantages.tolist())
        return m

    def _vllm_sampling_correction(self, old_logps, sampling_logps, loss_mask, mode: str):
        """TRL's vLLM importance-sampling ratio over the generated tokens, with TRL's metrics."""
        a = self.para_args
        ratio = importance_sampling_ratio(
            old_logps,
            sampling_logps,
            loss_mask,
            a.vllm_importance_sampling_mode,
            a.vllm_importance_sampling_clip_min,
            a.vllm_importance_sampling_clip_max,
        )
        device = old_logps.device
        zero = torch.tensor(0.0, device=device)
        mask = loss_mask.bool()
        delta = torch.abs(old_logps - sampling_logps)[mask]
        per_token = not a.vllm_importance_sampling_mode.startswith("sequence_")
        flat = ratio[mask] if per_token else ratio[mask.any(dim=1)].flatten()
        m = self._metrics[mode]
        gathered = self._gathered
        m["sampling/sampling_logp_difference/mean"].append(
            gathered(delta.mean() if delta.numel() else zero).mean().item()
        )
        m["sampling/sampling_logp_difference/max"].append(
            gathered(delta.max() if delta.numel() else zero).max().item()
        )
        m["sampling/importance_sampling_ratio/min"].append(
            nanmin(gathered(flat.min() if flat.numel() else zero)).item()
        )
        m["sampling/importance_sampling_ratio/mean"].append(
            gathered(flat.mean() if flat.numel() else zero).nanmean().item()
        )
        m["sampling/importance_sampling_ratio/max"].append(
            nanmax(gathered(flat.max() if flat.numel() else zero)).item()
        )
        # how much the truncation (or masking) changed: the share of the loss tokens (episodes,
        # in a sequence mode) whose weight the bounds moved; bounded staleness reads it per step
        diff = torch.nan_to_num((old_logps - sampling_logps) * loss_mask, nan=0.0)
        raw = torch.exp(diff if per_token else diff.sum(dim=-1, keepdim=True))
        raw_flat = raw[mask] if per_token else raw[mask.any(dim=1)].flatten()
        lo = (
            -math.inf
            if a.vllm_importance_sampling_clip_min is None
            else a.vllm_importance_sampling_clip_min
        )
        hi = (
            math.inf
            if a.vllm_importance_sampling_clip_max is None
            else a.vllm_importance_sampling_clip_max
        )
        moved = ((raw_flat < lo) | (raw_flat > hi)).float()
        counts = torch.stack([moved.sum(), torch.tensor(float(moved.numel()), device=device)])
        total = gathered(counts.unsqueeze(0)).sum(dim=0)
        m["sampling/importance_sampling_ratio/truncated_share"].append(
            (total[0] / total[1].clamp(min=1.0)).item()
        )
        return ratio

    def _log_episodes(self, records, breakdowns, ep_inputs, advantages, epoch, mode):
        """One JSON row per episode in ``episodes/rank{r}.jsonl`` (K, rewards, calls, status),
        and every ``episode_dump_every``-th step the whole episodes (``train.episode_dump``)."""
        assert self.args.output_dir is not None  # TrainingArguments fills in its default
        folder = Path(self.args.output_dir) / "episodes"
        step, every = int(self.state.global_step) + 1, self.para_args.episode_dump_every
        if mode == "train" and every and (step - 1) % every == 0 and self._dumping:
            rows = [(r, b, e.frames_k, adv) for r, b, e, adv in
                    zip(records, breakdowns, ep_inputs, advantages, strict=True)]  # fmt: skip
            self._dumping = dump_episodes(
                folder, step, self.accelerator.process_index, rows,
                self.para_args.episode_dump_thumb, int(self.para_args.episode_dump_max_mb * 1e6),
            )  # fmt: skip
        if not self.para_args.episode_log or mode != "train":
            return
        folder.mkdir(parents=True, exist_ok=True)
        rank = self.accelerator.process_index
        with (folder / f"rank{rank}.jsonl").open("a") as f:
            for r, b, e, adv in zip(records, breakdowns, ep_inputs, advantages, strict=True):
                f.write(
                    json.dumps(
                        {
                            "step": int(self.state.global_step) + 1,
                            "epoch": epoch,
                            "rank": rank,
                            "prompt_id": e.id,
                            "k": e.frames_k,
                            "status": r.status,
                            "error": r.error,
                            "reward": None if b is None else b.terms(),
                            "advantage": adv,
                            "turns": len(r.turns),
                            # the weights that sampled each turn (bounded staleness: may lag)
                            "policy_versions": [t.policy_version for t in r.turns],
                            "calls": [c.status for c in r.calls],
                            "images": len(r.stream.images),
                            "prompt_len": r.stream.prompt_len,
                            "tokens": len(r.stream.token_ids),
                            "generated": int(sum(r.stream.loss_mask)),
                        },
                        default=str,
                    )
                    + "\n"
                )

    # -- loss forward --------------------------------------------------------------------------
    def _get_per_token_logps_and_entropies(
        self,
        model,
        input_ids,
        attention_mask,
        logits_to_keep,
        batch_size=None,
        num_images=None,
        pixel_values=None,
        image_grid_thw=None,
        mm_token_type_ids=None,
        **kwargs,
    ):
        """TRL's forward, chunked here so that a chunk without images passes no pixel tensors."""
        if pixel_values is None or num_images is None:
            return super()._get_per_token_logps_and_entropies(
                model,
                input_ids,
                attention_mask,
                logits_to_keep,
                batch_size=batch_size,
                num_images=num_images,
                mm_token_type_ids=mm_token_type_ids,
                **kwargs,
            )
        if image_grid_thw is None:
            raise FeatureMismatchError("the batch has pixel_values but no image_grid_thw")
        n = input_ids.size(0)
        step = batch_size or n
        cum_img = [0]
        for k in num_images:
            cum_img.append(cum_img[-1] + k)
        rows_per_image = image_grid_thw.prod(-1).tolist()
        cum_rows = [0]
        for r in rows_per_image:
            cum_rows.append(cum_rows[-1] + int(r))
        logps, ents, auxes = [], [], []
        for s in range(0, n, step):
            e = min(s + step, n)
            i0, i1 = cum_img[s], cum_img[e]
            kw = dict(kwargs)
            sub_mm = mm_token_type_ids[s:e] if mm_token_type_ids is not None else None
            if i1 > i0:
                kw.update(
                    pixel_values=pixel_values[cum_rows[i0] : cum_rows[i1]],
                    image_grid_thw=image_grid_thw[i0:i1],
                    num_images=list(num_images[s:e]),
                )
            lp, en, aux = super()._get_per_token_logps_and_entropies(
                model,
                input_ids[s:e],
                attention_mask[s:e],
                logits_to_keep,
                batch_size=e - s,
                mm_token_type_ids=sub_mm,
                **kw,
            )
            logps.append(lp)
            if en is not None:
                ents.append(en)
            if aux is not None:
                auxes.append(aux)
        return (
            torch.cat(logps),
            torch.cat(ents) if ents else None,
            torch.stack(auxes).mean() if auxes else None,
        )
