// The Generate view: pick a model (with the planner's verdict for this
// machine), chat or complete a prompt with sampling settings, stop, and
// watch the job's pipeline. The conversation and the running job's id live
// in sessionStorage, so a reload picks the same job up where it is.
import * as api from './api.js';
import * as fmt from './fmt.js';
import { pipelineView } from './pipeline.js';
import { watch, setOutput } from './watch.js';
import { terminal } from './stages.js';
import { showConn } from './connection.js';

const KEY = 'glassbox.generate';

// settings: [option name, label, step, placeholder]. A null placeholder is
// the server's default for the option, read from GET /v1/defaults (what a
// job that leaves it out really runs with), not written here.
const SETTINGS = [
  ['temperature', 'Temperature', '0.05', null],
  ['top_k', 'Top-k', '1', null],
  ['top_p', 'Top-p', '0.01', null],
  ['min_p', 'Min-p', '0.01', null],
  ['repeat_penalty', 'Repeat penalty', '0.01', null],
  ['num_predict', 'Max tokens', '1', null],
  ['num_ctx', 'Context', '1', "model's"],
  ['seed', 'Seed', '1', 'random'],
];

// defaultText is how a settings field shows the server's default value v.
export function defaultText(name, v) {
  if (name === 'num_predict' && v < 0) return 'until end';
  return String(v);
}

function load() {
  try {
    const s = JSON.parse(sessionStorage.getItem(KEY) || 'null');
    if (s && Array.isArray(s.messages)) return s;
  } catch { /* a corrupt entry starts a new conversation */ }
  return { model: '', mode: 'chat', system: '', settings: {}, messages: [] };
}

