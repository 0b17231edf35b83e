"""The private parts of TRL that ``ParaGRPOTrainer`` relies on, recorded for the tested release.

Why: the trainer overrides TRL's private methods and reads its private attributes; TRL may change
them in any release without notice. ``pyproject.toml`` pins the tested range; this test says
*which* method or attribute moved when someone widens the range, before a training run finds out
the hard way. No model is built: it reads signatures and source text only (a few seconds, mostly
importing TRL).

It also holds the two ends of the override together: the keys TRL's ``_compute_loss`` reads
from the rollout's output (read from its source, ``LOSS_KEYS``) are the keys the override returns
(checked on the real cpu-smoke run's output), and every GRPOConfig option TRL's own rollout reads
(``ROLLOUT_OPTIONS``) is honoured by the override or refused at start (``paravt.train.config``).

To move to a new TRL: run this test against it, read TRL's change to each method it names, adapt
``paravt.train.trainer``, then update ``RECORDED``/``TRL_CALLS``/``TRL_ATTRIBUTES``/``LOSS_KEYS``/
``ROLLOUT_OPTIONS`` and the pin in ``pyproject.toml`` together.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import textwrap

import pytest
import trl
from trl import GRPOConfig, GRPOTrainer
from trl.trainer.utils import split_pixel_values_by_grid, unsplit_pixel_values_by_grid

from paravt.errors import ConfigError
from paravt.train.config import REFUSED, ParaGRPOConfig
from paravt.train.trainer import ParaGRPOTrainer

_P = inspect.Parameter
#: TRL's signature of each private method paravt overrides or wraps, as (name, kind, default).
RECORDED: dict[str, list[tuple[str, inspect._ParameterKind, object]]] = {
    "_generate_and_score_completions": [
        ("self", _P.POSITIONAL_OR_KEYWORD, _P.empty),
        ("inputs", _P.POSITIONAL_OR_KEYWORD, _P.empty),
    ],
    "_get_per_token_logps_and_entropies": [
        ("self", _P.POSITIONAL_OR_KEYWORD, _P.empty),
        ("model", _P.POSITIONAL_OR_KEYWORD, _P.empty),
        ("input_ids", _P.POSITIONAL_OR_KEYWORD, _P.empty),
        ("attention_mask", _P.POSITIONAL_OR_KEYWORD, _P.empty),
        ("logits_to_keep", _P.POSITIONAL_OR_KEYWORD, _P.empty),
        ("batch_size", _P.POSITIONAL_OR_KEYWORD, None),
        ("compute_entropy", _P.POSITIONAL_OR_KEYWORD, False),
        ("compute_aux_loss", _P.POSITIONAL_OR_KEYWORD, False),
        ("pixel_values", _P.POSITIONAL_OR_KEYWORD, None),
        ("image_grid_thw", _P.POSITIONAL_OR_KEYWORD, None),
        ("num_images", _P.POSITIONAL_OR_KEYWORD, None),
        ("pixel_attention_mask", _P.POSITIONAL_OR_KEYWORD, None),
        ("spatial_shapes", _P.POSITIONAL_OR_KEYWORD, None),
        ("num_tiles", _P.POSITIONAL_OR_KEYWORD, None),
        ("image_sizes", _P.POSITIONAL_OR_KEYWORD, None),
        ("token_type_ids", _P.POSITIONAL_OR_KEYWORD, None),
        ("mm_token_type_ids", _P.POSITIONAL_OR_KEYWORD, None),
        ("image_position_ids", _P.POSITIONAL_OR_KEYWORD, None),
    ],
    # wrapped: each epoch's prompt order reseeded from (seed, epoch) (paravt.train.gating)
    "_get_train_sampler": [
        ("self", _P.POSITIONAL_OR_KEYWORD, _P.empty),
        ("dataset", _P.POSITIONAL_OR_KEYWORD, None),
    ],
    # not overridden any more, but the train tests wrap it to see what the loss forward got
    "_compute_loss": [
        ("self", _P.POSITIONAL_OR_KEYWORD, _P.empty),
        ("model", _P.POSITIONAL_OR_KEYWORD, _P.empty),
        ("inputs", _P.POSITIONAL_OR_KEYWORD, _P.empty),
    ],
}
#: (TRL method, the private method it must still call): an override TRL stops calling is dead.
TRL_CALLS = [
    ("_prepare_inputs", "_generate_and_score_completions"),
    ("_compute_loss", "_get_per_token_logps_and_entropies"),
    ("compute_loss", "_compute_loss"),
]
#: private attributes TRL's ``__init__`` sets that the trainer reads or writes.
TRL_ATTRIBUTES = ["_metrics", "_logs", "_tokenizer"]

#: What TRL 1.16 reads from the rollout's output: ``key -> when the override must return it``.
#: ``always``; ``beta`` (a KL term: ``beta != 0``); ``vllm_is`` (vLLM's importance-sampling
#: correction); ``optional`` (read with ``.get`` or behind ``"key" in inputs``). Read from
#: ``_compute_loss`` and the helpers ``_prepare_inputs`` splits the batch with.
LOSS_KEYS = {
    "prompt_ids": "always",
    "prompt_mask": "always",
    "completion_ids": "always",
    "completion_mask": "always",
    "advantages": "always",
    "num_items_in_batch": "always",  # read for the loss types that normalise by it
    "ref_per_token_logps": "beta",
    "importance_sampling_ratio": "vllm_is",
    "tool_mask": "optional",
    "old_per_token_logps": "optional",
    "sampling_per_token_logps": "optional",
    "pixel_values": "optional",
    "image_grid_thw": "optional",
    "num_images": "optional",
    "mm_token_type_ids": "optional",
    "pixel_attention_mask": "optional",
    "spatial_shapes": "optional",
    "num_tiles": "optional",
    "image_sizes": "optional",
    "token_type_ids": "optional",
    "image_position_ids": "optional",
}
#: TRL's own rollout (``_generate_and_score_completions``, which the override replaces) reads
#: these GRPOConfig options; what the override does with each.
ROLLOUT_OPTIONS = {
    "beta": "honoured: the ref log-probs are computed when it is not 0",
    "num_generations": "honoured: the group size of the advantages",
    "num_generations_eval": "honoured: the group size in evaluation",
    "num_iterations": "honoured: old log-probs when a rollout is reused",
    "scale_rewards": "honoured: paravt.train.advantages",
    "use_vllm": "honoured: paravt.rollout.vllm",
    "vllm_importance_sampling_correction": "honoured: _vllm_sampling_correction",
    "vllm_importance_sampling_mode": "honoured: _vllm_sampling_correction",
    "vllm_importance_sampling_clip_min": "honoured: _vllm_sampling_correction",
    "vllm_importance_sampling_clip_max": "honoured: _vllm_sampling_correction",
    "steps_per_generation": "honoured: loss rows padded to a multiple of it",
    "gradient_accumulation_steps": "honoured: old log-probs when a rollout is reused",
    "per_device_train_batch_size": "honoured: the log-prob passes' chunk size",
    "per_device_eval_batch_size": "honoured: the log-prob passes' chunk size",
    "gradient_checkpointing_kwargs": "honoured: unwrap_model_for_generation",
    "mask_truncated_completions": "honoured: _collate zeroes a cut episode's loss mask",
    "pad_to_multiple_of": "honoured: _collate pads with it",
    "multi_objective_aggregation": "refused",
    "reward_weights": "refused",
    "log_multimodal": "refused",
    "chat_template_kwargs": "refused",
}


def _shape(fn) -> list[tuple[str, inspect._ParameterKind, object]]:
    return [(p.name, p.kind, p.default) for p in inspect.signature(fn).parameters.values()]


@pytest.mark.parametrize("name", sorted(RECORDED))
def test_trl_private_method_keeps_the_recorded_signature(name):
    assert hasattr(GRPOTrainer, name), (
        f"TRL {trl.__version__} has no GRPOTrainer.{name}; ParaGRPOTrainer relies on it "
        "(see tests/train/test_trl_contract.py for what to do)"
    )
    now, then = _shape(getattr(GRPOTrainer, name)), RECORDED[name]
    assert now == then, (
        f"GRPOTrainer.{name} changed signature in TRL {trl.__version__}:\n"
        f"  recorded: {[p[0] for p in then]}\n  now:      {[p[0] for p in now]}\n"
        f"  added {sorted({p[0] for p in now} - {p[0] for p in then})}, "
        f"removed {sorted({p[0] for p in then} - {p[0] for p in now})}; adapt "
        f"ParaGRPOTrainer.{name} and re-record"
    )


def test_every_private_override_is_recorded():
    overrides = sorted(
        n
        for n in vars(ParaGRPOTrainer)
        if n.startswith("_") and not n.startswith("__") and callable(getattr(GRPOTrainer, n, None))
    )
    missing = [n for n in overrides if n not in RECORDED]
    assert not missing, f"ParaGRPOTrainer overrides TRL's private {missing}: record them here"


@pytest.mark.parametrize("caller,callee", TRL_CALLS)
def test_trl_still_calls_what_paravt_overrides(caller, callee):
    source = inspect.getsource(getattr(GRPOTrainer, caller))
    assert f"self.{callee}(" in source, (
        f"TRL {trl.__version__}: GRPOTrainer.{caller} no longer calls self.{callee}(...); "
        f"ParaGRPOTrainer.{callee} would be silently skipped"
    )


@pytest.mark.parametrize("attribute", TRL_ATTRIBUTES)
def test_trl_init_still_sets_the_private_attributes_paravt_uses(attribute):
    source = inspect.getsource(GRPOTrainer.__init__)
    assert f"self.{attribute} =" in source, (
        f"TRL {trl.__version__}: GRPOTrainer.__init__ no longer sets self.{attribute}, "
        "which ParaGRPOTrainer writes its metrics into"
    )


def test_a_changed_signature_is_named_in_the_failure(monkeypatch):
    """The check itself: a TRL whose method grew a parameter fails with the method's name."""

    def grown(self, inputs, extra=None): ...

    monkeypatch.setattr(GRPOTrainer, "_generate_and_score_completions", grown)
    with pytest.raises(
        AssertionError, match=r"(?s)_generate_and_score_completions changed.*added \['extra'\]"
    ):
        test_trl_private_method_keeps_the_recorded_signature("_generate_and_score_completions")


