// The server's HTTP API (docs/API.md), and following a job's events with
// resumption: every event is applied once, in order, whatever the network
// or the page does.

export class APIError extends Error {
  constructor(status, body) {
    const e = (body && body.error) || {};
    const msg = typeof e === 'string' ? e : (e.message || `HTTP ${status}`);
    super(msg);
    this.status = status;
    this.stage = e.stage || '';
    this.hint = e.hint || '';
  }
  describe() {
    let s = this.message;
    if (this.stage && !s.startsWith(this.stage)) s = this.stage + ': ' + s;
    if (this.hint) s += ' (' + this.hint + ')';
    return s;
  }
}

// A server started with --api-key answers 401 without the key: the page
// asks for it once and keeps it for this tab (sessionStorage).
const KEY = 'glassbox.apiKey';
export const apiKey = () => sessionStorage.getItem(KEY) || '';

async function call(method, path, body, retried = false) {
  let res;
  const headers = body === undefined ? {} : { 'Content-Type': 'application/json' };
  if (apiKey()) headers.Authorization = 'Bearer ' + apiKey();
  try {
    res = await fetch(path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch (err) {
    throw new APIError(0, { error: { stage: 'deliver', message: `cannot reach the server (${err.message})`, hint: 'is glassbox serve running?' } });
  }
  if (res.status === 401 && !retried) {
    const key = window.prompt('This glassbox server needs its API key (glassbox serve --api-key):');
    if (key) {
      sessionStorage.setItem(KEY, key.trim());
      return call(method, path, body, true);
    }
  }
  let data = null;
  const text = await res.text();
  try { data = text ? JSON.parse(text) : null; } catch { data = { error: { message: text.trim() } }; }
  if (!res.ok) throw new APIError(res.status, data);
  return data;
}

export const get = (path) => call('GET', path);
export const post = (path, body) => call('POST', path, body ?? {});
export const del = (path, body) => call('DELETE', path, body ?? {});

// The event types a job's SSE stream carries ("event:" lines).
const TYPES = ['state', 'stage_start', 'stage_done', 'stage_skipped', 'progress', 'part', 'token', 'preview', 'warning', 'result', 'error'];

// follow subscribes to a job's events after sequence number `after`.
// onEvent gets each event exactly once, in sequence order; onStatus gets
// 'live', 'reconnecting' or 'ended'. The browser's EventSource resumes a
// dropped stream with Last-Event-ID by itself; when it gives up (the server
// was down, or answered with an error) we open a new one from the last
// sequence number we applied. Returns a function that stops following.
export function follow(jobId, { after = 0, onEvent, onStatus = () => {}, onFail = () => {} }) {
  let last = after;
  let es = null;
  let stopped = false;
  let retry = 500;
  let timer = 0;

  const open = () => {
    if (stopped) return;
    const token = apiKey() ? `&access_token=${encodeURIComponent(apiKey())}` : '';
    es = new EventSource(`/v1/jobs/${encodeURIComponent(jobId)}/events?after=${last}${token}`);
    es.onopen = () => { retry = 500; onStatus('live'); };
    const handle = (m) => {
      let ev;
      try { ev = JSON.parse(m.data); } catch { return; }
      if (typeof ev.seq !== 'number' || ev.seq <= last) return; // replayed twice: already applied
      last = ev.seq;
      onEvent(ev);
    };
    for (const t of TYPES) {
      es.addEventListener(t, (m) => {
        // "error" is also EventSource's own connection-error event (no data).
        if (t === 'error' && !(m instanceof MessageEvent && m.data)) return onConnError();
        handle(m);
      });
    }
    es.addEventListener('end', () => { close(); onStatus('ended'); });
  };

  const onConnError = () => {
    if (stopped) return;
    if (es && es.readyState === EventSource.CONNECTING) { onStatus('reconnecting'); return; }
    // Closed for good by the browser: find out why, then reopen from `last`.
    if (es) es.close();
    onStatus('reconnecting');
    timer = setTimeout(async () => {
      try {
        await get(`/v1/jobs/${encodeURIComponent(jobId)}`);
      } catch (err) {
        if (err.status === 404) { stopped = true; onFail(err); return; }
      }
      retry = Math.min(retry * 2, 5000);
      open();
    }, retry);
  };

  const close = () => {
    stopped = true;
    clearTimeout(timer);
    if (es) es.close();
  };
  open();
  return close;
}

// planFor returns the planner's prediction for a model on this machine
// (POST /v1/plan), or null when there is none (the model left the store).
export async function planFor(model, ctx) {
  if (!model) return null;
  const req = { model };
  if (ctx > 0) req.ctx = ctx;
  try { return await post('/v1/plan', req); } catch { return null; }
}
