"""The answer-reading rules of other harnesses (``paravt.eval.answer_rules``), each on
hand-computed cases, and the three scoring variants computed from one results file."""

from __future__ import annotations

import json

import pytest

from paravt.eval.answer_rules import (
    longvideobench_letter,
    lvbench_letter,
    reference_letter,
    videomme_letter,
)
from paravt.eval.metrics import summarize_results
from paravt.eval.rescore import rescore
from paravt.eval.results import ResultRow
from paravt.eval.scoring import score_sample, score_variants


@pytest.mark.parametrize(
    "text, letter",
    [
        # (a) the first <answer> body: one letter, else its first standalone capital A-J
        ("<think>C looks tempting</think><answer>B</answer>", "B"),
        ("<think>hmm</think><answer>Option (D), the dog</answer><answer>A</answer>", "D"),
        # (b) the whole text is one letter
        ("  C\n", "C"),
        # (c) "answer is X" / "Answer: X" before (d): not the pronoun "I"
        ("I think the answer is E", "E"),
        ("Answer: (C) because", "C"),
        # (a) finds nothing in the body, so the later steps read the whole text
        ("<answer>the dog</answer> so B", "B"),
        # (d) the first standalone capital A-J anywhere: the first-letter trap
        ("A man opens the door.", "A"),
        # (e) the first character
        ("dog", "d"),
        ("b", "b"),  # case-sensitive: never equal to the gold "B"
        ("<answer>They flip a pancake.</answer>", "<"),
        ("", None),
    ],
)
def test_reference_rule_first_hit_wins(text, letter):
    assert reference_letter(text) == letter


@pytest.mark.parametrize(
    "text, letter",
    [
        ("The answer is C.", "C"),
        ("Best answer: (B)", "B"),
        ("A man is cooking", "A"),  # first capital A-D, the article included
        ("Coloured test bars", "C"),  # even inside a word
        ("ANSWER: B", "A"),  # the lead-ins are deleted only as written
        ("E", None),
        ("the video shows a dog", None),
        ("the video shows a person cooking something in a small kitchen today", None),  # 11 words
        ("the person in the video, who is cooking, picks option B eventually", "B"),
    ],
)
def test_videomme_rule(text, letter):
    assert videomme_letter(text) == letter


@pytest.mark.parametrize(
    "text, letter",
    [
        ("(B) a rabbit", "B"),
        ("B) a rabbit", "B"),
        ("The answer is (C).", "C"),  # before ")" then after "("
        ("A man walks in.", "A"),  # first token, first character
        ("rabbit", "r"),
        ("() x", None),
        ("", None),
    ],
)
def test_lvbench_rule(text, letter):
    assert lvbench_letter(text) == letter


@pytest.mark.parametrize(
    "text, letter",
    [
        ("The answer is E", "E"),
        ("Definitely B", "D"),
        ("(c) the hat", None),
        ("none of them", None),
    ],
)
def test_longvideobench_rule_first_capital_a_to_e_and_no_random_fallback(text, letter):
    assert longvideobench_letter(text) == letter


MCQ = {
    "question_type": "mcq",
    "options": ["A man reading", "Coloured test bars", "A dog", "Snow"],
    "answer": "B",
}


@pytest.mark.parametrize(
    "split, answer, robust, bench, paper",
    [
        ("videomme", "Coloured test bars", "B", "C", "<"),
        ("lvbench", "(B) test bars", "B", "B", "B"),
        ("longvideobench", "Because bars", None, "B", "<"),  # the "B" of "Because"
        ("mlvu", "Coloured test bars", "B", "B", "<"),  # no published letter rule: robust reading
        ("mmvu", "b", "B", "B", "<"),  # lower case: only paravt reads it
    ],
)
def test_variants_read_the_same_answer_differently(split, answer, robust, bench, paper):
    sample = {**MCQ, "split": split}
    prediction = f"<think>x</think><answer>{answer}</answer>"
    r = score_sample(sample, prediction, answer, None)
    v = score_variants(sample, prediction, answer, None, r)
    assert (r["extracted"], v["benchmark"]["extracted"], v["paper"]["extracted"]) == (
        robust,
        bench,
        paper,
    )
    assert v["paper"]["correct"] == float(paper == "B")


