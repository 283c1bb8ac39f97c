// End-to-end check of `seqlab serve` with OpenAI's official Node client (npm `openai`, pinned in
// scripts/setup.sh), as an application would use it:
//
//   node tests/e2e/openai_client.mjs BASE_URL MODEL_ID PROMPT_OF_HELLO
//
// BASE_URL is the server (http://127.0.0.1:PORT); PROMPT_OF_HELLO is the prompt the model's chat
// template renders for [{role: "user", content: "Hello"}], which openai_client.sh wrote into the
// model's tokenizer_config.json. Checks: models.list; completions (non-stream, stream, logprobs
// with echo); chat completions (non-stream, stream) equal to the completion of the rendered
// prompt; a bad parameter is the client's APIError with status 400 and the server's message.
// Greedy decoding throughout, so streamed and whole answers must agree exactly. Exits non-zero on
// the first failed check.
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(path.join(here, '..', '..', 'third_party', 'npm', 'resolve.js'));
const OpenAI = require('openai');

const [base, model, helloPrompt] = process.argv.slice(2);
if (!base || !model || helloPrompt === undefined) {
  console.error('usage: node openai_client.mjs BASE_URL MODEL_ID PROMPT_OF_HELLO');
  process.exit(2);
}
const client = new OpenAI({ baseURL: `${base}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 60_000 });
let checks = 0;
const check = (name) => { checks += 1; console.log(`ok ${checks}: ${name}`); };
const greedy = { temperature: 0, ignore_eos: true };  // ignore_eos: seqlab's extension

// models.list: one model, the directory's name, and the chat template in use (an extension).
const models = await client.models.list();
assert.equal(models.data.length, 1);
assert.equal(models.data[0].id, model);
assert.equal(models.data[0].chat_template, 'tokenizer_config.json');
check('models.list');

// completions, whole and streamed.
const whole = await client.completions.create({ model, prompt: 'Once upon', max_tokens: 8, ...greedy });
assert.equal(whole.object, 'text_completion');
assert.equal(whole.choices.length, 1);
assert.equal(whole.choices[0].finish_reason, 'length');
assert.equal(whole.usage.completion_tokens, 8);
assert.equal(typeof whole.choices[0].text, 'string');
check('completions.create');
const stream = await client.completions.create({ model, prompt: 'Once upon', max_tokens: 8, stream: true, ...greedy });
let streamed = '';
let finish = null;
for await (const chunk of stream) {
  streamed += chunk.choices[0].text;
  finish = chunk.choices[0].finish_reason ?? finish;
}
assert.equal(streamed, whole.choices[0].text);
assert.equal(finish, 'length');
check('completions.create stream');

// logprobs with echo: the prompt's tokens are scored too, the first without a logprob.
const scored = await client.completions.create({ model, prompt: 'Hi you', max_tokens: 3, logprobs: 2, echo: true, ...greedy });
const lp = scored.choices[0].logprobs;
const promptTokens = scored.usage.prompt_tokens;
assert.equal(lp.tokens.length, promptTokens + 3);
assert.equal(lp.token_logprobs[0], null);
for (let i = 1; i < lp.tokens.length; i += 1) {
  assert.ok(lp.token_logprobs[i] <= 0, `token_logprobs[${i}] = ${lp.token_logprobs[i]}`);
  const top = Object.values(lp.top_logprobs[i]);
  assert.ok(top.length >= 1 && top.length <= 2);
  // Greedy: the generated token is the most probable one.
  if (i >= promptTokens) assert.ok(Math.abs(Math.max(...top) - lp.token_logprobs[i]) < 1e-6);
}
assert.ok(scored.choices[0].text.startsWith('Hi you'));
assert.deepEqual(lp.text_offset.slice(0, 2), [0, lp.tokens[0].length]);
check('completions.create logprobs + echo');

// chat: the model's template; the reply equals the completion of the rendered prompt.
const messages = [{ role: 'user', content: 'Hello' }];
const chat = await client.chat.completions.create({ model, messages, max_tokens: 8, ...greedy });
assert.equal(chat.object, 'chat.completion');
assert.equal(chat.choices[0].message.role, 'assistant');
const rendered = await client.completions.create({ model, prompt: helloPrompt, max_tokens: 8, ...greedy });
assert.equal(chat.choices[0].message.content, rendered.choices[0].text);
assert.equal(chat.usage.prompt_tokens, rendered.usage.prompt_tokens);
check('chat.completions.create (the model\'s chat template)');
const chatStream = await client.chat.completions.create({ model, messages, max_tokens: 8, stream: true, ...greedy });
let content = '';
for await (const chunk of chatStream) {
  assert.equal(chunk.object, 'chat.completion.chunk');
  content += chunk.choices[0].delta.content ?? '';
}
assert.equal(content, chat.choices[0].message.content);
check('chat.completions.create stream');

// A bad parameter: the client's APIError (BadRequestError), status 400, our message and code.
await assert.rejects(
  client.completions.create({ model, prompt: 'x', max_tokens: -1 }),
  (err) => {
    assert.ok(err instanceof OpenAI.APIError, `not an APIError: ${err}`);
    assert.ok(err instanceof OpenAI.BadRequestError);
    assert.equal(err.status, 400);
    assert.match(err.message, /'max_tokens' must be an integer in \[0, \d+\], got -1/);
    assert.equal(err.code, 'max_tokens');
    assert.equal(err.type, 'invalid_request_error');
    return true;
  },
);
check('a bad parameter is a 400 APIError');
await assert.rejects(
  client.chat.completions.create({ model: 'no-such-model', messages, max_tokens: 1 }),
  (err) => err instanceof OpenAI.NotFoundError && err.status === 404 && err.code === 'model_not_found',
);
check('an unknown model is a 404 NotFoundError');
console.log(`all ${checks} checks passed`);
