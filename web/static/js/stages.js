// A job as the page knows it, built from its events (api.Event, docs/API.md)
// one at a time. No DOM here: pipeline.js draws it.

// STAGES is the pipeline's order; a job reports the ones that apply to it.
export const STAGES = ['queued', 'plan', 'load', 'encode', 'prefill', 'generate', 'decode', 'deliver'];

export function newJob(id) {
  return {
    id,
    lastSeq: 0,
    state: '',          // queued, running, done, failed, cancelled
    t0: 0,              // ms: time of the first event (the job's creation)
    tEnd: 0,            // ms: time of the terminal state event
    durationMS: 0,      // the job's total, from the terminal state event
    stopMS: 0,
    stages: {},         // name -> stage record (see stageOf)
    open: null,         // the stage started and not yet done
    text: '',           // the generated text, token by token
    thinking: '',       // a reasoning model's thinking, kept apart from text
    tokens: 0,          // token events applied
    // With logprobs asked for: the text as pieces, each with the logprobs
    // of the tokens that released it (a token whose text was held back
    // comes with the next piece).
    pieces: [],
    pendingLogprobs: [],
    logprobs: false,    // some token carried a logprob
    warnings: [],
    parts: [],          // the parts of stages that finished: a network loaded, a sampling step
    result: null,
    error: null,
    cancelReason: '',
  };
}

function stageOf(job, name) {
  let s = job.stages[name];
  if (!s) {
    s = { name, status: 'pending', start: 0, end: 0, durMS: 0, stats: null, progress: null, reason: '', tokens: 0 };
    job.stages[name] = s;
  }
  return s;
}

export function terminal(state) {
  return state === 'done' || state === 'failed' || state === 'cancelled';
}

// apply folds one event into job. Events must come in sequence order; one
// already applied (seq <= lastSeq) is ignored, so replays are harmless.
export function apply(job, ev) {
  if (ev.seq <= job.lastSeq) return false;
  job.lastSeq = ev.seq;
  const t = Date.parse(ev.time);
  if (!job.t0 && isFinite(t)) job.t0 = t;
  switch (ev.type) {
    case 'state':
      job.state = ev.state;
      if (terminal(ev.state)) {
        job.tEnd = t;
        job.durationMS = ev.duration_ms || 0;
        job.stopMS = ev.stop_ms || 0;
        if (ev.reason) job.cancelReason = ev.reason;
        closeOpen(job, t, ev.state === 'done' ? 'done' : ev.state === 'failed' ? 'failed' : 'stopped');
      }
      break;
    case 'stage_start': {
      const s = stageOf(job, ev.stage);
      s.status = 'running';
      s.start = t;
      job.open = s;
      break;
    }
    case 'stage_done': {
      const s = stageOf(job, ev.stage);
      s.status = 'done';
      s.durMS = ev.duration_ms || 0;
      if (!s.start) s.start = t - s.durMS;
      s.end = s.start + s.durMS;
      s.stats = ev.stats || null;
      if (job.open === s) job.open = null;
      break;
    }
    case 'stage_skipped': {
      const s = stageOf(job, ev.stage);
      s.status = 'skipped';
      s.reason = ev.reason || '';
      s.start = s.end = t;
      break;
    }
    case 'progress': {
      const s = stageOf(job, ev.stage);
      s.progress = ev.progress || null;
      if (s.status === 'pending') { s.status = 'running'; s.start = t; job.open = s; }
      break;
    }
    case 'token':
      if (ev.token) {
        job.text += ev.token.text || '';
        job.thinking += ev.token.thinking || '';
        job.tokens++;
        if (ev.token.logprob) { job.pendingLogprobs.push(ev.token.logprob); job.logprobs = true; }
        if (ev.token.text) {
          job.pieces.push({ text: ev.token.text, lps: job.pendingLogprobs });
          job.pendingLogprobs = [];
        }
        const s = job.stages[ev.stage || 'generate'];
        if (s) s.tokens = (s.tokens || 0) + 1;
      }
      break;
    case 'part':
      if (ev.part) job.parts.push({ stage: ev.stage, name: ev.part, durMS: ev.duration_ms || 0, stats: ev.stats || null });
      break;
    case 'preview':
      // An image job's look at the step's latent: the newest one is shown.
      if (ev.preview) job.preview = ev.preview;
      break;
    case 'warning':
      if (ev.warning) job.warnings.push(ev.warning);
      break;
    case 'result':
      job.result = ev.result;
      break;
    case 'error':
      job.error = ev.error || { stage: ev.stage, message: 'failed', cause: 'failed' };
      if (ev.error && ev.error.stage) {
        // The stage the error names is the one drawn in red, even when it
        // had reported its work done before the check that failed.
        const s = stageOf(job, ev.error.stage);
        s.status = 'failed';
        if (!s.start) s.start = t;
      }
      break;
  }
  return true;
}

