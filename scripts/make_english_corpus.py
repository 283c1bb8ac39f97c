#!/usr/bin/python3
"""Writes the English corpus of seqlab's pretrained teacher from Debian packages.

Every source is a Debian package (scripts/setup.sh installs them); nothing is downloaded. Output:
one UTF-8 text file per source under OUT (default data/english), one document per line, ready for
`--corpus wordnet,data/english` (WordNet's glosses are read by seqlab itself from wordnet-base).

  gcide.txt     GNU Collaborative International Dictionary of English (dict-gcide): one entry per
                line, Webster-1913 pronunciation marks and source tags ("[1913 Webster]") removed
  kjv.txt       King James Bible (bible-kjv, bible-kjv-text): one chapter per line, verse numbers
                removed
  fortunes.txt  fortune cookies (fortunes, fortunes-min): one fortune per line
  foldoc.txt    Free On-line Dictionary of Computing (dict-foldoc): one entry per line
  jargon.txt    the Jargon File (dict-jargon): one entry per line
  devil.txt     Ambrose Bierce's Devil's Dictionary (dict-devil): one entry per line

Line breaks inside a document become single spaces. The output is a deterministic function of the
installed packages; the versions used are printed and written to OUT/SOURCES.
"""
import argparse
import gzip
import os
import re
import subprocess
import sys

DICTD = "/usr/share/dictd"
FORTUNES = "/usr/share/games/fortunes"
B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"


def b64num(s):
    v = 0
    for c in s:
        v = v * 64 + B64.index(c)
    return v


def flat(text):
    return re.sub(r"\s+", " ", text).strip()


def dictd_entries(name):
    """The entries of a dictd database, in file order, each once (several headwords may index one
    entry)."""
    idx = os.path.join(DICTD, name + ".index")
    data = gzip.open(os.path.join(DICTD, name + ".dict.dz"), "rb").read()
    spans = set()
    with open(idx, encoding="utf-8", errors="replace") as f:
        for line in f:
            parts = line.rstrip("\n").split("\t")
            if len(parts) < 3 or parts[0].startswith("00-database") or parts[0].startswith("00database"):
                continue
            spans.add((b64num(parts[1]), b64num(parts[2])))
    for off, ln in sorted(spans):
        entry = data[off:off + ln].decode("utf-8", errors="replace")
        if not entry.lstrip().startswith(("00-database", "00database")):  # the database's own info
            yield entry


SOURCE_TAG = re.compile(r"^\s*\[(?:1913 Webster|WordNet 1\.5|PJC|Webster 1913 Suppl\.|Century Dict\.|"
                        r"[^\]]{0,40}(?:Webster|WordNet|PJC|Dict\.)[^\]]{0,40})\]\s*$")


def gcide():
    for entry in dictd_entries("gcide"):
        lines = [l for l in entry.split("\n") if not SOURCE_TAG.match(l)]
        text = "\n".join(lines)
        text = re.sub(r"\\[^\\\n]{1,80}\\", "", text)  # \Ab*do"men\ pronunciations
        text = flat(text)
        if len(text) > 20:
            yield text


def plain_dict(name):
    for entry in dictd_entries(name):
        text = flat(entry)
        if len(text) > 20:
            yield text


def kjv():
    out = subprocess.run(["bible", "Gen1:1-Rev22:21"], check=True, capture_output=True,
                         text=True).stdout
    chapter = []
    for line in out.split("\n"):
        if re.match(r"^\S.* \d+$", line):  # "Genesis 3": a new chapter
            if chapter:
                yield flat(" ".join(chapter))
            chapter = []
            continue
        chapter.append(re.sub(r"^\s+\d+ ", "", line))
    if chapter:
        yield flat(" ".join(chapter))


def fortunes():
    names = sorted(n for n in os.listdir(FORTUNES)
                   if "." not in n and os.path.isfile(os.path.join(FORTUNES, n)))
    for n in names:
        text = open(os.path.join(FORTUNES, n), encoding="utf-8", errors="replace").read()
        for cookie in text.split("\n%\n"):
            t = flat(cookie.strip("%\n"))
            if len(t) > 10:
                yield t


SOURCES = {
    "gcide": (gcide, "dict-gcide"),
    "kjv": (kjv, "bible-kjv-text"),
    "fortunes": (fortunes, "fortunes"),
    "foldoc": (lambda: plain_dict("foldoc"), "dict-foldoc"),
    "jargon": (lambda: plain_dict("jargon"), "dict-jargon"),
    "devil": (lambda: plain_dict("devil"), "dict-devil"),
}


def version(pkg):
    r = subprocess.run(["dpkg-query", "-W", "-f=${Version}", pkg], capture_output=True, text=True)
    return r.stdout.strip() if r.returncode == 0 else "not installed"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--out", default="data/english", help="output directory (default data/english)")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    lines = []
    for name, (gen, pkg) in SOURCES.items():
        ver = version(pkg)
        if ver == "not installed":
            sys.exit(f"error: Debian package {pkg} is not installed (scripts/setup.sh installs it)")
        docs = list(gen())
        if not docs:
            sys.exit(f"error: {pkg} gave no documents")
        tmp = os.path.join(args.out, name + ".txt.tmp")
        with open(tmp, "w", encoding="utf-8") as f:
            for d in docs:
                f.write(d.replace("\n", " ") + "\n")
        os.replace(tmp, os.path.join(args.out, name + ".txt"))
        size = sum(len(d.encode()) + 1 for d in docs)
        lines.append(f"{name}.txt\t{pkg} {ver}\t{len(docs)} documents\t{size} bytes")
        print(lines[-1], file=sys.stderr)
    with open(os.path.join(args.out, "SOURCES"), "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
