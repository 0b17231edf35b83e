"""The toy guide's claims: each result number of experiments/toy_paradox/README.md recomputed from
the raw files of its run, with the readers the lab log's claims use (``claims_toy``).

The guide restates the log's results in short; a sentence here is keyed by the guide's section
heading and its text, as the log's are. A difference the guide gives with one interval for both
tests (``both``) is checked to have equal Welch and paired bounds, so the shorthand cannot hide a
second interval that says otherwise.
"""

from __future__ import annotations

from pathlib import Path

from claimkit import (
    TOY,
    Claim,
    Getter,
    acc,
    calls,
    fill,
    fixed,
    read_json,
    read_lines,
    right,
    said,
    use,
)
from claims_toy import (
    BUILDS,
    DIRECT,
    DRILL,
    HF_MATCH,
    HF_REFS,
    K_CELLS,
    PARADOX,
    PARADOX_CELLS,
    RESTATED,
    SAMPLERS,
    SERVER_REFS,
    SFT_K4,
    STALE,
    STRONG,
    WEAK,
    Values,
    arm,
    at_k,
    build_acc,
    constant,
    drill_at,
    each,
    gap,
    intervals,
    mean_of,
    over_seeds,
    plan_part,
    projected,
    quick_vs_average,
    run_steps,
    sampler,
    sci,
    spread_of,
    t_cell,
    two_seed,
    v2_arm,
    vanilla_steps,
    wall,
)

GUIDE = "experiments/toy_paradox/README.md"


def guide(within: str, source: str, template: str, *parts: Getter) -> Claim:
    """A sentence or row of the guide (in the section ``within``) whose numbers are read from
    ``source`` (under the toy results folder)."""
    return said(GUIDE, f"{TOY}/{source}", fill(template, *parts), within)


def both(base: Values, other: Values, decimals: int = 1) -> Getter:
    """The one interval a sentence gives for "Welch and paired": both, when they are equal."""

    def text(p: Path) -> str:
        welch = gap(base, other, "welch", decimals)(p)
        paired = gap(base, other, "paired", decimals)(p)
        return welch if welch == paired else f"Welch {welch}, paired {paired}"

    return text


def verdict(base: Values, other: Values) -> Getter:
    """What the two intervals of other - base say of 0, in the guide's words: a sentence that says
    "neither interval" fails when one of them excludes 0."""

    def text(_: Path) -> str:
        c = intervals.compare(tuple(base()), tuple(other()))
        held = sum(c[k]["lo"] <= 0 <= c[k]["hi"] for k in ("welch", "paired"))
        return {2: "neither interval", 1: "one interval", 0: "both intervals"}[held]

    return text


def alike(first: Getter, second: Getter) -> Getter:
    """A value two runs share ("in both seeds"), or both values when they differ."""

    def text(p: Path) -> str:
        a, b = first(p), second(p)
        return a if a == b else f"{a} and {b}"

    return text


# --------------------------------------------------------------------------- the tool SFT

SFT_IN = "The tool SFT"
DEMO = "demo-eval/eval/demo-fp16-4"


def held_out_right(p: Path) -> str:
    return str(sum(r["acc"] == 1.0 for r in read_lines(p / "demo-eval/seeds-1000-1019.jsonl")))


SFT_CLAIMS = [
    guide(SFT_IN, "quick-text", "Quick mode (`results/quick-text/`, build `6c40568`, 2 threads, alone "
          "on the machine): {} ({}) at K = 4 with the tool, {} ({}) with `--mode direct`, tool use "
          "{} with {} calls a question; the whole chain took {} s ({} min).",
          acc(SFT_K4), right(SFT_K4), acc(DIRECT), right(DIRECT), use(SFT_K4), calls(SFT_K4),
          wall("quick-text"), wall("quick-text", "{:.1f}", 60)),
    guide(SFT_IN, "quick-rebuild", "score {} ({}); one stage trained at 1 and at 2 threads parts at "
          "step 8 (loss gap {})", acc(f"build-1/{SFT_K4}"), right(f"build-1/{SFT_K4}"),
          lambda p: sci(read_json(p / "threads.json")["max_loss_gap"])),
    guide(SFT_IN, "", "the 90-step chain scores {} to {}% (spread {} points); five of the six lie "
          "within {} to {}%.",
          spread_of("quick", "min"), spread_of("quick", "max"), spread_of("quick", "spread"),
          lambda _: f"{sorted(build_acc(f) for f in BUILDS.values())[1]:.1f}",
          spread_of("quick", "max")),
    guide(SFT_IN, "", "gives {} to {}% over the same six builds (spread {} points; mean {}, sd {})",
          *(spread_of("average", s) for s in ("min", "max", "spread", "mean", "sd"))),
    guide(SFT_IN, "", "its mean is {} points above the quick chain's, a difference neither interval "
          "shows (Welch {}, paired {})",
          lambda p: quick_vs_average("mean")(p).lstrip("+"), quick_vs_average("welch"),
          quick_vs_average("paired")),
    guide(SFT_IN, "", "Choosing a checkpoint on 30 validation questions instead gave {} to {}%.",
          spread_of("select", "min"), spread_of("select", "max")),
    guide(SFT_IN, "", "is the averaged d0-t2 build in fp16: {} ({}) on the eval split and {} of 20 "
          "held-out videos", acc(DEMO), right(DEMO), held_out_right),
]  # fmt: skip


