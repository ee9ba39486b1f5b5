// Number formatting shared by the views (the same units `glassbox explain` prints).

export function bytes(n) {
  if (n == null || !isFinite(n)) return '';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  let v = n;
  while (Math.abs(v) >= 1024 && i < units.length - 1) { v /= 1024; i++; }
  return (i === 0 ? String(v) : v.toFixed(1)) + ' ' + units[i];
}

export function dur(ms) {
  if (ms == null || !isFinite(ms)) return '';
  if (ms < 1) return ms.toFixed(2) + ' ms';
  if (ms < 1000) return ms.toFixed(1) + ' ms';
  if (ms < 60000) return (ms / 1000).toFixed(2) + ' s';
  const m = Math.floor(ms / 60000);
  return m + ' min ' + Math.round((ms - m * 60000) / 1000) + ' s';
}

export function rate(r) {
  if (!isFinite(r)) return '';
  if (r >= 100) return Math.round(r).toLocaleString('en');
  if (r >= 10) return r.toFixed(1);
  return r.toFixed(2);
}

export function when(iso) {
  if (!iso) return '';
  const d = new Date(iso);
  if (isNaN(d)) return '';
  return d.toLocaleString();
}

// countdown renders the time left until iso ("4:59"); "" for none.
export function countdown(iso, now = Date.now()) {
  if (!iso) return '';
  const t = Date.parse(iso);
  if (isNaN(t) || new Date(t).getUTCFullYear() > 2200) return 'until evicted';
  const s = Math.max(0, Math.round((t - now) / 1000));
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const ss = String(s % 60).padStart(2, '0');
  return h > 0 ? `${h}:${String(m).padStart(2, '0')}:${ss}` : `${m}:${ss}`;
}

// verdictClass maps a planner verdict ("fits, ~2,450 tok/s", "slow: ...",
// "does not fit: ...") to a CSS class.
export function verdictClass(v) {
  const s = (v || '').toLowerCase();
  if (s.startsWith('does not fit') || s.startsWith('no')) return 'verdict-no';
  if (s.startsWith('slow') || s.includes('tight')) return 'verdict-slow';
  if (s.startsWith('fits')) return 'verdict-fits';
  return '';
}

// el builds an element: el('td', {class: 'x'}, 'text', child...).
// loadingRow is a table's only row while its first data loads (class
// "loading": a view removes it when the data arrives).
export function loadingRow(cols, text) {
  return el('tr', { class: 'loading' }, el('td', { colspan: cols, class: 'muted' }, text));
}

export function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v == null || v === false) continue;
    if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else if (v === true) e.setAttribute(k, '');
    else e.setAttribute(k, String(v));
  }
  for (const k of kids.flat()) {
    if (k == null || k === false) continue;
    e.append(k instanceof Node ? k : document.createTextNode(String(k)));
  }
  return e;
}