// closeOpen ends a stage still open when the job ends (it lasted until then).
function closeOpen(job, t, how) {
  const s = job.open;
  if (s && s.status === 'running') {
    s.end = t;
    s.durMS = t - s.start;
    s.status = how === 'done' ? 'done' : how;
  }
  for (const st of Object.values(job.stages)) {
    if (st.status === 'failed' && !st.end) { st.end = t; st.durMS = t - st.start; }
    if (how === 'stopped' && job.error && st.name === job.error.stage && st.status !== 'done') st.status = 'stopped';
  }
  job.open = null;
}

// axisEnd is where a job's time axis ends: at its end once it has ended,
// and while it runs at the expected end of a running stage whose progress
// has a known total (a generation of num_predict tokens half done reaches
// half way), so a stage that is running never reads as complete. A stage
// of unknown total (a generation until the end) stops the axis at now.
export function axisEnd(job, end) {
  if (job.tEnd) return end;
  let e = end;
  for (const s of Object.values(job.stages)) {
    const p = s.progress;
    if (s.status !== 'running' || !p || p.unit === 'position' || !(p.total > 0) || !(p.done > 0) || p.done >= p.total) continue;
    e = Math.max(e, s.start + ((end - s.start) * p.total) / p.done);
  }
  return e;
}

// rows returns every stage in pipeline order with its place on the time
// axis: left and width as fractions of the job's span (to its expected end
// while it runs: axisEnd).
export function rows(job, now = Date.now()) {
  const end = job.tEnd || Math.max(now, job.t0);
  const span = Math.max(axisEnd(job, end) - job.t0, 1);
  const names = STAGES.slice();
  for (const n of Object.keys(job.stages)) if (!names.includes(n)) names.push(n);
  return names.map((name) => {
    const s = job.stages[name];
    if (!s) return { name, status: terminal(job.state) ? 'none' : 'pending', left: 0, width: 0, durMS: 0 };
    const stop = s.status === 'running' ? end : s.end;
    const durMS = s.status === 'running' ? end - s.start : s.durMS;
    const left = Math.min(Math.max((s.start - job.t0) / span, 0), 1);
    const width = s.status === 'skipped' ? 0 : Math.min(Math.max((stop - s.start) / span, 0), 1 - left);
    return { ...s, left, width, durMS };
  });
}

