// The official Anthropic JavaScript client against the real glassbox binary
// (its Messages API at /v1/messages).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import Anthropic from '@anthropic-ai/sdk';
import { start, model } from './serve.mjs';

let srv, client;
before(async () => {
  srv = await start();
  client = new Anthropic({ baseURL: srv.url, apiKey: 'unused', maxRetries: 0 });
});
after(async () => {
  const { code } = await srv.stop();
  assert.equal(code, 0, 'graceful shutdown exit code\n' + srv.stderr());
});

const ask = { model, max_tokens: 16, temperature: 0, system: 'You tell stories.', messages: [{ role: 'user', content: 'Once upon a time' }] };

test('messages.create: a text reply with its stop reason and usage', async () => {
  const r = await client.messages.create(ask);
  assert.equal(r.type, 'message');
  assert.equal(r.role, 'assistant');
  assert.ok(r.id.startsWith('msg_'), r.id);
  assert.equal(r.content.length, 1);
  assert.equal(r.content[0].type, 'text');
  assert.ok(r.content[0].text.length > 0);
  assert.ok(['max_tokens', 'end_turn'].includes(r.stop_reason), r.stop_reason);
  assert.ok(r.usage.output_tokens > 0 && r.usage.output_tokens <= 16 && r.usage.input_tokens > 0, JSON.stringify(r.usage));
});

test('messages.stream: the same greedy text, as events', async () => {
  const whole = await client.messages.create(ask);
  const stream = client.messages.stream(ask);
  let text = '';
  stream.on('text', (t) => { text += t; });
  const final = await stream.finalMessage();
  assert.equal(text, whole.content[0].text);
  assert.equal(final.content[0].text, whole.content[0].text);
  assert.equal(final.stop_reason, whole.stop_reason);
  assert.equal(final.usage.output_tokens, whole.usage.output_tokens);
});

test('messages.countTokens counts what a reply evaluates', async () => {
  const { input_tokens: n } = await client.messages.countTokens({ model, system: ask.system, messages: ask.messages });
  const r = await client.messages.create(ask);
  assert.ok(n > 0);
  assert.equal(r.usage.input_tokens + r.usage.cache_read_input_tokens, n, JSON.stringify(r.usage));
});

test('errors are Anthropic error objects with the stage', async () => {
  await assert.rejects(client.messages.create({ ...ask, model: 'nope' }),
    (e) => e instanceof Anthropic.NotFoundError && e.error?.error?.type === 'not_found_error' && e.error.error.stage === 'load');
  await assert.rejects(client.messages.create({ ...ask, messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'AA==' } }] }] }),
    (e) => e instanceof Anthropic.BadRequestError && /"image" block is not supported/.test(e.error?.error?.message));
});