def test_the_trainer_carries_no_test_hooks():
    """What only tests read is observed by the tests themselves (``Probe`` in conftest.py)."""
    assert "engine_factory" not in inspect.signature(ParaGRPOTrainer.__init__).parameters
    source = inspect.getsource(ParaGRPOTrainer)
    assert "loss_forward_image_rows" not in source
    assert "_compute_loss" not in vars(ParaGRPOTrainer)  # the override only recorded for tests


def _keys_read(fn, name: str) -> dict[str, set[str]]:
    """``key -> how`` ``fn`` reads each constant key of its dict argument ``name``: any of
    ``subscript``, ``get`` and ``in`` (a membership test, which guards a subscript)."""
    out: dict[str, set[str]] = {}
    for node in ast.walk(ast.parse(textwrap.dedent(inspect.getsource(fn)))):
        key, how = None, None
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name):
            if node.value.id == name and isinstance(node.slice, ast.Constant):
                key, how = node.slice.value, "subscript"
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            target = node.func.value
            if node.func.attr == "get" and isinstance(target, ast.Name) and target.id == name:
                key, how = node.args[0].value, "get"
        elif isinstance(node, ast.Compare) and isinstance(node.left, ast.Constant):
            right = node.comparators[0]
            if isinstance(node.ops[0], ast.In | ast.NotIn) and isinstance(right, ast.Name):
                key, how = (node.left.value, "in") if right.id == name else (None, None)
        if isinstance(key, str):
            out.setdefault(key, set()).add(how)
    return out


