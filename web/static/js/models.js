// Models: the resident ones (GET /v1/ps; on a cluster's front also those
// resident on its workers, each naming its worker) with their memory,
// keep-alive countdown and an unload button for the server's own (Ollama's
// keep_alive 0), the stored ones
// with their verdict and a delete button (DELETE /api/delete), a pull into
// the store (a job of kind pull, its progress from its events, the job linked),
// a model made from a stored one with a system message and parameters
// (POST /api/create, as a Modelfile), and the plan for any of them on this
// machine or a device profile (POST /v1/plan).
import * as api from './api.js';
import * as fmt from './fmt.js';

export function modelsView(root, cfg) {
  const resBody = fmt.el('tbody', {});
  const resTable = fmt.el('table', { id: 'resident' },
    fmt.el('thead', {}, fmt.el('tr', {}, ...['Model', 'Where', 'Memory', 'In use', 'Unloads in', ''].map((h) => fmt.el('th', { scope: 'col' }, h)))), resBody);
  const queue = fmt.el('div', { class: 'small', id: 'queue' });
  const storeBody = fmt.el('tbody', {});
  const storeTable = fmt.el('table', { id: 'stored' },
    fmt.el('thead', {}, fmt.el('tr', {}, ...['Model', 'Size', 'Family', 'Parameters', 'Format', 'Context', 'Plan on this machine', ''].map((h) => fmt.el('th', { scope: 'col' }, h)))), storeBody);
  const status = fmt.el('div', { class: 'small', role: 'status', 'aria-live': 'polite' });

  const pullRef = fmt.el('input', { id: 'pull-ref', type: 'text', size: 48, spellcheck: false,
    placeholder: 'llama3.2:1b, hf.co/OWNER/REPO:Q4_K_M or https://…/model.gguf' });
  const pullGo = fmt.el('button', { type: 'submit' }, 'Pull');
  const pullStatus = fmt.el('div', { id: 'pull-status', class: 'small', role: 'status', 'aria-live': 'polite' });
  const pullForm = fmt.el('form', { class: 'panel', 'aria-label': 'Pull' },
    fmt.el('div', { class: 'row' },
      fmt.el('div', {}, fmt.el('label', { for: 'pull-ref' }, 'Model to download into the store'), pullRef),
      fmt.el('div', {}, pullGo)),
    pullStatus);

  const createName = fmt.el('input', { id: 'create-name', type: 'text', size: 20, spellcheck: false, placeholder: 'my-assistant' });
  const createFrom = fmt.el('select', { id: 'create-from' });
  const createSystem = fmt.el('textarea', { id: 'create-system', rows: 2, cols: 48, placeholder: 'You are a helpful assistant.' });
  const createParams = fmt.el('textarea', { id: 'create-params', rows: 2, cols: 32, spellcheck: false, placeholder: 'temperature 0.7\nnum_ctx 8192' });
  const createGo = fmt.el('button', { type: 'submit' }, 'Create');
  const createStatus = fmt.el('div', { id: 'create-status', class: 'small', role: 'status', 'aria-live': 'polite' });
  const createForm = fmt.el('form', { class: 'panel', 'aria-label': 'Create' },
    fmt.el('div', { class: 'row' },
      fmt.el('div', {}, fmt.el('label', { for: 'create-name' }, 'New model'), createName),
      fmt.el('div', {}, fmt.el('label', { for: 'create-from' }, 'Made from'), createFrom),
      fmt.el('div', {}, fmt.el('label', { for: 'create-system' }, 'System message'), createSystem),
      fmt.el('div', {}, fmt.el('label', { for: 'create-params' }, 'Parameters (one per line)'), createParams),
      fmt.el('div', {}, createGo)),
    createStatus);

  const planModel = fmt.el('select', { id: 'plan-model' });
  const planDevice = fmt.el('select', { id: 'plan-device' }, fmt.el('option', { value: '' }, 'this machine'),
    ...(cfg.profiles || []).map((p) => fmt.el('option', { value: p }, p)));
  const planCtx = fmt.el('input', { id: 'plan-ctx', type: 'number', min: 0, step: 1, placeholder: "model's" });
  const planKV = fmt.el('select', { id: 'plan-kv' },
    ...['f16', 'q8_0', 'f32'].map((k) => fmt.el('option', { value: k }, k)));
  const planGo = fmt.el('button', { type: 'submit' }, 'Plan');
  const planOut = fmt.el('div', { id: 'plan-out', 'aria-live': 'polite' });
  const planForm = fmt.el('form', { class: 'panel', 'aria-label': 'Plan' },
    fmt.el('div', { class: 'row' },
      fmt.el('div', {}, fmt.el('label', { for: 'plan-model' }, 'Model'), planModel),
      fmt.el('div', {}, fmt.el('label', { for: 'plan-device' }, 'Device'), planDevice),
      fmt.el('div', {}, fmt.el('label', { for: 'plan-ctx' }, 'Context'), planCtx),
      fmt.el('div', {}, fmt.el('label', { for: 'plan-kv' }, 'KV cache'), planKV),
      fmt.el('div', {}, planGo)),
    planOut);

  root.replaceChildren(fmt.el('h1', {}, 'Models'),
    fmt.el('h2', {}, 'Resident'), fmt.el('div', { class: 'tablewrap' }, resTable), queue,
    fmt.el('h2', {}, 'Stored'), fmt.el('div', { class: 'tablewrap' }, storeTable), pullForm, createForm,
    fmt.el('h2', {}, 'Plan'), planForm, status);

  resBody.append(fmt.loadingRow(6, 'Loading the resident models…'));
  storeBody.append(fmt.loadingRow(8, 'Loading the stored models…'));
  let resident = [];
  let psTimer = 0;
  let tick = 0;
  const drawCountdowns = () => {
    for (const tr of resBody.querySelectorAll('tr[data-model]')) {
      const m = resident.find((x) => x.name === tr.dataset.model && (x.worker || '') === tr.dataset.worker);
      const cell = tr.querySelector('.countdown');
      if (m && cell) cell.textContent = m.in_use > 0 ? 'in use' : fmt.countdown(m.expires_at);
    }
  };
  const loadPS = async () => {
    clearTimeout(psTimer);
    try {
      const r = await api.get('/v1/ps');
      resident = r.models || [];
      resBody.replaceChildren(...resident.map((m) => fmt.el('tr', { 'data-model': m.name, 'data-worker': m.worker || '' },
        fmt.el('td', {}, m.name),
        fmt.el('td', {}, m.worker ? 'worker ' + m.worker : 'this server'),
        fmt.el('td', {}, fmt.bytes(m.size_resident)),
        fmt.el('td', {}, String(m.in_use || 0)),
        fmt.el('td', { class: 'countdown' }),
        fmt.el('td', {}, m.worker ? '' : fmt.el('button', { type: 'button', class: 'secondary', 'aria-label': 'Unload ' + m.name, onclick: () => unload(m.name) }, 'Unload')))));
      if (!resident.length) resBody.append(fmt.el('tr', {}, fmt.el('td', { colspan: 6, class: 'muted' }, 'No model is loaded.')));
      const q = r.queue || {};
      queue.textContent = `queue: ${q.running ?? 0} running, ${q.waiting ?? 0} waiting (${q.parallel ?? 1} at once)`;
      drawCountdowns();
    } catch (e) {
      resBody.querySelector('.loading')?.remove();
      status.textContent = e.describe ? e.describe() : String(e);
    }
    psTimer = setTimeout(loadPS, 5000);
  };
  const unload = async (name) => {
    status.textContent = 'unloading ' + name + '…';
    try {
      await api.post('/api/generate', { model: name, keep_alive: 0 });
      status.textContent = 'unloaded ' + name;
    } catch (e) {
      status.textContent = e.describe ? e.describe() : String(e);
    }
    loadPS();
  };

  // Deleting takes two clicks: the button asks again before it acts.
  const deleteButton = (name) => {
    const b = fmt.el('button', { type: 'button', class: 'secondary', 'aria-label': 'Delete ' + name }, 'Delete');
    b.onclick = async () => {
      if (b.dataset.armed !== 'yes') {
        b.dataset.armed = 'yes';
        b.textContent = 'Delete from disk?';
        return;
      }
      b.disabled = true;
      status.textContent = 'deleting ' + name + '…';
      try {
        await api.del('/api/delete', { model: name });
        status.textContent = 'deleted ' + name;
      } catch (e) {
        status.textContent = e.describe ? e.describe() : String(e);
      }
      loadStored();
      loadPS();
    };
    return b;
  };
  const loadStored = () => api.get('/v1/models').then((r) => {
    const ms = r.data || [];
    storeBody.replaceChildren(...ms.map((m) => fmt.el('tr', { 'data-model': m.id },
      fmt.el('td', {}, m.id),
      fmt.el('td', {}, fmt.bytes(m.size)),
      fmt.el('td', {}, m.family || ''),
      fmt.el('td', {}, m.parameter_size || ''),
      fmt.el('td', {}, m.quantization_level || ''),
      fmt.el('td', {}, m.context_length ? String(m.context_length) : ''),
      fmt.el('td', { class: fmt.verdictClass(m.verdict) }, m.verdict || ''),
      fmt.el('td', {}, deleteButton(m.id)))));
    if (!ms.length) storeBody.append(fmt.el('tr', {}, fmt.el('td', { colspan: 8, class: 'muted' }, 'The store is empty: pull a model below, or glassbox import FILE.gguf')));
    planModel.replaceChildren(...ms.map((m) => fmt.el('option', { value: m.id }, m.id)));
    createFrom.replaceChildren(...ms.map((m) => fmt.el('option', { value: m.id }, m.id)));
  }).catch((e) => { storeBody.querySelector('.loading')?.remove(); status.textContent = e.describe ? e.describe() : String(e); });
  loadStored();

  // A pull is a job of the jobs API: it belongs to the server, so it runs
  // on when this page's connection drops or the page is left, and its
  // events (resumed after a drop) say how far it got.
  let stopPull = () => {};
  pullForm.addEventListener('submit', async (e) => {
    e.preventDefault();
    const ref = pullRef.value.trim();
    if (!ref) return;
    pullGo.disabled = true;
    delete pullStatus.dataset.state;
    let job = null;
    const show = (text) => {
      pullStatus.replaceChildren(text, ...(job ? [' · ', fmt.el('a', { href: '#/jobs/' + job }, 'job ' + job)] : []));
    };
    const end = (state, text) => {
      stopPull();
      pullStatus.dataset.state = state;
      show(text);
      pullGo.disabled = false;
      if (state === 'done') loadStored();
    };
    show('starting…');
    try {
      job = (await api.post('/v1/jobs', { kind: 'pull', model: ref })).id;
    } catch (err) {
      end('failed', err.describe ? err.describe() : String(err));
      return;
    }
    show('pulling ' + ref);
    let name = '';
    let failure = null;
    stopPull = api.follow(job, {
      onEvent: (ev) => {
        if (ev.type === 'progress' && ev.progress && ev.progress.total > 0) {
          const { done = 0, total } = ev.progress;
          show(`downloading: ${fmt.bytes(done)} of ${fmt.bytes(total)} (${Math.floor(100 * done / total)}%)`);
        } else if (ev.type === 'result') {
          name = ev.result.name;
        } else if (ev.type === 'error') {
          failure = new api.APIError(0, { error: ev.error });
        } else if (ev.type === 'state' && ev.state === 'done') {
          end('done', 'pulled as ' + name);
        } else if (ev.type === 'state' && (ev.state === 'failed' || ev.state === 'cancelled')) {
          end('failed', failure ? failure.describe() : 'pull ' + ev.state);
        }
      },
      onStatus: (st) => { if (st === 'reconnecting' && !pullStatus.dataset.state) show('reconnecting…'); },
      onFail: (err) => end('failed', err.describe ? err.describe() : String(err)),
    });
  });

  // The fields become a Modelfile, so the server's errors name its lines.
  createForm.addEventListener('submit', async (e) => {
    e.preventDefault();
    const name = createName.value.trim();
    if (!name || !createFrom.value) return;
    let mf = 'FROM ' + createFrom.value + '\n';
    if (createSystem.value.trim()) mf += 'SYSTEM """' + createSystem.value.trim() + '"""\n';
    for (const line of createParams.value.split('\n').map((l) => l.trim()).filter(Boolean)) mf += 'PARAMETER ' + line + '\n';
    createGo.disabled = true;
    createStatus.textContent = 'creating…';
    delete createStatus.dataset.state;
    try {
      await api.post('/api/create', { model: name, modelfile: mf, stream: false });
      createStatus.dataset.state = 'done';
      createStatus.textContent = 'created ' + name + ' from ' + createFrom.value;
      loadStored();
    } catch (err) {
      createStatus.dataset.state = 'failed';
      createStatus.textContent = err.describe ? err.describe() : String(err);
    }
    createGo.disabled = false;
  });

  planForm.addEventListener('submit', async (e) => {
    e.preventDefault();
    if (!planModel.value) return;
    const req = { model: planModel.value, device: planDevice.value };
    if (planCtx.value) req.ctx = Number(planCtx.value);
    if (planKV.value !== 'f16') req.kv = planKV.value;
    planGo.disabled = true;
    planOut.replaceChildren(fmt.el('p', { class: 'muted' }, 'planning…'));
    try {
      planOut.replaceChildren(...drawPlan(await api.post('/v1/plan', req)));
    } catch (err) {
      planOut.replaceChildren(fmt.el('div', { class: 'error-box', role: 'alert' }, err.describe ? err.describe() : String(err)));
    }
    planGo.disabled = false;
  });

  loadPS();
  tick = setInterval(drawCountdowns, 1000);
  return () => { clearTimeout(psTimer); clearInterval(tick); stopPull(); };
}

