"""seqlab.load: logits as the CLI computes them, the recurrent form, shared tensors, training."""
import torch

import seqlab
from conftest import cli_json

PROMPT = [5, 17, 42, 7, 99, 3]


def greedy_from_forward(model, prompt, n):
    ids = list(prompt)
    with torch.no_grad():
        for _ in range(n):
            ids.append(int(model.forward(torch.tensor(ids)).argmax(-1)[-1]))
    return ids[len(prompt):]


def test_forward_logits_give_the_cli_greedy_tokens(teacher):
    # The CLI's torch engine runs SeqModel::step; greedy tokens from Python's forward logits must
    # be the same ids, token for token.
    model = seqlab.load(teacher)
    want = cli_json("generate", "--model", teacher, "--engine", "torch", "--temperature", 0,
                    "--prompt-ids", " ".join(map(str, PROMPT)), "-n", 12)["generated_ids"]
    assert greedy_from_forward(model, PROMPT, 12) == want


def test_step_equals_forward(tiny_lm, teacher):
    for d in (tiny_lm, teacher):
        model = seqlab.load(d)
        ids = torch.tensor([PROMPT, PROMPT[::-1]])
        with torch.no_grad():
            full = model.forward(ids)
            state = model.init_state(batch=2)
            steps = torch.stack([model.step(ids[:, t], state) for t in range(ids.shape[1])], 1)
        assert state.pos == ids.shape[1]
        assert full.shape == (2, len(PROMPT), model.vocab_size)
        torch.testing.assert_close(steps, full, rtol=1e-4, atol=1e-4)


def test_state_clone_is_independent(tiny_gru):
    model = seqlab.load(tiny_gru)
    with torch.no_grad():
        s = model.init_state()
        model.step(3, s)
        c = s.clone()
        a = model.step(4, s)
        b = model.step(4, c)
        torch.testing.assert_close(a, b, rtol=0, atol=0)
        model.step(9, c)
    assert s.pos == 2 and c.pos == 3
    ts = s.tensors()
    assert ts and all(isinstance(t, torch.Tensor) for t in ts.values())
    assert not torch.equal(next(iter(ts.values())), next(iter(c.tensors().values())))


def test_tensors_are_shared_not_copied(tiny_lm):
    model = seqlab.load(tiny_lm)
    params = model.named_parameters()
    wte = params["wte.weight"]
    # The same storage each time it is asked for, and the one the C++ side computes with.
    assert model.named_parameters()["wte.weight"].data_ptr() == wte.data_ptr()
    assert seqlab._seqlab._data_ptr(wte) == wte.data_ptr()
    ids = torch.tensor([1, 2, 3])
    assert seqlab._seqlab._data_ptr(ids) == ids.data_ptr()  # inputs pass as they are
    before = model.forward(ids).detach().clone()
    with torch.no_grad():
        wte.mul_(0.5)  # an in-place change in Python is the model's weight
    assert not torch.allclose(model.forward(ids), before)
    state = model.init_state()
    model.step(1, state)
    for name, t in state.tensors().items():
        assert state.tensors()[name].data_ptr() == t.data_ptr()


def test_train_from_python_and_save(tiny_lm, tmp_path):
    model = seqlab.load(tiny_lm)
    model.train()
    params = model.parameters()
    assert params and all(p.requires_grad for p in params)
    opt = torch.optim.AdamW(params, lr=1e-2)
    ids = torch.tensor([[ord(c) for c in "the cat sat on the mat."]])
    losses = []
    for _ in range(8):
        logits = model.forward(ids[:, :-1])
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                                                 ids[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert params[0].grad is not None
    assert losses[-1] < losses[0]
    model.eval()
    model.save(tmp_path / "trained")
    again = seqlab.load(tmp_path / "trained")
    with torch.no_grad():
        torch.testing.assert_close(again.forward(ids), model.forward(ids), rtol=0, atol=0)
    assert again.sections["task"] == model.sections["task"]
    assert again.config == model.config