export function generateView(root) {
  const st = load();
  const save = () => sessionStorage.setItem(KEY, JSON.stringify(st));
  let watching = null;
  const pipe = pipelineView();

  // Until the model list arrives the select says so (an option of no
  // value: the form cannot be sent meanwhile).
  const model = fmt.el('select', { id: 'model', name: 'model', required: true },
    fmt.el('option', { value: '', class: 'loading' }, 'Loading the models…'));
  const verdict = fmt.el('div', { id: 'verdict', class: 'small', 'aria-live': 'polite' });
  const mode = fmt.el('select', { id: 'mode' },
    fmt.el('option', { value: 'chat' }, 'Chat (model template)'),
    fmt.el('option', { value: 'complete' }, 'Complete (raw prompt)'));
  const system = fmt.el('textarea', { id: 'system', rows: 2, placeholder: 'You are a helpful assistant.' });
  const settings = samplingSettings(st, save);
  const probs = fmt.el('input', { id: 'opt-logprobs', type: 'checkbox', checked: !!st.settings.logprobs });
  probs.addEventListener('change', () => { st.settings.logprobs = probs.checked; save(); });
  const probsWrap = fmt.el('div', { class: 'check' },
    fmt.el('label', { for: 'opt-logprobs' }, probs, ' Show token probabilities'),
    fmt.el('div', { class: 'small muted' }, 'The less likely the model found a token, the stronger its shade; hover a token for its probability and the five most likely alternatives.'));
  // Output format: text, one JSON object, or a value of a JSON schema
  // (the server refuses, naming it, a keyword it cannot enforce).
  const format = fmt.el('select', { id: 'opt-format' },
    fmt.el('option', { value: '' }, 'Text'),
    fmt.el('option', { value: 'json' }, 'JSON object'),
    fmt.el('option', { value: 'schema' }, 'JSON schema'));
  const schema = fmt.el('textarea', { id: 'opt-schema', rows: 5, spellcheck: false,
    placeholder: '{"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}' });
  const schemaWrap = fmt.el('div', {}, fmt.el('label', { for: 'opt-schema' }, 'Schema'), schema);
  format.value = st.settings.format || '';
  schema.value = st.settings.schema || '';
  schemaWrap.hidden = format.value !== 'schema';
  format.addEventListener('change', () => { st.settings.format = format.value; schemaWrap.hidden = format.value !== 'schema'; save(); });
  schema.addEventListener('change', () => { st.settings.schema = schema.value; save(); });
  const formatWrap = fmt.el('div', {}, fmt.el('label', { for: 'opt-format' }, 'Output format'), format, schemaWrap,
    fmt.el('div', { class: 'small muted' }, 'Tokens that would not continue a valid value are masked out before each pick.'));
  // Tools (chat mode): functions offered through the model's template; a
  // call the model makes shows under its answer, and the next message
  // answers it as the tool's result.
  const tools = fmt.el('textarea', { id: 'opt-tools', rows: 5, spellcheck: false,
    placeholder: '[{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]' });
  const toolChoice = fmt.el('select', { id: 'opt-tool-choice' },
    fmt.el('option', { value: 'auto' }, 'auto: answer or call'),
    fmt.el('option', { value: 'required' }, 'required: call one'),
    fmt.el('option', { value: 'none' }, 'none: answer in text'));
  tools.value = st.settings.tools || '';
  toolChoice.value = st.settings.toolChoice || 'auto';
  tools.addEventListener('change', () => { st.settings.tools = tools.value; save(); });
  toolChoice.addEventListener('change', () => { st.settings.toolChoice = toolChoice.value; save(); });
  const toolsWrap = fmt.el('details', { id: 'tools-panel' }, fmt.el('summary', {}, 'Tools'),
    fmt.el('label', { for: 'opt-tools' }, 'Functions (a JSON list, as OpenAI takes them)'), tools,
    fmt.el('label', { for: 'opt-tool-choice' }, 'Tool choice'), toolChoice,
    fmt.el('div', { class: 'small muted' }, 'The model sees them through its chat template; "required" constrains the reply to a call of their parameters.'));
  const chat = fmt.el('div', { class: 'chat', id: 'chat', 'aria-label': 'Conversation' });
  const prompt = fmt.el('textarea', { id: 'prompt', rows: 3, placeholder: 'Once upon a time' });
  const promptLabel = fmt.el('label', { for: 'prompt' }, 'Message (Ctrl+Enter sends)');
  const send = fmt.el('button', { id: 'send', type: 'submit' }, 'Send');
  const stopBtn = fmt.el('button', { id: 'stop', type: 'button', class: 'danger', disabled: true }, 'Stop');
  const clear = fmt.el('button', { id: 'new', type: 'button', class: 'secondary' }, 'New conversation');
  const status = fmt.el('div', { id: 'gen-status', class: 'small', role: 'status', 'aria-live': 'polite' });
  const jobLink = fmt.el('div', { class: 'small', id: 'job-link' });
  const systemWrap = fmt.el('div', {}, fmt.el('label', { for: 'system' }, 'System prompt'), system);

  const form = fmt.el('form', { id: 'gen-form', 'aria-label': 'Generate' },
    chat,
    promptLabel, prompt,
    fmt.el('div', { class: 'actions' }, send, stopBtn, clear),
    status);
  const side = fmt.el('div', {},
    fmt.el('section', { class: 'panel', 'aria-label': 'Model and settings' },
      fmt.el('label', { for: 'model' }, 'Model'), model, verdict,
      fmt.el('label', { for: 'mode' }, 'Mode'), mode,
      systemWrap,
      fmt.el('details', { open: true }, fmt.el('summary', {}, 'Sampling settings'), settings.node, probsWrap, formatWrap),
      toolsWrap),
    fmt.el('div', { style: null }, jobLink), pipe.node);
  root.replaceChildren(fmt.el('h1', {}, 'Generate'), fmt.el('div', { class: 'cols' }, form, side));

  mode.value = st.mode;
  system.value = st.system;
  systemWrap.hidden = toolsWrap.hidden = st.mode !== 'chat';
  mode.addEventListener('change', () => { st.mode = mode.value; systemWrap.hidden = toolsWrap.hidden = st.mode !== 'chat'; save(); });
  system.addEventListener('change', () => { st.system = system.value; save(); });
  model.addEventListener('change', () => { st.model = model.value; save(); showVerdict(); });
  prompt.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) { e.preventDefault(); form.requestSubmit(); }
  });

  let models = [];
  const showVerdict = () => {
    const m = models.find((x) => x.id === model.value);
    verdict.className = 'small ' + fmt.verdictClass(m && m.verdict);
    verdict.textContent = m ? `${m.verdict || 'no plan'} · ${m.parameter_size || ''} ${m.quantization_level || ''} · ctx ${m.context_length || '?'}` : '';
  };
  api.get('/v1/models').then((r) => {
    models = r.data || [];
    model.replaceChildren(...models.map((m) => fmt.el('option', { value: m.id }, m.verdict ? `${m.id} — ${m.verdict}` : m.id)));
    if (!models.length) model.append(fmt.el('option', { value: '' }, 'no models: glassbox import FILE.gguf'));
    if (st.model && models.some((m) => m.id === st.model)) model.value = st.model;
    st.model = model.value;
    showVerdict();
  }).catch((e) => {
    model.replaceChildren(fmt.el('option', { value: '' }, 'no model list (see below)'));
    status.textContent = e.describe ? e.describe() : String(e);
  });

  // Messages.
  const msgNodes = [];
  const drawMessage = (m, i) => {
    const out = fmt.el('pre', { class: 'out' }, m.content || '');
    const who = fmt.el('div', { class: 'who' }, m.role === 'assistant' ? 'model' : m.role);
    if (m.job) who.append(fmt.el('a', { href: '#/jobs/' + m.job }, 'job ' + m.job));
    if (m.state && m.state !== 'done') who.append(fmt.el('span', { class: 'badge', 'data-state': m.state }, m.state));
    const calls = fmt.el('div', { class: 'toolcalls' });
    drawCalls(calls, m.toolCalls);
    const node = fmt.el('div', { class: 'msg ' + m.role, 'data-index': i }, who, out, calls);
    if (m.role === 'assistant') out.classList.add('answer');
    msgNodes[i] = { node, out, who, calls };
    return node;
  };
  // The message typed next answers the last answer's first call, if it
  // made one.
  const pendingCall = () => {
    const m = st.messages[st.messages.length - 1];
    return m && m.role === 'assistant' && m.state === 'done' && m.toolCalls && m.toolCalls.length ? m.toolCalls[0] : null;
  };
  const drawPrompt = () => {
    const c = pendingCall();
    promptLabel.textContent = c ? `Result of ${c.name} (Ctrl+Enter sends)` : 'Message (Ctrl+Enter sends)';
  };
  const drawChat = () => { chat.replaceChildren(...st.messages.map(drawMessage)); drawPrompt(); };
  drawChat();

  const running = (on) => { send.disabled = on; stopBtn.disabled = !on; clear.disabled = on; };

  const follow = (i) => {
    const m = st.messages[i];
    const { out } = msgNodes[i];
    out.id = 'output';
    jobLink.replaceChildren('Job ', fmt.el('a', { href: '#/jobs/' + m.job }, m.job));
    running(true);
    pipe.setPlan(null);
    api.planFor(m.model, m.ctx).then((p) => pipe.setPlan(p));
    if (watching) watching.stop();
    watching = watch(m.job, {
      onChange: (job) => {
        setOutput(out, job);
        pipe.update(job);
        if (terminal(job.state)) {
          m.content = job.text;
          m.final = job.result && typeof job.result.text === 'string' ? job.result.text : job.text;
          m.state = job.state;
          m.toolCalls = (job.result && job.result.tool_calls) || undefined;
          drawCalls(msgNodes[i].calls, m.toolCalls);
          drawPrompt();
          save();
          running(false);
          status.textContent = job.state === 'done'
            ? `done: ${job.result?.tokens ?? job.tokens} tokens${job.result && job.result.done_reason ? ' (' + job.result.done_reason + ')' : ''}`
            : `${job.state}: ${job.error ? job.error.message : ''}`;
          if (m.state !== 'done') msgNodes[i].who.append(fmt.el('span', { class: 'badge', 'data-state': m.state }, m.state));
        }
      },
      onStatus: (s) => showConn(s),
      onFail: (e) => { status.textContent = e.describe(); running(false); m.state = 'failed'; save(); },
    });
  };

  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    const text = prompt.value;
    if (!model.value) { status.textContent = 'pick a model first'; model.focus(); return; }
    if (!text.trim()) { status.textContent = 'write a message first'; prompt.focus(); return; }
    const options = settings.options();
    let body;
    try {
      body = requestBody(st, model.value, text, options);
    } catch (err) {
      status.textContent = err.message;
      (err.message.startsWith('the tools') ? tools : schema).focus();
      return;
    }
    running(true);
    status.textContent = 'submitting…';
    let created;
    try {
      created = await api.post('/v1/jobs', body);
    } catch (err) {
      running(false);
      status.textContent = err.describe ? err.describe() : String(err);
      return;
    }
    status.textContent = '';
    const call = pendingCall();
    if (call && st.mode === 'chat') st.messages.push({ role: 'tool', content: text, toolCallId: call.id, name: call.name });
    else st.messages.push({ role: st.mode === 'chat' ? 'user' : 'prompt', content: text });
    st.messages.push({ role: 'assistant', content: '', job: created.id, model: body.model, ctx: options.num_ctx || 0 });
    save();
    prompt.value = '';
    drawChat();
    follow(st.messages.length - 1);
  });

  stopBtn.addEventListener('click', async () => {
    const m = st.messages[st.messages.length - 1];
    if (!m || !m.job) return;
    stopBtn.disabled = true;
    status.textContent = 'stopping…';
    try { await api.post(`/v1/jobs/${m.job}/cancel`); } catch (err) { status.textContent = err.describe(); stopBtn.disabled = false; }
  });

  clear.addEventListener('click', () => {
    st.messages = [];
    save();
    drawChat();
    jobLink.replaceChildren();
    status.textContent = '';
    prompt.focus();
  });

  // After a reload: the last answer's job is followed again from its first
  // event (running or not), which redraws its text and its pipeline.
  const last = st.messages.length - 1;
  if (last >= 0 && st.messages[last].job) follow(last);

  return () => { if (watching) watching.stop(); pipe.destroy(); showConn('ended'); };
}

