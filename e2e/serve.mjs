// Starts the real glassbox binary for a test: builds it with `go build`
// (or takes $GLASSBOX_BIN),
// runs `glassbox serve` on a free loopback port with the shared
// stories260K model and a fresh home, and stops it with SIGTERM.
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, existsSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
export const repo = resolve(here, '..');
export const shared = process.env.GLASSBOX_SHARED ?? resolve(repo, '..', 'shared');
export const model = 'stories260K';

/** The golden greedy continuation of "Once upon a time" (llama.cpp). */
export function golden() {
  const text = readFileSync(join(shared, 'golden', 'stories260K.prompt1.greedy200.txt'), 'utf8');
  return text.slice(' Once upon a time'.length);
}

let binary;
/** build returns the glassbox binary to test ($GLASSBOX_BIN, or one built now). */
export function build() {
  binary ??= process.env.GLASSBOX_BIN; // a prebuilt binary, if given
  if (binary) return binary;
  const dir = mkdtempSync(join(tmpdir(), 'glassbox-e2e-bin-'));
  binary = join(dir, 'glassbox');
  execFileSync('go', ['build', '-o', binary, './cmd/glassbox'], { cwd: repo, stdio: 'inherit', env: { ...process.env, CGO_ENABLED: '0' } });
  return binary;
}

/** start runs the server; resolves to { url, stop, stderr() }. */
export async function start(extraArgs = []) {
  const bin = build();
  const modelPath = join(shared, 'models', 'stories260K.gguf');
  if (!existsSync(modelPath)) throw new Error(`shared model missing: ${modelPath} (set GLASSBOX_SHARED)`);
  const home = mkdtempSync(join(tmpdir(), 'glassbox-e2e-home-'));
  const child = spawn(bin, ['serve', '--addr', '127.0.0.1:0', '--home', home, '--model', modelPath,
    '--threads', '1', ...extraArgs], { stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  const url = await new Promise((ok, fail) => {
    const timer = setTimeout(() => fail(new Error('server did not start in 2 minutes:\n' + log)), 120000);
    child.stderr.on('data', (b) => {
      log += b;
      const m = /listening on (http:\/\/[^\s]+)/.exec(log);
      if (m) { clearTimeout(timer); ok(m[1]); }
    });
    child.on('exit', (code) => { clearTimeout(timer); fail(new Error(`server exited with ${code}:\n${log}`)); });
  });
  const exited = new Promise((ok) => child.on('exit', (code, signal) => ok({ code, signal })));
  return {
    url,
    stderr: () => log,
    /** queue returns the server's queue counters from /healthz. */
    async queue() { return (await (await fetch(url + '/healthz')).json()).queue; },
    /** lastJob returns the newest job's summary from the native API. */
    async lastJob() { return (await (await fetch(url + '/v1/jobs?limit=1')).json()).jobs[0]; },
    async stop() {
      child.kill('SIGTERM');
      const res = await exited;
      rmSync(home, { recursive: true, force: true });
      return res;
    },
  };
}

/** waitFor polls cond (async) every 10 ms for up to ms milliseconds. */
export async function waitFor(what, cond, ms = 5000) {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error('timed out waiting for ' + what);
    await new Promise((r) => setTimeout(r, 10));
  }
}
