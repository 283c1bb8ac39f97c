"""seqlab.convert / finetune / suites: the CLI's library calls, with the CLI's results."""
import json

import torch

import seqlab
from conftest import SOURCE, cli, cli_json


def weights(d):
    m = seqlab.load(d)
    return {k: v.detach() for k, v in {**m.named_parameters(), **m.named_buffers()}.items()}


def assert_same_weights(a, b):
    wa, wb = weights(a), weights(b)
    assert wa.keys() == wb.keys()
    for k in wa:
        assert torch.equal(wa[k], wb[k]), k


def test_convert_equals_the_cli(tmp_path, tiny_lm):
    for to, extra in (("t2r", {}), ("hybrid", dict(window=8, feature_map="hedgehog"))):
        py = seqlab.convert(tiny_lm, tmp_path / f"py_{to}", to=to, init_seed=3, **extra)
        flags = [x for k, v in extra.items() for x in (f"--{k.replace('_', '-')}", v)]
        want = cli_json("convert", "--model", tiny_lm, "--out", tmp_path / f"cli_{to}",
                        "--to", to, "--init-seed", 3, *flags)
        assert py["convert"]["config"] == want["convert"]["config"]
        assert_same_weights(tmp_path / f"py_{to}", tmp_path / f"cli_{to}")
        assert seqlab.load(tmp_path / f"py_{to}").sections["task"] == \
            seqlab.load(tiny_lm).sections["task"]


def test_convert_with_attention_transfer(tmp_path, tiny_lm):
    r = seqlab.convert(tiny_lm, tmp_path / "hh", to="hedgehog", distill_steps=3,
                       distill_batch=2, quiet=True)
    d = r["convert"]["distill"]
    assert d["steps"] == 3 and len(d["loss_before"]) == len(d["loss_after"]) == 2
    assert r["arch"].startswith("linear") or "hedgehog" in r["arch"]


def test_finetune_equals_the_cli(tmp_path, tiny_lm):
    opts = dict(steps=3, batch=2, eval_size=4, threads=1, lr=1e-3)
    py = seqlab.finetune(tiny_lm, tmp_path / "py", quiet=True, **opts)
    flags = [x for k, v in opts.items() for x in (f"--{k.replace('_', '-')}", v)]
    want = cli_json("finetune", "--model", tiny_lm, "--out", tmp_path / "cli", "-q", *flags)
    for k in ("steps", "start_step", "first_loss", "last_loss", "eval_loss", "parameters",
              "trainable"):
        assert py[k] == want[k], k
    assert_same_weights(tmp_path / "py", tmp_path / "cli")
    # Adapters, merged at the end, with a task field overriding the model's own.
    lora = seqlab.finetune(tiny_lm, tmp_path / "lora", adapter="lora", lora_rank=2, merge=True,
                           max_len=16, quiet=True, **opts)
    assert lora["trainable"] < lora["parameters"]
    m = seqlab.load(tmp_path / "lora")
    assert m.sections["task"]["max_len"] == 16 and "adapters" not in m.sections


def test_suites_and_results(tmp_path):
    assert "hierarchy" in seqlab.suites()
    assert seqlab.suite_cells("hierarchy", quick=True) == \
        cli("suite", "hierarchy", "--quick", "--list").split()
    assert seqlab.suite_cells("hierarchy", quick=True, only="l5_gru") == \
        cli("suite", "hierarchy", "--quick", "--list", "--only", "l5_gru").split()
    committed = SOURCE / "docs" / "results" / "hierarchy-quick"
    rows = seqlab.read_results(committed)
    lines = (committed / "results.jsonl").read_text().splitlines()
    assert rows == [json.loads(l) for l in lines]
    assert all(isinstance(r, dict) for r in rows)


def test_run_suite(tmp_path):
    # One cell of the quick hierarchy grid (a 1-layer GRU on L5, about 20 s on 2 shared cores).
    out, only = tmp_path / "suite", "^l5_gru_d32_s0$"
    r = seqlab.run_suite("hierarchy", out, quick=True, only=only, jobs=1, plots=False,
                         quiet=True)
    assert (r["cells"], r["ran"], r["failed"]) == (1, 1, 0)  # the slice --only keeps
    rows = seqlab.read_results(out)
    assert rows and {row["cell"] for row in rows} == {"l5_gru_d32_s0"}
    assert all(0 <= row["accuracy"] <= 1 for row in rows)
    # The CLI finds the cell finished and keeps the same rows.
    said = cli("suite", "hierarchy", "--quick", "--only", only, "--out", out, "--no-plots", "-q")
    assert "0 ran, 1 already done" in said
    assert seqlab.read_results(out) == rows


def test_progress_goes_to_stderr_as_the_cli(tmp_path, tiny_lm, capfd):
    opts = ["--steps", 2, "--batch", 2, "--eval-size", 4, "--threads", 1]
    seqlab.finetune(tiny_lm, tmp_path / "py", steps=2, batch=2, eval_size=4, threads=1)
    out, err = capfd.readouterr()
    assert out == "" and err.strip()  # nothing on stdout: the library logs to stderr
    p = cli("finetune", "--model", tiny_lm, "--out", tmp_path / "cli", *opts, check=False)
    # The same kinds of lines (the first word of each) as the CLI's stderr.
    first = lambda text: {l.split()[0] for l in text.replace("\r", "\n").splitlines() if l.strip()}
    assert first(err) == first(p.stderr)
    seqlab.finetune(tiny_lm, tmp_path / "quiet", steps=2, batch=2, eval_size=4, threads=1,
                    quiet=True)
    assert capfd.readouterr() == ("", "")
