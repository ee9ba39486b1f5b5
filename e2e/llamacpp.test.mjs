// glassbox against llama.cpp itself on the same files: node-llama-cpp's
// prebuilt llama.cpp (CPU) gives the next-token probabilities of every
// position of a sequence, `glassbox logits` gives ours, and the two must
// agree. The shared goldens cover llama, qwen2 and phi3; this covers the
// architectures and formats they do not, on models `glassbox synth` writes.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { getLlama } from 'node-llama-cpp';
import { build, shared } from './serve.mjs';

// Ids below the tiny vocabularies' 512 tokens, long enough (48) for the
// sliding windows the synthetic models use.
const ids = [1, 5, 99, 200, 17, 300, 45, 2, 77, 123, 400, 8, 9, 10, 250, 251,
  30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 46,
  500, 480, 3, 4, 11, 12, 13, 14, 300, 301, 302, 303, 17, 18, 19, 20];

let llama, dir, bin;
before(async () => {
  bin = build();
  dir = mkdtempSync(join(tmpdir(), 'glassbox-llamacpp-'));
  llama = await getLlama({ gpu: false, build: 'never', logLevel: 'error' });
});
after(async () => {
  await llama?.dispose();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** llamaProbs: llama.cpp's next-token probabilities after each id (Maps). */
async function llamaProbs(path) {
  const model = await llama.loadModel({ modelPath: path });
  try {
    // An F32 KV cache (ours too): the F16 one rounds differently in each
    // runtime and would hide differences of 1e-6.
    const ctx = await model.createContext({ contextSize: 64, batchSize: 64, threads: 2, flashAttention: false,
      experimentalKvCacheKeyType: 'F32', experimentalKvCacheValueType: 'F32' });
    const plain = { temperature: 1, topK: 0, topP: 1, minP: 0 };
    const res = await ctx.getSequence().controlledEvaluate(ids.map((t) => [t, { generateNext: { probabilities: true, options: plain } }]));
    return res.map((r) => r.next.probabilities);
  } finally {
    await model.dispose();
  }
}

/**
 * ourLogits: `glassbox logits` of the same ids, one Float32Array a
 * position: in one batch, or one token at a time through the KV cache.
 */
function ourLogits(path, oneByOne = false) {
  const out = join(dir, 'logits.f32');
  const args = ['logits', '-m', path, '--ids', ids.join(' '), '-o', out, '--kv', 'f32'];
  if (oneByOne) args.push('--one-by-one');
  execFileSync(bin, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  const all = new Float32Array(readFileSync(out).buffer.slice(0));
  const vocab = all.length / ids.length;
  return ids.map((_, i) => all.subarray(i * vocab, (i + 1) * vocab));
}

/**
 * compare: both sides as log-probabilities, each row centred (so the
 * softmax's free constant drops out); NMSE = Σ(ours − theirs)² / Σ theirs²
 * over all rows, and how often the two pick the same top token.
 */
function compare(ours, theirs) {
  let num = 0, den = 0, same = 0;
  for (let i = 0; i < ours.length; i++) {
    const x = ours[i], v = x.length;
    const r = new Float64Array(v);
    for (let j = 0; j < v; j++) r[j] = Math.log(Math.max(theirs[i].get(j) ?? 0, 1e-30));
    const lse = logSumExp(x);
    let mx = 0, mr = 0;
    for (let j = 0; j < v; j++) { mx += x[j] - lse; mr += r[j]; }
    mx /= v; mr /= v;
    let best = 0, theirBest = 0;
    for (let j = 0; j < v; j++) {
      const a = x[j] - lse - mx, b = r[j] - mr;
      num += (a - b) ** 2; den += b * b;
      if (x[j] > x[best]) best = j;
      if (r[j] > r[theirBest]) theirBest = j;
    }
    if (best === theirBest) same++;
  }
  return { nmse: num / den, top1: same / ours.length };
}

function logSumExp(x) {
  let m = -Infinity;
  for (const v of x) m = Math.max(m, v);
  let s = 0;
  for (const v of x) s += Math.exp(v - m);
  return m + Math.log(s);
}

// The harness itself, on a shared model whose golden logits glassbox
// already matches: llama.cpp here must agree with both.
test('harness: tiny-llama F32 agrees with llama.cpp', async (t) => {
  const path = join(shared, 'models', 'tiny-llama-F32.gguf');
  const got = compare(ourLogits(path), await llamaProbs(path));
  t.diagnostic(JSON.stringify(got));
  assert.ok(got.nmse < 1e-8 && got.top1 === 1, JSON.stringify(got));
});

/** synth writes a model with `glassbox synth` into the test's folder. */
function synth(name, args) {
  const path = join(dir, name + '.gguf');
  execFileSync(bin, ['synth', '-q', '-o', path, ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
  return path;
}

// Every architecture at F32 (where the two runtimes differ only in
// summation order: NMSE ~1e-12, gemma ~1e-8 from ggml's GELU table) and
// quantized (activations rounded as each runtime does; measured ≤ 5e-5,
// held to 1e-3, a third of the goldens' 3e-3), the mixtures of experts on the moe-tiny shape, and
// YaRN. Weights of std 0.2 rather than synth's default 0.02: with flat
// outputs a wrong soft-cap, multiplier or sink moved the NMSE by less than
// 1e-7; at 0.2 every such mistake tried moved it by 1e-5 or more (zeroed
// gpt-oss sinks 1.2e-5, a window of 12 for 8: 1.1).
const cases = [];
for (const arch of ['llama', 'qwen2', 'qwen3', 'gemma2', 'gemma3', 'granite', 'phi3']) {
  cases.push({ name: `${arch} F32`, args: ['--preset', 'tiny', '--arch', arch, '--type', 'F32'], nmse: 1e-7 });
  cases.push({ name: `${arch} Q8_0`, args: ['--preset', 'tiny', '--arch', arch, '--type', 'Q8_0'], nmse: 1e-3 });
}
for (const arch of ['llama', 'qwen2moe', 'qwen3moe', 'granitemoe', 'gpt-oss']) {
  cases.push({ name: `${arch} experts F32`, args: ['--preset', 'moe-tiny', '--arch', arch, '--type', 'F32'], nmse: 1e-7 });
  const q = arch === 'gpt-oss' ? 'MXFP4_MOE' : 'Q4_0';
  cases.push({ name: `${arch} experts ${q}`, args: ['--preset', 'moe-tiny', '--arch', arch, '--type', q], nmse: 1e-3 });
}
for (const arch of ['llama', 'qwen2', 'qwen3', 'granite']) {
  cases.push({ name: `${arch} YaRN ×4 F32`, args: ['--preset', 'tiny', '--arch', arch, '--type', 'F32', '--yarn', '4'], nmse: 1e-7 });
}
cases.push({ name: 'gpt-oss experts YaRN ×4 F32', args: ['--preset', 'moe-tiny', '--arch', 'gpt-oss', '--type', 'F32', '--yarn', '4'], nmse: 1e-7 });
for (const q of ['Q4_K_M', 'Q6_K', 'IQ4_NL', 'IQ4_XS', 'Q2_K']) {
  cases.push({ name: `llama ${q}`, args: ['--preset', 'tiny', '--type', q], nmse: 1e-3 });
}

// Every model is also run one token at a time through our KV cache (the
// decode path: the window, sinks and YaRN at each position, and the
// one-row kernels of the quantized formats rather than the batch's), against
// the same llama.cpp probabilities.
for (const c of cases) {
  test(`synth ${c.name} agrees with llama.cpp`, async (t) => {
    const path = synth(c.name.replace(/[ ×]/g, '-'), [...c.args, '--std', '0.2']);
    const theirs = await llamaProbs(path);
    const got = compare(ourLogits(path), theirs);
    t.diagnostic(JSON.stringify(got));
    assert.ok(got.nmse < c.nmse, `NMSE ${got.nmse} against llama.cpp (tolerance ${c.nmse}); top-1 agreement ${got.top1}`);
    const step = compare(ourLogits(path, true), theirs);
    t.diagnostic('one by one ' + JSON.stringify(step));
    assert.ok(step.nmse < c.nmse, `one token at a time: NMSE ${step.nmse} against llama.cpp (tolerance ${c.nmse})`);
  });
}
