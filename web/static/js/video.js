// The Video view: a video job ({"kind": "video"} of the jobs API, Wan 2.1)
// from its three models (the DiT, the VAE and the umT5 text encoder, each
// picked from the served models by its family), a prompt and its settings;
// the pipeline's bars, the sampling steps and the frames decoded as the
// job reports them, and a <video> player of the MP4 when it is done. The
// running job's id lives in sessionStorage, so a reload (or a server
// restart) picks the same job up from its journaled events.
import * as api from './api.js';
import * as fmt from './fmt.js';
import { pipelineView } from './pipeline.js';
import { watch } from './watch.js';
import { terminal } from './stages.js';
import { showConn } from './connection.js';

const KEY = 'glassbox.video';

// MODELS: [request field, label, the family GET /v1/models gives such a file].
const MODELS = [
  ['model', 'Model (the DiT)', 'wan'],
  ['vae', 'VAE', 'wan-vae'],
  ['text_encoder', 'Text encoder (umT5)', 'text-encoder'],
];

// FIELDS: [request field, label, default shown as placeholder, step, min].
const FIELDS = [
  ['frames', 'Frames (4n + 1)', '81', '4', '1'],
  ['width', 'Width', '832', '16', '16'],
  ['height', 'Height', '480', '16', '16'],
  ['steps', 'Steps', '50', '1', '1'],
  ['seed', 'Seed', 'random', '1', '-1'],
];

// MORE: the settings under "More settings" (Wan's defaults as placeholders).
const MORE = [
  ['cfg_scale', 'CFG scale', '5', '0.5', '0'],
  ['shift', 'Shift', '5', '0.5', '0'],
  ['fps', 'Frames per second', '16', '1', '1'],
  ['heads', 'DiT attention heads', "Wan's", '1', '0'],
];

const SAMPLERS = ['unipc', 'euler'];
// RNGS: the noise generators a video job takes: torch's CPU generator (Wan's
// and ComfyUI's) and the CUDA Philox one (the official GPU runs').
const RNGS = [['cpu', 'cpu (torch CPU generator, Wan and ComfyUI)'], ['cuda', 'cuda (Philox, as on a GPU)']];

function load() {
  try {
    const s = JSON.parse(sessionStorage.getItem(KEY) || 'null');
    if (s && typeof s === 'object') return s;
  } catch { /* a corrupt entry starts afresh */ }
  return { settings: {}, job: '' };
}

// mediaURL is a URL with the API key, if any (a <video> cannot send headers).
export function mediaURL(url) {
  const key = api.apiKey();
  return key ? `${url}?access_token=${encodeURIComponent(key)}` : url;
}

// ids parses token ids typed as "17 201 33 1" (commas allowed); null when
// empty, an Error naming the bad one.
function ids(text, what) {
  const parts = text.split(/[\s,]+/).filter(Boolean);
  if (!parts.length) return null;
  const out = parts.map(Number);
  const bad = parts.find((p, i) => !Number.isInteger(out[i]) || out[i] < 0);
  if (bad !== undefined) throw new Error(`${what}: "${bad}" is not a token id (whole numbers ≥ 0, separated by spaces)`);
  return out;
}

// videoElement is a player of a job's MP4 (url as the result gives it).
export function videoElement(id, url, label) {
  return fmt.el('video', { id, class: 'player', controls: true, loop: true, preload: 'metadata', src: url, 'aria-label': label });
}

