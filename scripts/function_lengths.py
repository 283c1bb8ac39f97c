#!/usr/bin/env python3
"""Lists C++ function bodies longer than a limit (default 150 lines) under src/ and tools/.

A heuristic brace matcher, not a parser: a function body is a '{' that closes a line ending a
signature (')' ... '{', optionally 'const', 'override', an initializer list) at namespace scope or
inside a class. Lambdas and blocks inside a body count toward their enclosing function.
Exit status 1 when any function is over the limit, so CI can run it as a test.

  scripts/function_lengths.py [--limit 150] [paths...]
"""
import argparse
import os
import re
import sys

SIG_END = re.compile(r"\)\s*(const\s*)?(noexcept\s*)?(override\s*)?(->\s*[\w:<>,\s*&]+)?\s*\{\s*$")
CTRL = re.compile(r"^\s*(if|for|while|switch|catch|else|do)\b|\[[^\]]*\]\s*\(|=\s*\[|\breturn\b")


def strip(line):
    line = re.sub(r'"(\\.|[^"\\])*"', '""', line)
    line = re.sub(r"'(\\.|[^'\\])*'", "''", line)
    return line.split("//")[0]


def functions(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        lines = [strip(l.rstrip("\n")) for l in f]
    depth = 0
    stack = []  # (depth at open, is_function, start line, name)
    in_comment = False
    out = []
    for i, raw in enumerate(lines):
        line = raw
        if in_comment:
            if "*/" not in line:
                continue
            line = line.split("*/", 1)[1]
            in_comment = False
        line = re.sub(r"/\*.*?\*/", "", line)
        if "/*" in line:
            line, in_comment = line.split("/*", 1)[0], True
        inside_fn = any(s[1] for s in stack)
        for ch in line:
            if ch == "{":
                is_fn = (not inside_fn and SIG_END.search(line) is not None
                         and not CTRL.search(line))
                name = ""
                if is_fn:
                    j = i
                    sig = line
                    while "(" not in sig and j > 0:
                        j -= 1
                        sig = lines[j] + sig
                    m = re.search(r"([\w:~<>]+)\s*\(", sig)
                    name = m.group(1) if m else "?"
                stack.append((depth, is_fn, i, name))
                depth += 1
                inside_fn = inside_fn or is_fn
            elif ch == "}":
                depth -= 1
                if stack:
                    d, is_fn, start, name = stack.pop()
                    if is_fn:
                        out.append((name, start + 1, i - start + 1))
                inside_fn = any(s[1] for s in stack)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--limit", type=int, default=150)
    ap.add_argument("paths", nargs="*")
    a = ap.parse_args()
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    paths = a.paths or [os.path.join(root, "src"), os.path.join(root, "tools")]
    bad = 0
    for p in paths:
        files = [p] if os.path.isfile(p) else [
            os.path.join(d, f) for d, _, fs in os.walk(p) for f in fs if f.endswith((".cpp", ".h"))]
        for path in sorted(files):
            for name, line, n in functions(path):
                if n > a.limit:
                    bad += 1
                    print(f"{os.path.relpath(path, root)}:{line}: {name} is {n} lines (limit {a.limit})")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
