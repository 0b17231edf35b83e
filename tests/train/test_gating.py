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


def _k_sequence(run_dir) -> list[tuple[int, str, int]]:
    """(step, prompt id, K) of every dumped episode, one per prompt and step."""
    import json

    rows = (run_dir / "episodes" / "dump-rank0.jsonl").read_text().splitlines()
    return sorted({(r["step"], r["record"]["id"], r["k"]) for r in map(json.loads, rows)})


def test_a_resumed_run_sees_the_k_sequence_of_an_uninterrupted_one(tmp_path, monkeypatch):
    """6 steps of cpu-smoke (4 a data epoch) straight through, and the same run stopped at step
    2 (mid-epoch) and at step 4 (an epoch's end) and resumed: the same prompts, with the same K,
    at every step. Before, TRL's sampler shuffled the epochs after a resume from a freshly
    seeded generator, and steps 5-8 drew other prompts (other Ks) than the straight run."""
    from paravt.train.gating import epoch_seed
    from paravt.train.run import load_command_config, run_training

    monkeypatch.chdir(tmp_path)

    def run(name: str, steps: int, resume: bool = False):
        cfg = load_command_config(
            "cpu-smoke",
            (f"output_dir={tmp_path / name}", f"trainer.max_steps={steps}",
             "trainer.save_steps=2", "trainer.episode_dump_every=1",
             "engine.max_new_tokens=8", "engine.max_turns=1"),
        )  # fmt: skip
        run_training(cfg, resume=resume)

    run("straight", 6)
    run("stopped", 2)
    run("stopped", 4, resume=True)
    run("stopped", 6, resume=True)
    straight = _k_sequence(tmp_path / "straight")
    assert len({s for s, _, _ in straight}) == 6
    assert _k_sequence(tmp_path / "stopped") == straight
    assert epoch_seed(7, 0) == 7 and epoch_seed(7, 1) != epoch_seed(7, 2)
