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

// outputView is the text a job generates, filled token by token.
// data-state is the job's state; data-tokens the token events shown.
export function setOutput(pre, job) {
  if (pre.textContent !== job.text) pre.textContent = job.text;
  pre.dataset.state = job.state;
  pre.dataset.tokens = String(job.tokens);
  pre.dataset.seq = String(job.lastSeq);
}
