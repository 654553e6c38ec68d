// Memories: a workspace's memories of one user, agent or run, newest first, a page at a time, with
// who and what they mention; a memory's detail with its history and provenance; editing its text; delete with confirmation;
// and a search, narrowed by a filter built with a form (filters.js).
import { call, memoryPath, query } from './api.js';
import { el, errorBox, pager, scopeForm } from './dom.js';
import { buildFilter, filterForm } from './filters.js';

const PAGE = 20;
const ENTITIES = 12;
const state = {
  workspace: 'default', user_id: '', agent_id: '', run_id: '', page: 1, q: '', filters: [], combine: 'AND',
};

export async function render(view, params) {
  const { memory, ...fields } = params;
  Object.assign(state, fields);
  const form = scopeForm({
    id: 'memory-filter', prefix: 'f', button: 'memory-go', state, redraw: () => render(view, {}),
    fields: [['workspace', 'Workspace'], ['user_id', 'User'], ['agent_id', 'Agent'], ['run_id', 'Run'],
      ['q', 'Search (optional)']],
  });
  const results = el('div', { id: 'memory-results' });
  const detail = el('div', { id: 'memory-detail' });
  view.replaceChildren(el('h2', {}, 'Memories'), form, filterForm(state, () => {}), results, detail);
  // A link to one memory (#/memories/<workspace>/<id>) opens it whatever the list shows.
  if (memory) open(detail, memory, view);
  if (!state.workspace || !(state.user_id || state.agent_id || state.run_id)) {
    results.append(el('p', { class: 'muted' }, 'Name a workspace and a user, agent or run.'));
    return;
  }
  const scope = { user_id: state.user_id, agent_id: state.agent_id, run_id: state.run_id };
  try {
    const filters = buildFilter(state.filters, state.combine);
    if (state.q) {
      const body = { query: state.q, ...Object.fromEntries(Object.entries(scope).filter(([, v]) => v)), top_k: PAGE };
      if (filters) body.filters = filters;
      const found = await call('POST', memoryPath(state.workspace, '/memories/search'), body);
      results.append(table(found.results, true, (m) => open(detail, m.id, view)));
      return;
    }
    if (filters) results.append(el('p', { class: 'muted' }, 'The filter narrows a search: type a query to apply it.'));
    const page = await call('GET', memoryPath(state.workspace, '/memories') +
      query({ ...scope, page_number: state.page, page_size: PAGE }));
    results.append(el('p', { class: 'muted', id: 'memory-total' }, `${page.total} memories`));
    results.append(table(page.results, false, (m) => open(detail, m.id, view)));
    results.append(pager(state, page.total, PAGE, () => render(view, {})));
    results.append(await mentioned(scope, view));
  } catch (e) {
    results.append(errorBox(e));
  }
}

// Who and what the scope's memories mention, most mentioned first; a click searches for it.
async function mentioned(scope, view) {
  const found = await call('GET', memoryPath(state.workspace, '/entities') +
    query({ ...scope, page_size: ENTITIES }));
  if (found.results.length === 0) return el('p', { class: 'muted', id: 'memory-entities' }, 'No names mentioned.');
  return el('p', { id: 'memory-entities' }, 'Mentioned: ', found.results.flatMap((e, i) => [i ? ' · ' : '',
    el('a', {
      href: '#', class: 'entity', title: e.aliases.length ? `also ${e.aliases.join(', ')}` : e.kind,
      onclick: (ev) => { ev.preventDefault(); state.q = e.name; render(view, {}); },
    }, `${e.name} (${e.memory_count})`)]));
}

function table(memories, scored, onOpen) {
  const head = el('tr', {}, el('th', {}, 'Memory'), el('th', {}, 'Updated'), scored ? el('th', {}, 'Score') : null);
  const rows = memories.map((m) => el('tr', { class: 'row', 'data-id': m.id, onclick: () => onOpen(m) },
    el('td', {}, m.memory), el('td', {}, m.updated_at || m.created_at || ''),
    scored ? el('td', {}, typeof m.score === 'number' ? m.score.toFixed(3) : '') : null));
  if (rows.length === 0) return el('p', { class: 'muted' }, 'Nothing found.');
  return el('table', { id: 'memory-table' }, el('thead', {}, head), el('tbody', {}, rows));
}

async function open(detail, id, view) {
  detail.replaceChildren(el('p', { class: 'muted' }, 'Loading…'));
  try {
    const [memory, history] = await Promise.all([
      call('GET', memoryPath(state.workspace, `/memories/${encodeURIComponent(id)}`)),
      call('GET', memoryPath(state.workspace, `/memories/${encodeURIComponent(id)}/history`)),
    ]);
    const remove = el('button', { type: 'button', class: 'danger', id: 'memory-delete' }, 'Delete');
    remove.addEventListener('click', async () => {
      if (!window.confirm(`Delete this memory?\n\n${memory.memory}`)) return;
      try {
        await call('DELETE', memoryPath(state.workspace, `/memories/${encodeURIComponent(id)}`));
        // The list is drawn again without it; the notice goes in the new detail pane.
        await render(view, {});
        document.getElementById('memory-detail')
          .replaceChildren(el('p', { id: 'memory-deleted' }, `Memory ${id} deleted.`));
      } catch (e) {
        detail.append(errorBox(e));
      }
    });
    const editor = el('textarea', { id: 'memory-text', rows: 3, cols: 80 }, memory.memory);
    const save = el('button', { type: 'button', id: 'memory-save' }, 'Save text');
    const saved = el('span', { id: 'memory-saved', class: 'muted' });
    save.addEventListener('click', async () => {
      saved.textContent = '';
      try {
        await call('PUT', memoryPath(state.workspace, `/memories/${encodeURIComponent(id)}`),
          { text: editor.value });
        // The list shows the new text; the detail opens again with the UPDATE in its history.
        await render(view, {});
        await open(document.getElementById('memory-detail'), id, view);
        document.getElementById('memory-saved').textContent = 'Saved.';
      } catch (e) {
        saved.replaceChildren(errorBox(e));
      }
    });
    detail.replaceChildren(el('div', { class: 'detail' },
      el('h3', {}, memory.memory),
      el('p', { class: 'muted' }, `${memory.id} · created ${memory.created_at} · updated ${memory.updated_at || ''}`),
      el('h4', {}, 'History'),
      el('table', { id: 'memory-history' },
        el('thead', {}, el('tr', {}, el('th', {}, 'Event'), el('th', {}, 'Before'), el('th', {}, 'After'), el('th', {}, 'When'))),
        el('tbody', {}, history.results.map((h) => el('tr', {},
          el('td', {}, h.event), el('td', {}, h.old_memory ?? ''), el('td', {}, h.new_memory ?? ''),
          el('td', {}, h.created_at || ''))))),
      el('h4', {}, 'Provenance'),
      memory.provenance?.event_id ? el('p', {}, el('a', {
        id: 'memory-event',
        href: `#/activity/${encodeURIComponent(state.workspace)}/${encodeURIComponent(memory.provenance.event_id)}`,
      }, `Open the event that made it (${memory.provenance.event_id})`)) : null,
      el('pre', { id: 'memory-provenance' }, JSON.stringify(memory.provenance ?? null, null, 2)),
      el('h4', {}, 'Metadata'),
      el('pre', {}, JSON.stringify(memory.metadata ?? {}, null, 2)),
      el('h4', {}, 'Edit'),
      el('div', {}, editor),
      el('div', { class: 'actions' }, save, saved, remove)));
  } catch (e) {
    detail.replaceChildren(errorBox(e));
  }
}
