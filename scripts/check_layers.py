#!/usr/bin/env python3
"""Checks seqlab's layering: a file under src/seqlab/<layer>/ includes only its own layer and the
layers below it, in the order docs/DESIGN.md gives (bottom first):

  core, text, tasks, mixers, model, infer, train, convert, methods, exp, serve

tools/ (the CLI) may include any layer. Prints each offending include; exit status 1 if any.

  scripts/check_layers.py
"""
import os
import re
import sys

LAYERS = ["core", "text", "tasks", "mixers", "model", "infer", "train", "convert", "methods", "exp", "serve"]
INCLUDE = re.compile(r'^\s*#\s*include\s+"seqlab/([a-z_]+)/')


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    src = os.path.join(root, "src", "seqlab")
    bad = 0
    for layer in sorted(os.listdir(src)):
        ldir = os.path.join(src, layer)
        if not os.path.isdir(ldir):
            continue
        if layer not in LAYERS:
            print(f"src/seqlab/{layer}/: not a known layer (add it to scripts/check_layers.py "
                  f"and docs/DESIGN.md)")
            bad += 1
            continue
        rank = LAYERS.index(layer)
        for d, _, files in os.walk(ldir):
            for f in sorted(files):
                if not f.endswith((".h", ".cpp")):
                    continue
                path = os.path.join(d, f)
                with open(path, encoding="utf-8") as fh:
                    for n, line in enumerate(fh, 1):
                        m = INCLUDE.match(line)
                        if m and m.group(1) in LAYERS and LAYERS.index(m.group(1)) > rank:
                            print(f"{os.path.relpath(path, root)}:{n}: {layer}/ includes "
                                  f"{m.group(1)}/, a higher layer")
                            bad += 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
