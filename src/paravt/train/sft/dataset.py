"""The cached trajectories as a dataset of files, and the collator that reads and batches them.

Each example is one whole episode stream. ``pixel_values`` are rebuilt from the stored frames by
the engine's ``paravt.agent.vision.preprocess`` (see ``paravt.train.sft.trajectories``). The
collator pads right (``labels`` with ``IGNORE_INDEX``), concatenates every row's images in row
order — the layout Qwen-VL's forward expects — and adds ``mm_token_type_ids`` for M-RoPE, as
the PARA-GRPO loss forward does.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from paravt.agent.chat import ChatCodec
from paravt.agent.vision import preprocess
from paravt.rollout.streams import mm_token_type_ids
from paravt.train.sft.trajectories import IGNORE_INDEX, images_of

__all__ = ["StreamCollator", "read_example"]


def trajectory_dataset(folder: str | Path):
    """The kept episodes of a trajectory cache folder as a ``datasets.Dataset`` of file paths
    (TRL's SFTTrainer takes only that type); the collator reads the files."""
    from datasets import Dataset

    return Dataset.from_dict({"file": [str(p) for p in sorted(Path(folder).glob("[0-9]*.pt"))]})


def read_example(path: str | Path) -> dict:
    """One stored example as written (ids, labels, frames, their budgets and grids)."""
    return torch.load(path, weights_only=True)


def stream_of(example: dict, codec: ChatCodec) -> dict:
    """Tensors of one example; ``pixel_values`` rebuilt from its frames by the engine's code."""
    out = {
        "input_ids": torch.tensor(example["input_ids"], dtype=torch.long),
        "labels": torch.tensor(example["labels"], dtype=torch.long),
        "pixel_values": None,
        "image_grid_thw": None,
    }
    if example["frames"]:
        out["pixel_values"], out["image_grid_thw"] = preprocess(images_of(example), codec)
    return out


class StreamCollator:
    """Reads the batch's example files; right-padded ids / attention mask / labels, plus the
    batch's images in row order."""

    def __init__(self, processor: Any, pixel_dtype: Any = None):
        self.codec = ChatCodec(processor)
        self.pad_token_id = self.codec.pad_token_id
        self.image_pad_id = self.codec.image_token_id
        self.pixel_dtype = pixel_dtype  # the model's dtype (bf16 / fp16 runs)

    def __call__(self, rows: list[dict]) -> dict:
        examples = [stream_of(read_example(r["file"]), self.codec) for r in rows]
        width = max(len(e["input_ids"]) for e in examples)
        ids = torch.full((len(examples), width), self.pad_token_id, dtype=torch.long)
        labels = torch.full((len(examples), width), IGNORE_INDEX, dtype=torch.long)
        attention = torch.zeros((len(examples), width), dtype=torch.long)
        for b, e in enumerate(examples):
            n = len(e["input_ids"])
            ids[b, :n] = e["input_ids"]
            labels[b, :n] = e["labels"]
            attention[b, :n] = 1
        batch = {"input_ids": ids, "attention_mask": attention, "labels": labels}
        with_images = [e for e in examples if e["pixel_values"] is not None]
        if with_images:
            pv = torch.cat([e["pixel_values"] for e in with_images])
            batch["pixel_values"] = pv.to(self.pixel_dtype) if self.pixel_dtype else pv
            batch["image_grid_thw"] = torch.cat([e["image_grid_thw"] for e in with_images])
            batch["mm_token_type_ids"] = mm_token_type_ids(ids, self.image_pad_id)
        return batch
