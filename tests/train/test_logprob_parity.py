"""The loss forward sees exactly the sampled context: its log-probs match the sampler's."""

from __future__ import annotations

import torch


def test_loss_forward_logprobs_match_generation_logprobs(smoke_run):
    _, _, probe = smoke_run
    view, out, ro = probe.parity, probe.outputs[0], probe.rollouts[0]

    def sampler_view(logits, row, cols, targets):
        # what the sampler computed: logits at temperature, vision tokens suppressed, renormalised
        z = logits[row, [view["width"] + c - 1 for c in cols]].float() / view["temperature"]
        full = z.log_softmax(-1).gather(-1, targets[:, None])[:, 0]
        z[:, view["suppressed"]] = float("-inf")
        return full, z.log_softmax(-1).gather(-1, targets[:, None])[:, 0]

    compared, blank_gap = 0, 0.0
    for i, rec in enumerate(ro["records"]):
        p = rec.stream.prompt_len
        sampled = [
            j
            for j, (m, lp) in enumerate(
                zip(rec.stream.loss_mask[p:], rec.stream.logprobs[p:], strict=True)
            )
            if m and lp != 0.0
        ]
        assert sampled, "no sampled tokens (all forced?)"
        ref = torch.tensor([rec.stream.logprobs[p + j] for j in sampled])
        targets = out["completion_ids"][i, sampled]
        full, renorm = sampler_view(view["logits"], i, sampled, targets)
        assert torch.allclose(
            view["logps"][i, sampled], full, atol=1e-4
        )  # TRL's fused loss head = plain forward
        assert torch.allclose(renorm, ref, atol=1e-4), (
            (renorm - ref).abs().max()
        )  # = what was sampled
        assert torch.equal(out["sampling_per_token_logps"][i, sampled], ref)
        _, blank = sampler_view(view["blank"], i, sampled, targets)
        blank_gap = max(blank_gap, float((blank - ref).abs().max()))
        compared += len(sampled)
    assert (
        compared >= 4 * 6
    )  # the sampled turn after the tool turn (with its frames) of every episode
    assert blank_gap > 1e-3, blank_gap  # control: with blank frames the context no longer matches
