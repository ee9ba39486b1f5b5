// The pipeline view: one bar per stage on the job's time axis, numbers
// under each, and the failed (or stopped) stage with its cause and hint.
import * as fmt from './fmt.js';
import { rows, numbers, terminal, verdict } from './stages.js';

// pipelineView returns {node, update(job), setPlan(plan), destroy()}.
// update redraws, touching only what changed; its callers pace it (watch.js
// calls it at most ten times a second), and while the job runs a ticker
// grows the running bar with the clock.
export function pipelineView() {
  const list = fmt.el('div', { class: 'pipeline', role: 'list', 'aria-label': 'Pipeline stages' });
  const summary = fmt.el('div', { class: 'pipeline-summary', role: 'status' });
  const verdictBox = fmt.el('div', { class: 'verdict small', id: 'verdict-lines' });
  const warnings = fmt.el('div', { class: 'warnings' });
  const errBox = fmt.el('div', { class: 'error-box', role: 'alert', hidden: true });
  const node = fmt.el('section', { class: 'panel pipeline-view', 'aria-label': 'Pipeline' },
    fmt.el('h2', {}, 'Pipeline'), list, summary, verdictBox, warnings, errBox);
  const rowNodes = new Map();
  let job = null;
  let plan = null;
  let ticker = 0;

  const draw = () => {
    if (!job) return;
    const now = Date.now();
    for (const r of rows(job, now)) {
      let n = rowNodes.get(r.name);
      if (!n) {
        n = {
          root: fmt.el('div', { class: 'stage', role: 'listitem', 'data-stage': r.name }),
          name: fmt.el('span', { class: 'name' }, r.name),
          track: fmt.el('div', { class: 'track', role: 'img' }),
          bar: fmt.el('div', { class: 'bar' }),
          dur: fmt.el('span', { class: 'dur' }),
          nums: fmt.el('div', { class: 'nums' }),
        };
        n.track.append(n.bar);
        n.root.append(n.name, n.track, n.dur, n.nums);
        list.append(n.root);
        rowNodes.set(r.name, n);
      }
      const set = (el, key, v) => { if (el[key] !== v) el[key] = v; };
      if (n.root.dataset.status !== r.status) n.root.dataset.status = r.status;
      // A stage that failed at once still gets a visible mark at its place.
      const left = r.status === 'failed' ? Math.min(r.left, 1 - Math.max(r.width, 0.02)) : r.left;
      set(n.bar.style, 'left', (100 * left).toFixed(2) + '%');
      set(n.bar.style, 'width', (100 * r.width).toFixed(2) + '%');
      set(n.bar, 'hidden', r.status === 'pending' || r.status === 'none' || r.status === 'skipped');
      const d = r.status === 'pending' || r.status === 'none' || r.status === 'skipped' ? '' : fmt.dur(r.durMS);
      set(n.dur, 'textContent', d);
      const label = r.status === 'none' ? 'not run' : r.status;
      const aria = `${r.name}: ${label}${d ? ', ' + d : ''}`;
      if (n.track.getAttribute('aria-label') !== aria) n.track.setAttribute('aria-label', aria);
      set(n.nums, 'textContent', numbers(r, fmt, plan).join(' · '));
    }
    node.dataset.state = job.state;
    node.dataset.seq = String(job.lastSeq);
    const line = summaryLine(job, now);
    if (summary.textContent !== line) summary.textContent = line;
    const lines = verdict(job, fmt);
    if (verdictBox.childElementCount !== lines.length) verdictBox.replaceChildren(...lines.map((l) => fmt.el('div', {}, l)));
    if (warnings.childElementCount !== job.warnings.length) {
      warnings.replaceChildren(...job.warnings.map((w) => fmt.el('div', { class: 'warning', 'data-code': w.code }, `warning ${w.code}: ${w.message}`)));
    }
    drawError(errBox, job);
  };

  const update = (j) => {
    job = j;
    draw();
    // While the job runs its bars grow with the clock, not only with events.
    if (!terminal(j.state) && !ticker) ticker = setInterval(() => update(job), 500);
    if (terminal(j.state) && ticker) { clearInterval(ticker); ticker = 0; }
  };
  const destroy = () => { clearInterval(ticker); ticker = 0; };
  // setPlan gives the planner's prediction for the job's model (or null).
  const setPlan = (p) => { plan = p; if (job) draw(); };
  return { node, update, destroy, setPlan };
}

function summaryLine(job, now) {
  if (!job.t0) return 'waiting for the first event…';
  if (!terminal(job.state)) return `${job.state || 'starting'} for ${fmt.dur(now - job.t0)}` + (job.tokens ? `, ${job.tokens} tokens so far` : '');
  let s = `${job.state} in ${fmt.dur(job.durationMS || job.tEnd - job.t0)}`;
  if (job.state === 'done') {
    // Where the time went: the stage that took longest.
    let top = null;
    for (const r of rows(job, now)) if (r.durMS > 0 && r.status === 'done' && (!top || r.durMS > top.durMS)) top = r;
    if (top && job.durationMS > 0) s += ` — most of it in ${top.name} (${Math.round((100 * top.durMS) / job.durationMS)}%)`;
  }
  if (job.state === 'cancelled' && job.stopMS) s += ` (stopped ${fmt.dur(job.stopMS)} after the request)`;
  return s;
}

function drawError(box, job) {
  const e = job.error;
  if (!e || job.state === 'running') { box.hidden = true; return; }
  box.hidden = false;
  box.dataset.state = job.state;
  const s = job.stages[e.stage];
  const at = s && job.t0 ? ` after ${fmt.dur((s.end || job.tEnd) - job.t0)}` : '';
  const kind = job.state === 'cancelled' ? 'cancelled' : 'failed';
  const parts = [fmt.el('div', { class: 'cause' }, `${kind} in ${e.stage}${at}: ${e.cause || e.message}`)];
  if (e.hint) parts.push(fmt.el('div', {}, 'hint: ' + e.hint));
  const nums = Object.entries(e.numbers || {}).map(([k, v]) => `${k} ${v}`).join(', ');
  if (nums && kind === 'failed') parts.push(fmt.el('div', { class: 'small' }, 'numbers: ' + nums));
  if (e.internal) parts.push(fmt.el('div', { class: 'small' }, 'this is a bug in glassbox (a recovered panic): please report it'));
  box.replaceChildren(...parts);
}
