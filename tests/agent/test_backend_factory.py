"""``paravt.backends.factory``: a backend named in a recipe is built, or refused with the key."""

from __future__ import annotations

import pytest

from paravt.backends import ScriptedBackend, backend_from_spec
from paravt.errors import ConfigError


def test_a_named_backend_is_built_and_a_wrong_one_names_its_section(tmp_path):
    backend = backend_from_spec("scripted", {"script": ["<answer>A</answer>"]}, None)
    assert isinstance(backend, ScriptedBackend) and backend.codec is None
    script = tmp_path / "turns.json"
    script.write_text('["<answer>B</answer>"]')
    assert backend_from_spec("scripted", {"script": str(script)}, None).script == [
        "<answer>B</answer>"
    ]
    assert backend_from_spec("openai", {}, None) is None  # a chat server gives no token ids
    with pytest.raises(ConfigError, match=r"^eval\.backend='nope': use scripted or hf"):
        backend_from_spec("nope", {}, None, section="eval")
    with pytest.raises(ConfigError, match=r"backend=builtins:dict: dict is not a backend"):
        backend_from_spec("builtins:dict", {}, None)
    with pytest.raises(ConfigError, match=r"trajectories\.options\.script=.*not a JSON file"):
        backend_from_spec("scripted", {"script": str(tmp_path / "none.json")}, None,
                          section="trajectories")  # fmt: skip