def _trl_loss_keys() -> dict[str, bool]:
    """``key -> optional``: what ``_compute_loss`` reads (a subscript not guarded by a membership
    test raises without the key), and the keys the batch-splitting helpers look for (optional
    all: they return a batch without pixels as it is)."""
    keys = {
        key: "subscript" not in how or "in" in how
        for key, how in _keys_read(GRPOTrainer._compute_loss, "inputs").items()
    }
    for helper in (split_pixel_values_by_grid, unsplit_pixel_values_by_grid):
        for key in _keys_read(helper, "batch"):
            keys.setdefault(key, True)
    return keys


def test_the_keys_trl_reads_from_the_rollout_are_the_recorded_ones():
    read = _trl_loss_keys()
    assert sorted(read) == sorted(LOSS_KEYS), (
        f"TRL {trl.__version__}'s _compute_loss reads other keys of the rollout's output: "
        f"new {sorted(set(read) - set(LOSS_KEYS))}, gone {sorted(set(LOSS_KEYS) - set(read))}; "
        "make ParaGRPOTrainer._generate_and_score_completions return them and re-record"
    )
    for key, when in LOSS_KEYS.items():  # a key read with .get / behind `in`: TRL does without
        assert (when == "optional") == read[key], (key, when)


def test_the_override_returns_every_key_the_loss_reads(smoke_run):
    """On the cpu-smoke run's real rollout output: every key the loss needs there is returned,
    and every key returned is one TRL reads (a renamed key would be dropped without a word)."""
    _, _, probe = smoke_run
    trainer, out = probe.trainer, probe.outputs[0]
    needed = {
        "always": True,
        "beta": trainer.beta != 0.0,
        "vllm_is": trainer.use_vllm and trainer.vllm_importance_sampling_correction,
        "optional": False,
    }
    missing = [k for k, when in LOSS_KEYS.items() if needed[when] and k not in out]
    assert not missing, f"the override's output lacks {missing}, which _compute_loss reads"
    unread = sorted(set(out) - set(LOSS_KEYS))
    assert not unread, f"the override returns {unread}, which TRL never reads"
    # the run has frames: the vision keys the loss forward needs are there
    assert {"pixel_values", "image_grid_thw", "num_images", "mm_token_type_ids"} <= set(out)


