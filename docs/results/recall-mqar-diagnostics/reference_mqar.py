"""An independent PyTorch model of one MQAR grid cell: does a plain pre-LN GPT learn it?

Written for the MQAR diagnostics (README.md here), not part of seqlab. The task layout is
seqlab's mqar (keys 0..K-1, values K..V-1, P pairs, then queries in shuffled rounds; training
lengths uniform in [2P + 1, T]); the model and optimiser are the grid cell's (2 pre-LN blocks, 4
heads, MLP ratio 4 with erf GELU, learned absolute positions, embeddings N(0, 0.02), AdamW with
weight decay 0.01, 100 warmup steps then cosine to 0.1 of the rate, gradient clip 1.0, batch 32).

Readouts (the one thing that changed the outcome):
  default          logits over the whole vocabulary with the embedding matrix (tied); the target
                   is the value's index v, so class v is read by the embedding row of token v
  --target-token   tied as above, target = the value's token id K + v (Zoology's readout)
  --head-linear    an untied Linear(d, V - K) with bias over the value indices: seqlab's `tag` head
  --tied-rows keys   tied, logits over the first V - K rows only (the key tokens'): a tied tagging head
  --tied-rows values tied, logits over the value tokens' rows only: class v read by value token K + v

Run with Debian's python3-torch: /usr/bin/python3 reference_mqar.py --pairs 8 --T 64 --lr 1e-3
Prints the training loss and the accuracy on 256 held-out sequences of length T every 500 steps.
"""
import argparse, math, random, sys

try:
    import torch, torch.nn as nn, torch.nn.functional as F
except ImportError:
    sys.exit("error: no torch module; run with Debian's /usr/bin/python3 (apt install python3-torch)")

p = argparse.ArgumentParser()
p.add_argument("--pairs", type=int, default=2)
p.add_argument("--T", type=int, default=24)
p.add_argument("--vocab", type=int, default=128)
p.add_argument("--d", type=int, default=64)
p.add_argument("--layers", type=int, default=2)
p.add_argument("--heads", type=int, default=4)
p.add_argument("--steps", type=int, default=5000)
p.add_argument("--lr", type=float, default=3e-3)
p.add_argument("--batch", type=int, default=32)
p.add_argument("--seed", type=int, default=0)
p.add_argument("--fixed", action="store_true", help="train at T only (no length range)")
p.add_argument("--no-mlp", action="store_true")
p.add_argument("--head-small", action="store_true", help="with --head-linear: weights N(0, 0.02), bias 0")
p.add_argument("--head-linear", action="store_true", help="untied Linear(d, V/2) head with bias, as seqlab's tagging head")
p.add_argument("--target-token", action="store_true", help="target = the value token id K+v")
p.add_argument("--tied-rows", choices=["all", "keys", "values"], default="all",
               help="tied readout over all embedding rows, or only the K key rows (class v = key token v: "
                    "a tied tagging head), or only the value rows (class v = value token K+v)")
a = p.parse_args()
if a.tied_rows != "all" and (a.target_token or a.head_linear):
    sys.exit("error: --tied-rows keys|values scores the value index; drop --target-token and --head-linear")
torch.manual_seed(a.seed); random.seed(a.seed); torch.set_num_threads(1)
K = a.vocab // 2; NV = a.vocab - K

def sample(B, T, rng):
    g = torch.Generator().manual_seed(rng.randrange(2**62))
    P = a.pairs
    keys = torch.rand(B, K, generator=g).argsort(1)[:, :P]            # [B,P] distinct keys
    vals = torch.randint(0, NV, (B, P), generator=g)                   # [B,P]
    x = torch.zeros(B, T, dtype=torch.long); y = torch.zeros(B, T, dtype=torch.long)
    x[:, 0:2 * P:2] = keys; x[:, 1:2 * P:2] = K + vals
    nq = T - 2 * P; rounds = -(-nq // P)
    order = torch.cat([torch.rand(B, P, generator=g).argsort(1) for _ in range(rounds)], 1)[:, :nq]
    x[:, 2 * P:] = keys.gather(1, order)
    y[:, 2 * P:] = vals.gather(1, order) + (K if a.target_token else 0)
    m = torch.zeros(B, T, dtype=torch.bool); m[:, 2 * P:] = True
    return x, y, m

class Block(nn.Module):
    def __init__(s):
        super().__init__()
        s.ln1 = nn.LayerNorm(a.d); s.qkv = nn.Linear(a.d, 3 * a.d); s.o = nn.Linear(a.d, a.d)
        s.ln2 = nn.LayerNorm(a.d)
        s.mlp = None if a.no_mlp else nn.Sequential(nn.Linear(a.d, 4 * a.d), nn.GELU(), nn.Linear(4 * a.d, a.d))
    def forward(s, x):
        B, T, D = x.shape; H = a.heads
        q, k, v = s.qkv(s.ln1(x)).view(B, T, 3, H, D // H).permute(2, 0, 3, 1, 4)
        att = (q @ k.transpose(-1, -2)) / math.sqrt(D // H)
        att = att.masked_fill(torch.ones(T, T, dtype=torch.bool).triu(1), float("-inf")).softmax(-1)
        x = x + s.o((att @ v).transpose(1, 2).reshape(B, T, D))
        return x + s.mlp(s.ln2(x)) if s.mlp is not None else x

class GPT(nn.Module):
    def __init__(s):
        super().__init__()
        s.wte = nn.Embedding(a.vocab, a.d); s.wpe = nn.Embedding(a.T, a.d)
        nn.init.normal_(s.wte.weight, 0, 0.02); nn.init.normal_(s.wpe.weight, 0, 0.02)
        s.blocks = nn.ModuleList(Block() for _ in range(a.layers)); s.ln = nn.LayerNorm(a.d)
        s.head = nn.Linear(a.d, NV) if a.head_linear else None
        if s.head is not None and a.head_small:
            nn.init.normal_(s.head.weight, 0, 0.02); nn.init.zeros_(s.head.bias)
    def forward(s, x):
        h = s.wte(x) + s.wpe(torch.arange(x.shape[1]))
        for b in s.blocks: h = b(h)
        if s.head is not None: return s.head(s.ln(h))
        rows = {"all": s.wte.weight, "keys": s.wte.weight[:NV], "values": s.wte.weight[K:]}[a.tied_rows]
        return s.ln(h) @ rows.t()

net = GPT()
opt = torch.optim.AdamW(net.parameters(), lr=a.lr, weight_decay=0.01)
def lr_at(t):
    if t < 100: return a.lr * (t + 1) / 100
    f = (t - 100) / max(1, a.steps - 100)
    return a.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * f)))
rng = random.Random(a.seed); test_rng = random.Random(12345)
lo = a.T if a.fixed else 2 * a.pairs + 1
def evaluate():
    x, y, m = sample(256, a.T, test_rng)
    with torch.no_grad(): pred = net(x).argmax(-1)
    return ((pred == y) & m).sum().item() / m.sum().item()
for t in range(a.steps):
    for g in opt.param_groups: g["lr"] = lr_at(t)
    x, y, m = sample(a.batch, rng.randint(lo, a.T), rng)
    loss = (F.cross_entropy(net(x).transpose(1, 2), y, reduction="none") * m).sum() / m.sum()
    opt.zero_grad(); loss.backward(); nn.utils.clip_grad_norm_(net.parameters(), 1.0); opt.step()
    if (t + 1) % 500 == 0:
        print(f"step {t+1} loss {loss.item():.4f} acc {evaluate():.3f}", flush=True)
