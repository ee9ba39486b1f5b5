// The official openai JavaScript client against the real glassbox binary.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { zodResponseFormat, zodTextFormat } from 'openai/helpers/zod';
import { z } from 'zod';
import { start, golden, model, waitFor } from './serve.mjs';

let srv, client;
before(async () => {
  srv = await start(['--ctx', '8192']); // room for a long answer to abort
  client = new OpenAI({ baseURL: srv.url + '/v1', apiKey: 'unused', maxRetries: 0 });
});
after(async () => {
  const { code } = await srv.stop();
  assert.equal(code, 0, 'graceful shutdown exit code\n' + srv.stderr());
});

test('models.list', async () => {
  const page = await client.models.list();
  const ids = page.data.map((m) => m.id);
  assert.ok(ids.includes(model), ids.join(','));
});

test('non-streaming completion is the reference greedy text with usage', async () => {
  const r = await client.completions.create({ model, prompt: 'Once upon a time', max_tokens: 25, temperature: 0 });
  assert.equal(r.object, 'text_completion');
  assert.ok(golden().startsWith(r.choices[0].text), JSON.stringify(r.choices[0].text));
  assert.equal(r.choices[0].finish_reason, 'length');
  assert.deepEqual(r.usage, { prompt_tokens: 5, completion_tokens: 25, total_tokens: 30,
    prompt_tokens_details: { cached_tokens: 0 } });
  // The next request continues this one: its prompt's start comes from the KV cache.
  const next = await client.completions.create({ model, prompt: 'Once upon a time' + r.choices[0].text, max_tokens: 5,
    temperature: 0 });
  const { prompt_tokens: p, prompt_tokens_details: { cached_tokens: c } } = next.usage;
  assert.ok(c >= 5 && c < p, `${c} of ${p} prompt tokens cached`);
});

test('streaming chat ends with usage and equals the non-streaming answer', async () => {
  const messages = [{ role: 'user', content: 'Tell me a story about a cat.' }];
  const stream = await client.chat.completions.create({ model, messages, stream: true, max_tokens: 20, seed: 7,
    temperature: 0.8, stream_options: { include_usage: true } });
  let text = '', usage, finish;
  for await (const chunk of stream) {
    if (chunk.usage) usage = chunk.usage;
    const c = chunk.choices[0];
    if (!c) continue;
    text += c.delta.content ?? '';
    if (c.finish_reason) finish = c.finish_reason;
  }
  assert.equal(finish, 'length');
  assert.equal(usage.completion_tokens, 20);
  assert.ok(usage.prompt_tokens > 5);
  const same = await client.chat.completions.create({ model, messages, max_tokens: 20, seed: 7, temperature: 0.8 });
  assert.equal(same.choices[0].message.content, text, 'same seed, same text');
  assert.equal(same.usage.completion_tokens, 20);
});

test('n choices: each its own generation, seeds s, s+1, ...; streamed one after another', async () => {
  const messages = [{ role: 'user', content: 'Tell me a story about a cat.' }];
  const r = await client.chat.completions.create({ model, messages, n: 3, max_tokens: 12, seed: 7, temperature: 0.8 });
  assert.deepEqual(r.choices.map((c) => c.index), [0, 1, 2]);
  assert.equal(r.usage.completion_tokens, 36);
  const one = await client.chat.completions.create({ model, messages, max_tokens: 12, seed: 8, temperature: 0.8 });
  assert.equal(r.choices[1].message.content, one.choices[0].message.content, 'choice 1 ran with seed 8');
  assert.notEqual(r.choices[0].message.content, r.choices[1].message.content);
  const stream = await client.chat.completions.create({ model, messages, n: 2, max_tokens: 12, seed: 7, temperature: 0.8,
    stream: true });
  const texts = ['', ''];
  for await (const chunk of stream) {
    for (const c of chunk.choices) texts[c.index] += c.delta.content ?? '';
  }
  assert.deepEqual(texts, r.choices.slice(0, 2).map((c) => c.message.content));
});

test('response_format json_schema gives a value of the schema', async () => {
  const schema = { type: 'object', properties: { color: { enum: ['red', 'green', 'blue'] },
    count: { type: 'integer' } }, required: ['color', 'count'], additionalProperties: false };
  for (const seed of [0, 1]) {
    const r = await client.chat.completions.create({ model, seed, temperature: 0.8, max_tokens: 60,
      messages: [{ role: 'user', content: 'Pick a color.' }],
      response_format: { type: 'json_schema', json_schema: { name: 'pick', strict: true, schema } } });
    const text = r.choices[0].message.content;
    assert.equal(r.choices[0].finish_reason, 'stop', text);
    const v = JSON.parse(text);
    assert.deepEqual(Object.keys(v), ['color', 'count'], text);
    assert.ok(['red', 'green', 'blue'].includes(v.color) && Number.isInteger(v.count), text);
  }
});

