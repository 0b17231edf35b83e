"""The CLI contract: --version/--help, one-line user errors with exit 2, --debug tracebacks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass, field

import pytest

from paravt import __version__
from paravt.cli.main import main
from paravt.config import load_config, to_dict
from paravt.errors import ConfigError


def test_version_and_help(paravt_cli):
    # the console script's real entry point, once: `python -m paravt.cli.main`
    r = subprocess.run(
        [sys.executable, "-m", "paravt.cli.main", "--version"], capture_output=True, text=True
    )
    assert r.returncode == 0 and __version__ in r.stdout
    r = paravt_cli("--help")
    assert r.returncode == 0 and "make-tiny-model" in r.stdout


def test_the_command_list_loads_without_torch():
    """``paravt --help`` imports every command module (cli/main.py discovers them); the heavy
    libraries wait for a command's body, so the help and a user error come back at once."""
    heavy = ("torch", "torchcodec", "transformers", "trl", "av")
    code = f"import sys, paravt.cli.main; print([m for m in {heavy!r} if m in sys.modules])"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]", f"importing the CLI loaded {r.stdout.strip()}"


def test_the_checks_that_need_no_torch_fail_before_it_is_imported(tmp_path):
    """A mistyped ``--model`` or a missing video took 8-22 s and ~900 MB before its one line,
    because torch was imported first (``benchmarks/bench_cli_startup.py`` times it). Each such
    failure, run in a fresh interpreter, now leaves torch, torchcodec, transformers and the
    openai SDK unimported."""
    video = tmp_path / "v.mp4"
    video.write_bytes(b"not opened by these checks")
    rows = tmp_path / "eval.jsonl"
    rows.write_text('{"id": "q", "video": "gone.mp4", "question": "What?", "answer": "x"}\n')
    stdin_rows = '{"question": "What?", "video": "gone.mp4"}\n'
    cases = {
        "infer, mistyped --model": (["infer", str(video), "-q", "What?", "--model", "toy-dmeo"], "", 2),
        "infer, missing video": (["infer", "gone.mp4", "-q", "What?", "--model", "toy-demo"], "", 2),
        "infer -q -, missing video": (["infer", "x.mp4", "-q", "-", "--model", "toy-demo"], stdin_rows, 2),
        "eval, mistyped --model": (
            ["eval", "--benchmark", "jsonl", "--data", str(rows), "--videos", str(tmp_path),
             "--out", str(tmp_path / "a"), "--model", "toy-dmeo"], "", 2),
        "eval, every video missing": (
            ["eval", "--benchmark", "jsonl", "--data", str(rows), "--videos", str(tmp_path),
             "--out", str(tmp_path / "b"), "--model", "toy-demo"], "", 1),
    }  # fmt: skip
    heavy = ("torch", "torchcodec", "transformers", "openai")
    code = (
        "import json, sys\nfrom paravt.cli.main import main\n"
        "rc = main(json.loads(sys.argv[1]))\n"
        f"print(json.dumps([rc, [m for m in {heavy!r} if m in sys.modules]]), file=sys.__stdout__)"
    )
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"}  # no Hub to ask
    for name, (argv, stdin, expected) in cases.items():
        r = subprocess.run([sys.executable, "-c", code, json.dumps(argv)], input=stdin,
                           capture_output=True, text=True, cwd=tmp_path, env=env)  # fmt: skip
        rc, loaded = json.loads(r.stdout.strip().splitlines()[-1])
        assert rc == expected, (name, r.stderr)
        assert loaded == [], f"{name}: {loaded} imported before the one line: {r.stderr}"


def test_bad_arch_is_one_line_exit_2(tmp_path, paravt_cli):
    r = paravt_cli("make-tiny-model", tmp_path / "m", "--arch", "llama")
    assert r.returncode == 2
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "llama" in lines[0] and "qwen3-vl" in lines[0]
    r = paravt_cli("--debug", "make-tiny-model", tmp_path / "m", "--arch", "llama")
    assert r.returncode == 2 and "Traceback" in r.stderr


