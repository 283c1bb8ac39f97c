// Writes tests/data/gpt2_encodings.jsonl: GPT-2 token ids of diverse strings, computed by the
// reference encoder (npm gpt-3-encoder, installed by scripts/setup.sh). Run once, from the
// repository root; the output is committed and tests/test_bpe_tokenizer.cpp checks against it.
//
//   node tests/data/make_gpt2_encodings.js > tests/data/gpt2_encodings.jsonl
//
// Avoid U+FEFF and U+0085 in new strings: JavaScript's \s counts the first as whitespace and not
// the second, unlike Unicode's White_Space property that seqlab (and Python's GPT-2) follow.
'use strict';
const path = require('path');
const { encode, decode } = require(
    path.join(__dirname, '../../third_party/npm/node_modules/gpt-3-encoder'));

const texts = [
  'Hello world',
  'Hello, world! How are you?',
  "I'm sure you've seen it; they'll say we'd won't. She's here, isn't she?",
  "DON'T SHOUT: IT'S RUDE",
  "rock 'n' roll, 'quoted' and ''s",
  "Mr. O'Neil's 'dog' isn't O'Neil'S",
  "ends with an apostrophe'",
  'The year 2023 had 365 days, 12 months and 52.14 weeks.',
  '1234567890 3.14159 -42 +7 1e10 0x1F 007',
  'Price: $1,299.99 (incl. 20% VAT)',
  '!!! ??? ... --- *** ### @@@ ~~~ ;-) :-(',
  'a...b;;;c!?!d',
  '   leading spaces',
  'trailing spaces   ',
  'two  spaces   three    four',
  'line one\nline two\n\nline four\n',
  'tabs\tand\t\ttabs',
  '\r\n windows \r\n line endings\r\n',
  ' \n \n  mixed \t\n whitespace \n',
  'café naïve résumé façade Ångström',
  'Ünïcödé ÀÉÎÕÜ ß œ æ ø',
  'Привет, мир! Как дела?',
  'Γειά σου Κόσμε',
  'שלום עולם',
  'مرحبا بالعالم',
  'नमस्ते दुनिया',
  '你好，世界！这是一个测试。',
  '日本語のテキストとカタカナ、ひらがな',
  '한국어 텍스트입니다',
  'Emoji: 😀😃😄 👍🏽 👨‍👩‍👧‍👦 🇫🇷',
  'mixed数字123and文字abc',
  'Roman numerals Ⅻ and superscripts x² y³ ½ ¼',
  'Arabic-Indic digits ١٢٣ and Devanagari ४५६',
  'non-breaking\u00a0space, thin\u2009space, ideographic\u3000space',
  'e\u0301 combining acute, n\u0303 tilde',
  'snake_case camelCase kebab-case PascalCase',
  'https://example.com/path?query=1&x=y#frag',
  'def f(x):\n    return x ** 2  # square\n',
  '{"key": [1, 2, 3], "nested": {"a": null}}',
  '<|endoftext|>',
  'a',
  '',
  ' ',
  '\n\n\n',
  'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa',
  'The quick brown fox jumps over the lazy dog. THE QUICK BROWN FOX!',
  'ǅemal ǈ ǋ titlecase',
  'math: ∑∫∂√∞≠≤≥ → ⇒ ∀x∈ℝ',
  'zero\u200bwidth\u200djoiners',
  'Ｆｕｌｌｗｉｄｔｈ\u3000ＡＢＣ\u3000１２３',
];

for (const text of texts) {
  const ids = encode(text);
  if (decode(ids) !== text) throw new Error('reference round trip failed on ' + JSON.stringify(text));
  process.stdout.write(JSON.stringify({ text, ids }) + '\n');
}
