"""Episode engine behaviour, driven by a scripted generator over real videos and real tools.

The scripted backend replays completions that call tools in parallel — malformed blocks, calls
over the cap, windows outside the video, no final answer — and the tests assert the tool turns,
the errors the model is told, the forced answer, and the token stream against the tiny model's
chat template.
"""

from __future__ import annotations

import logging

import pytest
from agent_helpers import call, small_config

from paravt.agent.backend import Backend
from paravt.agent.engine import EpisodeEngine
from paravt.backends.openai import OpenAIBackend
from paravt.backends.scripted import ScriptedBackend
from paravt.schema.episodes import EpisodeInput, Generation
from paravt.video.source import VideoSource

OPTIONS = ["He flips a pancake", "He opens a door"]


def tool_texts(messages, after_assistant: int) -> list[str]:
    """Texts of the tool messages that follow the n-th assistant message."""
    seen, out = -1, []
    for m in messages:
        if m["role"] == "assistant":
            seen += 1
            continue
        if seen == after_assistant and m["role"] == "tool":
            out.append(m["content"][-1]["text"])
    return out


def generated_runs(rec) -> list[list[int]]:
    runs, cur = [], []
    for tid, m in zip(rec.stream.token_ids, rec.stream.loss_mask, strict=True):
        if m:
            cur.append(tid)
        elif cur:
            runs.append(cur)
            cur = []
    if cur:
        runs.append(cur)
    return runs


def assert_stream_matches_template(rec, codec):
    """The concatenated stream equals the template's rendering of the same conversation."""
    full = codec.render(rec.messages, tools=rec.tools)
    expected = codec.expand(codec.encode_text(full), [im.grid_thw for im in rec.stream.images])
    assert rec.stream.token_ids == expected[: len(rec.stream.token_ids)]
    assert (
        codec.decode(expected[len(rec.stream.token_ids) :]) == "\n"
    )  # the template's trailing newline


@pytest.fixture
def messy_script():
    turn0 = (
        "<think>Check the start and the end of the clip.</think>\n"
        + call(0, 3)
        + '\n<tool_call>{"name": "crop_video", "arguments": {"start_time": 2 "end_time": 4}}</tool_call>\n'
        + call(50, 60)
        + "\n"
        + call(4, 6)
        + "\n"
        + call(7, 9)
    )
    turn1 = "<think>One more look.</think>\n" + call(8, 10)
    forced = "<think>Enough.</think>\nHe flips a pancake"
    return [turn0, turn1, forced]


def test_parallel_episode_tool_turns_errors_forced_answer_and_stream(
    q3_processor, pancake, messy_script
):
    backend = ScriptedBackend(messy_script, processor=q3_processor)
    cfg = small_config(max_turns=2, max_parallel=3)
    [rec] = EpisodeEngine(backend, cfg).run(
        [EpisodeInput("e1", pancake, "What does the man do?", OPTIONS, "mcq")]
    )
    assert rec.status == "ok", rec.error
    statuses = [(c.turn, c.status, c.error_kind) for c in rec.calls]
    assert statuses[0] == (0, "ok", None)
    assert statuses[1][1:] == ("error", "invalid_json")
    assert statuses[2][1] == "error" and statuses[2][2] not in (None, "over_cap")  # outside video
    assert statuses[3] == (0, "ok", None)
    assert statuses[4] == (0, "error", "over_cap")
    assert statuses[5] == (1, "ok", None)
    # one tool message per call block, in text order, errors spelled out for the model
    texts0 = tool_texts(rec.messages, 0)
    assert len(texts0) == 5
    assert "frames from 0.0s to 3.0s" in texts0[0]
    assert "at most 3 crop_video calls run per turn" in texts0[4]
    assert texts0[2] == rec.calls[2].error and "start_time" in texts0[2]  # names the bad argument
    # frames of executed windows go back as images; errors carry none
    tool_msgs = [m for m in rec.messages if m["role"] == "tool"]
    assert sum(p["type"] == "image" for p in tool_msgs[0]["content"]) == rec.calls[0].n_frames > 0
    assert all(p["type"] == "text" for p in tool_msgs[1]["content"])
    # after the last tool round: the forced-answer message, then a short forced generation
    assert rec.messages[-2]["role"] == "user" and "answer now" in rec.messages[-2]["content"]
    forced_req = backend.batches[-1][0]
    assert forced_req.forced and forced_req.max_new_tokens == 64
    assert rec.forced and rec.answer_source == "forced"
    assert rec.prediction == "He flips a pancake"
    assert len(rec.turns) == 3 and rec.turns[-1].forced
    tc = rec.tool_counts
    assert (tc.parseable_calls, tc.executed_ok, tc.parse_errors, tc.over_cap) == (5, 3, 1, 1)
    assert tc.errors == 3
    # token stream: prompt + generated + tool turns, mask on generated tokens only
    codec = backend.codec
    assert_stream_matches_template(rec, codec)
    assert sum(rec.stream.loss_mask) == sum(len(codec.encode_text(t)) + 1 for t in messy_script)
    assert (
        rec.tokens.total
        == len(rec.stream.token_ids)
        == len(rec.stream.loss_mask)
        == len(rec.stream.logprobs)
    )
    n_pad = sum(t == codec.image_token_id for t in rec.stream.token_ids)
    assert rec.tokens.image == n_pad
    assert (
        rec.stream.pixel_values.shape[0]
        == int(rec.stream.image_grid_thw.prod(-1).sum())
        == n_pad * 4
    )
    assert len(rec.stream.images) == 4 + sum(c.n_frames for c in rec.calls if c.status == "ok")
    assert [im.source for im in rec.stream.images][:4] == ["overview"] * 4
    # each round's calls ran in one batched tool pass
    assert len(backend.batches) == 3


