"""The README's Python example runs as written (from a directory where models/ is the repo's)."""
import contextlib
import io
import os
import re

from conftest import SOURCE


def readme_example():
    text = (SOURCE / "README.md").read_text()
    section = text[text.index("## From Python"):]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def test_readme_example(tmp_path):
    code = readme_example()
    assert len(code.strip().splitlines()) <= 12
    (tmp_path / "models").symlink_to(SOURCE / "models")
    cwd = os.getcwd()
    out = io.StringIO()
    try:
        os.chdir(tmp_path)
        with contextlib.redirect_stdout(out):
            exec(compile(code, "README.md", "exec"), {})
    finally:
        os.chdir(cwd)
    printed = out.getvalue().splitlines()
    assert printed[0].startswith("hybrid") and printed[0].endswith(" parameters")
    assert len(printed) >= 3 and printed[1].strip() and "".join(printed[2:]).strip()
    assert (tmp_path / "runs" / "py-hybrid" / "config.json").exists()
