// Overview: health; the workspaces the key may see with what each holds (GET /workspaces, a page
// at a time); and, for a key valid for every workspace, what the store holds, queue depths and
// request latency by route from /metrics (the server's Prometheus figures).
import { call, query } from './api.js';
import { bars, el, errorBox, pager } from './dom.js';

const PAGE = 20;
const state = { page: 1 };

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
  parts.push(el('h3', {}, 'Workspaces'));
  const workspaces = el('div', { id: 'workspaces' });
  parts.push(workspaces);
  await drawWorkspaces(workspaces);
  let metrics = null;
  try {
    metrics = parseMetrics(await call('GET', '/metrics'));
  } catch (e) {
    parts.push(el('p', { class: 'muted' },
      e.status === 403 ? 'Server figures need a key valid for every workspace.' : e.message));
  }
  if (metrics) {
    const one = (name) => metrics.filter((m) => m.name === name).reduce((s, m) => s + m.value, 0);
    parts.push(el('h3', {}, 'The server (every workspace)'));
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

// The key's workspaces: a row each (a click opens its memories), and a chart of their memories.
async function drawWorkspaces(box) {
  let page;
  try {
    page = await call('GET', `/workspaces${query({ page_number: state.page, page_size: PAGE })}`);
  } catch (e) {
    box.replaceChildren(errorBox(e));
    return;
  }
  if (page.total === 0) {
    box.replaceChildren(el('p', { class: 'muted' }, 'No workspace holds anything yet.'));
    return;
  }
  const both = (n, of, what) => (of ? `${n} (${of} ${of === 1 ? what.one : what.many})` : String(n));
  const USERS = { one: 'user', many: 'users' };
  const OWNERS = { one: 'owner', many: 'owners' };
  const UNFINISHED = { one: 'unfinished', many: 'unfinished' };
  const PROCESSING = { one: 'processing', many: 'processing' };
  const head = el('tr', {}, ['Workspace', 'Memories (users)', 'Memory events', 'Skills (owners)',
    'Skill tasks', 'Knowledge bases', 'Documents', 'Leaderboard users', 'Leaderboard messages']
    .map((h) => el('th', {}, h)));
  const rows = page.workspaces.map((w) => el('tr', {
    class: 'row', 'data-workspace': w.workspace,
    onclick: () => { location.hash = `#/memories/${encodeURIComponent(w.workspace)}`; },
  },
  el('td', {}, w.workspace),
  el('td', {}, both(w.memories.count, w.memories.users, USERS)),
  el('td', {}, both(w.memory_events.count, w.memory_events.unfinished, UNFINISHED)),
  el('td', {}, both(w.skills.count, w.skills.owners, OWNERS)),
  el('td', {}, both(w.skill_tasks.count, w.skill_tasks.unfinished, UNFINISHED)),
  el('td', {}, String(w.knowledge_bases.count)),
  el('td', {}, both(w.knowledge_bases.documents, w.knowledge_bases.processing, PROCESSING)),
  el('td', {}, String(w.leaderboard.users)),
  el('td', {}, String(w.leaderboard.messages))));
  box.replaceChildren(
    el('table', { id: 'workspace-table' }, el('thead', {}, head), el('tbody', {}, rows)),
    pager(state, page.total, PAGE, () => drawWorkspaces(box)),
    el('h3', {}, 'Memories and Leaderboard messages'),
    bars(page.workspaces.map((w) => [w.workspace, w.memories.count + w.leaderboard.messages])));
}

function card(label, value) {
  return el('div', { class: 'card' }, el('div', { class: 'value' }, String(value)), el('div', { class: 'muted' }, label));
}