@pytest.mark.parametrize("arch", ["qwen3-vl", "qwen2.5-vl"])
def test_generated_tokens_are_never_retokenized(arch, request, pancake):
    from transformers import AutoProcessor

    folder = request.getfixturevalue("tiny_qwen3_dir" if arch == "qwen3-vl" else "tiny_qwen25_dir")
    q3_processor = AutoProcessor.from_pretrained(str(folder))
    script = [
        "<think>Look at the middle.</think>" + call(3, 6),
        "<think>Seen.</think><answer>A</answer>",
    ]
    backend = ScriptedBackend(script, processor=q3_processor, tokenize="pieces", logprobs=True)
    cfg = small_config(think_prefix="<think>\n")
    [rec] = EpisodeEngine(backend, cfg).run([EpisodeInput("e", pancake, "What?", OPTIONS)])
    assert rec.status == "ok" and rec.prediction == "A"
    codec = backend.codec
    returned = [g.token_ids for batch in backend.outputs for g in batch]
    runs = generated_runs(rec)
    assert runs == returned
    # the scripted ids are not what the tokenizer makes of the text: re-tokenizing would differ
    assert any(codec.encode_text(codec.decode(r[:-1])) != r[:-1] for r in runs)
    # logprobs sit exactly on generated tokens
    lp = [x for x, m in zip(rec.stream.logprobs, rec.stream.loss_mask, strict=True) if m]
    assert lp == [-0.001 * (i + 1) for r in runs for i in range(len(r))]
    assert all(
        x == 0.0 for x, m in zip(rec.stream.logprobs, rec.stream.loss_mask, strict=True) if not m
    )
    # the think prefix is prompt, and the turn text the rewards read includes it
    assert rec.stream.prompt_len == rec.stream.loss_mask.index(1)
    assert codec.decode(rec.stream.token_ids[: rec.stream.prompt_len]).endswith(
        "<|im_start|>assistant\n<think>\n"
    )
    assert rec.turns[0].text.startswith("<think>\n<think>Look")
    assert rec.prefix == "<think>\n"
    # textually the stream is still the conversation the template renders
    full = codec.render(rec.messages, tools=rec.tools)
    expected = codec.expand(codec.encode_text(full), [im.grid_thw for im in rec.stream.images])
    assert codec.decode(rec.stream.token_ids) + "\n" == codec.decode(expected)
    assert codec.arch == arch and rec.stream.pixel_values.shape[0] == int(
        rec.stream.image_grid_thw.prod(-1).sum()
    )


