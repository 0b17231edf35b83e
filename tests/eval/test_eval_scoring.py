"""Per-sample scoring, split metrics in both variants, the open-ended judge, the results file."""

from __future__ import annotations

import pytest

from paravt.eval.judge import HttpJudge, RuleJudge
from paravt.eval.metrics import summarize_results
from paravt.eval.results import ResultRow, ResultsFile, read_results
from paravt.eval.scoring import score_sample

MCQ = {
    "question_type": "mcq",
    "options": ["A man reading", "Coloured test bars", "A dog", "Snow"],
    "answer": "B",
}


@pytest.mark.parametrize(
    "answer, extracted, correct",
    [
        ("B", "B", 1.0),
        ("(B)", "B", 1.0),
        ("The answer is B.", "B", 1.0),
        ("Coloured test bars", "B", 1.0),  # the option's own text
        ("A man is cooking", None, 0.0),  # first-letter trap: not option A
        ("E", None, 0.0),  # no option E here
        ("", None, 0.0),
    ],
)
def test_mcq_letter_extraction(answer, extracted, correct):
    out = score_sample(MCQ, prediction=answer, answer_text=answer, error=None)
    assert out == {"extracted": extracted, "correct": correct}


def test_mcq_falls_back_to_protocol_extraction_of_raw_text():
    out = score_sample(
        MCQ,
        prediction="<think>bars everywhere</think><answer>B</answer>",
        answer_text=None,
        error=None,
    )
    assert out["correct"] == 1.0


def test_grounding_hull_iou_with_gold_beyond_video():
    gold = {"question_type": "tvg", "answer": [8.0, 12.0]}  # video is 10.4 s long
    out = score_sample(gold, "x", "9 - 10.4", None)
    assert out["extracted"] == [9.0, 10.4]
    assert out["iou"] == pytest.approx(1.4 / 4.0)  # not 1.4/2.4 as a clamped gold would give
    assert score_sample(gold, "x", "[14, 20]", None)["iou"] == 0.0
    assert score_sample(gold, "x", "no idea", None) == {"extracted": None, "iou": 0.0}


def test_errors_score_zero():
    assert score_sample(MCQ, "B", "B", {"kind": "backend"})["correct"] == 0.0
    assert (
        score_sample({"question_type": "tvg", "answer": [1, 2]}, "1-2", "1-2", {"kind": "video"})[
            "iou"
        ]
        == 0.0
    )


def test_rule_judge_open_ended():
    j = RuleJudge()
    assert j.judge("q", "a pancake", "It is a pancake.")["correct"] == 1.0
    assert j.judge("q", "a pancake", "pancakes")["correct"] == 0.0
    assert j.judge("q", "rabbit", "A rabbit")["f1"] == 1.0


def _result(i, correct, task, kind=None):
    return ResultRow.from_dict(
        {
            "id": f"s{i}",
            "index": i,
            "status": "error" if kind else "ok",
            "error": {"kind": kind, "message": "x"} if kind else None,
            "score": {"correct": float(correct)},
            "tools": {"executed": i % 2, "turns": 1},
            "sample": {"groups": {"task": task}, "question_type": "mcq"},
        }
    )


def test_mlvu_variants_differ_macro_vs_pooled_and_errors_in_denominator():
    results = [
        _result(0, 1, "plotQA"),
        _result(1, 1, "plotQA"),
        _result(2, 0, "plotQA"),
        _result(3, 0, "needle", kind="backend"),
    ]
    m = summarize_results("mlvu", results)
    assert m["variants"]["benchmark"]["m_avg"] == pytest.approx((2 / 3 + 0) / 2)
    assert m["variants"]["paper"]["accuracy"] == pytest.approx(2 / 4)
    assert m["errors"] == 1 and m["error_kinds"] == {"backend": 1} and m["n"] == 4
    assert m["by_group"]["task"]["needle"] == {"n": 1, "correct": 0.0, "accuracy": 0.0}
    assert m["tools"]["usage_rate"] == 0.5 and m["tools"]["avg_calls"] == 0.5


def test_charades_metrics():
    res = [ResultRow(str(i), i, score={"iou": v}) for i, v in enumerate([1.0, 0.35, 0.0, 0.6])]
    v = summarize_results("charades", res)["variants"]["benchmark"]
    assert v["miou"] == pytest.approx(1.95 / 4)
    assert (v["r@0.3"], v["r@0.5"], v["r@0.7"]) == (0.75, 0.5, 0.25)


def test_http_judge_verdicts_and_fallback_on_failure(judge_server):
    url = f"http://127.0.0.1:{judge_server.server_address[1]}/v1"
    judge = HttpJudge(base_url=url, model="grader", retries=1)
    assert judge.judge("What is flipped?", "a pancake", "They flip a big pancake")["correct"] == 1.0
    no = judge.judge("Which animal?", "rabbit", "a hare")
    assert no == {"correct": 0.0, "f1": 0.0, "judged_by": "http"}
    failed = judge.judge("Which animal?", "rabbit", "crash rabbit")
    assert failed["judged_by"] == "rule-fallback" and "HTTP 500" in failed["judge_error"]
    assert judge_server.requests[0]["model"] == "grader"
    assert judge_server.requests[0]["temperature"] == 0.0
    assert judge.describe()["base_url"] == url


