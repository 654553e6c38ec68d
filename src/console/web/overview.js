// Overview: health, what the store holds, queue depths and request latency by route, from
// /healthz and /metrics (the server's Prometheus figures; a key limited to some workspaces may
// not read them, and the view says so).
import { call } from './api.js';
import { bars, el, errorBox } from './dom.js';

// Prometheus text: [{name, labels: {k: v}, value}] (comments and histogram buckets skipped).
export function parseMetrics(text) {
  const out = [];
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const m = line.match(/^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{([^}]*)\})?\s+(\S+)$/);
    if (!m || m[1].endsWith('_bucket')) continue;
    const labels = {};
    for (const pair of (m[3] || '').matchAll(/([a-zA-Z_]+)="((?:[^"\\]|\\.)*)"/g)) labels[pair[1]] = pair[2];
    out.push({ name: m[1], labels, value: Number(m[4]) });
  }
  return out;
}

const QUEUES = [
  ['memory events', 'engram_memory_events_queued'],
  ['skill tasks', 'engram_skill_tasks_queued'],
  ['knowledge-base jobs', 'engram_kb_jobs_queued'],
  ['vectors to compute', 'engram_vector_queue'],
];

export async function render(view) {
  view.replaceChildren(el('h2', {}, 'Overview'), el('p', { class: 'muted' }, 'Loading…'));
  const parts = [el('h2', {}, 'Overview')];
  try {
    const health = await call('GET', '/healthz');
    parts.push(el('p', { id: 'health' }, `Server health: ${typeof health === 'string' ? health.trim() : JSON.stringify(health)}`));
  } catch (e) {
    parts.push(errorBox(e));
  }
  let metrics = null;
  try {
    metrics = parseMetrics(await call('GET', '/metrics'));
  } catch (e) {
    parts.push(el('p', { class: 'muted' },
      e.status === 403 ? 'Server figures need a key valid for every workspace.' : e.message));
  }
  if (metrics) {
    const one = (name) => metrics.filter((m) => m.name === name).reduce((s, m) => s + m.value, 0);
    parts.push(el('div', { class: 'cards', id: 'counts' },
      card('agent memories', one('engram_agent_memories')),
      card('leaderboard messages in memory', one('engram_shard_memories')),
      card('stored rows', one('engram_store_memories')),
      card('store size (MiB)', (one('engram_store_bytes') / 1048576).toFixed(1))));
    parts.push(el('h3', {}, 'Queues'));
    parts.push(bars(QUEUES.map(([label, name]) => [label, one(name)])));
    const routes = new Map();
    for (const m of metrics) {
      if (!m.labels.route) continue;
      const r = routes.get(m.labels.route) || { count: 0, sum: 0 };
      if (m.name === 'engram_http_request_duration_seconds_sum') r.sum += m.value;
      if (m.name === 'engram_http_request_duration_seconds_count') r.count += m.value;
      routes.set(m.labels.route, r);
    }
    const busiest = [...routes.entries()].filter(([, r]) => r.count > 0)
      .sort((a, b) => b[1].count - a[1].count).slice(0, 10);
    parts.push(el('h3', {}, 'Requests by route (since start)'));
    parts.push(bars(busiest.map(([route, r]) => [route, r.count])));
    parts.push(el('h3', {}, 'Mean latency by route (ms)'));
    parts.push(bars(busiest.map(([route, r]) => [route, (r.sum / r.count) * 1000]), ' ms'));
  }
  view.replaceChildren(...parts);
}

function card(label, value) {
  return el('div', { class: 'card' }, el('div', { class: 'value' }, String(value)), el('div', { class: 'muted' }, label));
}
