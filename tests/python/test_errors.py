"""Bad input raises ValueError (seqlab.Error), FileNotFoundError or TypeError, never aborts; where
the CLI has the same input, the message is its `error:` line."""
import json

import pytest
import torch

import seqlab
from conftest import cli_error


def raises(exc, fn):
    with pytest.raises(exc) as e:
        fn()
    return str(e.value)


def test_error_is_a_value_error():
    assert issubclass(seqlab.Error, ValueError)


def test_model_errors(tmp_path, tiny_lm, tiny_parity):
    missing = tmp_path / "missing"
    msg = raises(FileNotFoundError, lambda: seqlab.load(missing))
    assert msg == cli_error("generate", "--model", missing, "--prompt-ids", "1")
    msg = raises(FileNotFoundError, lambda: seqlab.FastModel(missing))
    assert msg == cli_error("generate", "--model", missing, "--prompt-ids", "1")
    msg = raises(seqlab.Error, lambda: seqlab.FastModel(tiny_parity))
    assert msg == cli_error("generate", "--model", tiny_parity, "--prompt-ids", "1")
    model = seqlab.load(tiny_lm)
    assert "vocabulary" in raises(seqlab.Error, lambda: model.forward([1, 999]))
    assert "integers" in raises(seqlab.Error, lambda: model.forward(torch.zeros(3)))
    assert "[T] or [B,T]" in raises(seqlab.Error, lambda: model.forward(torch.zeros(1, 2, 3).long()))
    raises(TypeError, lambda: model.forward("abc"))
    state = model.init_state(batch=2)
    assert "one per sequence" in raises(seqlab.Error, lambda: model.step([1, 2, 3], state))
    assert "batch" in raises(seqlab.Error, lambda: model.init_state(batch=0))


@pytest.mark.parametrize("kw, flags", [
    (dict(temperature=-1), ["--temperature", "-1"]),
    (dict(top_k=-2), ["--top-k", "-2"]),
    (dict(top_p=1.5), ["--top-p", "1.5"]),
    (dict(max_tokens=-1), ["-n", "-1"]),
    (dict(max_tokens=200), ["-n", "200"]),
])
def test_generate_errors_match_the_cli(tiny_lm, kw, flags):
    fast = seqlab.FastModel(tiny_lm)
    prompt = list(range(1, 11))
    msg = raises(seqlab.Error, lambda: fast.generate(prompt, **kw))
    assert msg == cli_error("generate", "--model", tiny_lm, "--prompt-ids",
                            " ".join(map(str, prompt)), *flags)
    # The batched form checks the same things.
    assert raises(seqlab.Error, lambda: fast.generate_batch([prompt], **kw)) == msg


def test_prompt_and_state_errors(tmp_path, tiny_lm, tiny_gru):
    fast, other = seqlab.FastModel(tiny_lm), seqlab.FastModel(tiny_gru)
    msg = raises(seqlab.Error, lambda: fast.generate([0, 99999]))
    assert msg == cli_error("generate", "--model", tiny_lm, "--prompt-ids", "0 99999")
    state = other.init_state()
    other.generate_ids([1, 2], max_tokens=2, state=state)
    path = tmp_path / "gru.state"
    state.save(path)
    msg = raises(seqlab.Error, lambda: fast.load_state(path))
    assert msg == cli_error("generate", "--model", tiny_lm, "--load-state", path)
    missing = tmp_path / "none.state"
    msg = raises(FileNotFoundError, lambda: fast.load_state(missing))
    assert msg == cli_error("generate", "--model", tiny_lm, "--load-state", missing)
    target = tmp_path / "no_dir" / "s.state"
    msg = raises(FileNotFoundError, lambda: state.save(target))
    assert msg == cli_error("generate", "--model", tiny_gru, "--prompt-ids", "1",
                            "--save-state", target)
    assert "another FastModel" in raises(seqlab.Error, lambda: fast.step(1, state))
    s = fast.init_state()
    assert "twice" in raises(seqlab.Error, lambda: fast.step_batch([1, 2], [s, s]))
    assert "tokens for" in raises(seqlab.Error, lambda: fast.step_batch([1], [s, s.clone()]))


def test_convert_and_finetune_errors(tmp_path, tiny_lm):
    out = tmp_path / "out"
    msg = raises(seqlab.Error, lambda: seqlab.convert(tiny_lm, out, to="bogus"))
    assert msg == cli_error("convert", "--model", tiny_lm, "--out", out, "--to", "bogus")
    missing = tmp_path / "missing"
    msg = raises(FileNotFoundError, lambda: seqlab.convert(missing, out))
    assert msg == cli_error("convert", "--model", missing, "--out", out)
    msg = raises(seqlab.Error, lambda: seqlab.convert(tiny_lm, tiny_lm))
    assert msg == cli_error("convert", "--model", tiny_lm, "--out", tiny_lm)
    raises(TypeError, lambda: seqlab.convert(tiny_lm, out, distill_stepz=3))
    assert "distill_steps" in raises(seqlab.Error,
                                     lambda: seqlab.convert(tiny_lm, out, distill_steps="a"))
    msg = raises(FileNotFoundError, lambda: seqlab.finetune(missing, out))
    assert msg == cli_error("finetune", "--model", missing, "--out", out)
    msg = raises(seqlab.Error, lambda: seqlab.finetune(tiny_lm, out, adapter="bogus"))
    assert msg == cli_error("finetune", "--model", tiny_lm, "--out", out, "--adapter", "bogus")
    raises(TypeError, lambda: seqlab.finetune(tiny_lm, out, stepz=3))
    assert "merge" in raises(seqlab.Error, lambda: seqlab.finetune(tiny_lm, out, merge=1))
    assert not out.exists()


def test_tokenizer_and_suite_errors(tmp_path):
    msg = raises(seqlab.Error, lambda: seqlab.Tokenizer("bogus"))
    assert msg == cli_error("tokenizer", "encode", "--tokenizer", "bogus")
    msg = raises(FileNotFoundError, lambda: seqlab.Tokenizer(f"bpe:{tmp_path}/none"))
    assert msg == cli_error("tokenizer", "encode", "--tokenizer", f"bpe:{tmp_path}/none")
    raises(TypeError, lambda: seqlab.Tokenizer("byte").encode(3))
    assert "outside" in raises(seqlab.Error, lambda: seqlab.Tokenizer("byte").decode([300]))
    msg = raises(seqlab.Error, lambda: seqlab.run_suite("bogus", tmp_path / "s"))
    assert msg == cli_error("suite", "bogus", "--out", tmp_path / "s")
    msg = raises(seqlab.Error, lambda: seqlab.suite_cells("hierarchy", only="no_such_cell"))
    assert msg == cli_error("suite", "hierarchy", "--list", "--only", "no_such_cell")
    msg = raises(FileNotFoundError, lambda: seqlab.read_results(tmp_path))
    assert msg == cli_error("suite", "hierarchy", "--out", tmp_path, "--report-only")
    (tmp_path / "results.jsonl").write_text(json.dumps({"a": 1}) + "\nnot json\n")
    msg = raises(seqlab.Error, lambda: seqlab.read_results(tmp_path))
    assert msg == cli_error("suite", "hierarchy", "--out", tmp_path, "--report-only")