def test_sequential_mode_runs_one_call_per_turn(q3_processor, pancake):
    script = [call(0, 2) + call(3, 5) + call(6, 8), "<answer>B</answer>"]
    backend = ScriptedBackend(script, processor=q3_processor)
    [rec] = EpisodeEngine(backend, small_config(mode="sequential")).run(
        [EpisodeInput("s", pancake, "Q?", OPTIONS)]
    )
    assert [c.status for c in rec.calls] == ["ok", "error", "error"]
    assert [c.error_kind for c in rec.calls[1:]] == ["sequential_extra"] * 2
    assert "only one crop_video call runs per turn" in tool_texts(rec.messages, 0)[1]
    assert "Only one call runs per turn" in rec.messages[0]["content"]
    assert rec.prediction == "B" and not rec.forced
    assert_stream_matches_template(rec, backend.codec)


def test_direct_mode_answers_in_one_turn_and_runs_no_tool(q3_processor, pancake):
    script = ["<think>The overview is enough.</think>" + call(0, 2) + "<answer>A</answer>"]
    backend = ScriptedBackend(script, processor=q3_processor)
    [rec] = EpisodeEngine(backend, small_config(mode="direct")).run(
        [EpisodeInput("d", pancake, "Q?", OPTIONS)]
    )
    assert rec.prediction == "A" and len(rec.turns) == 1 and len(backend.batches) == 1
    assert [c.status for c in rec.calls] == ["ignored"]
    assert "crop_video" not in rec.messages[0]["content"]
    assert not any(m["role"] == "tool" for m in rec.messages)


def test_subagent_evidence_is_one_batched_generate_with_truncated_summaries(
    q3_processor, pancake, bunny
):
    script = {
        "a": [call(0, 3) + call(5, 8), "<answer>A</answer>"],
        "b": [call(1, 4), "<answer>B</answer>"],
    }
    backend = ScriptedBackend(script, processor=q3_processor, subagent="a person " * 40)
    cfg = small_config(evidence="subagent", subagent_max_tokens=12)
    recs = EpisodeEngine(backend, cfg).run(
        [
            EpisodeInput("a", pancake, "Who cooks?", OPTIONS),
            EpisodeInput("b", bunny, "What animal?", OPTIONS),
        ]
    )
    assert [r.status for r in recs] == ["ok", "ok"]
    roles = [[r.role for r in b] for b in backend.batches]
    assert roles == [["main", "main"], ["subagent"] * 3, ["main", "main"]]
    sub_req = backend.batches[1][0]
    assert (
        "Who cooks?" in sub_req.messages[0]["content"][-1]["text"]
    )  # the sub-agent knows the question
    assert sub_req.max_new_tokens == 12
    a = recs[0]
    texts = tool_texts(a.messages, 0)
    assert len(texts) == 2 and all(t.endswith(" [truncated]") for t in texts)
    assert texts[0].startswith("Summary of 0.0s to 3.0s:")
    # evidence mode subagent: the main agent sees no window frames, only the overview
    assert [im.source for im in a.stream.images] == ["overview"] * 4
    assert len(a.subagents) == 2 and len(recs[1].subagents) == 1
    sub = a.subagents[0]
    assert (
        sum(sub.stream.loss_mask) == 12 and sub.stream.prompt_len == len(sub.stream.token_ids) - 12
    )
    assert len(sub.stream.images) == a.calls[0].n_frames
    assert_stream_matches_template(a, backend.codec)