test("the client's zod helper: a discriminated union parses into one of its objects", async () => {
  const Cat = z.object({ pet_type: z.literal('cat'), lives: z.number().int().min(1).max(9) });
  const Dog = z.object({ pet_type: z.literal('dog'), good: z.boolean() });
  const Pet = z.object({ pet: z.discriminatedUnion('pet_type', [Cat, Dog]) });
  const kinds = new Set();
  // stories260K writes "cat" unless pushed: logit_bias raises its "d" (token 418), which only "dog" may hold.
  for (const [seed, logit_bias] of [[0, undefined], [1, undefined], [2, { 418: 8 }]]) {
    const r = await client.chat.completions.parse({ model, seed, temperature: 1, max_tokens: 200, logit_bias,
      messages: [{ role: 'user', content: 'A pet.' }], response_format: zodResponseFormat(Pet, 'pet') });
    const m = r.choices[0].message;
    assert.equal(r.choices[0].finish_reason, 'stop', m.content);
    assert.deepEqual(m.parsed, Pet.parse(JSON.parse(m.content)), m.content);
    kinds.add(m.parsed.pet.pet_type);
  }
  assert.deepEqual([...kinds].sort(), ['cat', 'dog'], 'both alternatives are reachable');
});

test('logprobs in chat completions, whole and streamed', async () => {
  const ask = { model, temperature: 0, max_tokens: 10, logprobs: true, top_logprobs: 2,
    messages: [{ role: 'user', content: 'Tell me a story.' }] };
  const r = await client.chat.completions.create(ask);
  const content = r.choices[0].logprobs.content;
  assert.equal(content.length, r.usage.completion_tokens);
  assert.equal(content.map((l) => l.token).join(''), r.choices[0].message.content);
  for (const l of content) {
    assert.ok(l.logprob <= 0 && l.top_logprobs.length === 2 && l.top_logprobs[0].token === l.token, JSON.stringify(l));
    assert.deepEqual(l.bytes, [...Buffer.from(l.token)]);
  }
  const stream = await client.chat.completions.create({ ...ask, stream: true });
  const streamed = [];
  for await (const chunk of stream) streamed.push(...(chunk.choices[0]?.logprobs?.content ?? []));
  assert.deepEqual(streamed, content);
});

test("embeddings: the client's default base64 and floats give the same normalized vectors", async () => {
  const a = await client.embeddings.create({ model, input: ['Once upon a time', 'a cat'] });
  const b = await client.embeddings.create({ model, input: 'a cat', encoding_format: 'float' });
  assert.equal(a.object, 'list');
  assert.equal(a.data.length, 2);
  assert.deepEqual(a.data.map((d) => d.index), [0, 1]);
  assert.equal(a.data[1].embedding.length, 64);
  a.data[1].embedding.forEach((x, i) => assert.ok(Math.abs(x - b.data[0].embedding[i]) < 1e-6, `value ${i}`));
  const n = Math.sqrt(b.data[0].embedding.reduce((s, x) => s + x * x, 0));
  assert.ok(Math.abs(n - 1) < 1e-5, `norm ${n}`);
  assert.ok(a.usage.prompt_tokens > b.usage.prompt_tokens && a.usage.total_tokens === a.usage.prompt_tokens);
});