# --------------------------------------------------------------------------- RL, three seeds

THREE_IN = "RL, three seeds"
NAMES = {"vanilla_grpo": "vanilla GRPO", "anchor_only": "anchoring only",
         "gating_only": "gating only", "paragrpo": "PARA-GRPO"}  # fmt: skip


def paradox_row(recipe: str) -> Claim:
    return guide(THREE_IN, PARADOX, f"| {NAMES[recipe]} | {{}} | {{}} | {{}} | {{}} |",
                 *(over_seeds(arm(recipe, k)) for k in ("acc_k4", "acc_k64", "tool_use_k4",
                                                        "kappa_last5")))  # fmt: skip


def paragrpo_minus(recipe: str) -> Claim:
    """PARA-GRPO minus an arm: the log's rows are the arm minus vanilla or PARA-GRPO."""
    acc4 = (arm(recipe, "acc_k4"), arm("paragrpo", "acc_k4"))
    tools = (arm(recipe, "tool_use_k4"), arm("paragrpo", "tool_use_k4"))
    return guide(THREE_IN, PARADOX, f"| {NAMES[recipe]} | {{}} | {{}} | {{}} | {{}} | {{}} | {{}} | {{}} |",
                 *(gap(*acc4, part) for part in ("mean", "welch", "paired", "detectable")),
                 *(gap(*tools, part) for part in ("mean", "welch", "paired")))  # fmt: skip


THREE_CLAIMS = [
    guide(THREE_IN, PARADOX, "(K = 4 {}, K = 64 {}, never calls)",
          acc("eval/sft-weak-4"), acc("eval/sft-weak-64")),
    *(paradox_row(r) for r in NAMES),
    *(paragrpo_minus(r) for r in ("vanilla_grpo", "anchor_only", "gating_only")),
    guide(THREE_IN, PARADOX, "vanilla GRPO calls on {}% of them",
          each(arm("vanilla_grpo", "tool_use_k4"), fixed(0), sep=None)),
    guide(THREE_IN, PARADOX, "PARA-GRPO is {} points over vanilla at K = 4, but {} excludes 0; its seeds score {}, and three seeds find a gap with 80% power only from {} "
          "points.",
          gap(arm("vanilla_grpo", "acc_k4"), arm("paragrpo", "acc_k4"), "mean"),
          verdict(arm("vanilla_grpo", "acc_k4"), arm("paragrpo", "acc_k4")),
          each(arm("paragrpo", "acc_k4"), sep=None),
          gap(arm("vanilla_grpo", "acc_k4"), arm("paragrpo", "acc_k4"), "detectable")),
    guide(THREE_IN, PARADOX, "vanilla's training calls fail to parse at a rate of {} (seeds 0, 1 and "
          "2), and its training accuracy at K = 64 is {} while the same checkpoint scores {} greedily",
          vanilla_steps("tools/parse_failure_rate"), vanilla_steps("reward/acc"),
          acc("eval/sft-weak-64")),
    guide(THREE_IN, PARADOX, "learned to call there (κ {}%)", mean_of(arm("anchor_only", "kappa_last5"))),
]  # fmt: skip


# --------------------------------------------------------------------------- RL, two seeds, 30 steps

TWO_IN = "RL, two seeds and 30 steps"
WEAK_EVAL = "rl-weak-text/eval"
STRONG_EVAL = f"{STRONG}/eval"

