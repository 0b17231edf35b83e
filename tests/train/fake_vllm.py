"""TRL's vLLM generator in server mode, with the server replaced by a model in this process.

Why: vLLM cannot be installed on a CPU-only machine, yet ``use_vllm=true`` must be exercised on the
code that will run: TRL's own ``VLLMGeneration`` (its rank gather, equal-share slicing, broadcast,
weight sync and ``_place_features``) driven by paravt's ``VLLMBackend``. Only the HTTP client is
stood in for: ``FakeVLLMServer`` answers the calls TRL's ``VLLMClient`` makes, and does what the
server does with them —

- ``image_features``: re-processes each PIL image with the model's image processor (under its own
  size settings, or ``mm_processor_kwargs`` as given to ``vllm serve --mm-processor-kwargs``);
- ``generate``: refuses a prompt whose runs of image pads do not match those features one to one
  (vLLM cannot place them either), then samples from its own copy of the weights with the policy
  backend, returning generated ids (stop token included) and processed logprobs;
- ``update_named_params`` / ``reset_prefix_cache``: copies the streamed weights into its copy.

``ServerlessVLLMGeneration`` is ``VLLMGeneration`` with ``_init_vllm`` pointing the main process at
a ``FakeVLLMServer`` instead of checking for vLLM and connecting. Test-only, so it lives in
``tests/train`` (a plain module beside the tests that import it), not in the package.
"""

from __future__ import annotations

import copy
from typing import Any

import torch
from trl.generation.vllm_generation import VLLMGeneration

from paravt.schema.episodes import GenRequest, TokenPrompt