// numbers lists a stage's measurements as short phrases, the ones
// `glassbox explain` prints (bytes read and their rate, items and their
// rate, share of the roofline, memory high-water, placement, note), or its
// live progress while it runs.
//
// plan (optional) is the planner's prediction for the job's model on this
// machine (POST /v1/plan): when a stage reports no roofline of its own, its
// measured rate is compared with the planned one, which comes from the same
// roofline model.
export function numbers(row, fmt, plan) {
  const out = [];
  if (row.status === 'skipped') return row.reason ? ['skipped: ' + row.reason] : ['skipped'];
  const st = row.stats || {};
  const secs = row.durMS / 1000;
  if (st.bytes > 0) {
    let s = fmt.bytes(st.bytes) + (row.name === 'plan' ? ' planned' : ' read');
    if (secs > 0 && row.name !== 'plan') s += ` (${fmt.bytes(Math.round(st.bytes / secs))}/s)`;
    out.push(s);
  }
  let items = st.items || 0;
  let unit = st.unit || '';
  const p = row.progress;
  if (!items && p && row.name !== 'queued' && p.unit !== 'bytes') { items = p.done; unit = p.unit || unit; }
  if (!items && row.tokens > 0) { items = row.tokens; unit = 'tokens'; } // ended before it reported
  if (row.status === 'running' && p) {
    if (row.name === 'queued') out.push(`position ${p.done + 1} of ${p.total || '?'}`);
    else {
      let s = `${p.done}${p.total ? ' / ' + p.total : ''} ${p.unit || ''}`.trim();
      if (p.rate) s += `, ${fmt.rate(p.rate)} ${p.unit || ''}/s`;
      out.push(s);
    }
  } else if (items > 0) {
    let s = `${items} ${(items === 1 && unit.endsWith('s') && unit !== 'bytes') ? unit.slice(0, -1) : (unit || 'items')}`;
    const rate = stageRate(row.name, items, unit, secs, st.end_token);
    if (rate > 0 && ['prefill', 'generate', 'decode'].includes(row.name)) s += `, ${fmt.rate(rate)} ${unit || 'items'}/s`;
    out.push(s);
    if (st.roofline > 0 && rate > 0) {
      out.push(`${Math.round((100 * rate) / st.roofline)}% of roofline (${fmt.rate(st.roofline)}/s${st.limiter ? ', ' + st.limiter : ''})`);
    } else if (plan && plan.speed && rate > 0 && (row.name === 'prefill' || row.name === 'generate')) {
      const sp = plan.speed;
      const [want, limit] = row.name === 'prefill' ? [sp.prefill_tokens_per_s, sp.prefill_limit] : [sp.decode_tokens_per_s, sp.decode_limit];
      if (want > 0) out.push(`${Math.round((100 * rate) / want)}% of the planned ~${fmt.rate(want)} ${unit || 'tokens'}/s${limit ? ' (' + limit + ')' : ''}`);
    }
  }
  if (st.peak_rss > 0) out.push('peak ' + fmt.bytes(st.peak_rss));
  if (st.placement) out.push(st.placement);
  if (st.note) out.push(st.note);
  return out;
}

// stageRate is a finished stage's rate in its items per second, as
// api.StageStats.Rate: a text generation's first token is sampled from the
// prompt's last pass, so its time holds items − 1 decode passes (0 for a
// one-token reply), one more when it ended at an end-of-generation token
// (endToken: sampled, but not counted in items, as in the result).
export function stageRate(name, items, unit, secs, endToken) {
  const n = name === 'generate' && unit === 'tokens' ? items - 1 + (endToken ? 1 : 0) : items;
  return n > 0 && secs > 0 ? n / secs : 0;
}

// verdict is the closing account of a finished job, in the words of
// `glassbox explain` (pipeline/explain.go): where the time went when one
// stage took half of it, then the rate of generation (or prefill) against
// the roofline. Failed and cancelled jobs are told by their error instead.
export function verdict(job, fmt) {
  if (job.state !== 'done') return [];
  const total = job.durationMS || job.tEnd - job.t0;
  const out = [];
  const share = (name) => {
    const s = job.stages[name];
    return s && total > 0 && s.status === 'done' ? [s.durMS, s.durMS / total] : [0, 0];
  };
  const why = [
    ['load', 'was loading the model (reading the file, laying out its weights for the kernels): it was not resident (glassbox serve keeps a model loaded between jobs; each CLI run loads it again).'],
    ['queued', 'was waiting in the queue: the server was busy.'],
    ['prefill', 'was reading the prompt (prefill): a shorter prompt, or a cached one, would answer sooner.'],
  ];
  for (const [name, text] of why) {
    const [d, f] = share(name);
    if (f >= 0.5) { out.push(`${fmt.dur(d)} of ${fmt.dur(total)} ${text}`); break; }
  }
  for (const name of ['generate', 'prefill']) {
    const s = job.stages[name];
    const st = s && s.stats;
    const rate = st ? stageRate(name, st.items, st.unit, s.durMS / 1000, st.end_token) : 0;
    if (!(rate > 0)) continue;
    const unit = st.unit || 'items';
    let line = `${name === 'generate' ? 'generation' : 'prefill'} ran at ${fmt.rate(rate)} ${unit}/s`;
    if (st.roofline > 0) {
      const pct = (100 * rate) / st.roofline;
      line += `, ${Math.round(pct)}% of this machine's roofline (${fmt.rate(st.roofline)} ${unit}/s)`;
      if (st.limiter) line += `, limited by ${st.limiter}`;
      if (pct < 50) line += '; well below the roofline: overhead outside the arithmetic';
    }
    if (st.note) line += '; ' + st.note;
    out.push(line + '.');
    break;
  }
  if (!out.length) out.push(`done in ${fmt.dur(total)}.`);
  return out;
}
