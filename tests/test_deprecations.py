"""One deprecation rule, TRL's: a deprecated name still answers, with a ``FutureWarning`` that
names the release removing it and where the name lives now. Every deprecation of paravt is
listed here (the config keys' are ``Renamed`` rules, tested in tests/test_config_loader.py and
tests/train/test_reward_config.py)."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

from paravt.agent.backend import Backend, BackendBase, check_backend
from paravt.agent.config import BackendConfig
from paravt.errors import ParavtDeprecationWarning
from paravt.grammar import parse_turn
from paravt.schema import episodes, questions
from paravt.schema.tools import ToolCounts

NAMES = [
    ("paravt.backends", "Backend", Backend, "paravt.agent.backend"),
    ("paravt.backends", "BackendBase", BackendBase, "paravt.agent.backend"),
    ("paravt.backends", "check_backend", check_backend, "paravt.agent.backend"),
    ("paravt.agent", "parse_turn", parse_turn, "paravt.grammar"),
    ("paravt.rewards", "ToolExecutionSummary", ToolCounts, "paravt.schema.ToolCounts"),
    # the vocabulary moved to the schema floor (paravt.schema)
    ("paravt.rewards", "ToolCounts", ToolCounts, "paravt.schema.ToolCounts"),
    ("paravt.rewards", "LETTERS", questions.LETTERS, "paravt.schema.LETTERS"),
    ("paravt.rewards", "QUESTION_TYPES", questions.QUESTION_TYPES, "paravt.schema.QUESTION_TYPES"),
    (
        "paravt.rewards",
        "UnknownQuestionTypeError",
        questions.UnknownQuestionTypeError,
        "paravt.schema.UnknownQuestionTypeError",
    ),
    (
        "paravt.rewards.answers",
        "QuestionType",
        questions.QuestionType,
        "paravt.schema.QuestionType",
    ),
    (
        "paravt.rewards.answers",
        "require_letterable",
        questions.require_letterable,
        "paravt.schema.require_letterable",
    ),
    ("paravt.agent.records", "EpisodeRecord", episodes.EpisodeRecord, "paravt.schema.episodes"),
    ("paravt.agent.records", "GenRequest", episodes.GenRequest, "paravt.schema.episodes"),
]


@pytest.mark.parametrize(("module", "name", "value", "home"), NAMES)
def test_a_deprecated_name_answers_and_names_its_release_and_home(module, name, value, home):
    with pytest.warns(FutureWarning, match=r"removed in paravt 0\.2") as caught:
        got = getattr(importlib.import_module(module), name)
    assert got is value
    assert home in str(caught[0].message)
    assert caught[0].category is ParavtDeprecationWarning  # written by paravt.errors.deprecated
    assert name not in importlib.import_module(module).__all__  # a star import stays quiet


def test_a_deprecated_backend_key_warns_when_set():
    with pytest.warns(FutureWarning, match=r"backend\.backoff_s .*removed in paravt 0\.2"):
        BackendConfig(backoff_s=2.0)


def test_the_cli_shows_a_deprecation_as_one_line():
    """``paravt`` installs one-line logging; a deprecation is one ``paravt: warning:`` line, not
    Python's two (the file and line, then the source line). Another library's warning is shown
    as Python shows it. In a fresh interpreter: pytest records warnings itself."""
    code = (
        "import warnings\n"
        "from paravt.errors import deprecated\n"
        "from paravt.logs import one_line_logging\n"
        "one_line_logging()\n"
        "deprecated('paravt.old_name', 'use paravt.new_name', stacklevel=2)\n"
        'warnings.warn("a library\'s own", FutureWarning, stacklevel=1)\n'
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    lines = r.stderr.splitlines()
    assert lines[0] == (
        "paravt: warning: paravt.old_name is deprecated and will be removed in paravt 0.2: use "
        "paravt.new_name"
    )
    assert lines[1] == "<string>:6: FutureWarning: a library's own", r.stderr
    assert len(lines) == 2, r.stderr
    assert issubclass(ParavtDeprecationWarning, FutureWarning)  # TRL's rule: shown by default