def test_bad_videos_and_failed_generations_are_episode_errors(q3_processor, pancake, tmp_path):
    garbage = tmp_path / "garbage.mp4"
    garbage.write_bytes(b"\x00not a video at all" * 50)
    script = {
        "ok": ["<answer>A</answer>"],
        "missing": ["<answer>A</answer>"],
        "garbage": ["<answer>A</answer>"],
        "fails": [call(0, 2), Generation(error="HTTP 500: boom", finish_reason="error")],
        "short": [call(0, 2)],  # the script ends: the backend reports an error
    }
    backend = ScriptedBackend(script, processor=q3_processor)
    inputs = [
        EpisodeInput("ok", pancake, "Q?", OPTIONS, frames_k=3),
        EpisodeInput("missing", str(tmp_path / "nope.mp4"), "Q?", OPTIONS),
        EpisodeInput("garbage", str(garbage), "Q?", OPTIONS),
        EpisodeInput("fails", pancake, "Q?", OPTIONS),
        EpisodeInput("short", pancake, "Q?", OPTIONS),
    ]
    recs = {r.id: r for r in EpisodeEngine(backend, small_config()).run(inputs)}
    assert recs["ok"].status == "ok" and recs["ok"].prediction == "A"
    assert len(recs["ok"].stream.images) == 3 and recs["ok"].frames_k == 3
    for k in ("missing", "garbage"):
        assert recs[k].status == "error" and "cannot read video" in recs[k].error
        assert recs[k].prediction is None and recs[k].turns == []
        assert recs[k].error_kind == "video"
    assert recs["fails"].status == "error" and "HTTP 500" in recs["fails"].error
    assert recs["fails"].prediction is None and recs["fails"].tool_counts.executed_ok == 1
    assert recs["short"].status == "error" and "no turn 1" in recs["short"].error
    assert recs["ok"].error_kind is None and recs["fails"].error_kind == "backend"
    assert recs["short"].error_kind == "backend"
    # errored episodes never reached the backend
    asked = {r.episode_id for b in backend.batches for r in b}
    assert "missing" not in asked and "garbage" not in asked


def test_message_only_backend_runs_without_token_stream(pancake):
    backend = ScriptedBackend([call(0, 2), "<answer>B</answer>"])  # no processor: no codec
    [rec] = EpisodeEngine(backend, small_config()).run([EpisodeInput("m", pancake, "Q?", OPTIONS)])
    assert rec.status == "ok" and rec.prediction == "B"
    assert rec.stream.token_ids == [] and rec.stream.pixel_values is None
    assert rec.calls[0].status == "ok" and len(rec.stream.images) == 4 + rec.calls[0].n_frames
    assert rec.to_dict()["calls"][0]["n_frames"] == rec.calls[0].n_frames


def test_one_round_of_8_episodes_x_3_calls_opens_each_video_once(q3_processor, pancake, bunny):
    videos = [pancake, bunny] * 4
    turn0 = call(0, 1.5) + call(2, 3.5) + call(3, 4.5)
    backend = ScriptedBackend([turn0, "<answer>A</answer>"], processor=q3_processor)
    engine = EpisodeEngine(backend, small_config())
    recs = engine.run([EpisodeInput(f"e{i}", v, "Q?", OPTIONS) for i, v in enumerate(videos)])
    assert all(r.status == "ok" and r.tool_counts.executed_ok == 3 for r in recs)
    assert len(backend.batches[0]) == 8  # one batched generate for the round
    assert len(engine.tool_stats) == 1  # one tool pass for all 24 calls
    # each video is opened once for the whole run (overview), and the tool pass reuses it
    assert {str(k): v for k, v in engine.video_opens.items()} == {pancake: 1, bunny: 1}
    opens = engine.tool_stats[0].opens
    assert {str(k): v for k, v in opens.items()} == {pancake: 0, bunny: 0}


def test_every_tool_round_reuses_the_overview_decoder(q3_processor, pancake):
    turns = [call(0, 1.5), call(2, 3.5), call(3, 4.5), "<answer>A</answer>"]
    engine = EpisodeEngine(ScriptedBackend(turns, processor=q3_processor), small_config())
    (rec,) = engine.run([EpisodeInput("e0", pancake, "Q?", OPTIONS)])
    assert rec.status == "ok" and rec.tool_counts.executed_ok == 3
    assert len(engine.tool_stats) == 3
    assert all(sum(s.opens.values()) == 0 for s in engine.tool_stats)
    assert {str(k): v for k, v in engine.video_opens.items()} == {pancake: 1}
    assert engine._sources == {}  # closed when the run ends


@pytest.mark.parametrize(
    "kwargs, needle",
    [
        ({"question_type": "MCQ"}, "question_type 'MCQ'"),
        ({"question_type": "open"}, "question_type 'open'"),
        ({"frames_k": 0}, "frames_k must be a positive integer, got 0"),
        ({"frames_k": "8"}, "frames_k must be a positive integer, got '8'"),
    ],
)
def test_bad_episode_input_is_a_typed_error_naming_it(pancake, kwargs, needle):
    from paravt.errors import UserError

    with pytest.raises(UserError, match="episode 'bad'") as err:
        EpisodeInput("bad", pancake, "Q?", OPTIONS, **kwargs)
    assert needle in str(err.value)


