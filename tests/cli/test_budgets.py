"""Budgets that set the prompt's length are checked against the model's context before anything
loads: past it, refused with the numbers; near it, a warning on stderr. The count is checked
against a real episode's record (it is a lower bound of the prompt, exact on the image tokens).
"""

from __future__ import annotations

import json

import pytest

from paravt.agent.config import EngineConfig
from paravt.agent.preflight import IMAGE_MARKERS, check_budget, probe_video, prompt_budget
from paravt.errors import UserError
from paravt.models.locate import locate_model


def test_frames_past_the_context_are_refused_before_the_model_loads(
    gop_video, unloadable_model, paravt_cli
):
    # 12 s at 30 fps: 360 frames; 160x90 under the default overview budget: 112 + 2 tokens each
    r = paravt_cli("infer", gop_video, "-q", "What?", "--model", unloadable_model,
                   "--frames", "100000")  # fmt: skip
    assert r.returncode == 2
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in r.stderr
    line = lines[0]
    assert "--frames 100000" in line and "360 overview frames x 114 tokens" in line
    # 360 x 114 + the text (system prompt, tool schema, question, 360 timestamps) + 2,048 new
    assert "needs 46,541 tokens" in line and "+ 3,453 text tokens" in line
    assert "context of 32,768" in line
    # images alone said 269 ((32,768 - 2,048) // 114); with the text, 245 is the most that fits
    assert "at most 245" in line


def test_frames_near_the_context_warn_on_stderr_before_the_load(
    gop_video, unloadable_model, paravt_cli
):
    r = paravt_cli("infer", gop_video, "-q", "What?", "--model", unloadable_model,
                   "--frames", "220")  # fmt: skip
    warning = [ln for ln in r.stderr.splitlines() if ln.startswith("paravt: warning:")]
    assert len(warning) == 1 and "needs 29,718 tokens, 91% of the model's context" in warning[0]
    assert "+ 2,590 text tokens" in warning[0]  # 250 frames no longer fit: refused above
    # then the load itself fails (this folder's weights are not weights): after the warning
    assert r.returncode == 2 and r.stderr.index("warning") < r.stderr.index(
        "weights cannot be read"
    )


def test_a_full_episode_past_the_context_is_a_warning(gop_video, tiny_qwen3_dir):
    facts = probe_video(str(gop_video))
    engine = EngineConfig(frames=16, max_turns=8, max_parallel=8)
    engine.crop.max_pixels = 602112
    model = locate_model(str(tiny_qwen3_dir))
    found = check_budget(engine, facts, 16, model.arch, model.context_length)
    assert len(found) == 1 and "a full episode" in found[0] and "engine.max_turns" in found[0]
    assert check_budget(EngineConfig(frames=16), facts, 16, model.arch, 32768) == []
    assert check_budget(engine, facts, 16, None, None) == []  # openai: nothing known
    with pytest.raises(UserError, match="past the model's context of 1,000"):
        check_budget(EngineConfig(), facts, 64, "qwen3-vl", 1000)


def test_the_count_matches_a_real_episode(gop_video, tiny_qwen3_dir, paravt_cli):
    """The image tokens of a real first turn are the count's, exactly; the prompt is more (its
    text is not counted)."""
    r = paravt_cli("infer", gop_video, "-q", "What?", "--model", tiny_qwen3_dir, "--json",
                   "--mode", "direct", "--frames", "5",
                   "--set", "engine.max_new_tokens=4")  # fmt: skip
    assert r.returncode == 0, r.stderr
    record = json.loads(r.stdout)["record"]
    model = locate_model(str(tiny_qwen3_dir))
    b = prompt_budget(EngineConfig(frames=5), probe_video(str(gop_video)), 5, model.arch,
                      model.context_length)  # fmt: skip
    assert record["tokens"]["image"] == b.overview - 5 * IMAGE_MARKERS
    assert record["prompt_len"] > b.overview


#: (template, engine.max_new_tokens): a long reply leaves room for fewer frames, so the
#: engine's prompt at the suggestion decodes tens of frames, not hundreds (at the default 2,048
#: the suggestion for the pancake clip was 266 under Qwen3-VL's tokenizer, and its prompt
#: 30,447 + 2,048 = 32,495 tokens: the same rule, measured once by hand)
SUGGESTION_CASES = [
    ("qwen3-vl-instruct", 24000), ("qwen3-vl-thinking", 28000), ("qwen2.5-vl-instruct", 28000),
]  # fmt: skip


@pytest.mark.parametrize("template, new_tokens", SUGGESTION_CASES)
def test_the_suggested_frames_fit_under_the_real_tokenizers(
    template, new_tokens, real_tiny_dir, video_path, paravt_cli
):
    """The refusal suggested the largest ``--frames`` whose images alone fit: 289 for the 10 s
    pancake clip under Qwen3-VL's tokenizer, where the engine's prompt at 289 frames was 33,024
    tokens against a context of 32,768. The suggestion now counts the text (system prompt, tool
    schema, question, a timestamp per frame) with the model's own tokenizer and chat template,
    and the engine's own first prompt at that budget, plus the new tokens, fits."""
    import re

    from transformers import AutoProcessor

    from paravt.agent.engine import EpisodeEngine
    from paravt.backends.scripted import ScriptedBackend
    from paravt.schema.episodes import EpisodeInput

    model = real_tiny_dir(template)
    video = video_path("decord__flipping_a_pancake.mkv")
    question = ["-q", "What happens in the video?", "--option", "a pancake is flipped",
                "--option", "an egg is fried"]  # fmt: skip
    r = paravt_cli("infer", video, *question, "--model", model, "--frames", "400",
                   "--set", f"engine.max_new_tokens={new_tokens}")  # fmt: skip
    assert r.returncode == 2, r.stderr
    most = int(re.search(r"at most ([\d,]+)", r.stderr).group(1).replace(",", ""))
    engine = EngineConfig(frames=most, max_new_tokens=new_tokens)
    backend = ScriptedBackend(
        ["<answer>A</answer>"], processor=AutoProcessor.from_pretrained(model)
    )
    inp = EpisodeInput("q0", str(video), question[1], [question[3], question[5]], "mcq")
    record = EpisodeEngine(backend, engine).run([inp])[0]
    assert record.status == "ok", record.error
    context = locate_model(str(model)).context_length
    assert record.stream.prompt_len + engine.max_new_tokens <= context, (
        most,
        record.stream.prompt_len,
    )
    assert record.stream.prompt_len + engine.max_new_tokens > 0.95 * context  # not far below it