def test_results_file_repairs_torn_tail_and_never_duplicates(tmp_path):
    path = tmp_path / "results.jsonl"
    with ResultsFile(path) as w:
        w.append(ResultRow("a", 1))
        w.append(ResultRow("b", 2))
    with open(path, "a") as fh:
        fh.write('{"id": "c", "v"')  # killed mid-write
    assert [r.id for r in read_results(path)] == ["a", "b"]
    with ResultsFile(path) as w:
        w.append(ResultRow("c", 3))
    assert [r.id for r in read_results(path)] == ["a", "b", "c"]
    assert path.read_text().count("\n") == 3


def test_results_file_keeps_complete_last_line_without_newline(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_text('{"id": "a"}\n{"id": "b"}')
    with ResultsFile(path) as w:
        w.append(ResultRow("c"))
    assert [r.id for r in read_results(path)] == ["a", "b", "c"]


def test_malformed_middle_line_is_an_error(tmp_path):
    from paravt.errors import UserError

    path = tmp_path / "r.jsonl"
    path.write_text('{"id": "a"}\nnot json\n{"id": "b"}\n')
    with pytest.raises(UserError, match=":2:"):
        read_results(path)


@pytest.mark.parametrize(
    "kind, message, expected",
    [
        ("engine", "cannot build the prompt: ChatTemplateError: ...", "engine"),
        ("video", "cannot read video x.mp4: VideoOpenError: ...", "video"),
        ("backend", "generation failed at turn 0: HTTP 500", "backend"),
        (None, "cannot build the tool turn: ValueError: ...", "engine"),  # old record, no kind
        (None, "generation failed at turn 1: timeout", "backend"),
    ],
)
def test_episode_error_kinds_are_the_documented_ones(kind, message, expected):
    """An engine-side episode failure is an ``engine`` error, which --retry-errors retries."""
    from paravt.eval.episodes import row_of
    from paravt.eval.results import ResultError
    from paravt.eval.runner import RETRYABLE_KINDS
    from paravt.eval.samples import EvalSample
    from paravt.schema.episodes import EpisodeRecord

    rec = EpisodeRecord("s1", "v.mp4", "Q?", "mcq", ["a", "b"], "A", "parallel", "frames")
    rec.status, rec.error, rec.error_kind = "error", message, kind
    out = row_of(rec, EvalSample("s1", "mlvu", "v.mp4", "Q?", "mcq", ["a", "b"], "A"), 3, "mlvu")
    assert out.error == ResultError(expected, message) and out.status == "error"
    assert out.answer_text is None and (out.id, out.index) == ("s1", 3)
    assert (expected in RETRYABLE_KINDS) == (expected != "video")


@pytest.mark.parametrize(
    "prediction, reference, match",
    [
        ("The Red-Car.", "red car", True),  # case, punctuation, article
        ("It is a red car parked outside", "red car", True),  # whole phrase inside
        ("a redcar", "red car", False),
        ("", "red car", False),
    ],
)
def test_rule_judge_normalises_like_the_training_reward(prediction, reference, match):
    """The evaluation rule reads case, punctuation and articles as the training reward does; it
    keeps its own hedge rule (docs/ANSWERS.md, "Evaluation"), and a hyphen splits words for it,
    where the reward keeps a hyphenated word whole."""
    from paravt.eval.judge import rule_match
    from paravt.rewards import exact_match, oe_tokens

    assert rule_match(prediction, reference) is match
    equal = oe_tokens(prediction) == oe_tokens(reference) and bool(oe_tokens(reference))
    if equal:
        assert rule_match(prediction, reference)
        assert exact_match(prediction.replace("-", " "), reference) == 1.0


# -- reference scoring defects, pinned in every variant ----------------------------------------


@pytest.mark.parametrize("reply", [".", "<answer>.</answer>", "...", " "])
def test_a_reply_without_a_letter_never_matches_gold_a(reply):
    """The reference normalised the letter A to an empty string, so a reply that normalised to
    nothing (".") scored as option A. Here it is no answer under every variant."""
    from paravt.eval.scoring import score_variants

    gold_a = dict(MCQ, answer="A")
    robust = score_sample(gold_a, reply, reply, None)
    assert robust == {"extracted": None, "correct": 0.0}
    for variant, scored in score_variants(gold_a, reply, reply, None, robust).items():
        assert scored["correct"] == 0.0, variant
    # the letter itself still scores
    assert score_sample(gold_a, "A", "A", None)["correct"] == 1.0


@pytest.mark.parametrize(
    ("reply", "gold", "iou"),
    [
        ("[1.2,3]", [1.2, 3.0], 1.0),
        ("[1.2,3]", [3.0, 12.0], 0.0),  # the reference read "[1.2,3]" as [12, 3]
        ("[12,3]", [3.0, 12.0], 1.0),
        ("[12,3]", [1.2, 3.0], 0.0),
    ],
)
def test_a_decimal_point_in_a_bracketed_span_is_kept(reply, gold, iou):
    from paravt.eval.scoring import score_variants

    sample = {"question_type": "tvg", "answer": gold}
    robust = score_sample(sample, reply, reply, None)
    assert robust["iou"] == pytest.approx(iou)
    for scored in score_variants(sample, reply, reply, None, robust).values():
        assert scored["iou"] == pytest.approx(iou)
