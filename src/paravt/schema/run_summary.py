"""A training run's ``summary.json`` (``paravt train`` and ``paravt sft``): one typed record the
learner writes and the CLI and other readers read back, instead of a dict spelled at each end.

The JSON keeps its shape (``run_dir``, ``global_step``, ``final_model``, ``resumed_from``, the
extra sections such as ``data``, then ``train_loss`` and ``metrics_file``), so run folders
written before the type existed load through ``RunSummary.from_json`` unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from paravt.errors import UserError

__all__ = ["RunSummary"]


@dataclass
class RunSummary:
    """The end of one training run: where it is, how far it went, where its model and metrics
    are; ``extra`` holds the sections the command adds (``data``: the data report's counts;
    ``trajectories`` for sft), written at the top level of the JSON."""

    run_dir: str
    global_step: int
    final_model: str
    metrics_file: str
    resumed_from: str | None = None
    train_loss: float | None = None
    extra: dict[str, object] = field(default_factory=dict)

    def to_json(self) -> dict:
        """The ``summary.json`` object, in the order runs have always written it."""
        return {
            "run_dir": self.run_dir,
            "global_step": self.global_step,
            "final_model": self.final_model,
            "resumed_from": self.resumed_from,
            **self.extra,
            "train_loss": self.train_loss,
            "metrics_file": self.metrics_file,
        }

    @classmethod
    def from_json(cls, obj: dict, where: str = "summary.json") -> RunSummary:
        """A summary read back; a ``UserError`` naming ``where`` and the key it lacks."""
        missing = [
            k for k in ("run_dir", "global_step", "final_model", "metrics_file") if k not in obj
        ]
        if missing:
            raise UserError(f"{where}: not a training summary (no {', '.join(missing)})")
        loss = obj.get("train_loss")
        known = {
            "run_dir",
            "global_step",
            "final_model",
            "metrics_file",
            "resumed_from",
            "train_loss",
        }
        return cls(
            run_dir=str(obj["run_dir"]),
            global_step=int(obj["global_step"]),
            final_model=str(obj["final_model"]),
            metrics_file=str(obj["metrics_file"]),
            resumed_from=None if obj.get("resumed_from") is None else str(obj["resumed_from"]),
            train_loss=None if loss is None else float(loss),
            extra={k: v for k, v in obj.items() if k not in known},
        )
