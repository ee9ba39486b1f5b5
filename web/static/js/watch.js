// watch follows one job from its first event, folding each event into a
// job model (stages.js) exactly once. Reopening the page calls it again
// and the whole log is replayed, so the text shown is always the job's
// tokens in order, none lost and none twice.
import { follow } from './api.js';
import { newJob, apply, terminal } from './stages.js';

// frameMS is the shortest time between two redraws while a job runs: the
// page shares the machine's cores with the engine, and drawing every token
// (100+ a second) would take CPU the generation needs.
const frameMS = 100;

// watch calls onChange(job) after events arrive, at most once per frameMS
// (a background tab's timers run at most once a second), and at once, a
// last time, when the job ends. It does not wait for animation frames: a
// tab that was frozen and resumed may not get them.
export function watch(id, { onChange, onStatus = () => {}, onFail = () => {} }) {
  const job = newJob(id);
  let timer = 0;
  let scheduled = false;
  let last = 0;
  let ended = false;
  const flush = () => {
    scheduled = false;
    if (ended) return;
    last = performance.now();
    onChange(job);
  };
  const stop = follow(id, {
    after: 0,
    onEvent: (ev) => {
      if (!apply(job, ev) || ended) return;
      if (terminal(job.state)) {
        clearTimeout(timer);
        onChange(job);
        ended = true;
        return;
      }
      if (scheduled) return;
      scheduled = true;
      timer = setTimeout(flush, Math.max(0, frameMS - (performance.now() - last)));
    },
    onStatus: (s) => onStatus(s, job),
    onFail,
  });
  return {
    job,
    stop: () => { clearTimeout(timer); ended = true; stop(); },
    done: () => terminal(job.state),
  };
}

// setOutput shows the text a job generates, token by token, in pre.
// data-state is the job's state; data-tokens the token events shown.
// Only the new text is appended, so a long answer costs O(tokens), not
// O(tokens²), to show.
export function setOutput(pre, job) {
  setThinking(pre, job);
  if (job.logprobs) {
    setPieces(pre, job);
  } else {
    setText(pre, job);
  }
  const ds = pre.dataset;
  if (ds.state !== job.state) ds.state = job.state;
  ds.tokens = String(job.tokens);
  ds.seq = String(job.lastSeq);
}

// setThinking shows a reasoning model's thinking in a collapsible block
// before the answer (open while the answer has not started).
function setThinking(pre, job) {
  let box = pre.previousElementSibling;
  if (!box || !box.classList.contains('thinking')) {
    if (!job.thinking) return;
    const text = document.createElement('pre');
    text.className = 'think-text';
    const summary = document.createElement('summary');
    summary.textContent = 'Thinking';
    box = document.createElement('details');
    box.className = 'thinking';
    box.open = true;
    box.append(summary, text);
    pre.before(box);
  }
  const text = box.querySelector('.think-text');
  if (text.textContent !== job.thinking) text.textContent = job.thinking;
  if (job.text && box.dataset.answered !== '1') {
    box.dataset.answered = '1';
    box.open = false; // the answer has begun: fold the thinking away
  }
}

function setText(pre, job) {
  const node = pre.firstChild;
  const shown = node && node.nodeType === Node.TEXT_NODE && pre.childNodes.length === 1 ? node.data.length : -1;
  if (shown >= 0 && shown <= job.text.length && job.text.startsWith(node.data.slice(-64), Math.max(shown - 64, 0))) {
    if (shown < job.text.length) node.appendData(job.text.slice(shown));
  } else if (pre.textContent !== job.text) {
    pre.textContent = job.text;
  }
  delete pre.dataset.pieces;
}

// setPieces shows the text as one span per piece, shaded by how unlikely
// the model found its token (the last of the piece's tokens), with the
// probability and the alternatives in its title. New pieces are appended.
function setPieces(pre, job) {
  let shown = Number(pre.dataset.pieces || 0);
  if (!pre.dataset.pieces || shown > job.pieces.length) {
    pre.replaceChildren();
    shown = 0;
  }
  for (const p of job.pieces.slice(shown)) pre.append(pieceSpan(p));
  pre.dataset.pieces = String(job.pieces.length);
}

function pieceSpan(piece) {
  const span = document.createElement('span');
  span.className = 'tok';
  span.textContent = piece.text;
  const last = piece.lps[piece.lps.length - 1];
  if (!last) return span;
  const p = Math.exp(last.logprob);
  span.dataset.p = p.toFixed(4);
  span.style.setProperty('--q', (1 - p).toFixed(3));
  span.title = piece.lps.map((lp) => {
    const alts = (lp.top || []).map((a) => `${JSON.stringify(a.piece)} ${Math.exp(a.logprob).toFixed(3)}`).join(', ');
    return `${JSON.stringify(lp.piece)}: p ${Math.exp(lp.logprob).toFixed(3)}${alts ? ' · most likely: ' + alts : ''}`;
  }).join('\n');
  return span;
}