// drawCalls shows an answer's tool calls: each function with its arguments.
function drawCalls(node, calls) {
  node.replaceChildren(...(calls || []).map((c) => fmt.el('div', { class: 'toolcall' },
    fmt.el('span', { class: 'who' }, 'calls '), fmt.el('code', {}, `${c.name}(${JSON.stringify(c.arguments)})`))));
}

// samplingSettings is the settings form: one number field per option,
// empty meaning the server's default, kept in st.settings.
function samplingSettings(st, save) {
  const node = fmt.el('div', { class: 'settings' });
  const inputs = {};
  for (const [name, label, step, ph] of SETTINGS) {
    // Until the server's defaults arrive the field says so.
    const i = fmt.el('input', { id: 'opt-' + name, type: 'number', step, placeholder: ph ?? 'loading…', inputmode: 'decimal' });
    i.value = st.settings[name] ?? '';
    i.addEventListener('change', () => { st.settings[name] = i.value; save(); });
    inputs[name] = i;
    node.append(fmt.el('div', {}, fmt.el('label', { for: i.id }, label), i));
  }
  const options = () => {
    const o = {};
    for (const [name] of SETTINGS) {
      const v = inputs[name].value.trim();
      if (v !== '') o[name] = Number(v);
    }
    return o;
  };
  // The server's defaults become the placeholders of the fields that have
  // none of their own.
  api.get('/v1/defaults').then((d) => {
    for (const [name, , , ph] of SETTINGS) {
      const v = d.options && d.options[name];
      if (ph === null && v !== undefined) inputs[name].placeholder = defaultText(name, v);
    }
  }).catch(() => {
    for (const [name, , , ph] of SETTINGS) if (ph === null) inputs[name].placeholder = 'server default';
  });
  return { node, options };
}

