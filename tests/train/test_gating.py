"""nFrames Gating: a pure function of (seed, prompt id, epoch)."""

from collections import Counter

import pytest

from paravt.train.gating import PAPER_CHOICES, gated_frames


def test_same_inputs_same_k_and_values_in_choices():
    for pid in ("a", "b", "row17"):
        ks = {gated_frames(3, pid, 0) for _ in range(5)}
        assert len(ks) == 1 and ks.pop() in PAPER_CHOICES


def test_k_varies_across_prompts_and_epochs_roughly_uniformly():
    ks = [gated_frames(0, f"p{i}", 0) for i in range(2000)]
    counts = Counter(ks)
    assert set(counts) == set(PAPER_CHOICES)
    assert min(counts.values()) > 300  # 400 expected per value
    changed = sum(gated_frames(0, f"p{i}", 0) != gated_frames(0, f"p{i}", 1) for i in range(200))
    assert changed > 100  # a new epoch redraws K
    seeds = sum(gated_frames(0, f"p{i}", 0) != gated_frames(1, f"p{i}", 0) for i in range(200))
    assert seeds > 100


def test_gating_off_gives_fixed_budget_and_empty_choices_rejected():
    assert gated_frames(0, "x", 0, enabled=False, fixed=48) == 48
    with pytest.raises(ValueError):
        gated_frames(0, "x", 0, choices=[])


def test_k_identical_in_another_process():
    """Ranks are separate processes: no hash randomisation may leak into K."""
    import subprocess
    import sys

    code = "from paravt.train.gating import gated_frames; print([gated_frames(5, f'q{i}', 2) for i in range(20)])"
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONHASHSEED": "123", "PATH": "/usr/bin:/bin"},
    ).stdout.strip()
    assert out == str([gated_frames(5, f"q{i}", 2) for i in range(20)])
