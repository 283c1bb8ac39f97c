#!/usr/bin/env bash
# Installs everything seqlab's build, tests and demo need, from Debian's packages.
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

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#pkgs[@]} packages already installed" >&2
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "error: setup needs root or sudo to install: ${missing[*]}" >&2; exit 2; }
  SUDO="sudo"
fi
echo "setup: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "setup: done" >&2
