// The official openai JavaScript client's images API against the real
// glassbox binary, on the random-weight SD 1.5 checkpoint (sd15-rand,
// made by `glassbox synth --arch sd1`, or $GLASSBOX_TESTCACHE's copy):
// 64×64 images of one or two steps without the negative pass, so each job
// is mostly the checkpoint's load.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { inflateSync } from 'node:zlib';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI, { toFile } from 'openai';
import { Client as ComfyClient, outToB64Urls } from '@stable-canvas/comfyui-client';
import { ComfyApi, CallWrapper, PromptBuilder } from '@saintno/comfyui-sdk';
import WebSocket from 'ws';
import { start, build } from './serve.mjs';

const ckptName = 'sd15-rand.safetensors';
let srv, client, ckpt, tmp;

before(async () => {
  const cached = process.env.GLASSBOX_TESTCACHE && join(process.env.GLASSBOX_TESTCACHE, ckptName);
  if (cached && existsSync(cached)) {
    ckpt = cached;
  } else {
    tmp = mkdtempSync(join(tmpdir(), 'glassbox-e2e-sd-'));
    ckpt = join(tmp, ckptName);
    execFileSync(build(), ['synth', '--arch', 'sd1', '-o', ckpt], { stdio: 'ignore' });
  }
  srv = await start(['--model', ckpt]);
  client = new OpenAI({ baseURL: srv.url + '/v1', apiKey: 'unused', maxRetries: 0, timeout: 600_000 });
});
after(async () => {
  const { code } = await srv.stop();
  if (tmp) rmSync(tmp, { recursive: true, force: true });
  assert.equal(code, 0, 'graceful shutdown exit code\n' + srv.stderr());
});

/** pngSize reads a PNG's width and height from its IHDR chunk. */
function pngSize(buf) {
  assert.equal(buf.subarray(1, 4).toString(), 'PNG', 'a PNG signature');
  assert.equal(buf.subarray(12, 16).toString(), 'IHDR');
  return [buf.readUInt32BE(16), buf.readUInt32BE(20)];
}

/** pixels is a PNG's image data: its IDAT chunks joined and inflated. */
function pixels(buf) {
  const parts = [];
  for (let at = 8; at < buf.length;) {
    const len = buf.readUInt32BE(at);
    if (buf.subarray(at + 4, at + 8).toString() === 'IDAT') parts.push(buf.subarray(at + 8, at + 8 + len));
    at += 12 + len;
  }
  return inflateSync(Buffer.concat(parts));
}

/**
 * cliImage runs glassbox image on the checkpoint with args (a Buffer
 * among them is written to a file and passed by its path) and returns the
 * PNG it wrote.
 */
