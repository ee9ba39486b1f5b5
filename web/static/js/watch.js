// watch follows one job from its first event, folding each event into a
// job model (stages.js) exactly once. Reopening the page calls it again
// and the whole log is replayed, so the text shown is always the job's
// tokens in order, none lost and none twice.
import { follow } from './api.js';
import { newJob, apply, terminal } from './stages.js';

export function watch(id, { onChange, onStatus = () => {}, onFail = () => {} }) {
  const job = newJob(id);
  const stop = follow(id, {
    after: 0,
    onEvent: (ev) => {
      if (apply(job, ev)) onChange(job, ev);
    },
    onStatus: (s) => onStatus(s, job),
    onFail,
  });
  return { job, stop, done: () => terminal(job.state) };
}

// setOutput shows the text a job generates, token by token, in pre.
// data-state is the job's state; data-tokens the token events shown.
// Only the new text is appended, so a long answer costs O(tokens), not
// O(tokens²), to show.
export function setOutput(pre, job) {
  const node = pre.firstChild;
  const shown = node && node.nodeType === Node.TEXT_NODE && pre.childNodes.length === 1 ? node.data.length : -1;
  if (shown >= 0 && shown <= job.text.length && job.text.startsWith(node.data.slice(-64), Math.max(shown - 64, 0))) {
    if (shown < job.text.length) node.appendData(job.text.slice(shown));
  } else if (pre.textContent !== job.text) {
    pre.textContent = job.text;
  }
  pre.dataset.state = job.state;
  pre.dataset.tokens = String(job.tokens);
  pre.dataset.seq = String(job.lastSeq);
}
