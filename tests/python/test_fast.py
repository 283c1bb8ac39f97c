"""seqlab.FastModel: the fast decoder and seqlab generate's sampler, from Python."""
import torch

import seqlab
from conftest import cli_json

PROMPT = [464, 3797, 318, 257, 1643, 286]
SAMPLING = dict(temperature=0.8, top_k=40, top_p=0.95, seed=11)


def cli_generate(model, n, *extra):
    return cli_json("generate", "--model", model, "--engine", "fast", "-n", n,
                    "--temperature", SAMPLING["temperature"], "--top-k", SAMPLING["top_k"],
                    "--top-p", SAMPLING["top_p"], "--seed", SAMPLING["seed"], *extra)


def test_generate_equals_the_cli(teacher, tiny_gru):
    for d in (teacher, tiny_gru):
        fast = seqlab.FastModel(d)
        ids = PROMPT if d == teacher else [104, 101, 108]
        want = cli_generate(d, 16, "--prompt-ids", " ".join(map(str, ids)))
        assert fast.generate_ids(ids, max_tokens=16, **SAMPLING) == want["generated_ids"]
    fast = seqlab.FastModel(teacher)
    want = cli_generate(teacher, 16, "--prompt", "The meaning of a word")
    assert fast.generate("The meaning of a word", max_tokens=16, **SAMPLING) == want["text"]


def test_step_equals_the_torch_model(teacher, tiny_gru):
    for d in (teacher, tiny_gru):
        fast, model = seqlab.FastModel(d), seqlab.load(d)
        fs, ms = fast.init_state(), model.init_state()
        with torch.no_grad():
            for t in PROMPT:
                a = fast.step(t % fast.vocab_size, fs)
                b = model.step(t % fast.vocab_size, ms)
                torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-4)
        assert fs.pos == len(PROMPT)


def test_prefill_equals_steps_and_batch_equals_steps(teacher):
    fast = seqlab.FastModel(teacher)
    a, b = fast.init_state(), fast.init_state()
    last = fast.prefill(PROMPT, a)
    for t in PROMPT:
        stepped = fast.step(t, b)
    torch.testing.assert_close(last, stepped, rtol=1e-5, atol=1e-5)
    c, d = a.clone(), b.clone()
    batch = fast.step_batch([7, 9], [a, b])
    assert torch.equal(batch[0], fast.step(7, c)) and torch.equal(batch[1], fast.step(9, d))


def test_state_save_load_round_trip(teacher, tmp_path):
    fast = seqlab.FastModel(teacher)
    whole = fast.generate_ids(PROMPT, max_tokens=12, **SAMPLING)
    state = fast.init_state()
    first = fast.generate_ids(PROMPT, max_tokens=5, state=state, **SAMPLING)
    assert state.pending == first[-1]
    path = tmp_path / "state.safetensors"
    state.save(path)
    loaded = fast.load_state(path)
    assert (loaded.pos, loaded.pending) == (state.pos, state.pending)
    assert torch.equal(loaded.data, state.data)
    rest = fast.generate_ids(max_tokens=7, state=loaded, **SAMPLING)
    assert first + rest == whole
    # The file is seqlab generate's --save-state file: the CLI continues it the same way.
    assert cli_generate(teacher, 7, "--load-state", path)["generated_ids"] == rest


def test_clone_branches(teacher):
    fast = seqlab.FastModel(teacher)
    state = fast.init_state()
    fast.generate_ids(PROMPT, max_tokens=3, state=state, **SAMPLING)
    branch = state.clone()
    a = fast.generate_ids(max_tokens=6, state=state, **SAMPLING)
    b = fast.generate_ids(max_tokens=6, state=branch, **SAMPLING)
    assert a == b and state.pos == branch.pos


def test_stream_is_the_generated_text(teacher):
    fast = seqlab.FastModel(teacher)
    text = fast.generate("Once upon a time", max_tokens=20, **SAMPLING)
    stream = fast.generate("Once upon a time", max_tokens=20, stream=True, **SAMPLING)
    pieces = list(stream)
    assert len(pieces) > 1 and all(isinstance(p, str) for p in pieces)
    assert "".join(pieces) == text


def test_generate_batch_equals_one_by_one(teacher, tiny_gru):
    for d in (teacher, tiny_gru):
        fast = seqlab.FastModel(d)
        prompts = ["A dog", "The sea is", "x"]
        batch = fast.generate_batch(prompts, max_tokens=10, **SAMPLING)
        assert batch == [fast.generate(p, max_tokens=10, **SAMPLING) for p in prompts]


def test_state_data_is_shared(tiny_gru):
    fast = seqlab.FastModel(tiny_gru)
    state = fast.init_state()
    data = state.data
    assert data.numel() == fast.state_size
    assert state.data.data_ptr() == data.data_ptr()
    before = data.clone()
    fast.step(65, state)
    assert not torch.equal(data, before)  # the view sees the decoder write the state


def test_narrow_weights_equal_the_cli(teacher):
    for w in ("bf16", "int8"):
        fast = seqlab.FastModel(teacher, weights=w)
        assert fast.weights == w
        want = cli_generate(teacher, 16, "--prompt-ids", " ".join(map(str, PROMPT)), "--weights", w)
        assert fast.generate_ids(PROMPT, max_tokens=16, **SAMPLING) == want["generated_ids"]
    assert seqlab.FastModel(teacher).weights == "f32"
    try:
        seqlab.FastModel(teacher, weights="q4")
    except seqlab.Error as e:
        assert "unknown weight format 'q4'" in str(e)
    else:
        raise AssertionError("weights='q4' was accepted")
