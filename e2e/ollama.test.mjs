// The official ollama JavaScript client against the real glassbox binary.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Ollama } from 'ollama';
import { start, golden, model, waitFor } from './serve.mjs';

let srv, ollama;
before(async () => { srv = await start(); ollama = new Ollama({ host: srv.url }); });
after(async () => {
  const { code } = await srv.stop();
  assert.equal(code, 0, 'graceful shutdown exit code\n' + srv.stderr());
});

const greedy = { temperature: 0, repeat_penalty: 1, num_predict: 30 };

test('list shows the model', async () => {
  const { models } = await ollama.list();
  const m = models.find((x) => x.name === model);
  assert.ok(m, JSON.stringify(models));
  assert.equal(m.details.format, 'gguf');
  assert.equal(m.details.family, 'llama');
  assert.equal(m.size, 1185376);
});

test('non-streaming generate is the reference greedy text with real timings', async () => {
  const r = await ollama.generate({ model, prompt: 'Once upon a time', stream: false, options: greedy });
  assert.ok(golden().startsWith(r.response), `got ${JSON.stringify(r.response)}`);
  assert.ok(r.response.length > 60);
  assert.equal(r.done, true);
  assert.equal(r.done_reason, 'length');
  assert.equal(r.eval_count, 30);
  assert.equal(r.prompt_eval_count, 5); // BOS + 4 tokens
  for (const k of ['total_duration', 'prompt_eval_duration', 'eval_duration']) assert.ok(r[k] > 0, k);
  assert.ok(r.total_duration >= r.eval_duration + r.prompt_eval_duration);
});

test('format json gives a JSON object (or its start, when cut by num_predict)', async () => {
  const r = await ollama.generate({ model, prompt: 'Once upon a time', stream: false, format: 'json',
    options: { ...greedy, num_predict: 40 } });
  assert.ok(r.response.trimStart().startsWith('{'), JSON.stringify(r.response));
  if (r.done_reason === 'stop') JSON.parse(r.response);
});

// The CLI's TestRunFormatSchema schema: a value of it decodes into these keys, in this order.
const person = { type: 'object', required: ['name', 'age', 'friends', 'happy'], properties: {
  name: { type: 'string', maxLength: 20 }, age: { type: 'integer' },
  friends: { type: 'array', items: { type: 'string', maxLength: 12 }, maxItems: 3 }, happy: { type: 'boolean' } } };
function checkPerson(text) {
  const v = JSON.parse(text);
  assert.deepEqual(Object.keys(v), ['name', 'age', 'friends', 'happy'], text);
  assert.ok(typeof v.name === 'string' && v.name.length <= 20 && Number.isInteger(v.age) && typeof v.happy === 'boolean', text);
  assert.ok(Array.isArray(v.friends) && v.friends.length <= 3 && v.friends.every((f) => typeof f === 'string'), text);
}

test('format as a JSON schema gives a value of the schema; a schema it cannot enforce is a 400', async () => {
  let whole = 0;
  for (const seed of [0, 1, 2]) {
    const r = await ollama.generate({ model, prompt: 'Once upon a time', stream: false, format: person,
      options: { temperature: 0.8, seed, num_predict: 200, num_ctx: 512 } });
    assert.ok(r.response.trimStart().startsWith('{ "name"') || r.response.trimStart().startsWith('{"name"'), JSON.stringify(r.response));
    if (r.done_reason === 'stop') { checkPerson(r.response); whole++; }
  }
  assert.ok(whole >= 2, `only ${whole} of 3 generations closed the object within 200 tokens`);
  const zip = await ollama.generate({ model, prompt: 'Once upon a time', stream: false,
    format: { type: 'object', properties: { zip: { type: 'string', pattern: '^[0-9]{5}$' } }, required: ['zip'] },
    options: { temperature: 0.8, seed: 1, num_predict: 100 } });
  assert.match(JSON.parse(zip.response).zip, /^[0-9]{5}$/, zip.response);
  await assert.rejects(ollama.generate({ model, prompt: 'x', stream: false,
    format: { type: 'object', properties: { zip: { type: 'string', pattern: '^[0-9]+(?=1)$' } } } }),
  (e) => /lookarounds \(but at the start, after \^\) and named groups are not supported/.test(e.message));
});

test('logprobs: one per generated token, greedy picks the most likely', async () => {
  const r = await ollama.generate({ model, prompt: 'Once upon a time', stream: false, logprobs: true, top_logprobs: 3,
    options: { ...greedy, num_predict: 12 } });
  assert.equal(r.logprobs.length, r.eval_count, JSON.stringify(r.logprobs));
  assert.equal(r.logprobs.map((l) => l.token).join(''), r.response);
  for (const l of r.logprobs) {
    assert.ok(l.logprob <= 0 && l.top_logprobs.length === 3, JSON.stringify(l));
    assert.equal(l.top_logprobs[0].token, l.token);
    assert.equal(l.top_logprobs[0].logprob, l.logprob);
  }
  const stream = await ollama.chat({ model, stream: true, logprobs: true, options: { ...greedy, num_predict: 12 },
    messages: [{ role: 'user', content: 'Tell me a story.' }] });
  let n = 0, done;
  for await (const part of stream) {
    if (part.done) { done = part; break; }
    n += (part.logprobs ?? []).length;
  }
  assert.equal(n, done.eval_count);
});

