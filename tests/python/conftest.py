"""Fixtures of the Python module's tests: the CLI they compare against, and tiny models.

Run by ctest (test `python`, python/CMakeLists.txt) with PYTHONPATH=build/python, SEQLAB_BIN and
SEQLAB_SOURCE_DIR set; by hand:
    PYTHONPATH=build/python SEQLAB_BIN=build/seqlab /usr/bin/python3 -m pytest -q tests/python
"""
import json
import os
import subprocess
from pathlib import Path

import pytest

SOURCE = Path(os.environ.get("SEQLAB_SOURCE_DIR", Path(__file__).resolve().parents[2]))
SEQLAB = os.environ.get("SEQLAB_BIN", str(SOURCE / "build" / "seqlab"))
TEACHER = SOURCE / "models" / "teacher-en"


def cli(*args, check=True):
    """Runs the seqlab CLI; returns its stdout (check) or the CompletedProcess."""
    p = subprocess.run([SEQLAB, *map(str, args)], capture_output=True, text=True,
                       stdin=subprocess.DEVNULL)
    if check:
        assert p.returncode == 0, p.stderr
        return p.stdout
    return p


def cli_json(*args):
    return json.loads(cli(*args, "--json"))


def cli_error(*args):
    """The message of the CLI's `error:` line (exit code 2) for these arguments."""
    p = cli(*args, check=False)
    assert p.returncode == 2, (p.returncode, p.stdout, p.stderr)
    lines = [l for l in p.stderr.splitlines() if l.startswith("error: ")]
    assert len(lines) == 1, p.stderr
    return lines[0][len("error: "):]


@pytest.fixture(scope="session")
def teacher():
    """The shipped 5M-parameter softmax teacher (4 layers, RoPE, SwiGLU, a BPE tokenizer)."""
    assert (TEACHER / "config.json").exists()
    return TEACHER


@pytest.fixture(scope="session")
def corpus(tmp_path_factory):
    d = tmp_path_factory.mktemp("corpus")
    lines = [
        f"the {a} {b} sat on the {c} and looked at the {d}."
        for a in ("small", "large", "old", "young")
        for b in ("cat", "dog", "bird")
        for c in ("mat", "wall", "tree")
        for d in ("moon", "sea")
    ]
    (d / "text.txt").write_text("\n".join(lines) + "\n")
    return d / "text.txt"


@pytest.fixture(scope="session")
def tiny_lm(tmp_path_factory, corpus):
    """A byte-level softmax language model trained for a few steps by the CLI."""
    out = tmp_path_factory.mktemp("models") / "tiny_lm"
    cli("train", "--task", "lm", "--corpus", corpus, "--tokenizer", "byte", "--arch", "softmax",
        "--d-model", 32, "--n-head", 2, "--n-layer", 2, "--max-len", 32, "--max-context", 128,
        "--steps", 4, "--batch", 4, "--eval-size", 8, "--threads", 1, "--out", out, "-q")
    return out


@pytest.fixture(scope="session")
def tiny_gru(tmp_path_factory, corpus):
    """A byte-level GRU language model (an RNN: no context limit, a small state)."""
    out = tmp_path_factory.mktemp("models") / "tiny_gru"
    cli("train", "--task", "lm", "--corpus", corpus, "--tokenizer", "byte", "--arch", "gru",
        "--d-model", 32, "--n-layer", 2, "--max-len", 32, "--steps", 4, "--batch", 4,
        "--eval-size", 8, "--threads", 1, "--out", out, "-q")
    return out


@pytest.fixture(scope="session")
def tiny_parity(tmp_path_factory):
    """A classifier (not a language model): what generation refuses."""
    out = tmp_path_factory.mktemp("models") / "tiny_parity"
    cli("train", "--task", "parity", "--arch", "gru", "--d-model", 16, "--n-layer", 1,
        "--steps", 2, "--batch", 4, "--eval-size", 8, "--threads", 1, "--out", out, "-q")
    return out