def test_debug_is_taken_anywhere_and_a_usage_error_has_no_traceback(tmp_path, paravt_cli):
    """``--debug`` after the subcommand was a click usage error with click's own 27-line
    traceback; now it is ``paravt --debug`` wherever it stands, and a usage error is click's
    two lines even under ``--debug``."""
    r = paravt_cli("make-tiny-model", tmp_path / "m", "--arch", "llama", "--debug")
    assert r.returncode == 2 and "Traceback" in r.stderr and "llama" in r.stderr
    assert "No such option" not in r.stderr
    r = paravt_cli("make-tiny-model", tmp_path / "m", "--no-such-flag", "--debug")
    assert r.returncode == 2 and "No such option '--no-such-flag'" in r.stderr
    assert "Traceback" not in r.stderr and "click.exceptions" not in r.stderr
    from paravt.cli.common import debug_first

    assert debug_first(["infer", "v", "--debug", "--", "--debug"]) == (
        ["--debug", "infer", "v", "--", "--debug"],
        True,
    )


def test_make_tiny_model_cli(tmp_path, capsys):
    assert main(["make-tiny-model", str(tmp_path / "m"), "--arch", "qwen2.5-vl", "--json"]) == 0
    assert '"arch": "qwen2.5-vl"' in capsys.readouterr().out
    assert (tmp_path / "m" / "model.safetensors").is_file()


@dataclass
class Inner:
    k: int = 4
    ks: list[int] = field(default_factory=lambda: [4, 8])


@dataclass
class Outer:
    name: str = "x"
    rate: float = 0.5
    flag: bool = False
    mode: str | None = None
    inner: Inner = field(default_factory=Inner)


def test_config_yaml_and_overrides(tmp_path):
    y = tmp_path / "c.yaml"
    y.write_text("name: run1\ninner:\n  k: 8\n")
    cfg = load_config(Outer, y, ["rate=0.25", "flag=true", "inner.ks=[16,32]", "mode=none"])
    assert cfg.name == "run1" and cfg.rate == 0.25 and cfg.flag is True and cfg.mode is None
    assert cfg.inner.k == 8 and cfg.inner.ks == [16, 32]
    assert to_dict(cfg)["inner"] == {"k": 8, "ks": [16, 32]}


@pytest.mark.parametrize(
    "overrides, path, needle",
    [
        (["nope=1"], None, "unknown config key 'nope'"),
        (["inner.zz=1"], None, "unknown config key 'inner.zz'"),
        (["rate=fast"], None, "'rate'"),
        (["flag=maybe"], None, "boolean"),
        (["novalue"], None, "key=value"),
        ([], "/does/not/exist.yaml", "config file not found"),
    ],
)
def test_config_errors(overrides, path, needle):
    with pytest.raises(ConfigError, match=needle):
        load_config(Outer, path, overrides)


def test_yaml_errors_name_the_line(tmp_path, paravt_cli):
    """A syntax error gives FILE:LINE:COLUMN; a bad key or value the file sets gives its line
    (before, the first line of PyYAML's message, without where)."""
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: run1\ninner:\n  k: 8\n   ks: [1, 2\n")
    with pytest.raises(ConfigError, match=r"bad.yaml:4:\d+: not valid YAML"):
        load_config(Outer, bad)
    typo = tmp_path / "typo.yaml"
    typo.write_text("name: run1\ninner:\n  k: 8\n  kz: 3\n")
    with pytest.raises(ConfigError, match=r"unknown config key 'inner.kz'.*typo.yaml line 4"):
        load_config(Outer, typo)
    value = tmp_path / "value.yaml"
    value.write_text("name: run1\nrate: fast\n")
    with pytest.raises(ConfigError, match=r"'rate'.*value.yaml line 2"):
        load_config(Outer, value)
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text("model: tiny:qwen3-vl\ntrainer:\n  use_cpu: true\n  learning_rat: 0.1\n")
    r = paravt_cli("train", "--config", recipe)
    assert r.returncode == 2
    assert "recipe.yaml line 4" in r.stderr.strip().splitlines()[-1], r.stderr