def _line(i, split, sample, prediction, status="ok", tools=None):
    error = None if status == "ok" else {"kind": "video_missing", "message": "gone"}
    return {
        "id": f"s{i}",
        "index": i,
        "split": split,
        "status": status,
        "error": error,
        "prediction": prediction,
        "answer_text": None,
        "sample": sample,
        "tools": tools or {"executed": 0, "parseable": 0, "turns": 1},
    }


def test_rescore_adds_all_variants_to_an_old_results_file(tmp_path):
    """A file written before the variants were stored (``score`` only) gains all three."""
    oe = {"split": "mmvu", "question_type": "oe", "answer": "a pancake", "question": "What?"}
    mc = {**MCQ, "split": "mmvu"}
    lines = [
        _line(0, "mmvu", oe, "<answer>a pancake</answer>"),
        _line(1, "mmvu", mc, "<answer>Coloured test bars</answer>"),
        _line(2, "mmvu", mc, "<answer>B</answer>", tools={"executed": 2, "parseable": 3}),
    ]
    for r in lines:
        r["score"] = {"extracted": None, "correct": 0.0}  # stale: re-scored below
    path = tmp_path / "results.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in lines))
    out = rescore(path, "paper")
    v = out["metrics"]["variants"]
    assert v["robust"]["accuracy"] == pytest.approx(3 / 3)
    assert v["robust"]["open_ended_accuracy"] == 1.0
    # the reference: the open-ended answer reads as "<", the option text as "<", "B" as B
    assert (
        v["paper"]["accuracy"] == pytest.approx(1 / 3) and v["paper"]["open_ended_accuracy"] == 0.0
    )
    assert out["headline"] == v["paper"]
    # no "attempted" in old lines: the engine's parseable count stands in
    assert out["metrics"]["tools"]["avg_attempted"] == pytest.approx(1.0)
    assert out["metrics"]["tools"]["avg_calls"] == pytest.approx(2 / 3)


def test_paper_leaves_charades_errors_out_of_the_denominator_only():
    tvg = {"split": "charades", "question_type": "tvg", "answer": [0.0, 2.0]}
    lines = [
        _line(0, "charades", tvg, "0 - 2"),
        _line(1, "charades", tvg, "1 - 2"),
        _line(2, "charades", tvg, None, status="error"),
    ]
    for r in lines:
        r["score"] = score_sample(tvg, r["prediction"], None, r["error"])
        r["scores"] = score_variants(tvg, r["prediction"], None, r["error"], r["score"])
    v = summarize_results("charades", [ResultRow.from_dict(r) for r in lines])["variants"]
    assert v["robust"]["miou"] == v["benchmark"]["miou"] == pytest.approx(1.5 / 3)
    assert v["paper"]["miou"] == pytest.approx(1.5 / 2) and v["paper"]["n_counted"] == 2
    mc = [
        {**_line(i, "lvbench", {**MCQ, "split": "lvbench"}, "A man", status=s)}
        for i, s in enumerate(("ok", "error"))
    ]
    for r in mc:
        r["score"] = {"extracted": None, "correct": 0.0}
        r["scores"] = {"benchmark": {"correct": 1.0}, "paper": {"correct": 1.0}}
    mv = summarize_results("lvbench", [ResultRow.from_dict(r) for r in mc])["variants"]
    assert mv["paper"]["accuracy"] == 1.0  # MCQ: every sample stays in the denominator


def test_summary_table_prints_counts_as_counts():
    from rich.console import Console

    from paravt.eval.report import summary_table

    tvg = {"split": "charades", "question_type": "tvg", "answer": [0.0, 2.0]}
    lines = [_line(0, "charades", tvg, "0 - 2"), _line(1, "charades", tvg, None, status="error")]
    for r in lines:
        r["score"] = score_sample(tvg, r["prediction"], None, r["error"])
    summary = {
        "benchmark": "charades",
        "variant": "paper",
        "metrics": summarize_results("charades", [ResultRow.from_dict(r) for r in lines]),
    }
    console = Console(width=200, record=True)
    console.print(summary_table(summary))
    text = console.export_text()
    assert "paper *: n_counted" in text and "100.0" in text
    row = next(x for x in text.splitlines() if "n_counted" in x)
    assert row.rstrip(" │").split()[-1] == "1"  # one sample counted, not "100.0"