class FakeVLLMServer:
    """In-process stand-in for ``trl vllm-serve`` (see the module docstring)."""

    def __init__(self, model: Any, processing_class: Any, mm_processor_kwargs: dict | None = None):
        from paravt.rollout.policy import PolicyBackend

        self.model = model.eval()
        # vLLM samples from the whole vocabulary: a model folder's suppress_tokens is not applied
        self.model.generation_config.suppress_tokens = None
        self.processing_class = processing_class
        self.mm_processor_kwargs = dict(mm_processor_kwargs or {})
        ip = processing_class.image_processor
        self.merge = int(getattr(ip, "merge_size", 2)) ** 2
        self.patch = int(getattr(ip, "patch_size", 16))
        # the sampler only: no vision-token suppression (vLLM has none), logprobs after warping
        self.sampler = PolicyBackend(
            self.model, processing_class, suppress_vision_tokens=False, with_logprobs=True
        )
        self.served: list[dict] = []  # one row per prompt generated
        self.image_sizes: list[tuple[int, int]] = []  # (height, width) of every image received
        self.weight_updates = 0
        self.cache_resets = 0

    # -- what TRL's VLLMClient calls ---------------------------------------------------------
    def get_server_info(self) -> dict:
        return {"model_config": {"logprobs_mode": "processed_logprobs"}}

    def image_features(self, images: list, max_concurrent_requests: int = 64) -> list:
        out = []
        for per_prompt in images:
            if not per_prompt:
                out.append(None)
                continue
            self.image_sizes.extend((im.height, im.width) for im in per_prompt)
            got = self.processing_class.image_processor(
                images=list(per_prompt), return_tensors="pt", **self.mm_processor_kwargs
            )
            grid = got["image_grid_thw"].long()
            lengths = [int(g.prod()) // self.merge for g in grid]
            out.append(
                {
                    "pixel_values": got["pixel_values"],
                    "image_grid_thw": grid,
                    "mm_placeholders": {"image": [{"offset": 0, "length": n} for n in lengths]},
                    "feature_lengths": lengths,
                }
            )
        return out

    def generate(
        self,
        prompts: list[list[int]],
        features: list | None = None,
        n: int = 1,
        repetition_penalty: float = 1.0,
        temperature: float = 1.0,
        top_p: float = 1.0,
        top_k: int = 0,
        min_p: float = 0.0,
        max_tokens: int = 16,
        logprobs: int | None = 0,
        structured_outputs_regex: str | None = None,
        generation_kwargs: dict | None = None,
    ) -> dict:
        kwargs = dict(generation_kwargs or {})
        self.sampler.eos_token_ids = list(
            kwargs.get("stop_token_ids") or self.sampler.eos_token_ids
        )
        # vLLM's top_k=0 is "off"; the policy backend reads 0 as "the model's default" (often 50)
        self.sampler.top_k = top_k if top_k and top_k > 0 else len(self.sampler.tokenizer)
        requests = []
        for i, ids in enumerate(prompts):
            feats = features[i] if features is not None else None
            pv = grid = None
            if feats is not None:
                runs = feats["mm_placeholders"]["image"]
                lengths = [r["length"] for r in runs]
                if lengths != feats["feature_lengths"]:
                    raise ValueError(
                        f"image pad runs of lengths {lengths} for features of lengths "
                        f"{feats['feature_lengths']}: the images were resized by the server"
                    )
                pv, grid = feats["pixel_values"], feats["image_grid_thw"]
            for _ in range(n):
                requests.append(
                    GenRequest(
                        episode_id=f"served{i}",
                        turn=1,
                        role="main",
                        messages=[],
                        images=[],
                        max_new_tokens=max_tokens,
                        temperature=temperature,
                        top_p=top_p,
                        tokens=TokenPrompt(list(ids), pv, grid),
                    )
                )
        with torch.no_grad():
            gens = self.sampler.generate(requests)
        completion_ids = [list(g.token_ids or []) for g in gens]
        for req, ids in zip(requests, completion_ids, strict=True):
            self.served.append(
                {
                    "prompt": tuple(req.tokens.ids),
                    "completion": list(ids),
                    "images": 0
                    if req.tokens.image_grid_thw is None
                    else len(req.tokens.image_grid_thw),
                    "max_tokens": max_tokens,
                }
            )
        return {
            "prompt_ids": [list(p) for p in prompts],
            "completion_ids": completion_ids,
            "logprobs": [[[lp] for lp in g.logprobs or []] for g in gens],
            "logprob_token_ids": [[[t] for t in ids] for ids in completion_ids],
        }

    def update_named_params(self, metadata: list, named_params: Any) -> None:
        own = dict(self.model.named_parameters())
        for name, tensor in named_params:
            own[name].data.copy_(tensor.to(own[name].device, own[name].dtype))
        self.weight_updates += 1

    def reset_prefix_cache(self) -> None:
        self.cache_resets += 1


class ServerlessVLLMGeneration(VLLMGeneration):
    """TRL's ``VLLMGeneration`` (server mode) whose main process talks to a ``FakeVLLMServer``."""

    def __init__(self, *args: Any, server: FakeVLLMServer | None = None, **kwargs: Any):
        self._server = server
        super().__init__(*args, **kwargs)

    def _init_vllm(self) -> None:
        if self.mode != "server":
            raise ValueError("ServerlessVLLMGeneration stands in for server mode only")
        if self.accelerator.is_main_process:
            if self._server is None:
                raise ValueError("the main process needs a FakeVLLMServer")
            self.vllm_client = self._server
        self.accelerator.wait_for_everyone()


def serverless_factory(servers: list | None = None, **server_kwargs: Any):
    """A stand-in for ``trl.trainer.grpo_trainer.VLLMGeneration``: builds the generator TRL asks
    for, with a ``FakeVLLMServer`` over a copy of the model on the main process (appended to
    ``servers`` so a test can look at it)."""

    def make(**kwargs: Any) -> ServerlessVLLMGeneration:
        server = None
        if kwargs["accelerator"].is_main_process:
            server = FakeVLLMServer(
                copy.deepcopy(kwargs["model"]), kwargs["processing_class"], **server_kwargs
            )
            if servers is not None:
                servers.append(server)
        return ServerlessVLLMGeneration(server=server, **kwargs)

    return make