test('streaming chat delivers chunks and a final chunk with counts', async () => {
  const stream = await ollama.chat({ model, stream: true, options: { ...greedy, num_predict: 12 },
    messages: [{ role: 'system', content: 'You tell stories.' }, { role: 'user', content: 'Tell me a story.' }] });
  let text = '', chunks = 0, last;
  for await (const part of stream) {
    if (part.done) { last = part; break; }
    chunks++;
    assert.equal(part.message.role, 'assistant');
    text += part.message.content;
  }
  assert.ok(last, 'no final chunk');
  assert.ok(chunks >= 2 && chunks <= 12, `chunks ${chunks}`);
  assert.equal(last.eval_count, 12);
  assert.ok(last.prompt_eval_count > 10, 'the chat template was applied');
  assert.ok(text.length > 0);
});

const norm = (v) => Math.sqrt(v.reduce((s, x) => s + x * x, 0));

test('embed: normalized vectors, one per input; embeddings (the older endpoint) gives the raw vector', async () => {
  const r = await ollama.embed({ model, input: ['Once upon a time', 'a cat', 'Once upon a time'] });
  assert.equal(r.embeddings.length, 3);
  assert.equal(r.embeddings[0].length, 64); // stories260K's hidden size
  for (const v of r.embeddings) assert.ok(Math.abs(norm(v) - 1) < 1e-5, `norm ${norm(v)}`);
  assert.deepEqual(r.embeddings[2], r.embeddings[0]);
  assert.notDeepEqual(r.embeddings[1], r.embeddings[0]);
  assert.ok(r.prompt_eval_count >= 8, `prompt_eval_count ${r.prompt_eval_count}`);
  const old = await ollama.embeddings({ model, prompt: 'a cat' });
  const n = norm(old.embedding);
  assert.ok(Math.abs(n - 1) > 1e-3, 'not normalized');
  old.embedding.forEach((x, i) => assert.ok(Math.abs(x / n - r.embeddings[1][i]) < 1e-5, `value ${i}`));
});

test('embed: an input longer than the context is a 400 with both numbers, or cut with truncate: true', async () => {
  const long = 'the cat sat on the mat '.repeat(40);
  await assert.rejects(ollama.embed({ model, input: ['a cat', long], options: { num_ctx: 64 } }),
    (e) => e.status_code === 400 && /^encode: input 1 has \d+ tokens but the context holds 64/.test(e.error));
  const r = await ollama.embed({ model, input: ['a cat', long], options: { num_ctx: 64 }, truncate: true });
  assert.equal(r.embeddings.length, 2);
  assert.deepEqual(r.truncated, [1]);
});

test('create: a model from the served one, with a system message and parameters', async () => {
  const opts = { temperature: 0, num_predict: 12, repeat_penalty: 1 };
  const r = await ollama.create({ model: 'storyteller', from: model, system: 'Once upon a time', parameters: opts });
  assert.equal(r.status, 'success');
  const ask = [{ role: 'user', content: 'a cat' }];
  const base = await ollama.chat({ model, messages: [{ role: 'system', content: 'Once upon a time' }, ...ask], options: opts });
  const made = await ollama.chat({ model: 'storyteller', messages: ask });
  assert.equal(made.message.content, base.message.content);
  assert.equal(made.eval_count, 12);
  const show = await ollama.show({ model: 'storyteller' });
  assert.equal(show.system, 'Once upon a time');
  assert.match(show.parameters, /temperature 0/);
  assert.match(show.modelfile, /^FROM /m);
  const { models } = await ollama.list();
  assert.ok(models.some((m) => m.name === 'storyteller'), JSON.stringify(models.map((m) => m.name)));
  await assert.rejects(ollama.create({ model: 'other', from: model, template: '{{ .Prompt }}' }), /TEMPLATE is a Go template/);
  await ollama.delete({ model: 'storyteller' });
});

test('show and ps', async () => {
  const s = await ollama.show({ model });
  assert.equal(s.details.family, 'llama');
  assert.equal(s.model_info['general.architecture'], 'llama');
  const { models } = await ollama.ps();
  assert.ok(models.some((m) => m.name === model), JSON.stringify(models));
});

test('unknown model is a 404 naming the stage', async () => {
  await assert.rejects(ollama.generate({ model: 'nope', prompt: 'x', stream: false }),
    (e) => e.status_code === 404 && /^load: model "nope"/.test(e.error));
});

test('abort mid-generation frees the slot', async () => {
  const stream = await ollama.generate({ model, prompt: 'Once upon a time', stream: true,
    options: { num_predict: 100000, num_ctx: 100000 } });
  let n = 0;
  for await (const part of stream) { if (++n === 3) { stream.abort(); break; } }
  await waitFor('a free slot', async () => (await srv.queue()).running === 0);
  const job = await srv.lastJob();
  assert.equal(job.state, 'cancelled', JSON.stringify(job));
  assert.equal(job.error.stage, 'generate');
  const r = await ollama.generate({ model, prompt: 'Once', stream: false, options: { num_predict: 3 } });
  assert.equal(r.eval_count, 3);
});
