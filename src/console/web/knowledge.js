// Knowledge bases: a workspace's knowledge bases (a click opens one); a knowledge base's documents
// with their status, newest first, a page at a time;
// upload a file from this computer (sent by content, ingested by the server like any document,
// its status followed until it leaves PROCESSING); a document's detail (its text or its error);
// delete with confirmation.
import { call, query, v3Path } from './api.js';
import { el, errorBox, pager, scopeForm } from './dom.js';
import { base64 } from './files.js';

const PAGE = 20;
const POLL_MS = 500;
const state = { workspace: 'default', kb: '', page: 1 };
const bases = { page: 1 };  // the page of the workspace's knowledge-base list

const kbPath = (rest = '') => v3Path(state.workspace, `/knowledge-bases/${encodeURIComponent(state.kb)}${rest}`);

export async function render(view, params = {}) {
  if (params.workspace !== undefined || params.kb !== undefined) {
    Object.assign(state, { kb: '', ...params, page: 1 });
    bases.page = 1;
  }
  const form = scopeForm({
    id: 'kb-form', prefix: 'k', button: 'kb-go', state, redraw: () => render(view),
    fields: [['workspace', 'Workspace'], ['kb', 'Knowledge base id']],
  });
  const upload = el('div', { id: 'kb-upload' });
  const list = el('div', { id: 'kb-list' });
  const detail = el('div', { id: 'kb-detail' });
  view.replaceChildren(el('h2', {}, 'Knowledge bases'), form, upload, list, detail);
  if (!state.workspace) {
    list.append(el('p', { class: 'muted' }, 'Name a workspace.'));
    return;
  }
  if (!state.kb) {
    await showKnowledgeBases(list, view);
    return;
  }
  upload.append(uploadForm(view));
  await showList(list, detail, view);
}

function uploadForm(view) {
  const file = el('input', { type: 'file', id: 'kb-file' });
  const title = el('input', { id: 'kb-title', placeholder: 'the file name', size: 30 });
  const status = el('span', { id: 'kb-upload-status', class: 'muted' });
  const send = el('button', { type: 'button', id: 'kb-send' }, 'Upload');
  send.addEventListener('click', async () => {
    const chosen = file.files[0];
    if (!chosen) { status.textContent = 'Choose a file first.'; return; }
    status.textContent = 'Uploading…';
    try {
      const content = await base64(chosen);
      const answer = await call('POST', kbPath('/docs'), {
        type: 'CONTENT',
        doc: { title: title.value.trim() || chosen.name, file_name: chosen.name, content_base64: content },
      });
      const id = answer.result.id;
      status.textContent = `${id}: PROCESSING`;
      await render(view);
      await follow(id);
    } catch (e) {
      status.replaceChildren(errorBox(e));
    }
  });
  return el('div', { class: 'bar' }, el('label', {}, 'File', file), el('label', {}, 'Title', title), send, status);
}

// Polls a document until it leaves PROCESSING (for at most FOLLOW_MS), then draws the list again
// with its status; stops quietly when the user has left the view.
const FOLLOW_MS = 10 * 60 * 1000;
async function follow(id) {
  const note = () => document.getElementById('kb-upload-status');
  for (const until = Date.now() + FOLLOW_MS; Date.now() < until;) {
    const doc = (await call('GET', kbPath(`/docs/${encodeURIComponent(id)}`))).result;
    if (!note()) return;
    note().textContent = `${id}: ${doc.status}${doc.error_message ? ` (${doc.error_message})` : ''}`;
    if (doc.status !== 'PROCESSING') break;
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
  if (!note()) return;
  const said = note().textContent;
  await render(document.getElementById('view'));
  if (note()) note().textContent = said;
}

// The workspace's knowledge bases with their documents by status; a click opens one (a new one is
// made by naming it above and uploading to it).
async function showKnowledgeBases(list, view) {
  try {
    const page = (await call('GET', v3Path(state.workspace, '/knowledge-bases') +
      query({ page_number: bases.page, page_size: PAGE }))).result;
    list.append(el('p', { class: 'muted', id: 'kb-count' },
      `${page.total} knowledge bases; open one, or name a new one above to upload to it.`));
    if (page.results.length) {
      list.append(el('table', { id: 'kb-bases' },
        el('thead', {}, el('tr', {}, ['Knowledge base', 'Documents', 'Processing', 'Failed', 'Last change']
          .map((h) => el('th', {}, h)))),
        el('tbody', {}, page.results.map((k) => el('tr', {
          class: 'row', 'data-kb': k.kb_id, onclick: () => { state.kb = k.kb_id; state.page = 1; render(view); },
        }, el('td', {}, k.kb_id), el('td', {}, String(k.documents)), el('td', {}, String(k.processing)),
        el('td', { class: k.failed ? 'status-FAIL' : '' }, String(k.failed)), el('td', {}, k.updated_at))))));
    }
    list.append(pager(bases, page.total, PAGE, () => render(view)));
  } catch (e) {
    list.append(errorBox(e));
  }
}

async function showList(list, detail, view) {
  try {
    const page = (await call('GET', kbPath('/docs') + query({ page_number: state.page, page_size: PAGE }))).result;
    list.append(el('p', { class: 'muted', id: 'kb-total' }, `${page.total} documents`));
    if (page.results.length) {
      list.append(el('table', { id: 'kb-table' },
        el('thead', {}, el('tr', {}, el('th', {}, 'Title'), el('th', {}, 'Id'), el('th', {}, 'Status'), el('th', {}, 'Uploaded'))),
        el('tbody', {}, page.results.map((d) => el('tr', {
          class: 'row', 'data-id': d.id, onclick: () => open(detail, d.id, view),
        }, el('td', {}, d.title), el('td', {}, d.id), el('td', { class: `status-${d.status}` }, d.status), el('td', {}, d.timestamp))))));
    }
    list.append(pager(state, page.total, PAGE, () => render(view)));
  } catch (e) {
    list.append(errorBox(e));
  }
}

const PREVIEW_CHARS = 4000;

async function open(detail, id, view) {
  detail.replaceChildren(el('p', { class: 'muted' }, 'Loading…'));
  try {
    const doc = (await call('GET', kbPath(`/docs/${encodeURIComponent(id)}`))).result;
    const remove = el('button', { type: 'button', class: 'danger', id: 'kb-delete' }, 'Delete');
    remove.addEventListener('click', async () => {
      if (!window.confirm(`Delete the document "${doc.title}" (${doc.id})?`)) return;
      try {
        await call('DELETE', kbPath(`/docs/${encodeURIComponent(id)}`));
        await render(view);
        document.getElementById('kb-detail').replaceChildren(el('p', { id: 'kb-deleted' }, `Document ${id} deleted.`));
      } catch (e) {
        detail.append(errorBox(e));
      }
    });
    const text = doc.content || '';
    detail.replaceChildren(el('div', { class: 'detail' },
      el('h3', {}, doc.title),
      el('p', { class: 'muted' }, `${doc.id} · ${doc.status} · uploaded ${doc.timestamp}`),
      doc.error_message ? el('p', { class: 'error', id: 'kb-error' }, doc.error_message) : null,
      text ? el('h4', {}, `Text (${text.length} characters${text.length > PREVIEW_CHARS ? `, the first ${PREVIEW_CHARS} shown` : ''})`) : null,
      text ? el('pre', { id: 'kb-content' }, text.slice(0, PREVIEW_CHARS)) : null,
      el('div', { class: 'actions' }, remove)));
  } catch (e) {
    detail.replaceChildren(errorBox(e));
  }
}