// requestBody is the POST /v1/jobs body for the next turn: in chat mode the
// system prompt, every earlier turn that finished (answers as the job's
// result) and the new message; in completion mode the raw prompt; the
// output format (it throws when the schema is not JSON).
export function requestBody(st, model, text, options) {
  const body = { model, options };
  if (st.settings.logprobs) Object.assign(body, { logprobs: true, top_logprobs: 5 });
  if (st.settings.format === 'json') body.format = 'json';
  if (st.settings.format === 'schema') {
    try {
      body.format = JSON.parse(st.settings.schema || '');
    } catch (err) {
      throw new Error(`the schema is not valid JSON: ${err.message}`);
    }
  }
  if (st.mode !== 'chat') return { ...body, prompt: text, raw: true };
  if ((st.settings.tools || '').trim()) {
    try {
      body.tools = JSON.parse(st.settings.tools);
    } catch (err) {
      throw new Error(`the tools are not valid JSON: ${err.message}`);
    }
    body.tool_choice = st.settings.toolChoice || 'auto';
  }
  const msgs = [];
  if (st.system.trim()) msgs.push({ role: 'system', content: st.system });
  let call = null; // the call the last finished answer made, which text answers
  for (const m of st.messages) {
    if (m.role === 'user' || m.role === 'tool') call = null;
    if (m.role === 'user') msgs.push({ role: 'user', content: m.content });
    else if (m.role === 'tool') msgs.push({ role: 'tool', content: m.content, tool_call_id: m.toolCallId, name: m.name });
    else if (m.role === 'assistant' && m.state === 'done') {
      const a = { role: 'assistant', content: m.final ?? m.content };
      if (m.toolCalls && m.toolCalls.length) a.tool_calls = m.toolCalls;
      msgs.push(a);
      call = a.tool_calls ? a.tool_calls[0] : null;
    }
  }
  msgs.push(call ? { role: 'tool', content: text, tool_call_id: call.id, name: call.name } : { role: 'user', content: text });
  return { ...body, messages: msgs };
}