def test_think_prefix_prefills_every_main_turn_as_prompt(q3_processor, pancake):
    """The reference pre-fills ``<think>\\n`` at every main-agent turn, the forced
    answer included. The pre-fill is prompt (mask 0), each turn's text holds it exactly once, and
    the stream is still the template's rendering of the conversation."""
    from paravt.rewards import format_terms, scored_text

    prefix = "<think>\n"
    script = [
        "Check the start.</think>" + call(0, 2),
        "Now the end.</think>" + call(3, 5),
        "Enough seen: it is the first one.</think><answer>A</answer>",
    ]
    backend = ScriptedBackend(script, processor=q3_processor)
    cfg = small_config(think_prefix=prefix, max_turns=2)
    [rec] = EpisodeEngine(backend, cfg).run([EpisodeInput("p", pancake, "What?", OPTIONS)])
    assert rec.status == "ok", rec.error
    assert rec.forced and len(rec.turns) == 3 and rec.prediction == "A"
    codec = backend.codec
    requests = [r for batch in backend.batches for r in batch if r.role == "main"]
    assert [r.prefill for r in requests] == [prefix] * 3
    for req in requests:  # every turn's context ends in the generation prompt + the pre-fill
        assert codec.decode(req.tokens.ids).endswith("<|im_start|>assistant\n" + prefix)
    # the pre-fill tokens are prompt: each generated run starts right after them, unmasked
    prefix_ids = codec.encode_text(prefix)
    runs = []
    # prev runs one step behind m, so its last entry is left over
    for i, (m, prev) in enumerate(
        zip(rec.stream.loss_mask, [0] + rec.stream.loss_mask, strict=False)
    ):
        if m and not prev:
            runs.append(i)
    assert len(runs) == 3
    for start in runs:
        assert rec.stream.token_ids[start - len(prefix_ids) : start] == prefix_ids
        assert not any(rec.stream.loss_mask[start - len(prefix_ids) : start])
    assert sum(rec.stream.loss_mask) == sum(len(codec.encode_text(t)) + 1 for t in script)
    assert_stream_matches_template(rec, codec)
    # each turn's text holds its pre-fill exactly once, and the reward does not add another
    texts = [t.text for t in rec.turns]
    assert texts == [prefix + t for t in script]
    assert all(scored_text(prefix, t) == t for t in texts)
    terms = format_terms(texts, prefix=prefix)
    assert terms == format_terms(texts) and terms.anchor_unclosed == 0.0
    assert terms.balanced > 0 and terms.anchor_flow > 0


def test_a_bug_while_opening_a_video_is_an_engine_error_not_a_bad_video(
    q3_processor, pancake, bunny, tmp_path, monkeypatch, caplog
):
    """A TypeError in our own overview code is reported as an internal error (kind ``engine``,
    named, logged with its traceback); a file the decoder cannot read stays kind ``video``."""
    real_overview = VideoSource.overview

    def overview(self, k, *args, **kwargs):
        if self.path == pancake:
            raise TypeError("overview() got an unexpected keyword argument 'budget'")
        return real_overview(self, k, *args, **kwargs)

    monkeypatch.setattr(VideoSource, "overview", overview)
    garbage = tmp_path / "garbage.mp4"
    garbage.write_bytes(b"\x00not a video at all" * 50)
    backend = ScriptedBackend(["<answer>A</answer>"], processor=q3_processor)
    inputs = [
        EpisodeInput("bug", pancake, "Q?", OPTIONS),
        EpisodeInput("bad", str(garbage), "Q?", OPTIONS),
        EpisodeInput("fine", bunny, "Q?", OPTIONS),
    ]
    with caplog.at_level(logging.WARNING, logger="paravt.agent.engine"):
        recs = {r.id: r for r in EpisodeEngine(backend, small_config()).run(inputs)}
    bug, bad = recs["bug"], recs["bad"]
    assert bug.status == "error" and bug.error_kind == "engine"
    assert "cannot read video" not in bug.error
    assert bug.error.startswith("internal error while opening video") and "TypeError" in bug.error
    assert bad.status == "error" and bad.error_kind == "video"
    assert bad.error.startswith("cannot read video") and str(garbage) in bad.error
    assert recs["fine"].status == "ok"
    logged = {r.levelno: r for r in caplog.records if r.name == "paravt.agent.engine"}
    assert logged[logging.ERROR].exc_info[0] is TypeError  # the bug keeps its traceback
    assert pancake in logged[logging.ERROR].getMessage()
    assert str(garbage) in logged[logging.WARNING].getMessage()
    assert logged[logging.WARNING].exc_info is not None


