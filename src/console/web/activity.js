// Events and tasks: a workspace's asynchronous work, newest first, a page at a time each: memory
// events (a click shows an event's decisions, each memory opening in the memories view), skill
// tasks, and the document jobs of its knowledge bases (a click opens the knowledge base). Failed
// work shows its error.
import { call, memoryPath, query, v3Path } from './api.js';
import { el, errorBox, pager, scopeForm } from './dom.js';

const PAGE = 20;
const state = { workspace: 'default', events: { page: 1 }, tasks: { page: 1 }, kbs: { page: 1 } };

const ws = (rest) => `${encodeURIComponent(state.workspace)}${rest}`;

export async function render(view, params = {}) {
  if (params.workspace && params.workspace !== state.workspace) {
    state.workspace = params.workspace;
    for (const list of [state.events, state.tasks, state.kbs]) list.page = 1;
  }
  const form = scopeForm({
    id: 'activity-form', prefix: 'a', button: 'activity-go', fields: [['workspace', 'Workspace']],
    state, redraw: () => {
      for (const list of [state.events, state.tasks, state.kbs]) list.page = 1;
      render(view);
    },
  });
  const events = el('div', { id: 'event-list' });
  const detail = el('div', { id: 'event-detail' });
  const tasks = el('div', { id: 'task-list' });
  const kbs = el('div', { id: 'job-list' });
  view.replaceChildren(el('h2', {}, 'Events and tasks'), form,
    el('h3', {}, 'Memory events'), events, detail,
    el('h3', {}, 'Skill tasks'), tasks,
    el('h3', {}, 'Document jobs'), kbs);
  if (!state.workspace) {
    events.append(el('p', { class: 'muted' }, 'Name a workspace.'));
    return;
  }
  await Promise.all([drawEvents(events, detail), drawTasks(tasks), drawJobs(kbs)]);
  if (params.event) await openEvent(detail, params.event);
}

// A table of `rows` under `columns` ([heading, cell(row)]), or a note when there are none.
function table(id, columns, rows, rowAttrs = () => ({})) {
  if (rows.length === 0) return el('p', { class: 'muted' }, 'None.');
  return el('table', { id },
    el('thead', {}, el('tr', {}, columns.map(([h]) => el('th', {}, h)))),
    el('tbody', {}, rows.map((r) => el('tr', rowAttrs(r), columns.map(([, cell]) => cell(r))))));
}

const statusCell = (status) => el('td', { class: `status-${status}` }, status);
const errorCell = (message) => el('td', { class: message ? 'error' : '' }, message || '');

async function drawEvents(box, detail) {
  try {
    const page = await call('GET', memoryPath(state.workspace, '/events') +
      query({ page_number: state.events.page, page_size: PAGE }));
    box.replaceChildren(
      el('p', { class: 'muted', id: 'event-total' }, `${page.total} events`),
      table('event-table', [
        ['Event', (e) => el('td', {}, e.id)],
        ['Status', (e) => statusCell(e.status)],
        ['Memories changed', (e) => el('td', {}, String(e.results.length))],
        ['Accepted', (e) => el('td', {}, e.created_at)],
        ['Ended', (e) => el('td', {}, e.status === 'SUCCEEDED' || e.status === 'FAILED' ? e.updated_at : '')],
        ['Error', (e) => errorCell(e.error_message)],
      ], page.results, (e) => ({ class: 'row', 'data-id': e.id, onclick: () => openEvent(detail, e.id) })),
      pager(state.events, page.total, PAGE, () => drawEvents(box, detail)));
  } catch (e) {
    box.replaceChildren(errorBox(e));
  }
}

// One event: its status and error, and every decision it made (ADD / UPDATE / DELETE / NONE), each
// memory linked to its detail in the memories view.
async function openEvent(detail, id) {
  detail.replaceChildren(el('p', { class: 'muted' }, 'Loading…'));
  try {
    const e = await call('GET', memoryPath(state.workspace, `/events/${encodeURIComponent(id)}`));
    const memoryLink = (memoryId) => el('a', { href: `#/memories/${ws(`/${encodeURIComponent(memoryId)}`)}` }, memoryId);
    detail.replaceChildren(el('div', { class: 'detail', id: 'event' },
      el('h3', {}, `Event ${e.id}`),
      el('p', { class: 'muted' }, `${e.status} · accepted ${e.created_at} · updated ${e.updated_at}`),
      e.error_message ? el('p', { class: 'error', id: 'event-error' }, e.error_message) : null,
      el('h4', {}, 'Decisions'),
      table('event-decisions', [
        ['Decision', (d) => el('td', {}, d.event)],
        ['Memory', (d) => el('td', {}, d.memory_id ? memoryLink(d.memory_id) : '')],
        ['Text', (d) => el('td', {}, d.memory ?? '')],
        ['Before', (d) => el('td', {}, d.previous_memory ?? '')],
      ], e.events)));
  } catch (err) {
    detail.replaceChildren(errorBox(err));
  }
}

async function drawTasks(box) {
  try {
    const page = (await call('GET', v3Path(state.workspace, '/skills/tasks') +
      query({ page_number: state.tasks.page, page_size: PAGE }))).result;
    box.replaceChildren(
      el('p', { class: 'muted', id: 'task-total' }, `${page.total} tasks`),
      table('task-table', [
        ['Task', (t) => el('td', {}, t.task_id)],
        ['Status', (t) => statusCell(t.status)],
        ['Skills', (t) => el('td', {}, t.skill_ids.join(', '))],
        ['Accepted', (t) => el('td', {}, t.created_at)],
        ['Updated', (t) => el('td', {}, t.updated_at)],
        ['Error', (t) => errorCell(t.error_message)],
      ], page.results),
      pager(state.tasks, page.total, PAGE, () => drawTasks(box)));
  } catch (e) {
    box.replaceChildren(errorBox(e));
  }
}

// Documents are ingested per knowledge base: each one's counts, a click opening its documents
// (with their status and errors) in the knowledge-base view.
async function drawJobs(box) {
  try {
    const page = (await call('GET', v3Path(state.workspace, '/knowledge-bases') +
      query({ page_number: state.kbs.page, page_size: PAGE }))).result;
    box.replaceChildren(
      el('p', { class: 'muted', id: 'job-total' }, `${page.total} knowledge bases`),
      table('job-table', [
        ['Knowledge base', (k) => el('td', {}, k.kb_id)],
        ['Documents', (k) => el('td', {}, String(k.documents))],
        ['Processing', (k) => el('td', { class: k.processing ? 'status-PROCESSING' : '' }, String(k.processing))],
        ['Failed', (k) => el('td', { class: k.failed ? 'status-FAIL' : '' }, String(k.failed))],
        ['Last change', (k) => el('td', {}, k.updated_at)],
      ], page.results, (k) => ({
        class: 'row', 'data-kb': k.kb_id,
        onclick: () => { location.hash = `#/knowledge/${ws(`/${encodeURIComponent(k.kb_id)}`)}`; },
      })),
      pager(state.kbs, page.total, PAGE, () => drawJobs(box)));
  } catch (e) {
    box.replaceChildren(errorBox(e));
  }
}
