#!/usr/bin/env bash
# ctest e2e_openai_client: `seqlab serve` driven by OpenAI's official Node client.
#
#   tests/e2e/openai_client.sh SEQLAB_BIN
#
# Imports the hub-layout Llama fixture (tests/data/hf/llama: a tiny random checkpoint with a
# byte-level tokenizer.json) with a chat template added to its tokenizer_config.json, starts
# `seqlab serve --port 0` on it, runs tests/e2e/openai_client.mjs against it, then stops the
# server with SIGTERM and expects exit 0. Exits 77 (ctest's SKIP_RETURN_CODE) only when node or
# the npm package is missing; scripts/setup.sh installs both, so CI runs it.
set -euo pipefail
bin="$(realpath "$1")"
src="$(cd "$(dirname "$0")/../.." && pwd)"
if ! command -v node >/dev/null; then
  echo "skip: node is not installed (scripts/setup.sh installs it)"
  exit 77
fi
if [ ! -f "$src/third_party/npm/node_modules/openai/package.json" ]; then
  echo "skip: npm package openai is not in third_party/npm (scripts/setup.sh installs it)"
  exit 77
fi

work="$(mktemp -d)"
pid=""
cleanup() {
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then kill -KILL "$pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

cp -r "$src/tests/data/hf/llama" "$work/hf"
# The chat template, and the prompt it renders for [{role: user, content: Hello}] (by hand).
template="{{ bos_token }}{% for m in messages %}{{ '<' + m['role'] + '>' + m['content'] | trim + '\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<assistant>' }}{% endif %}"
hello_prompt=$'<s><user>Hello\n<assistant>'
node -e '
  const fs = require("fs");
  const [file, template] = process.argv.slice(1);
  const c = JSON.parse(fs.readFileSync(file, "utf8"));
  c.chat_template = template;
  c.bos_token = "<s>";
  fs.writeFileSync(file, JSON.stringify(c, null, 2));
' "$work/hf/tokenizer_config.json" "$template"
"$bin" import-hf --hf "$work/hf" --out "$work/llama-chat" 2>"$work/import.log" ||
  { cat "$work/import.log"; exit 1; }

"$bin" serve --model "$work/llama-chat" --port 0 --max-batch 4 2>"$work/serve.log" &
pid=$!
port=""
for _ in $(seq 1 300); do
  port="$(sed -n 's#.*on http://127\.0\.0\.1:\([0-9]*\).*#\1#p' "$work/serve.log" | head -1)"
  [ -n "$port" ] && break
  kill -0 "$pid" 2>/dev/null || { cat "$work/serve.log"; echo "error: the server exited"; exit 1; }
  sleep 0.1
done
[ -n "$port" ] || { cat "$work/serve.log"; echo "error: the server did not say its port"; exit 1; }

status=0
node "$src/tests/e2e/openai_client.mjs" "http://127.0.0.1:$port" llama-chat "$hello_prompt" || status=$?
kill -TERM "$pid"
server_status=0
wait "$pid" || server_status=$?
pid=""
if [ "$status" -ne 0 ] || [ "$server_status" -ne 0 ]; then
  echo "--- server log"
  cat "$work/serve.log"
  echo "error: client exit $status, server exit $server_status"
  exit 1
fi
grep -q "chat template: the model's" "$work/serve.log" ||
  { cat "$work/serve.log"; echo "error: the log does not name the model's template"; exit 1; }
echo "e2e_openai_client: ok (server exited 0 on SIGTERM)"