TWO_CLAIMS = [
    guide(TWO_IN, WEAK_EVAL, "{} → {} and {}, +{} points over the start (Welch and paired {}), tool "
          "use {} → {} in both seeds",
          acc("sft-weak-4"), acc("rl-weak-paragrpo-s0-4"), acc("rl-weak-paragrpo-s1-4"),
          lambda p: gap(constant(WEAK, "eval/sft-weak-4"), two_seed(WEAK, "weak", "paragrpo"),
                        "mean")(p).lstrip("+"),
          both(constant(WEAK, "eval/sft-weak-4"), two_seed(WEAK, "weak", "paragrpo")),
          use("sft-weak-4"), alike(use("rl-weak-paragrpo-s0-4"), use("rl-weak-paragrpo-s1-4"))),
    guide(TWO_IN, WEAK_EVAL, "Vanilla GRPO from the same checkpoint ends at {} and {}",
          acc("rl-weak-vanilla_grpo-s0-4"), acc("rl-weak-vanilla_grpo-s1-4")),
    guide(TWO_IN, WEAK_EVAL, "PARA-GRPO − vanilla {} points at K = 4, which two seeds do not show "
          "(Welch {}, paired {}); the tool-use gap is {} against {} in both seeds.",
          *(gap(two_seed(WEAK, "weak", "vanilla_grpo"), two_seed(WEAK, "weak", "paragrpo"), p)
            for p in ("mean", "welch", "paired")),
          alike(use("rl-weak-paragrpo-s0-4"), use("rl-weak-paragrpo-s1-4")),
          alike(use("rl-weak-vanilla_grpo-s0-4"), use("rl-weak-vanilla_grpo-s1-4"))),
    guide(TWO_IN, "rl-weak-corrected/eval", "and a retrained weak prior, {} → {} (one seed",
          acc("sft-weak-4"), acc("rl-weak-paragrpo-s0-4")),
    guide(TWO_IN, STRONG_EVAL, "(K = 4 {}, always calls), PARA-GRPO keeps the model ({} in both seeds)",
          acc("sft-strong-4"), alike(acc("rl-strong-paragrpo-s0-4"), acc("rl-strong-paragrpo-s1-4"))),
    guide(TWO_IN, STRONG_EVAL, "one colour for every question, {} and {}. Two seeds do not show that "
          "fall: vanilla − PARA-GRPO {} points, Welch and paired {}.",
          acc("rl-strong-vanilla_grpo-s0-4"), acc("rl-strong-vanilla_grpo-s1-4"),
          gap(two_seed(STRONG, "strong", "paragrpo"), two_seed(STRONG, "strong", "vanilla_grpo"),
              "mean"),
          both(two_seed(STRONG, "strong", "paragrpo"), two_seed(STRONG, "strong", "vanilla_grpo"))),
    guide(TWO_IN, STRONG_EVAL, "`anchor_only` ({}) and `gating_only` ({}) ran one seed each",
          acc("rl-strong-anchor_only-s0-4"), acc("rl-strong-gating_only-s0-4")),
]  # fmt: skip


# --------------------------------------------------------------------------- staleness

STALE_IN = "Staleness: k = 2 against k = 0"


def stale_row(label: str, key: str) -> Claim:
    k0, k2 = at_k(0, key), at_k(2, key)
    return guide(STALE_IN, STALE, f"| {label} | {{}} | {{}} | {{}} | {{}} | {{}} |",
                 over_seeds(k0), over_seeds(k2),
                 lambda _: t_cell(intervals.paired(k0(), k2()), 1, "+"),
                 gap(k0, k2, "welch"), gap(k0, k2, "detectable"))  # fmt: skip


STALE_CLAIMS = [
    guide(STALE_IN, STALE, "| from the weak prior (K = 4 {}) |", acc("eval/sft-weak-4")),
    stale_row("accuracy at K = 4", "acc_k4"),
    stale_row("accuracy at K = 64", "acc_k64"),
    guide(STALE_IN, STALE, "at K = 4 the seeds trade places by {} points, and a cost under {} points "
          "is not excluded",
          lambda _: f"{at_k(2, 'acc_k4')()[0] - at_k(0, 'acc_k4')()[0]:.1f}",
          gap(at_k(0, "acc_k4"), at_k(2, "acc_k4"), "detectable")),
    guide(STALE_IN, STALE, "The k = 2 runs did train off-policy ({} steps stale on average)",
          mean_of(at_k(2, "staleness_mean"), fixed(2))),
]  # fmt: skip


# --------------------------------------------------------------------------- samplers

SAMPLERS_IN = "Samplers"
HF4, VLLM4 = sampler("hf", "acc_k4"), sampler("vLLM", "acc_k4")


