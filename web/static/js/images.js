// The Image view: an image job ({"kind": "image"} of the jobs API) from a
// prompt and its settings, img2img from an uploaded picture, the live
// preview of each step, the pipeline's bars, and a gallery of earlier
// images from the journal with their settings. The running job's id lives
// in sessionStorage, so a reload (or a server restart) picks the same job
// up from its journaled events.
import * as api from './api.js';
import * as fmt from './fmt.js';
import { pipelineView } from './pipeline.js';
import { watch } from './watch.js';
import { terminal } from './stages.js';
import { showConn } from './connection.js';

const KEY = 'glassbox.image';

const SAMPLERS = ['euler_a', 'euler', 'heun', 'dpm2', 'dpm++2m', 'dpm++2s_a', 'lcm', 'ddim_trailing'];
const SCHEDULERS = ['', 'discrete', 'karras', 'exponential', 'simple', 'lcm'];

// FIELDS: [request field, label, input type, default shown as placeholder, step].
const FIELDS = [
  ['width', 'Width', 'number', '512', '64'],
  ['height', 'Height', 'number', '512', '64'],
  ['steps', 'Steps', 'number', '20', '1'],
  ['cfg_scale', 'CFG scale', 'number', '7', '0.5'],
  ['seed', 'Seed', 'number', 'random', '1'],
];

function load() {
  try {
    const s = JSON.parse(sessionStorage.getItem(KEY) || 'null');
    if (s && typeof s === 'object') return s;
  } catch { /* a corrupt entry starts afresh */ }
  return { settings: {}, job: '' };
}

// imageURL is an image's URL with the API key, if any (an <img> cannot send headers).
function imageURL(url) {
  const key = api.apiKey();
  return key ? `${url}?access_token=${encodeURIComponent(key)}` : url;
}