export function videoView(root) {
  const st = load();
  const save = () => sessionStorage.setItem(KEY, JSON.stringify(st));
  const pipe = pipelineView();
  let watching = null;

  const selects = {};
  const modelFields = MODELS.map(([name, label]) => {
    selects[name] = fmt.el('select', { id: 'vid-' + name, required: true },
      fmt.el('option', { value: '', class: 'loading' }, 'Loading the models…'));
    return fmt.el('div', {}, fmt.el('label', { for: 'vid-' + name }, label), selects[name]);
  });
  const prompt = fmt.el('textarea', { id: 'vid-prompt', rows: 3, placeholder: 'a red fox running through snow, cinematic' });
  const negative = fmt.el('textarea', { id: 'vid-negative', rows: 2, placeholder: "Wan's default negative prompt" });
  const inputs = {};
  const numberField = ([name, label, ph, step, min]) => {
    inputs[name] = fmt.el('input', { id: 'vid-' + name, type: 'number', placeholder: ph, step, min });
    return fmt.el('div', {}, fmt.el('label', { for: 'vid-' + name }, label), inputs[name]);
  };
  const fields = FIELDS.map(numberField);
  const more = MORE.map(numberField);
  const sampler = fmt.el('select', { id: 'vid-sampler' }, SAMPLERS.map((s) => fmt.el('option', { value: s }, s)));
  const rng = fmt.el('select', { id: 'vid-rng' }, RNGS.map(([v, l]) => fmt.el('option', { value: v }, l)));
  const roundFrames = fmt.el('input', { id: 'vid-round_frames', type: 'checkbox' });
  const promptIDs = fmt.el('input', { id: 'vid-prompt_ids', type: 'text', inputmode: 'numeric', placeholder: '17 201 33 1' });
  const negativeIDs = fmt.el('input', { id: 'vid-negative_prompt_ids', type: 'text', inputmode: 'numeric', placeholder: '9 9 1' });
  const go = fmt.el('button', { type: 'submit', id: 'vid-go' }, 'Generate');
  const stop = fmt.el('button', { type: 'button', id: 'vid-stop', hidden: true }, 'Stop');
  const status = fmt.el('div', { id: 'vid-status', class: 'small', role: 'status', 'aria-live': 'polite' });

  const stepBar = fmt.el('progress', { id: 'vid-steps-bar', max: 1, value: 0 });
  const stepNote = fmt.el('div', { id: 'vid-step', class: 'small' });
  const frameBar = fmt.el('progress', { id: 'vid-frames-bar', max: 1, value: 0 });
  const frameNote = fmt.el('div', { id: 'vid-frame', class: 'small' });
  const preview = fmt.el('img', { id: 'vid-preview', alt: 'The latest frame decoded', hidden: true });
  const progress = fmt.el('div', { id: 'vid-progress', hidden: true },
    fmt.el('label', { for: 'vid-steps-bar' }, 'Sampling steps'), stepBar, stepNote,
    fmt.el('label', { for: 'vid-frames-bar' }, 'Frames decoded'), frameBar, frameNote, preview);
  const player = fmt.el('div', { id: 'vid-player' });
  const past = fmt.el('ul', { id: 'vid-past', class: 'past' }, fmt.el('li', { class: 'loading muted' }, 'Loading the earlier videos…'));

  const form = fmt.el('form', { class: 'panel', id: 'vid-form', 'aria-label': 'Video settings' },
    fmt.el('h2', {}, 'Video'),
    fmt.el('div', { class: 'settings models3' }, modelFields),
    fmt.el('label', { for: 'vid-prompt' }, 'Prompt'), prompt,
    fmt.el('label', { for: 'vid-negative' }, 'Negative prompt'), negative,
    fmt.el('div', { class: 'settings' }, fields),
    fmt.el('details', { id: 'vid-more' }, fmt.el('summary', {}, 'More settings'),
      fmt.el('div', { class: 'settings' }, more,
        fmt.el('div', {}, fmt.el('label', { for: 'vid-sampler' }, 'Sampler'), sampler),
        fmt.el('div', {}, fmt.el('label', { for: 'vid-rng' }, 'Noise generator'), rng)),
      fmt.el('div', { class: 'check' }, fmt.el('label', {}, roundFrames, ' Round the frame count to the nearest 4n + 1 (instead of refusing it)')),
      fmt.el('label', { for: 'vid-prompt_ids' }, 'Prompt as umT5 token ids (instead of the text; for a text encoder without its SentencePiece model)'), promptIDs,
      fmt.el('label', { for: 'vid-negative_prompt_ids' }, 'Negative prompt as token ids'), negativeIDs),
    fmt.el('div', { class: 'actions' }, go, stop), status);
  const out = fmt.el('section', { class: 'panel', 'aria-label': 'Result' }, fmt.el('h2', {}, 'Result'), progress, player);
  const history = fmt.el('section', { class: 'panel', 'aria-label': 'Earlier videos' }, fmt.el('h2', {}, 'Earlier videos'), past);
  root.replaceChildren(fmt.el('div', { class: 'image-view video-view' }, form, out, pipe.node, history));

  // Rounding lets any frame count through the form (the server rounds it).
  const frameStep = () => { inputs.frames.step = roundFrames.checked ? '1' : '4'; };
  roundFrames.addEventListener('change', frameStep);
  // The form keeps its values across reloads.
  const fill = (s) => {
    prompt.value = s.prompt || '';
    negative.value = s.negative_prompt || '';
    sampler.value = SAMPLERS.includes(s.sampler) ? s.sampler : 'unipc';
    rng.value = RNGS.some(([v]) => v === s.rng) ? s.rng : 'cpu';
    roundFrames.checked = !!s.round_frames;
    frameStep();
    for (const [name] of [...FIELDS, ...MORE]) inputs[name].value = s[name] ?? '';
    promptIDs.value = (s.prompt_ids || []).join(' ');
    negativeIDs.value = (s.negative_prompt_ids || []).join(' ');
    for (const [name] of MODELS) if (s[name] && [...selects[name].options].some((o) => o.value === s[name])) selects[name].value = s[name];
  };
  // read is the request's settings; it throws on token ids it cannot parse.
  const read = () => {
    const s = { prompt: prompt.value.trim(), negative_prompt: negative.value.trim(), sampler: sampler.value, rng: rng.value };
    if (roundFrames.checked) s.round_frames = true;
    for (const [name] of [...FIELDS, ...MORE]) if (inputs[name].value !== '') s[name] = Number(inputs[name].value);
    const p = ids(promptIDs.value, 'prompt token ids');
    const n = ids(negativeIDs.value, 'negative prompt token ids');
    if (p) s.prompt_ids = p;
    if (n) s.negative_prompt_ids = n;
    for (const [name] of MODELS) s[name] = selects[name].value;
    return s;
  };
  fill(st.settings);
  form.addEventListener('change', () => {
    try { st.settings = read(); save(); } catch { /* kept as typed; submit says what is wrong */ }
  });

  api.get('/v1/models').then((list) => {
    const models = list.data || [];
    for (const [name, label, family] of MODELS) {
      const of = models.filter((m) => m.family === family);
      selects[name].replaceChildren(...(of.length ? of.map((m) => fmt.el('option', { value: m.id }, m.id))
        : [fmt.el('option', { value: '' }, `No ${label.toLowerCase()} served: glassbox serve --model FILE.safetensors (a Wan 2.1 file)`)]));
    }
    fill(st.settings);
  }).catch((e) => { status.textContent = e.describe ? e.describe() : String(e); });

  const show = (job) => {
    pipe.update(job);
    const running = !terminal(job.state);
    go.disabled = running;
    stop.hidden = !running;
    const gen = job.stages.generate;
    const dec = job.stages.decode;
    progress.hidden = !gen && !dec;
    const gp = gen && gen.progress;
    if (gp && gp.total > 0) {
      stepBar.max = gp.total;
      stepBar.value = gp.done;
    } else if (gen && gen.status === 'done' && gen.stats && gen.stats.items > 0) {
      stepBar.max = stepBar.value = gen.stats.items;
    }
    const steps = job.parts.filter((p) => p.stage === 'generate' && p.name.startsWith('step '));
    const last = steps[steps.length - 1];
    const stepText = last ? `${last.name}: ${fmt.dur(last.durMS)}${last.stats && last.stats.note ? ' (' + last.stats.note + ')' : ''}` : '';
    if (stepNote.textContent !== stepText) stepNote.textContent = stepText;
    stepNote.dataset.steps = String(steps.length);
    const dp = dec && dec.progress;
    if (dp && dp.total > 0) {
      frameBar.max = dp.total;
      frameBar.value = dp.done;
    }
    const frames = dec && dec.status === 'done' && dec.stats && dec.stats.items > 0 ? dec.stats.items : 0;
    if (frames) frameBar.max = frameBar.value = 1;
    let frameText = frames ? `${frames} frames decoded` : dp && dp.total > 0 ? `${dp.done} of ${dp.total} ${dp.unit || ''}`.trim() : '';
    // Each frame as it is decoded (a preview event's PNG, at most 256 px a side).
    const p = job.preview;
    if (p && p.png && preview.dataset.frame !== String(p.frame || 0)) {
      preview.src = 'data:image/png;base64,' + p.png;
      preview.dataset.frame = String(p.frame || 0);
      preview.hidden = false;
    }
    if (!frames && p && p.frame) frameText = `frame ${p.frame} of ${p.frames} decoded`;
    if (job.state === 'done') preview.hidden = true;
    if (frameNote.textContent !== frameText) frameNote.textContent = frameText;
    if (job.state === 'done' && job.result && job.result.url) {
      showPlayer(job.id, job.result);
      st.lastSeed = job.result.seed;
      save();
      loadPast();
    }
    let line = running ? `${job.state || 'starting'}…` : job.state;
    if (job.state === 'failed' && job.error) line = `failed in ${job.error.stage}: ${job.error.cause || job.error.message}`;
    if (status.textContent !== line) status.textContent = line;
    status.dataset.state = job.state || '';
  };

  const showPlayer = (id, res) => {
    if (player.dataset.job === id) return;
    player.dataset.job = id;
    const s = res.settings || {};
    const url = mediaURL(res.url);
    const video = videoElement('vid-video', url, 'The video: ' + (s.prompt || `job ${id}`));
    const facts = [`${res.frames} frames`, s.width && s.height ? `${s.width}×${s.height}` : '', s.fps ? `${s.fps} fps` : '',
      s.steps ? `${s.steps} steps of ${s.sampler}` : '', `seed ${res.seed}`].filter(Boolean).join(' · ');
    player.replaceChildren(video,
      fmt.el('div', { class: 'small' }, facts, ' · ', fmt.el('a', { href: url, download: `${id}.mp4` }, 'Download the MP4')),
      ...(res.warnings || []).map((w) => fmt.el('div', { class: 'warning small' }, 'warning: ' + w)));
  };

  const follow = (id) => {
    if (watching) watching.stop();
    player.replaceChildren();
    delete player.dataset.job;
    preview.hidden = true;
    watching = watch(id, { onChange: show, onStatus: showConn, onFail: (e) => { status.textContent = e.describe(); } });
  };

  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    let body;
    try {
      body = { kind: 'video', ...read() };
    } catch (e) {
      status.textContent = e.message;
      status.dataset.state = 'invalid';
      return;
    }
    if (!body.prompt && !body.prompt_ids) {
      status.textContent = 'a prompt (or its token ids, under More settings) is needed';
      status.dataset.state = 'invalid';
      prompt.focus();
      return;
    }
    for (const k of ['prompt', 'negative_prompt']) if (!body[k]) delete body[k];
    try {
      go.disabled = true;
      status.textContent = 'submitting…';
      status.dataset.state = 'submitting';
      const j = await api.post('/v1/jobs', body);
      st.job = j.id;
      st.settings = read();
      save();
      follow(j.id);
    } catch (e) {
      go.disabled = false;
      status.textContent = e.describe ? e.describe() : String(e);
      status.dataset.state = 'refused';
    }
  });
  stop.addEventListener('click', () => { if (st.job) api.post(`/v1/jobs/${encodeURIComponent(st.job)}/cancel`).catch(() => {}); });

  const loadPast = async () => {
    try {
      const list = await api.get('/v1/jobs?limit=100');
      const done = list.jobs.filter((j) => j.kind === 'video' && j.state === 'done' && j.result && j.result.url);
      if (!done.length) { past.replaceChildren(fmt.el('li', { class: 'muted' }, 'No videos yet.')); return; }
      past.replaceChildren(...done.map((j) => {
        const s = j.result.settings || {};
        const open = fmt.el('button', { type: 'button', class: 'small secondary' }, 'Play');
        open.addEventListener('click', () => { showPlayer(j.id, j.result); player.querySelector('video')?.focus(); });
        const use = fmt.el('button', { type: 'button', class: 'small secondary use' }, 'Use these settings');
        use.addEventListener('click', () => {
          fill({ ...(j.params || {}) });
          form.dispatchEvent(new Event('change'));
          prompt.focus();
        });
        return fmt.el('li', { 'data-job': j.id },
          fmt.el('span', {}, `${s.prompt || (j.params && j.params.prompt_ids ? 'token ids ' + j.params.prompt_ids.join(' ') : j.id)} · ${j.result.frames} frames ${s.width}×${s.height} · seed ${j.result.seed} `),
          open, ' ', use);
      }));
    } catch (e) {
      past.replaceChildren(fmt.el('li', {}, e.describe ? e.describe() : String(e)));
    }
  };
  loadPast();
  if (st.job) follow(st.job);

  return () => { if (watching) watching.stop(); pipe.destroy(); };
}
