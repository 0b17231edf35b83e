"""The numerics record: what a run's seed and config leave open is written into its config.json."""

from __future__ import annotations

import json
from dataclasses import dataclass

import torch

from paravt.train.numerics import numerics_record
from paravt.train.run import start_run_folder


@dataclass
class _Cfg:
    output_dir: str = "run"


class _Args:
    def to_dict(self) -> dict:
        return {"seed": 0}


def test_the_record_reads_the_thread_count_the_process_computes_with():
    before = torch.get_num_threads()
    try:
        for threads in (1, 2):
            torch.set_num_threads(threads)
            assert numerics_record()["torch_threads"] == threads
    finally:
        torch.set_num_threads(before)


def test_the_record_names_the_kernels_and_the_releases(monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    monkeypatch.delenv("MKL_NUM_THREADS", raising=False)
    record = numerics_record()
    assert record["cpu_capability"] == torch.backends.cpu.get_cpu_capability()
    assert torch.__version__.startswith(record["packages"]["torch"])
    assert record["env"]["OMP_NUM_THREADS"] == "3"
    assert "MKL_NUM_THREADS" not in record["env"]
    json.dumps(record)  # it goes into config.json as it is


def test_every_run_folder_records_its_numerics(tmp_path):
    start_run_folder(tmp_path, _Cfg(), _Args(), None, tmp_path / "metrics.jsonl")
    written = json.loads((tmp_path / "config.json").read_text())
    assert written["numerics"]["torch_threads"] == torch.get_num_threads()
    assert written["numerics"]["packages"]["trl"]
