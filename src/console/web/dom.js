// Small DOM helpers: elements are built with text nodes only (never innerHTML), so nothing a
// memory says can become markup.
export function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v === true ? '' : v);
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}

export function svg(tag, attrs = {}, ...children) {
  const e = document.createElementNS('http://www.w3.org/2000/svg', tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  for (const c of children.flat()) e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return e;
}

export function errorBox(error) {
  return el('p', { class: 'error', role: 'alert' }, error.message || String(error));
}

// A horizontal bar chart of [label, value] pairs.
export function bars(pairs, unit = '') {
  const width = 480;
  const row = 18;
  const max = Math.max(1, ...pairs.map(([, v]) => v));
  const chart = svg('svg', { class: 'bars', width, height: row * pairs.length + 4, role: 'img' });
  pairs.forEach(([label, value], i) => {
    const y = i * row + 2;
    chart.append(svg('text', { x: 0, y: y + 12 }, label));
    chart.append(svg('rect', { x: 200, y, height: row - 4, width: Math.max(1, (value / max) * 200) }));
    chart.append(svg('text', { x: 406, y: y + 12 }, `${Number(value.toFixed ? value.toFixed(2) : value)}${unit}`));
  });
  return chart;
}

// The form that picks what a list view shows: a text field per [name, label] of `fields`, filled
// from `state` (ids `${prefix}-${name}`), and a Show button (id `button`). Submitting copies the
// trimmed values into `state`, goes back to the first page and calls `redraw`.
export function scopeForm({ id, prefix, button, fields, state, redraw }) {
  const form = el('form', { class: 'bar', id },
    fields.map(([name, label]) => el('label', {}, label,
      el('input', { name, value: state[name], id: `${prefix}-${name}` }))),
    el('button', { type: 'submit', id: button }, 'Show'));
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const data = new FormData(form);
    for (const [name] of fields) state[name] = String(data.get(name) || '').trim();
    state.page = 1;
    redraw();
  });
  return form;
}

// Previous / next buttons over `total` items, `size` to a page; `state.page` counts from 1.
export function pager(state, total, size, redraw) {
  const pages = Math.max(1, Math.ceil(total / size));
  const go = (step) => () => { state.page += step; redraw(); };
  return el('div', { class: 'pager' },
    el('button', { type: 'button', disabled: state.page <= 1, onclick: go(-1) }, 'Previous'),
    el('span', {}, `page ${state.page} of ${pages}`),
    el('button', { type: 'button', disabled: state.page >= pages, onclick: go(1) }, 'Next'));
}