export function imageView(root) {
  const st = load();
  const save = () => sessionStorage.setItem(KEY, JSON.stringify(st));
  const pipe = pipelineView();
  let watching = null;

  const model = fmt.el('select', { id: 'img-model', required: true }, fmt.el('option', { value: '' }, 'Loading the models…'));
  const prompt = fmt.el('textarea', { id: 'img-prompt', rows: 3, required: true, placeholder: 'a lighthouse at dusk, oil painting' });
  const negative = fmt.el('textarea', { id: 'img-negative', rows: 2, placeholder: 'blurry, low quality' });
  const sampler = fmt.el('select', { id: 'img-sampler' }, SAMPLERS.map((s) => fmt.el('option', { value: s }, s)));
  const scheduler = fmt.el('select', { id: 'img-scheduler' },
    SCHEDULERS.map((s) => fmt.el('option', { value: s }, s || "the sampler's")));
  const inputs = {};
  const fields = FIELDS.map(([name, label, type, ph, step]) => {
    inputs[name] = fmt.el('input', { id: 'img-' + name, type, placeholder: ph, step, min: name === 'seed' ? '-1' : '0' });
    return fmt.el('div', {}, fmt.el('label', { for: 'img-' + name }, label), inputs[name]);
  });
  const reuse = fmt.el('button', { type: 'button', id: 'img-reuse', class: 'small' }, 'Reuse the last seed');
  const init = fmt.el('input', { id: 'img-init', type: 'file', accept: 'image/png,image/jpeg' });
  const strength = fmt.el('input', { id: 'img-strength', type: 'number', step: '0.05', min: '0.05', max: '1', placeholder: '0.75' });
  const go = fmt.el('button', { type: 'submit', id: 'img-go' }, 'Generate');
  const stop = fmt.el('button', { type: 'button', id: 'img-stop', hidden: true }, 'Stop');
  const status = fmt.el('div', { id: 'img-status', class: 'small', role: 'status', 'aria-live': 'polite' });
  const preview = fmt.el('img', { id: 'img-preview', alt: 'Live preview of the image being made', hidden: true });
  const previewNote = fmt.el('div', { class: 'small muted', id: 'img-preview-note' });
  const outputs = fmt.el('div', { id: 'img-outputs', class: 'gallery' });
  const gallery = fmt.el('div', { id: 'img-gallery', class: 'gallery' }, 'Loading the gallery…');

  const form = fmt.el('form', { class: 'panel', id: 'img-form', 'aria-label': 'Image settings' },
    fmt.el('h2', {}, 'Image'),
    fmt.el('label', { for: 'img-model' }, 'Model'), model,
    fmt.el('label', { for: 'img-prompt' }, 'Prompt'), prompt,
    fmt.el('label', { for: 'img-negative' }, 'Negative prompt'), negative,
    fmt.el('div', { class: 'settings' }, fields,
      fmt.el('div', {}, fmt.el('label', { for: 'img-sampler' }, 'Sampler'), sampler),
      fmt.el('div', {}, fmt.el('label', { for: 'img-scheduler' }, 'Scheduler'), scheduler)),
    reuse,
    fmt.el('details', {}, fmt.el('summary', {}, 'Start from a picture (img2img)'),
      fmt.el('label', { for: 'img-init' }, 'Picture (its size is the image’s)'), init,
      fmt.el('label', { for: 'img-strength' }, 'Strength'), strength),
    fmt.el('div', { class: 'actions' }, go, stop), status);
  const out = fmt.el('section', { class: 'panel', 'aria-label': 'Result' }, fmt.el('h2', {}, 'Result'),
    preview, previewNote, outputs);
  const past = fmt.el('section', { class: 'panel', 'aria-label': 'Gallery' }, fmt.el('h2', {}, 'Gallery'), gallery);
  root.replaceChildren(fmt.el('div', { class: 'image-view' }, form, out, pipe.node, past));

  // The form keeps its values across reloads.
  const fill = (s) => {
    prompt.value = s.prompt || '';
    negative.value = s.negative_prompt || '';
    sampler.value = s.sampler || 'euler_a';
    scheduler.value = s.scheduler || '';
    for (const [name] of FIELDS) inputs[name].value = s[name] ?? '';
  };
  const read = () => {
    const s = { prompt: prompt.value, negative_prompt: negative.value, sampler: sampler.value, scheduler: scheduler.value };
    for (const [name] of FIELDS) if (inputs[name].value !== '') s[name] = Number(inputs[name].value);
    return s;
  };
  fill(st.settings);
  form.addEventListener('change', () => { st.settings = { ...read(), model: model.value }; save(); });
  reuse.addEventListener('click', () => { if (st.lastSeed != null) { inputs.seed.value = st.lastSeed; form.dispatchEvent(new Event('change')); } });

  api.get('/v1/models').then((list) => {
    const images = (list.data || []).filter((m) => m.family === 'sd1');
    model.replaceChildren(...(images.length ? images.map((m) => fmt.el('option', { value: m.id }, m.id))
      : [fmt.el('option', { value: '' }, 'No image model: serve an SD 1.x checkpoint (--model FILE.safetensors)')]));
    if (st.settings.model && images.some((m) => m.id === st.settings.model)) model.value = st.settings.model;
  }).catch((e) => { status.textContent = e.describe ? e.describe() : String(e); });

  const show = (job) => {
    pipe.update(job);
    const p = job.preview;
    if (p && p.png) {
      preview.src = 'data:image/png;base64,' + p.png;
      preview.hidden = false;
      preview.dataset.step = String(p.step);
      previewNote.textContent = `step ${p.step} of ${p.steps}` + (p.image ? `, image ${p.image + 1}` : '') + ' (the latent, 1/8 of the size)';
    }
    const running = !terminal(job.state);
    go.disabled = running;
    stop.hidden = !running;
    if (job.state === 'done' && job.result && Array.isArray(job.result.images)) {
      outputs.replaceChildren(...job.result.images.map((im) => figure(im, job.result.settings)));
      st.lastSeed = job.result.settings && job.result.settings.seed;
      save();
      preview.hidden = true;
      previewNote.textContent = '';
      loadGallery();
    }
    if (!running && job.state !== 'done' && !preview.hidden) {
      // The job ended without an image: the preview is its last step's.
      previewNote.textContent = `the last preview, step ${preview.dataset.step}: the job ${job.state}, with no image`;
    }
    status.textContent = running ? `${job.state || 'starting'}…` : job.state;
    status.dataset.state = job.state || '';
  };
  const follow = (id) => {
    if (watching) watching.stop();
    outputs.replaceChildren();
    preview.hidden = true;
    watching = watch(id, { onChange: show, onStatus: showConn, onFail: (e) => { status.textContent = e.describe(); } });
  };

  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const body = { kind: 'image', model: model.value, ...read() };
    if (!body.negative_prompt) delete body.negative_prompt;
    if (!body.scheduler) delete body.scheduler;
    try {
      if (init.files && init.files[0]) {
        body.init_image = await dataURL(init.files[0]);
        if (strength.value !== '') body.strength = Number(strength.value);
      }
      const j = await api.post('/v1/jobs', body);
      st.job = j.id;
      save();
      follow(j.id);
    } catch (e) {
      status.textContent = e.describe ? e.describe() : String(e);
    }
  });
  stop.addEventListener('click', () => { if (st.job) api.post(`/v1/jobs/${encodeURIComponent(st.job)}/cancel`).catch(() => {}); });

  const figure = (im, s) => fmt.el('figure', { class: 'shot', 'data-seed': im.seed },
    fmt.el('a', { href: imageURL(im.url), target: '_blank', rel: 'noopener' },
      fmt.el('img', { src: imageURL(im.url), alt: (s && s.prompt) || 'generated image', title: im.infotext || '' })),
    fmt.el('figcaption', { class: 'small' }, `seed ${im.seed}`));

  const loadGallery = async () => {
    try {
      const list = await api.get('/v1/jobs?limit=100');
      const done = list.jobs.filter((j) => j.kind === 'image' && j.state === 'done' && j.result);
      if (!done.length) { gallery.replaceChildren('No images yet.'); return; }
      gallery.replaceChildren(...done.map((j) => {
        const use = fmt.el('button', { type: 'button', class: 'small use' }, 'Use these settings');
        use.addEventListener('click', () => {
          const s = { ...(j.params || {}) };
          fill(s);
          if (s.model) model.value = s.model;
          form.dispatchEvent(new Event('change'));
          prompt.focus();
        });
        return fmt.el('div', { class: 'gallery-item', 'data-job': j.id },
          (j.result.images || []).map((im) => figure(im, j.result.settings)),
          fmt.el('div', { class: 'small' }, (j.result.settings && j.result.settings.prompt) || ''), use);
      }));
    } catch (e) {
      gallery.replaceChildren(e.describe ? e.describe() : String(e));
    }
  };
  loadGallery();
  if (st.job) follow(st.job);

  return () => { if (watching) watching.stop(); pipe.destroy(); };
}

function dataURL(file) {
  return new Promise((ok, fail) => {
    const r = new FileReader();
    r.onload = () => ok(r.result);
    r.onerror = () => fail(r.error);
    r.readAsDataURL(file);
  });
}