def test_one_make_backend_builds_the_scripted_backend_too(tmp_path):
    """The scripted backend is a backend: the one ``make_backend`` builds it from a JSON script
    (as ``paravt eval --backend scripted --script FILE`` does), paced when the script says so;
    eval has no factory of its own."""
    import inspect
    import json

    import paravt.eval.runner as runner
    from paravt.agent.config import BackendConfig
    from paravt.backends.factory import make_backend

    plain, paced = tmp_path / "plain.json", tmp_path / "paced.json"
    plain.write_text(json.dumps(["<answer>A</answer>"]))
    paced.write_text(json.dumps({"turns": ["<answer>A</answer>"], "delay_s": 0.01}))
    backend = make_backend(BackendConfig(), script=str(plain))
    assert isinstance(backend, ScriptedBackend) and backend.script == ["<answer>A</answer>"]
    slow = make_backend(BackendConfig(), script=paced)
    assert isinstance(slow.inner, ScriptedBackend) and slow.delay_s == 0.01
    # the runner builds through this one factory (imported when a run loads its backend)
    source = inspect.getsource(runner)
    assert "from paravt.backends.factory import check_serving, make_backend" in source
    assert "def make_backend" not in source


def test_the_question_type_annotations_agree_with_the_one_list():
    """``QUESTION_TYPES`` (``paravt.rewards.answers``) is the list; the ``Literal`` annotations
    that type checkers and the config loader read must spell the same values."""
    import typing

    from paravt.agent.config import InferConfig
    from paravt.schema.episodes import QuestionType
    from paravt.schema.questions import QUESTION_TYPES

    assert typing.get_args(QuestionType) == QUESTION_TYPES
    hint = typing.get_type_hints(InferConfig)["question_type"]
    assert typing.get_args(hint) == ("auto", *QUESTION_TYPES)


def test_the_engine_refuses_an_object_that_is_not_a_backend():
    class OnlyGenerate:  # what a backend was before the protocol declared its members
        def generate(self, requests):
            return []

    with pytest.raises(TypeError, match="OnlyGenerate is not a paravt Backend: it has no codec, "
                       "pixel_dtype, pixel_device, reads_image_pixels, resize_arch"):  # fmt: skip
        EpisodeEngine(OnlyGenerate(), small_config())
    for backend in (ScriptedBackend(["x"]), OpenAIBackend("http://127.0.0.1:9/v1", "m")):
        assert isinstance(backend, Backend)
        assert EpisodeEngine(backend, small_config()).backend is backend


def test_the_optional_capabilities_are_declared_not_probed():
    """``lockstep`` and ``agenerate`` are members of the protocol with a "has none" default: an
    object that has every other member but not these is refused by name, and what the engine
    decides (rounds or episodes on their own) follows the declared values alone."""

    class NoCapabilities:  # every member but the two optional capabilities
        codec = pixel_dtype = pixel_device = resize_arch = None
        reads_image_pixels = False

        def generate(self, requests):
            return []

        def keep_episode_state(self, budget_bytes):
            pass

        def end_episodes(self, episode_ids):
            pass

    with pytest.raises(TypeError, match="NoCapabilities is not a paravt Backend: it has no "
                       r"lockstep, agenerate \(subclass paravt.agent.backend.BackendBase"):  # fmt: skip
        EpisodeEngine(NoCapabilities(), small_config())
    backend = ScriptedBackend(["x"])
    assert backend.lockstep is None and backend.agenerate is None  # BackendBase's defaults
    assert not EpisodeEngine(backend, small_config(schedule="auto")).episodes_advance_alone()

    async def one(request):
        return Generation(text="x")

    backend.agenerate = one
    assert EpisodeEngine(backend, small_config(schedule="auto")).episodes_advance_alone()
    backend.lockstep = True
    assert not EpisodeEngine(backend, small_config(schedule="auto")).episodes_advance_alone()
