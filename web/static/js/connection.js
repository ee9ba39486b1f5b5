// The header's connection indicator.
const labels = { live: 'live', reconnecting: 'reconnecting…', ended: '' };

export function showConn(status) {
  const n = document.getElementById('conn');
  if (!n) return;
  n.textContent = labels[status] ?? '';
  n.dataset.status = status;
}