def test_every_option_trl_s_rollout_reads_is_honoured_or_refused():
    fields = {f.name for f in dataclasses.fields(GRPOConfig)}
    tree = ast.parse(
        textwrap.dedent(inspect.getsource(GRPOTrainer._generate_and_score_completions))
    )
    read = set()
    for node in ast.walk(tree):
        is_self = isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
        if is_self and node.value.id == "self" and node.attr in fields:
            read.add(node.attr)
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Attribute)
            and node.value.attr == "args"
            and node.attr in fields
        ):
            read.add(node.attr)
    assert sorted(read) == sorted(ROLLOUT_OPTIONS), (
        f"TRL {trl.__version__}'s rollout reads other GRPOConfig options: new "
        f"{sorted(read - set(ROLLOUT_OPTIONS))}, gone {sorted(set(ROLLOUT_OPTIONS) - read)}; "
        "honour each in ParaGRPOTrainer or refuse it (paravt.train.config.REFUSED)"
    )
    refused = sorted(k for k, how in ROLLOUT_OPTIONS.items() if how == "refused")
    assert refused == sorted(REFUSED)


@pytest.mark.parametrize(
    "key, value",
    [
        ("multi_objective_aggregation", "normalize_then_sum"),
        ("reward_weights", [2.0]),
        ("log_multimodal", True),
        ("chat_template_kwargs", {"enable_thinking": False}),
    ],
)
def test_an_option_the_override_cannot_honour_is_refused_in_one_line(tmp_path, key, value):
    with pytest.raises(ConfigError, match=rf"^trainer\.{key}=") as e:
        ParaGRPOConfig(output_dir=str(tmp_path), use_cpu=True, **{key: value})
    assert "\n" not in str(e.value)
    ParaGRPOConfig(output_dir=str(tmp_path), use_cpu=True, **{key: REFUSED[key][0]})  # accepted


def test_a_new_key_the_loss_reads_is_named_in_the_failure(monkeypatch):
    """The check itself: a TRL whose loss reads one more key fails with that key's name."""

    def grown(self, model, inputs):
        return inputs["prompt_ids"], inputs["completion_ids"], inputs["entropy_weights"]

    monkeypatch.setattr(GRPOTrainer, "_compute_loss", grown)
    with pytest.raises(AssertionError, match=r"new \['entropy_weights'\]"):
        test_the_keys_trl_reads_from_the_rollout_are_the_recorded_ones()
