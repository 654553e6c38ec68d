// Search playground: one query against a workspace's memories (of a user), a knowledge base, a
// user's skills or a Leaderboard user's messages, asked with `explain: true`, so each result shows how it got its score: each
// retriever's raw score and its part of the fused sum, the date prior, the factors, and the rank
// before a reranker (docs/retrieval.md, "Explained search").
import { call, memoryPath, v3Path } from './api.js';
import { el, errorBox, svg } from './dom.js';

const state = { target: 'memories', workspace: 'default', scope: '', q: '', top_k: 10 };

// What each target searches, the field its scope names, and how its answer reads.
const TARGETS = {
  memories: {
    label: 'Memories', scope: 'User',
    request: (s) => [memoryPath(s.workspace, '/memories/search'),
      { query: s.q, user_id: s.scope, top_k: s.top_k, explain: true }],
    results: (answer) => answer.results,
    text: (r) => r.memory,
  },
  kb: {
    label: 'Knowledge base', scope: 'Knowledge base id',
    request: (s) => [v3Path(s.workspace, `/knowledge-bases/${encodeURIComponent(s.scope)}/search`),
      { query: s.q, top_k: s.top_k, explain: true }],
    results: (answer) => answer.result.results,
    text: (r) => `${r.title}: ${r.chunk}`,
  },
  skills: {
    label: 'Skills', scope: 'User',
    request: (s) => [v3Path(s.workspace, '/skills/search'),
      { query: s.q, user_id: s.scope, size: Math.min(s.top_k, 100), explain: true }],
    results: (answer) => answer.result.results,
    text: (r) => `${r.name}: ${r.description}`,
  },
  // The Leaderboard's data lives in the server's Leaderboard workspace: the field above is unused.
  leaderboard: {
    label: 'Leaderboard', scope: 'User',
    request: (s) => ['/leaderboard/search',
      { query: s.q, user_id: s.scope, top_k: Math.min(s.top_k, 100), explain: true }],
    results: (answer) => answer.data,
    text: (r) => (typeof r.content === 'string' ? r.content
      : r.content.filter((p) => p.type === 'text').map((p) => p.text).join('\n')),
  },
};

export async function render(view) {
  const target = el('select', { name: 'target', id: 's-target' },
    Object.entries(TARGETS).map(([k, t]) => el('option', { value: k, selected: k === state.target }, t.label)));
  const scopeLabel = el('span', {}, TARGETS[state.target].scope);
  target.addEventListener('change', () => { scopeLabel.textContent = TARGETS[target.value].scope; });
  const input = (name, attrs = {}) => el('input', { name, value: state[name], id: `s-${name}`, ...attrs });
  const form = el('form', { class: 'bar', id: 'search-form' },
    el('label', {}, 'Search', target),
    el('label', {}, 'Workspace', input('workspace')),
    el('label', {}, scopeLabel, input('scope')),
    el('label', { class: 'wide' }, 'Query', input('q', { size: 40 })),
    el('label', {}, 'Results', input('top_k', { type: 'number', min: 1, max: 100 })),
    el('button', { type: 'submit', id: 'search-go' }, 'Search'));
  const results = el('div', { id: 'search-results' });
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const data = new FormData(form);
    for (const k of ['target', 'workspace', 'scope', 'q']) state[k] = String(data.get(k) || '').trim();
    state.top_k = Number(data.get('top_k')) || 10;
    run(results);
  });
  view.replaceChildren(el('h2', {}, 'Search'),
    el('p', { class: 'muted' }, 'Each result shows its fused score and what each retriever added to it.'),
    form, results);
  if (state.q) await run(results);
}

async function run(results) {
  const t = TARGETS[state.target];
  if (!state.workspace || !state.scope || !state.q) {
    results.replaceChildren(el('p', { class: 'muted' }, `Name a workspace, a ${t.scope.toLowerCase()} and a query.`));
    return;
  }
  results.replaceChildren(el('p', { class: 'muted' }, 'Searching…'));
  try {
    const [path, body] = t.request(state);
    const found = t.results(await call('POST', path, body));
    if (found.length === 0) {
      results.replaceChildren(el('p', { class: 'muted' }, 'Nothing found.'));
      return;
    }
    results.replaceChildren(el('table', { id: 'search-table' },
      el('thead', {}, el('tr', {}, el('th', {}, '#'), el('th', {}, 'Result'), el('th', {}, 'Score'),
        el('th', {}, 'How it scored'))),
      el('tbody', {}, found.map((r, i) => el('tr', {},
        el('td', {}, String(i + 1)), el('td', {}, t.text(r)),
        el('td', {}, r.score.toFixed(3)), el('td', { class: 'explain' }, breakdown(r.explain)))))));
  } catch (e) {
    results.replaceChildren(errorBox(e));
  }
}

const PARTS = [['bm25', 'BM25', 'score'], ['vector', 'vector', 'similarity'], ['date_prior', 'date', 'closeness']];

// The parts of one result: a bar per part (right of the axis when it raised the score, left when
// it lowered it) and the figures beside it.
function breakdown(explain) {
  if (!explain) return '';
  const f = explain.fusion;
  if (!f) return el('span', { class: 'muted' }, 'brought in beside a hit (conversation turn)');
  const rows = PARTS.filter(([key]) => f[key]).map(([key, label, raw]) => {
    const p = f[key];
    const value = p[raw] === null || p[raw] === undefined ? 'not returned' : Number(p[raw]).toFixed(3);
    return { key, label, part: p.part, text: `${label} ${value}, part ${p.part >= 0 ? '+' : ''}${p.part.toFixed(3)}` };
  });
  const scale = Math.max(1, ...rows.map((r) => Math.abs(r.part)));
  const width = 160;
  const mid = width / 2;
  const chart = svg('svg', { class: 'parts', width, height: rows.length * 14, role: 'img' });
  rows.forEach((r, i) => {
    const w = Math.max(1, (Math.abs(r.part) / scale) * (mid - 2));
    chart.append(svg('rect', { class: r.key, x: r.part >= 0 ? mid : mid - w, y: i * 14 + 2, width: w, height: 10 }));
  });
  chart.append(svg('line', { x1: mid, x2: mid, y1: 0, y2: rows.length * 14 }));
  const notes = [`${f.method} fusion ${f.score.toFixed(3)}`];
  if (f.factor !== undefined) notes.push(`× ${f.factor.toFixed(2)}`);
  if (Math.abs(explain.ranked_score - f.score) > 1e-6) notes.push(`after the conversation steps ${explain.ranked_score.toFixed(3)}`);
  if (explain.rank_before_rerank) notes.push(`reranked from #${explain.rank_before_rerank}`);
  return el('div', { class: 'breakdown' }, chart,
    el('ul', {}, rows.map((r) => el('li', { class: `part-${r.key}` }, r.text))),
    el('p', { class: 'muted' }, notes.join(' · ')));
}
