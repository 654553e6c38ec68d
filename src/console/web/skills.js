// Skills: one owner's skills, most recently updated first, a page at a time; a skill's detail with
// its files; import a ZIP of skills from this computer; delete with confirmation.
import { call, query, v3Path } from './api.js';
import { el, errorBox, pager, scopeForm } from './dom.js';
import { base64 } from './files.js';

const PAGE = 20;
const state = { workspace: 'default', user_id: '', page: 1 };

const skillsPath = (rest = '') => v3Path(state.workspace, `/skills${rest}`);

export async function render(view) {
  const form = scopeForm({
    id: 'skill-form', prefix: 'sk', button: 'skill-go', state, redraw: () => render(view),
    fields: [['workspace', 'Workspace'], ['user_id', 'User']],
  });
  const upload = el('div', { id: 'skill-import' });
  const list = el('div', { id: 'skill-list' });
  const detail = el('div', { id: 'skill-detail' });
  view.replaceChildren(el('h2', {}, 'Skills'), form, upload, list, detail);
  if (!state.workspace || !state.user_id) {
    list.append(el('p', { class: 'muted' }, 'Name a workspace and a user.'));
    return;
  }
  upload.append(importForm(view));
  try {
    const page = (await call('GET', skillsPath(query({ user_id: state.user_id, page_number: state.page, page_size: PAGE })))).result;
    list.append(el('p', { class: 'muted', id: 'skill-total' }, `${page.total} skills`));
    if (page.results.length) {
      list.append(el('table', { id: 'skill-table' },
        el('thead', {}, el('tr', {}, el('th', {}, 'Name'), el('th', {}, 'Description'), el('th', {}, 'Version'), el('th', {}, 'Updated'))),
        el('tbody', {}, page.results.map((s) => el('tr', { class: 'row', 'data-id': s.skill_id, onclick: () => open(detail, s.skill_id, view) },
          el('td', {}, s.name), el('td', {}, s.description), el('td', {}, s.version), el('td', {}, s.updated_at))))));
    }
    list.append(pager(state, page.total, PAGE, () => render(view)));
  } catch (e) {
    list.append(errorBox(e));
  }
}

function importForm(view) {
  const file = el('input', { type: 'file', id: 'skill-file', accept: '.zip,application/zip' });
  const status = el('span', { id: 'skill-import-status', class: 'muted' });
  const send = el('button', { type: 'button', id: 'skill-send' }, 'Import ZIP');
  send.addEventListener('click', async () => {
    const chosen = file.files[0];
    if (!chosen) { status.textContent = 'Choose a ZIP file first.'; return; }
    status.textContent = 'Importing…';
    try {
      const answer = await call('POST', skillsPath('/import'), { zip_base64: await base64(chosen), user_id: state.user_id });
      const names = answer.result.data.map((s) => s.name).join(', ');
      await render(view);
      document.getElementById('skill-import-status').textContent = `Imported ${answer.result.imported_count}: ${names}`;
    } catch (e) {
      status.replaceChildren(errorBox(e));
    }
  });
  return el('div', { class: 'bar' }, el('label', {}, 'Skills archive', file), send, status);
}

async function open(detail, id, view) {
  detail.replaceChildren(el('p', { class: 'muted' }, 'Loading…'));
  const path = skillsPath(`/${encodeURIComponent(id)}`) + query({ user_id: state.user_id });
  try {
    const skill = (await call('GET', path)).result;
    const remove = el('button', { type: 'button', class: 'danger', id: 'skill-delete' }, 'Delete');
    remove.addEventListener('click', async () => {
      if (!window.confirm(`Delete the skill "${skill.name}"?`)) return;
      try {
        await call('DELETE', path);
        await render(view);
        document.getElementById('skill-detail').replaceChildren(el('p', { id: 'skill-deleted' }, `Skill ${skill.name} deleted.`));
      } catch (e) {
        detail.append(errorBox(e));
      }
    });
    const files = Object.entries(skill.files || {}).sort(([a], [b]) => a.localeCompare(b));
    detail.replaceChildren(el('div', { class: 'detail' },
      el('h3', {}, skill.name),
      el('p', {}, skill.description),
      el('p', { class: 'muted' }, `${skill.skill_id} · version ${skill.version} · updated ${skill.updated_at}` +
        (skill.previous_versions.length ? ` · ${skill.previous_versions.length} earlier versions` : '')),
      el('h4', {}, `Files (${files.length})`),
      el('div', { id: 'skill-files' }, files.map(([name, content]) => el('details', { open: name === 'SKILL.md' },
        el('summary', {}, name), el('pre', {}, content)))),
      el('div', { class: 'actions' }, remove)));
  } catch (e) {
    detail.replaceChildren(errorBox(e));
  }
}