// drawPlan renders a plan.Plan: the verdict, where the memory goes, the
// predicted speeds and what limits them.
function drawPlan(p) {
  const mem = p.memory || {};
  const sp = p.speed || {};
  const dev = p.device || {};
  const rows = [
    ['Device', `${dev.name || ''}${dev.source ? ' (' + dev.source + ')' : ''}`],
    ['Placement', (p.placement && p.placement.summary) || ''],
    ['Memory', `${fmt.bytes(mem.total_bytes)} = weights ${fmt.bytes(mem.weights_bytes)} + KV cache ${fmt.bytes(mem.kv_cache_bytes)} (${(p.options && p.options.kv) || 'f16'}) + compute ${fmt.bytes(mem.compute_bytes)} + overhead ${fmt.bytes(mem.overhead_bytes)}`],
    ['Available', `${fmt.bytes(dev.ram_available_bytes)} of ${fmt.bytes(dev.ram_total_bytes)} RAM`],
    ['Prefill', sp.prefill_tokens_per_s ? `~${fmt.rate(sp.prefill_tokens_per_s)} tokens/s (${sp.prefill_limit || ''})` : ''],
    ['Decode', sp.decode_tokens_per_s ? `~${fmt.rate(sp.decode_tokens_per_s)} tokens/s (${sp.decode_limit || ''})` : ''],
    ['Basis', sp.basis || ''],
  ].filter(([, v]) => v);
  return [
    fmt.el('p', { class: 'cause ' + fmt.verdictClass(p.verdict), id: 'plan-verdict' }, p.verdict || (p.fits ? 'fits' : 'does not fit')),
    fmt.el('table', {}, fmt.el('tbody', {}, ...rows.map(([k, v]) => fmt.el('tr', {}, fmt.el('th', { scope: 'row' }, k), fmt.el('td', {}, v))))),
  ];
}
