"""The private parts of TRL that ``ParaGRPOTrainer`` relies on, recorded for the tested release.

Why: the trainer overrides TRL's private methods and reads its private attributes; TRL may change
them in any release without notice. ``pyproject.toml`` pins the tested range; this test says
*which* method or attribute moved when someone widens the range, before a training run finds out
the hard way. No model is built: it reads signatures and source text only (a few seconds, mostly
importing TRL).

To move to a new TRL: run this test against it, read TRL's change to each method it names, adapt
``paravt.train.trainer``, then update ``RECORDED``/``TRL_CALLS``/``TRL_ATTRIBUTES`` and the
pin in ``pyproject.toml`` together.
"""

from __future__ import annotations

import inspect

import pytest
import trl
from trl import GRPOTrainer

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
TRL_ATTRIBUTES = ["_metrics", "_logs"]


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