function cliImage(args) {
  const dir = mkdtempSync(join(tmpdir(), 'glassbox-e2e-cli-'));
  try {
    const files = args.map((a, i) => {
      if (!Buffer.isBuffer(a)) return a;
      const path = join(dir, `arg${i}.png`);
      writeFileSync(path, a);
      return path;
    });
    execFileSync(build(), ['image', '-m', ckpt, ...files, '-o', join(dir, 'cli.png'), '--no-journal'], { stdio: 'ignore' });
    return readFileSync(join(dir, 'cli.png'));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

let first;

test('images.generate: a b64_json PNG of the size asked, with A1111 parameters', async () => {
  const r = await client.images.generate({ model: ckptName, prompt: 'a lighthouse at dusk', size: '64x64',
    response_format: 'b64_json', steps: 1, cfg_scale: 1, seed: 11 });
  assert.equal(r.data.length, 1);
  assert.equal(r.size, '64x64');
  first = Buffer.from(r.data[0].b64_json, 'base64');
  assert.deepEqual(pngSize(first), [64, 64]);
  assert.ok(first.includes('Steps: 1, Sampler: Euler a'), 'the infotext is in the PNG');
  assert.ok(first.includes('Seed: 11'), 'with the seed asked for');
  const job = await srv.lastJob();
  assert.equal(job.kind, 'image');
  assert.equal(job.state, 'done');
  // The CLI makes the same pixels from the same settings.
  assert.ok(pixels(cliImage(['-p', 'a lighthouse at dusk', '-W', '64', '-H', '64', '--steps', '1', '--cfg-scale', '1', '-s', '11']))
    .equals(pixels(first)), 'the server\'s PNG has the CLI\'s pixels');
});

test('AUTOMATIC1111 as Open WebUI calls it: options, sd-models, txt2img', async () => {
  const options = await (await fetch(srv.url + '/sdapi/v1/options', { headers: { authorization: '' } })).json();
  assert.equal(options.sd_model_checkpoint, ckptName);
  options.sd_model_checkpoint = ckptName;
  const set = await fetch(srv.url + '/sdapi/v1/options', { method: 'POST', body: JSON.stringify(options),
    headers: { 'content-type': 'application/json', authorization: '' } });
  assert.equal(set.status, 200);
  const models = await (await fetch(srv.url + '/sdapi/v1/sd-models', { headers: { authorization: '' } })).json();
  assert.deepEqual(models.map((m) => [m.title, m.model_name]), [[ckptName, 'sd15-rand']]);
  const res = await fetch(srv.url + '/sdapi/v1/txt2img', { method: 'POST',
    body: JSON.stringify({ prompt: 'a lighthouse', batch_size: 1, width: 64, height: 64, steps: 1, negative_prompt: 'fog' }),
    headers: { 'content-type': 'application/json', authorization: '' } });
  assert.equal(res.status, 200);
  const body = await res.json();
  assert.equal(body.images.length, 1);
  assert.deepEqual(pngSize(Buffer.from(body.images[0], 'base64')), [64, 64]);
  const info = JSON.parse(body.info);
  assert.equal(info.sampler_name, 'Euler');
  assert.equal(info.steps, 1);
  assert.equal(info.negative_prompt, 'fog');
  assert.match(info.infotexts[0], /^a lighthouse\nNegative prompt: fog\nSteps: 1, Sampler: Euler, /);
  assert.equal(body.parameters.cfg_scale, 7);
});

test('images.generate stream: partial images from the previews, then the image', async () => {
  const stream = await client.images.generate({ model: ckptName, prompt: 'a lighthouse at dusk', size: '64x64',
    stream: true, partial_images: 2, steps: 3, cfg_scale: 1, seed: 11 });
  const types = [];
  let done;
  for await (const ev of stream) {
    types.push(ev.type);
    if (ev.type === 'image_generation.partial_image') {
      assert.equal(ev.partial_image_index, types.length - 1);
      assert.deepEqual(pngSize(Buffer.from(ev.b64_json, 'base64')), [8, 8], 'a preview is the latent, 1/8 of the size');
    }
    if (ev.type === 'image_generation.completed') done = Buffer.from(ev.b64_json, 'base64');
  }
  assert.deepEqual(types, ['image_generation.partial_image', 'image_generation.partial_image', 'image_generation.completed']);
  assert.deepEqual(pngSize(done), [64, 64]);
});

test('images.edit: img2img from an uploaded PNG with glassbox strength', async () => {
  const r = await client.images.edit({ model: ckptName, prompt: 'a lighthouse at night',
    image: await toFile(first, 'in.png', { type: 'image/png' }), strength: 0.5, steps: 2, cfg_scale: 1, seed: 3,
    response_format: 'url' });
  assert.equal(r.data.length, 1);
  const res = await fetch(r.data[0].url);
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('content-type'), 'image/png');
  const png = Buffer.from(await res.arrayBuffer());
  assert.deepEqual(pngSize(png), [64, 64]);
  assert.ok(png.includes('Denoising strength: 0.5'), 'an img2img infotext');
});

test('a published ComfyUI client (@stable-canvas/comfyui-client) runs the default txt2img workflow unchanged', async () => {
  const cc = new ComfyClient({ api_host: srv.url.replace('http://', ''), clientId: 'e2e', WebSocket, fetch });
  await cc.getSystemStats();
  await cc.connect();
  try {
    const graph = {
      3: { class_type: 'KSampler', inputs: { cfg: 8, denoise: 1, latent_image: ['5', 0], model: ['4', 0], negative: ['7', 0],
        positive: ['6', 0], sampler_name: 'euler', scheduler: 'normal', seed: 42, steps: 1 } },
      4: { class_type: 'CheckpointLoaderSimple', inputs: { ckpt_name: ckptName } },
      5: { class_type: 'EmptyLatentImage', inputs: { batch_size: 1, height: 64, width: 64 } },
      6: { class_type: 'CLIPTextEncode', inputs: { clip: ['4', 1], text: 'a lighthouse' } },
      7: { class_type: 'CLIPTextEncode', inputs: { clip: ['4', 1], text: 'text, watermark' } },
      8: { class_type: 'VAEDecode', inputs: { samples: ['3', 0], vae: ['4', 2] } },
      9: { class_type: 'SaveImage', inputs: { filename_prefix: 'ComfyUI', images: ['8', 0] } },
    };
    const out = await cc.enqueue(graph, { timeout_ms: 600_000 });
    const urls = await outToB64Urls(out, { fetch });
    assert.equal(urls.length, 1);
    const png = Buffer.from(urls[0].split(',')[1], 'base64');
    assert.deepEqual(pngSize(png), [64, 64]);
    // The CLI makes the same pixels from the same settings ("normal" is
    // the model's own σ list, glassbox's discrete; torch's CPU noise).
    assert.ok(pixels(cliImage(['-p', 'a lighthouse', '-n', 'text, watermark', '-W', '64', '-H', '64', '--steps', '1',
      '--cfg-scale', '8', '--sampler', 'euler', '--scheduler', 'discrete', '-s', '42', '--rng', 'cpu'])).equals(pixels(png)),
      'the ComfyUI image has the CLI\'s pixels');
  } finally {
    cc.close();
  }
});

test('a published ComfyUI client (@saintno/comfyui-sdk) uploads a picture and runs an img2img workflow unchanged', { timeout: 600_000 }, async () => {
  const api = new ComfyApi(srv.url, 'e2e-sdk', { customWebSocketImpl: WebSocket }).init();
  await api.waitForReady();
  try {
    const up = await api.uploadImage(new Uint8Array(first), 'lighthouse.png');
    assert.ok(up, 'the upload succeeds');
    // ComfyUI's img2img: KSampler's denoise 0.5 of 2 steps runs the last 2
    // steps of a 4-step schedule; glassbox's job is 4 steps at strength
    // (2 − ½)/4 = 0.375, with torch's CPU noise (--rng cpu).
    const graph = {
      1: { class_type: 'LoadImage', inputs: { image: up.info.filename } },
      2: { class_type: 'VAEEncode', inputs: { pixels: ['1', 0], vae: ['4', 2] } },
      3: { class_type: 'KSampler', inputs: { cfg: 8, denoise: 0.5, latent_image: ['2', 0], model: ['4', 0], negative: ['7', 0],
        positive: ['6', 0], sampler_name: 'euler', scheduler: 'normal', seed: 42, steps: 2 } },
      4: { class_type: 'CheckpointLoaderSimple', inputs: { ckpt_name: ckptName } },
      6: { class_type: 'CLIPTextEncode', inputs: { clip: ['4', 1], text: 'a lighthouse at night' } },
      7: { class_type: 'CLIPTextEncode', inputs: { clip: ['4', 1], text: 'text, watermark' } },
      8: { class_type: 'VAEDecode', inputs: { samples: ['3', 0], vae: ['4', 2] } },
      9: { class_type: 'SaveImage', inputs: { filename_prefix: 'ComfyUI', images: ['8', 0] } },
    };
    const wf = new PromptBuilder(graph, [], ['images']).setOutputNode('images', '9');
    let failed;
    const out = await new CallWrapper(api, wf).onFailed((e) => { failed = e; }).run();
    assert.ok(out, `the workflow ran: ${failed?.message ?? 'no output'}\n${failed?.cause ? JSON.stringify(failed.cause) : ''}`);
    assert.equal(out.images.images.length, 1);
    const png = Buffer.from(await (await api.getImage(out.images.images[0])).arrayBuffer());
    assert.deepEqual(pngSize(png), [64, 64]);
    // The CLI makes the same pixels from the same settings.
    assert.ok(pixels(cliImage(['-p', 'a lighthouse at night', '-n', 'text, watermark', '--init-img', first, '--strength', '0.375',
      '--steps', '4', '--cfg-scale', '8', '--sampler', 'euler', '--scheduler', 'discrete', '-s', '42', '--rng', 'cpu'])).equals(pixels(png)),
      'the ComfyUI image has the CLI\'s pixels');
  } finally {
    api.destroy();
  }
});

test('images.generate refuses what it cannot do, in OpenAI errors', async () => {
  await assert.rejects(client.images.generate({ model: ckptName, prompt: 'x', size: '100x100', steps: 1 }),
    (e) => e.status === 400 && /width: 100 pixels is not a multiple of/.test(e.message));
  await assert.rejects(client.images.generate({ model: ckptName, prompt: 'x', output_format: 'webp' }),
    (e) => e.status === 400 && /png/.test(e.message));
  await assert.rejects(client.images.generate({ model: 'stories260K', prompt: 'x' }),
    (e) => e.status === 400 && /not an image model/.test(e.message));
});