test('responses: whole, streamed, continued by previous_response_id and retrieved', async () => {
  const ask = { model, instructions: 'You tell stories.', input: 'Once upon a time', max_output_tokens: 16, temperature: 0 };
  const r = await client.responses.create(ask);
  assert.equal(r.object, 'response');
  assert.ok(r.id.startsWith('resp_'), r.id);
  assert.ok(['completed', 'incomplete'].includes(r.status), r.status);
  assert.ok(r.output_text.length > 0);
  // The same conversation through chat completions gives the same greedy text.
  const chat = await client.chat.completions.create({ model, temperature: 0, max_tokens: 16,
    messages: [{ role: 'system', content: ask.instructions }, { role: 'user', content: ask.input }] });
  assert.equal(r.output_text, chat.choices[0].message.content);
  assert.equal(r.usage.output_tokens, chat.usage.completion_tokens);
  assert.equal(r.usage.input_tokens, chat.usage.prompt_tokens);
  // The client's stream helper checks the events' order and rebuilds the response from them.
  const stream = client.responses.stream(ask);
  let text = '';
  stream.on('response.output_text.delta', (e) => { text += e.delta; });
  const final = await stream.finalResponse();
  assert.equal(text, r.output_text);
  // (The helper's final response has no output_text unless it parses: the text is in its message item.)
  const message = final.output.find((o) => o.type === 'message');
  assert.equal(message.content.map((c) => c.text).join(''), r.output_text);
  const types = [];
  for await (const ev of await client.responses.create({ ...ask, stream: true })) types.push(ev.type);
  assert.equal(types[0], 'response.created');
  assert.equal(types.at(-1), r.status === 'completed' ? 'response.completed' : 'response.incomplete');
  // The next turn continues this response: its conversation comes back from the journal, its start from the KV cache.
  const next = await client.responses.create({ model, previous_response_id: r.id, input: 'And then?', max_output_tokens: 8, temperature: 0 });
  assert.equal(next.previous_response_id, r.id);
  assert.ok(next.usage.input_tokens_details.cached_tokens > 0, JSON.stringify(next.usage));
  assert.ok(next.usage.input_tokens > r.usage.input_tokens + r.usage.output_tokens, JSON.stringify(next.usage));
  const got = await client.responses.retrieve(r.id);
  assert.equal(got.output_text, r.output_text);
  assert.deepEqual(got.usage, r.usage);
  // Logprobs of the answer's tokens, as the client asks for them.
  const lp = await client.responses.create({ ...ask, include: ['message.output_text.logprobs'], top_logprobs: 2 });
  const part = lp.output.find((o) => o.type === 'message').content[0];
  assert.equal(part.logprobs.map((l) => l.token).join(''), lp.output_text);
  assert.ok(part.logprobs.every((l) => l.logprob <= 0 && l.top_logprobs.length === 2), JSON.stringify(part.logprobs[0]));
});

test("responses.parse with the client's zod helper gives a value of the schema", async () => {
  const Order = z.object({ color: z.enum(['red', 'green', 'blue']), count: z.number().int() });
  const r = await client.responses.parse({ model, temperature: 0, max_output_tokens: 60, input: 'An order.',
    text: { format: zodTextFormat(Order, 'order') } });
  assert.equal(r.status, 'completed', r.output_text);
  assert.deepEqual(r.output_parsed, Order.parse(JSON.parse(r.output_text)), r.output_text);
});

test('errors are OpenAI error objects with the stage', async () => {
  await assert.rejects(client.responses.create({ model: 'nope', input: 'x' }),
    (e) => e instanceof OpenAI.NotFoundError && e.code === 'model_not_found' && e.error.stage === 'load');
  await assert.rejects(client.responses.create({ model, input: [{ role: 'user', content: [{ type: 'input_image', image_url: 'data:image/png;base64,AA==' }] }] }),
    (e) => e instanceof OpenAI.BadRequestError && /"input_image" part is not supported/.test(e.message));
  await assert.rejects(client.chat.completions.create({ model: 'nope', messages: [{ role: 'user', content: 'x' }] }),
    (e) => e instanceof OpenAI.NotFoundError && e.code === 'model_not_found' && e.error.stage === 'load');
  await assert.rejects(client.chat.completions.create({ model, temperature: 5, messages: [{ role: 'user', content: 'x' }] }),
    (e) => e instanceof OpenAI.BadRequestError && e.param === 'temperature' && /^deliver: /.test(e.error.message));
});

test('abort mid-stream frees the slot', async () => {
  const ac = new AbortController();
  const stream = await client.chat.completions.create({ model, stream: true,
    messages: [{ role: 'user', content: 'Tell me a long story.' }] }, { signal: ac.signal });
  let n = 0;
  for await (const _ of stream) { if (++n === 3) { ac.abort(); break; } }
  await waitFor('a free slot', async () => (await srv.queue()).running === 0);
  const job = await srv.lastJob();
  assert.equal(job.state, 'cancelled', JSON.stringify(job));
  assert.equal(job.error.stage, 'generate');
  const r = await client.completions.create({ model, prompt: 'Once', max_tokens: 2 });
  assert.equal(r.usage.completion_tokens, 2);
});
