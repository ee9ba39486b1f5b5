// Jobs: the history (GET /v1/jobs, from the journal and the running
// manager) and one job's page: its settings, its output and its pipeline,
// live while it runs.
import * as api from './api.js';
import * as fmt from './fmt.js';
import { pipelineView } from './pipeline.js';
import { watch, setOutput } from './watch.js';
import { terminal } from './stages.js';
import { showConn } from './connection.js';
import { videoElement, mediaURL } from './video.js';

export function jobsView(root) {
  const body = fmt.el('tbody', {});
  const table = fmt.el('table', { id: 'jobs' },
    fmt.el('thead', {}, fmt.el('tr', {}, ...['Job', 'State', 'Kind', 'Model', 'Stage reached', 'Duration', 'Created'].map((h) => fmt.el('th', { scope: 'col' }, h)))),
    body);
  const status = fmt.el('div', { class: 'small', role: 'status' });
  const more = fmt.el('button', { type: 'button', class: 'secondary', hidden: true }, 'Older jobs');
  const refresh = fmt.el('button', { type: 'button', class: 'secondary' }, 'Refresh');
  root.replaceChildren(fmt.el('h1', {}, 'Jobs'), fmt.el('div', { class: 'actions' }, refresh),
    fmt.el('div', { class: 'tablewrap' }, table), fmt.el('div', { class: 'actions' }, more), status);
  let next = '';
  let timer = 0;
  body.append(fmt.loadingRow(7, 'Loading the jobs…'));

  const row = (j) => fmt.el('tr', { 'data-job': j.id, 'data-state': j.state },
    fmt.el('td', {}, fmt.el('a', { href: '#/jobs/' + j.id }, j.id)),
    fmt.el('td', {}, fmt.el('span', { class: 'badge', 'data-state': j.state }, j.state)),
    fmt.el('td', {}, j.kind || ''),
    fmt.el('td', {}, j.model || ''),
    fmt.el('td', {}, j.error ? `${j.error.stage} ✕` : (j.stage || '')),
    fmt.el('td', {}, fmt.dur(j.duration_ms)),
    fmt.el('td', {}, fmt.when(j.created)));

  const loadPage = async (before, append) => {
    try {
      const r = await api.get('/v1/jobs?limit=50' + (before ? '&before=' + encodeURIComponent(before) : ''));
      const rows = r.jobs.map(row);
      if (append) body.append(...rows); else body.replaceChildren(...rows);
      next = r.next || '';
      more.hidden = !next;
      status.textContent = body.children.length ? '' : 'No jobs yet: start one in Generate.';
      // Keep the list current while something runs.
      clearTimeout(timer);
      if (!append && r.jobs.some((j) => !terminal(j.state))) timer = setTimeout(() => loadPage('', false), 1000);
    } catch (e) {
      body.querySelector('.loading')?.remove();
      status.textContent = e.describe ? e.describe() : String(e);
    }
  };
  refresh.addEventListener('click', () => loadPage('', false));
  more.addEventListener('click', () => loadPage(next, true));
  loadPage('', false);
  return () => clearTimeout(timer);
}

export function jobView(root, id) {
  const pipe = pipelineView();
  const out = fmt.el('pre', { class: 'out', id: 'output' });
  const media = fmt.el('div', { id: 'job-media' });
  const head = fmt.el('div', { class: 'small', id: 'job-head' });
  const params = fmt.el('pre', { class: 'params', id: 'job-params' });
  const cancel = fmt.el('button', { type: 'button', class: 'danger', id: 'cancel', hidden: true }, 'Cancel job');
  const status = fmt.el('div', { class: 'small', role: 'status', 'aria-live': 'polite' });
  root.replaceChildren(
    fmt.el('h1', {}, 'Job ', fmt.el('span', { id: 'job-id' }, id)),
    head,
    fmt.el('div', { class: 'cols' },
      fmt.el('div', {},
        fmt.el('section', { 'aria-label': 'Output' }, fmt.el('h2', {}, 'Output'), out, media),
        fmt.el('div', { class: 'actions' }, cancel), status,
        fmt.el('section', { 'aria-label': 'Settings' }, fmt.el('h2', {}, 'Request'), params)),
      pipe.node));

  let info = null;
  let loaded = false; // the job's summary or first event has come
  head.append(fmt.el('span', { class: 'loading muted' }, 'Loading the job…'));
  const drawHead = (job) => {
    if (!info && !job.state && !loaded) return; // nothing to show yet: keep the loading line
    loaded = true;
    // Waiting in the server's queue is part of running for the job manager; say queued.
    let state = job.state || info?.state || '';
    if (state === 'running' && job.open && job.open.name === 'queued') state = 'queued';
    const parts = [fmt.el('span', { class: 'badge', 'data-state': state, id: 'job-state' }, state)];
    if (info) parts.push(` ${info.kind || ''} · ${info.model || ''} · created ${fmt.when(info.created)}`);
    if (job.result && job.result.tokens != null) {
      const r = job.result;
      const cached = r.cached_tokens > 0 ? ` (${r.cached_tokens} from the KV cache)` : '';
      parts.push(` · ${r.prompt_tokens} prompt tokens${cached}, ${r.tokens} generated (${r.done_reason})`);
    }
    head.replaceChildren(...parts);
  };
  api.get('/v1/jobs/' + encodeURIComponent(id)).then((j) => {
    info = j;
    params.textContent = JSON.stringify(j.params ?? {}, null, 2);
    api.planFor(j.model, j.params?.options?.num_ctx).then((p) => pipe.setPlan(p));
    drawHead(w.job);
  }).catch((e) => { status.textContent = e.describe ? e.describe() : String(e); });

  const w = watch(id, {
    onChange: (job) => {
      setOutput(out, job);
      pipe.update(job);
      cancel.hidden = terminal(job.state);
      drawHead(job);
      const url = job.result && job.result.url;
      if (job.state === 'done' && typeof url === 'string' && url.endsWith('/video') && !media.firstChild) {
        // A video job: its MP4 in a player.
        media.append(videoElement('job-video', mediaURL(url), `The video of job ${id}`));
        out.hidden = !out.textContent; // no text: not "no output"
      }
      if (terminal(job.state) && !job.text && job.result && typeof job.result.text === 'string') {
        // A job from before tokens were journaled: show its stored output.
        out.textContent = job.result.text;
        out.dataset.source = 'result';
      }
    },
    onStatus: (s) => showConn(s),
    onFail: (e) => { status.textContent = e.describe(); },
  });
  cancel.addEventListener('click', async () => {
    cancel.disabled = true;
    try { await api.post(`/v1/jobs/${encodeURIComponent(id)}/cancel`); } catch (e) { status.textContent = e.describe(); cancel.disabled = false; }
  });
  return () => { w.stop(); pipe.destroy(); showConn('ended'); };
}
