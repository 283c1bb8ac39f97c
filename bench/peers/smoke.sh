#!/usr/bin/env bash
# Checks bench/peers without building any peer (seconds): usage errors and a missing checkout
# fail clearly, make_models.py writes the file formats its docstring specifies (on a tiny shape),
# and report.py computes its ratios from the rows. Needs /usr/bin/python3 with torch.
#
#   bench/peers/smoke.sh            # prints "smoke: ok" and exits 0, or says what failed
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
PY=/usr/bin/python3
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "smoke: FAIL: $*" >&2; exit 1; }

# expect_fail CODE PATTERN CMD...: CMD exits with CODE and says PATTERN on stderr.
expect_fail() {
  local code=$1 pattern=$2 rc=0
  shift 2
  "$@" >"$T/out" 2>"$T/err" || rc=$?
  [ "$rc" = "$code" ] || fail "$* exited $rc, not $code: $(cat "$T/err")"
  grep -q -- "$pattern" "$T/err" || fail "$* did not say '$pattern': $(cat "$T/err")"
}
expect_fail 2 "usage: bench/peers/build.sh" "$HERE/build.sh"
expect_fail 2 "is not a git repository" "$HERE/build.sh" "$T/no-rwkv" "$T/no-ggml" "$T/out"
expect_fail 2 "usage: bench/peers/run.sh" "$HERE/run.sh"
mkdir -p "$T/empty"
expect_fail 2 "missing: run bench/peers/build.sh first" "$HERE/run.sh" "$T/empty"
expect_fail 2 "cannot read" "$PY" "$HERE/report.py" "$T/none.jsonl"

"$PY" "$HERE/make_models.py" "$T/m" --d-model 64 --n-layer 2 --n-head 2 --vocab 300 \
  --n-positions 40 2>/dev/null
"$PY" - "$T/m" <<'PY' || fail "make_models.py's files do not match their format"
import json, struct, sys, torch
d = sys.argv[1]
raw = open(d + "/gpt2-hf/model.safetensors", "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
head = json.loads(raw[8:8 + n])
def hf(name):
    a, b = head[name]["data_offsets"]
    return torch.frombuffer(bytearray(raw[8 + n + a:8 + n + b]), dtype=torch.float32).view(head[name]["shape"])
f = open(d + "/gpt2-ggml-f32.bin", "rb").read()
magic, V, P, D, H, L, ftype = struct.unpack_from("<7i", f, 0)
assert (magic, V, P, D, H, L, ftype) == (0x67676D6C, 300, 40, 64, 2, 2, 0), (V, P, D, H, L)
o = 28
assert struct.unpack_from("<i", f, o)[0] == V
o += 4
for _ in range(V):
    o += 4 + struct.unpack_from("<I", f, o)[0]
tensors = {}
while o < len(f):
    nd, ln, tt = struct.unpack_from("<3i", f, o); o += 12
    ne = struct.unpack_from("<%di" % nd, f, o); o += 4 * nd
    name = f[o:o + ln].decode(); o += ln
    count = 1
    for x in ne:
        count *= x
    tensors[name] = (ne, torch.frombuffer(bytearray(f[o:o + 4 * count]), dtype=torch.float32))
    o += 4 * count
assert o == len(f) and len(tensors) == 4 + 12 * L, len(tensors)
# examples/gpt-2 creates c_attn as ne = (n_embd, 3 n_embd): rows of the [out, in] matrix.
ne, data = tensors["model/h1/attn/c_attn/w"]
assert ne == (D, 3 * D), ne
assert torch.equal(data.view(3 * D, D), hf("h.1.attn.c_attn.weight").t())
ne, data = tensors["model/h0/mlp/c_proj/w"]
assert ne == (4 * D, D) and torch.equal(data.view(D, 4 * D), hf("h.0.mlp.c_proj.weight").t())
ne, data = tensors["model/wte"]
assert ne == (D, V) and torch.equal(data.view(V, D), hf("wte.weight"))
sd = torch.load(d + "/rwkv4.pth")
assert sd["blocks.1.ffn.key.weight"].shape == (4 * D, D) and sd["head.weight"].shape == (V, D)
assert sd["blocks.0.att.time_mix_k"].shape == (1, 1, D) and "blocks.0.ln0.weight" in sd
assert not any(k.startswith("blocks.2.") for k in sd)
PY

"$PY" - "$T/r.jsonl" <<'PY'
import json, sys
with open(sys.argv[1], "w") as f:
    for engine, model, w, tg in (("rwkv.cpp", "rwkv4", "f32", 100), ("ggml-gpt2", "gpt2", "f32", 80),
                                 ("seqlab", "t2r", "f32", 150), ("seqlab", "t2r", "f32", 130),
                                 ("rwkv.cpp", "rwkv4", "q8_0", 300),
                                 ("seqlab", "t2r", "int8", 360), ("seqlab", "t2r", "bf16", 900)):
        f.write(json.dumps({"engine": engine, "model": model, "weights": w, "threads": 1,
                            "context": 128, "gen": 8, "rep": 1, "tg_tokens_per_s": tg,
                            "pp_tokens_per_s": 1000, "ms_per_token": 1000 / tg,
                            "weight_bytes": 1000000, "peak_rss_mib": 10,
                            "load_avg_before": 1.0, "machine": "test", "cores": 2}) + "\n")
PY
"$PY" "$HERE/report.py" "$T/r.jsonl" >"$T/report.md"
# seqlab t2r: mean 140 ± 14.1; 1.40x rwkv.cpp's 100, 1.75x ggml's 80.
grep -q "| 128 | 1 | seqlab | t2r | f32 | 1.0 | 140.0 ± 14.1 |.*| 1.40× | 1.75× |" "$T/report.md" ||
  fail "report.py's ratios: $(cat "$T/report.md")"
# 8-bit against 8-bit: seqlab int8's 360 against rwkv.cpp Q8_0's 300 (not bf16's 900, not f32).
grep -q "seqlab t2r int8 (360.0 tokens/s) = 1.20× rwkv.cpp q8_0" "$T/report.md" ||
  fail "report.py's 8-bit pairing: $(cat "$T/report.md")"
grep -q "seqlab t2r f32 (140.0 tokens/s) = 1.40× rwkv.cpp f32" "$T/report.md" ||
  fail "report.py's f32 pairing: $(cat "$T/report.md")"
echo "smoke: ok"
