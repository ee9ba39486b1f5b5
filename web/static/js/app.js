// The page's router: #/ (Generate), #/image, #/video, #/jobs, #/jobs/ID, #/models. Each view
// draws into <main> and returns a function that stops its streams and
// timers when the page moves on.
import { generateView } from './generate.js';
import { jobsView, jobView } from './jobs.js';
import { modelsView } from './models.js';
import { imageView } from './images.js';
import { videoView } from './video.js';
import { get } from './api.js';

let cfg = { profiles: [] };
let cleanup = null;

function route() {
  const main = document.getElementById('main');
  const hash = location.hash.replace(/^#/, '') || '/';
  const parts = hash.split('/').filter(Boolean).map(decodeURIComponent);
  if (cleanup) { cleanup(); cleanup = null; }
  let view = 'generate';
  if (parts[0] === 'jobs' && parts[1]) { view = 'jobs'; cleanup = jobView(main, parts[1]); }
  else if (parts[0] === 'jobs') { view = 'jobs'; cleanup = jobsView(main); }
  else if (parts[0] === 'image') { view = 'image'; cleanup = imageView(main); }
  else if (parts[0] === 'video') { view = 'video'; cleanup = videoView(main); }
  else if (parts[0] === 'models') { view = 'models'; cleanup = modelsView(main, cfg); }
  else cleanup = generateView(main);
  for (const a of document.querySelectorAll('nav a')) {
    if (a.dataset.view === view) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  document.title = `glassbox · ${view}`;
}

async function start() {
  try { cfg = await get('/ui/config.json'); } catch { /* defaults */ }
  const v = document.getElementById('version');
  if (v && cfg.version) v.textContent = 'glassbox ' + cfg.version;
  window.addEventListener('hashchange', () => { route(); document.getElementById('main').focus(); });
  route();
}

start();
