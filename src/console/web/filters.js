// The V4 search filter built with a form: rows of (field, operator, value) joined by AND or OR,
// turned into the grammar's JSON (docs/memory-api.md "Filters"), which the page shows before it
// is sent. The server checks it; what it refuses comes back as its message.
import { el } from './dom.js';

export const FIELDS = ['agent_id', 'run_id', 'app_id', 'session_id', 'created_at', 'updated_at',
  'memory_ids', 'keywords', 'categories', 'metadata.'];
export const OPS = ['eq', 'ne', 'in', 'gt', 'gte', 'lt', 'lte', 'contains', 'icontains', '*'];

// A metadata value as typed: JSON when it reads as a number, boolean, null or a quoted string,
// else the text itself. Every other field takes strings.
function metadataValue(text) {
  if (/^(-?\d+(\.\d+)?([eE][-+]?\d+)?|true|false|null|".*")$/.test(text)) return JSON.parse(text);
  return text;
}

// One row {field, key, op, value} as a leaf of the grammar.
export function leaf(row) {
  const field = row.field === 'metadata.' ? `metadata.${row.key}` : row.field;
  const one = (text) => (row.field === 'metadata.' ? metadataValue(text) : text);
  if (row.op === '*') return { [field]: { '*': row.value.trim() !== 'false' } };
  if (row.op === 'in') {
    return { [field]: { in: row.value.split(',').map((v) => v.trim()).filter((v) => v !== '').map(one) } };
  }
  return { [field]: { [row.op]: one(row.value.trim()) } };
}

// The rows as one filter; null when there are none.
export function buildFilter(rows, combine) {
  if (rows.length === 0) return null;
  if (rows.length === 1) return leaf(rows[0]);
  return { [combine]: rows.map(leaf) };
}

// The form over `state.filters` (the rows) and `state.combine` ('AND' | 'OR'); `changed` runs after
// every edit, so the JSON shown stays the one that will be sent.
export function filterForm(state, changed) {
  const box = el('div', { id: 'filter-form', class: 'filters' });
  const draw = () => {
    const shown = buildFilter(state.filters, state.combine);
    const combine = el('select', { id: 'filter-combine' },
      ['AND', 'OR'].map((c) => el('option', { value: c, selected: state.combine === c }, c === 'AND' ? 'all of' : 'any of')));
    combine.addEventListener('change', () => { state.combine = combine.value; draw(); changed(); });
    const rows = state.filters.map((row, i) => {
      const field = el('select', { class: 'filter-field' }, FIELDS.map((f) =>
        el('option', { value: f, selected: row.field === f }, f === 'metadata.' ? 'metadata key…' : f)));
      const key = el('input', { class: 'filter-key', value: row.key, placeholder: 'key', size: 10, hidden: row.field !== 'metadata.' });
      const op = el('select', { class: 'filter-op' }, OPS.map((o) => el('option', { value: o, selected: row.op === o }, o)));
      const value = el('input', { class: 'filter-value', value: row.value, size: 24,
        placeholder: row.op === 'in' ? 'a, b, c' : row.op === '*' ? 'true (present) or false' : 'value' });
      const remove = el('button', { type: 'button', class: 'filter-remove' }, 'Remove');
      field.addEventListener('change', () => { row.field = field.value; draw(); changed(); });
      op.addEventListener('change', () => { row.op = op.value; draw(); changed(); });
      key.addEventListener('input', () => { row.key = key.value; refresh(); });
      value.addEventListener('input', () => { row.value = value.value; refresh(); });
      remove.addEventListener('click', () => { state.filters.splice(i, 1); draw(); changed(); });
      return el('div', { class: 'bar filter-row' }, field, key, op, value, remove);
    });
    const add = el('button', { type: 'button', id: 'filter-add' }, 'Add a condition');
    add.addEventListener('click', () => {
      state.filters.push({ field: 'created_at', key: '', op: 'gte', value: '' });
      draw();
      changed();
    });
    const json = el('pre', { id: 'filter-json' }, shown ? JSON.stringify(shown) : '');
    const refresh = () => {
      const f = buildFilter(state.filters, state.combine);
      json.textContent = f ? JSON.stringify(f) : '';
    };
    box.replaceChildren(
      el('div', { class: 'bar' }, el('span', {}, 'Search filter: memories matching'), combine,
        el('span', {}, 'these conditions'), add),
      ...rows,
      shown ? json : el('p', { class: 'muted' }, 'No condition: the search covers the whole scope.'));
  };
  draw();
  return box;
}