def logp_gap(_: Path) -> str:
    """The largest step mean of |log p sampler - log p learner| over the vLLM runs."""
    key = "sampling/sampling_logp_difference/mean"
    return sci(max(r[key] for s in range(3) for r in run_steps(SAMPLERS, f"weak-paragrpo-vllm-s{s}")
                   if r.get(key) is not None))  # fmt: skip


SAMPLER_CLAIMS = [
    guide(SAMPLERS_IN, SAMPLERS, "PARA-GRPO from the weak prior ({}), 20 steps", acc("eval/sft-weak-4")),
    guide(SAMPLERS_IN, SAMPLERS, "K = 4 {} with the hf sampler, {} with vLLM; vLLM − hf {}, paired {}, "
          "Welch {}, a gap found with 80% power {} points. At K = 64 the means are {} and {},",
          over_seeds(HF4), over_seeds(VLLM4),
          *(gap(HF4, VLLM4, p) for p in ("mean", "paired", "welch", "detectable")),
          mean_of(sampler("hf", "acc_k64")), mean_of(sampler("vLLM", "acc_k64"))),
    guide(SAMPLERS_IN, SAMPLERS, "a difference one vLLM seed carries and {} shows",
          verdict(sampler("hf", "acc_k64"), sampler("vLLM", "acc_k64"))),
    guide(SAMPLERS_IN, SAMPLERS, "differ by at most {} in log-probability a token", logp_gap),
    guide(SAMPLERS_IN, "", "The {}-point gap of an earlier comparison",
          lambda p: gap(v2_arm("vllm", "acc_k4"), v2_arm("hf", "acc_k4"), "mean")(p).lstrip("+")),
]  # fmt: skip


# --------------------------------------------------------------------------- serving, letters

SERVE_IN, LETTER_IN = "Serving and memory", "Why the answer is the colour's name"
AGREEMENT = "benchmarks/results/bench_backend_agreement.json"

REST_CLAIMS = [
    said(GUIDE, AGREEMENT, fill("give the same answers: {} / {} at temperature 0",
                                lambda p: str(read_json(p)["same"]),
                                lambda p: str(read_json(p)["n"])), SERVE_IN),
    guide(LETTER_IN, RESTATED, "the quick chain scored {} ({}) at K = 4 while naming the right colour "
          "on {} of the 60 videos", acc(SFT_K4), right(SFT_K4),
          lambda p: str(read_json(p / SFT_K4 / "answers.json")["colour_right"])),
    guide(LETTER_IN, DRILL, "the 5 M model learns it ({} after about 750 drill steps)",
          drill_at("drill-then-still/all-loss/drill.json", 750)),
]  # fmt: skip


# --------------------------------------------------------------------------- not shown, prepared

OPEN_IN = "What is not shown"

OPEN_CLAIMS = [
    guide(OPEN_IN, STALE, "one under {} points at K = 4 is not excluded",
          gap(at_k(0, "acc_k4"), at_k(2, "acc_k4"), "detectable")),
    guide(OPEN_IN, "", "20 steps: {} to {} CPU hours, and a K = 4 gap of {} points found with 80% "
          "power between arms whose seeds agree ({} where one seed stalls)",
          plan_part(HF_REFS, HF_MATCH, 25, 20, 1, 2, "median", "cpu_hours"),
          plan_part(HF_REFS, HF_MATCH, 25, 20, 1, 2, "slowest", "cpu_hours"),
          projected(PARADOX, PARADOX_CELLS, "vanilla_grpo", "anchor_only", "acc_k4", 5),
          projected(PARADOX, PARADOX_CELLS, "vanilla_grpo", "paragrpo", "acc_k4", 5)),
    guide(OPEN_IN, "", "20 steps: {} to {} CPU hours, a K = 4 gap of {} points found with 80% power "
          "({} at three seeds)",
          plan_part(SERVER_REFS, "rl-", 10, 20, 2, 1, "median", "cpu_hours"),
          plan_part(SERVER_REFS, "rl-", 10, 20, 2, 1, "slowest", "cpu_hours"),
          projected(STALE, K_CELLS, "k0", "k2", "acc_k4", 5),
          projected(STALE, K_CELLS, "k0", "k2", "acc_k4", 3)),
]  # fmt: skip

CLAIMS: list[Claim] = [*SFT_CLAIMS, *THREE_CLAIMS, *TWO_CLAIMS, *STALE_CLAIMS, *SAMPLER_CLAIMS,
                       *REST_CLAIMS, *OPEN_CLAIMS]  # fmt: skip
