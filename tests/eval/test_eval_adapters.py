"""Each adapter reads its benchmark's native file format (written by hand in conftest.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from paravt.errors import UserError
from paravt.eval.adapters import canonical_split, load_split
from paravt.eval.adapters.lvbench import split_embedded_options
from paravt.eval.subtitles import parse_srt, select_cues


def by_id(loaded):
    return {s.id: s for s in loaded.samples}


def test_videomme_rows_options_and_missing_video(videomme):
    data, videos = videomme
    loaded = load_split("Video-MME", data, videos)
    s = by_id(loaded)
    assert list(s) == ["001-1", "001-2", "002-1", "003-1"]
    assert s["001-2"].options == ["A man reading", "Coloured test bars", "A dog", "Snow"]
    assert s["002-1"].answer == "D" and s["002-1"].groups == {
        "duration": "medium",
        "task": "Action Recognition",
    }
    assert Path(s["002-1"].video).name == "vmB.mkv"  # found under another extension
    assert not Path(s["003-1"].video).exists()  # missing stays a sample (error at run time)
    assert "subtitle_path" not in s["001-1"].meta


def test_videomme_subtitles_split_finds_srt_and_requires_folder(videomme, tmp_path):
    data, videos = videomme
    s = by_id(load_split("videomme_sub", data, videos))
    assert s["002-1"].split == "videomme_sub"
    assert s["002-1"].meta["subtitle_path"].endswith("vmB.srt")
    assert s["001-1"].meta["subtitle_path"] is None  # a video without subtitles is allowed
    bare = tmp_path / "bare"
    (bare / "videomme").mkdir(parents=True)
    (bare / "videomme" / "x.parquet").write_bytes(
        (data / "videomme" / "test-00000-of-00001.parquet").read_bytes()
    )
    with pytest.raises(UserError, match="subtitle"):
        load_split("videomme_sub", bare, videos)


def test_videomme_nested_json_release(tmp_path):
    rows = [
        {
            "video_id": "001",
            "duration": "short",
            "videoID": "v1",
            "questions": [
                {
                    "question_id": "001-1",
                    "task_type": "T",
                    "question": "Q?",
                    "options": ["A. x", "B. y"],
                    "answer": "A",
                }
            ],
        }
    ]
    (tmp_path / "videomme.json").write_text(json.dumps(rows))
    (s,) = load_split("videomme", tmp_path, tmp_path).samples
    assert (s.id, s.options, s.answer, s.groups["duration"]) == ("001-1", ["x", "y"], "A", "short")


def test_longvideobench_five_options_and_index_answers(longvideobench):
    s = by_id(load_split("longvideobench", *longvideobench))
    assert s["lvA_0"].options == ["red", "green", "blue", "white", "black"]
    assert s["lvA_0"].answer == "E"
    assert s["lvB_0"].answer == "C"
    assert s["lvA_0"].groups == {"duration": "15", "task": "TOS"}
    assert not Path(s["lvGone_0"].video).exists()


def test_lvbench_embedded_options_and_multi_label_types(lvbench):
    s = by_id(load_split("lvbench", *lvbench))
    assert s["101"].question == "What animal is the main character?"
    assert s["101"].options == ["a bear", "a rabbit", "a fox", "a bird"]
    assert s["102"].answer == "A"  # "(A)" normalised
    assert s["102"].groups["task"] == ["temporal grounding", "event understanding"]
    assert s["201"].options == ["a coin", "a pancake", "a card", "a hat"]  # all on one line
    assert Path(s["101"].video).name == "lvbA.webm"


def test_split_embedded_options_keeps_multiline_option_text():
    stem, opts = split_embedded_options("Why?\n(A) because\nit rained\n(B) no reason")
    assert stem == "Why?" and opts == ["because it rained", "no reason"]


def test_mlvu_answer_text_matching_and_unmatched_answer_reported(mlvu):
    loaded = load_split("mlvu_dev", *mlvu)
    s = by_id(loaded)
    assert s["1_plotQA/0"].answer == "B"  # "test bars " matches "Test bars" loosely
    assert s["1_plotQA/1"].answer is None
    assert "matches no candidate" in s["1_plotQA/1"].problem  # "Pancakes" is not "Pancake"
    assert s["1_plotQA/2"].answer == "B"
    assert Path(s["2_needle/0"].video).is_file()  # found in the task's video folder
    assert [ref for ref, _ in loaded.skipped] == ["8_sub_scene.json[0]"]


def test_mmvu_open_ended_rows_with_empty_choices_are_open_ended(mmvu):
    """The release writes open-ended rows with ``{"A": "", …, "E": ""}``: not annotation errors."""
    loaded = load_split("mmvu", *mmvu)
    s = by_id(loaded)
    for sid, gold in (("oe-1", "a pancake"), ("oe-2", "rabbit")):
        assert s[sid].question_type == "oe" and s[sid].problem is None
        assert s[sid].options == [] and s[sid].answer == gold
        assert s[sid].groups["format"] == "open-ended"
    assert [x.problem for x in loaded.samples] == [None] * 4


def test_mmvu_kind_comes_from_question_type_and_empty_choices_are_dropped(tmp_path):
    rows = [
        # four real choices and an empty fifth key: a four-option question
        {
            "id": "mc4",
            "video": "Art/0.mp4",
            "question": "Q?",
            "question_type": "multiple-choice",
            "choices": {"A": "w", "B": "x", "C": "y", "D": "z", "E": ""},
            "answer": "D",
            "metadata": {"subject": "Art"},
        },
        # multiple choice by question_type, but every choice empty: an annotation problem
        {
            "id": "mc0",
            "video": "Art/1.mp4",
            "question": "Q?",
            "question_type": "multiple-choice",
            "choices": {"A": "", "B": ""},
            "answer": "A",
            "metadata": {"subject": "Art"},
        },
        # open-ended by question_type even though a choice has text
        {
            "id": "oe",
            "video": "Art/2.mp4",
            "question": "Q?",
            "question_type": "open-ended",
            "choices": {"A": "stray", "B": ""},
            "answer": "a cat",
            "metadata": {"subject": "Art"},
        },
    ]
    (tmp_path / "validation.json").write_text(json.dumps(rows))
    s = by_id(load_split("mmvu", tmp_path, tmp_path))
    assert (s["mc4"].question_type, s["mc4"].options, s["mc4"].answer) == (
        "mcq",
        ["w", "x", "y", "z"],
        "D",
    )
    assert s["mc4"].problem is None
    assert s["mc0"].question_type == "mcq" and "no non-empty choices" in s["mc0"].problem
    assert (s["oe"].question_type, s["oe"].options, s["oe"].answer) == ("oe", [], "a cat")


def test_lvbench_flat_layout_one_question_per_line(lvbench_flat):
    loaded = load_split("lvbench", *lvbench_flat)
    s = by_id(loaded)
    assert list(s) == ["301", "302"]
    assert s["301"].question == "What animal is the main character?"
    assert s["301"].options == ["a bear", "a rabbit", "a fox", "a bird"] and s["301"].answer == "B"
    assert s["302"].groups["task"] == ["key information retrieval", "reasoning"]
    assert s["302"].meta == {"video_key": "lvbB", "time_reference": "00:05-00:08"}
    assert Path(s["302"].video).name == "lvbB.mkv"
    assert [ref for ref, _ in loaded.skipped] == ["lvbench.jsonl:3"]  # no video_key: reported


def test_lvbench_layout_is_chosen_per_file(lvbench, lvbench_flat):
    from paravt.eval.adapters._files import read_jsonl
    from paravt.eval.adapters.lvbench import file_layout

    assert file_layout(read_jsonl(lvbench[0] / "video_info.meta.jsonl")) == "nested"
    assert file_layout(read_jsonl(lvbench_flat[0] / "lvbench.jsonl")) == "flat"
    assert len(load_split("lvbench", *lvbench).samples) == 3  # the nested file still reads


def test_mmvu_multiple_choice_and_open_ended(mmvu):
    s = by_id(load_split("mmvu", *mmvu))
    assert (
        s["mc-5"].question_type == "mcq" and s["mc-5"].answer == "E" and len(s["mc-5"].options) == 5
    )
    assert s["mc-text"].answer == "B"  # answer given as the option's text
    assert (
        s["oe-1"].question_type == "oe"
        and s["oe-1"].options == []
        and s["oe-1"].answer == "a pancake"
    )
    assert s["oe-1"].groups == {"subject": "Cooking", "format": "open-ended"}
    assert Path(s["mc-5"].video).is_file()  # URL mapped to videos/Art/0.mp4


def test_charades_lines_gold_kept_as_annotated(charades):
    loaded = load_split("charades-sta", *charades)
    s = by_id(loaded)
    assert s["CHA2#2"].answer == [8.0, 12.0]  # ends after the 10.4 s video: not clamped
    assert s["CHA2#2"].question == "person flips a pancake in a pan."
    assert s["CHA2#2"].question_type == "tvg"
    assert len(loaded.samples) == 4
    assert loaded.skipped == [
        ("charades_sta_test.txt:4", "no '##' between the span and the sentence")
    ]


@pytest.mark.parametrize(
    "split", ["videomme", "longvideobench", "lvbench", "mlvu", "mmvu", "charades"]
)
def test_missing_annotation_file_names_it(split, tmp_path):
    with pytest.raises(UserError) as err:
        load_split(split, tmp_path, tmp_path)
    assert str(tmp_path) in str(err.value)


def test_missing_data_folder_and_unknown_benchmark(tmp_path):
    with pytest.raises(UserError, match="folder not found"):
        load_split("lvbench", tmp_path / "nope", tmp_path)
    with pytest.raises(UserError, match="unknown benchmark"):
        canonical_split("kinetics")


def test_srt_selection_keeps_only_lines_at_frame_times():
    cues = parse_srt(
        "\ufeff"
        + """1\r\n00:00:00,000 --> 00:00:00,900\r\n<i>Hi</i>\r\n\r\n2\r\n00:01:02,500 --> 00:01:04,000\r\nLater line\r\ncontinued\r\n"""
    )
    assert [(c.start, c.end, c.text) for c in cues] == [
        (0.0, 0.9, "Hi"),
        (62.5, 64.0, "Later line continued"),
    ]
    assert [c.text for c in select_cues(cues, [0.5, 10.0])] == ["Hi"]
    assert select_cues(cues, [1.0, 61.0]) == []


def test_repeated_ids_are_renamed_not_lost(tmp_path):
    rows = [
        {
            "id": "q",
            "video": "v.mp4",
            "question": f"Q{i}?",
            "choices": {},
            "answer": "x",
            "question_type": "open-ended",
            "metadata": {"subject": "S"},
        }
        for i in range(3)
    ]
    (tmp_path / "validation.json").write_text(json.dumps(rows))
    loaded = load_split("mmvu", tmp_path, tmp_path)
    assert [s.id for s in loaded.samples] == ["q", "q~2", "q~3"]
    assert loaded.renamed == [("q", "q~2"), ("q", "q~3")]


def test_a_bad_parquet_is_an_annotation_error_and_a_reader_bug_is_not(tmp_path, monkeypatch):
    import pyarrow.parquet as pq

    from paravt.eval.adapters._files import AnnotationError, read_rows

    bad = tmp_path / "rows.parquet"
    bad.write_text("not parquet")
    with pytest.raises(AnnotationError, match="rows.parquet: cannot read as parquet"):
        read_rows(bad)
    with pytest.raises(AnnotationError, match="cannot read as parquet"):
        read_rows(tmp_path / "missing.parquet")

    def broken_reader(path):
        raise TypeError("a bug in the reader")

    monkeypatch.setattr(pq, "read_table", broken_reader)
    with pytest.raises(TypeError, match="a bug in the reader"):  # not relabelled as bad input
        read_rows(bad)
