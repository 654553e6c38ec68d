// The console's entry: sign-in, navigation between views (the URL's hash names the view), and
// sign-out. Views render into #view; every call they make goes through api.js.
import * as activity from './activity.js';
import { ApiError, call, signIn, signOut, signedIn } from './api.js';
import * as knowledge from './knowledge.js';
import * as memories from './memories.js';
import * as overview from './overview.js';
import * as search from './search.js';
import * as skills from './skills.js';

const VIEWS = { overview, memories, search, knowledge, skills, activity };
// What the segments after a view's name mean (#/memories/<workspace>/<memory id>): links between
// views open a workspace's list, a memory, a knowledge base or an event.
const PATH_PARAMS = {
  memories: ['workspace', 'memory'],
  knowledge: ['workspace', 'kb'],
  activity: ['workspace', 'event'],
};

function show(id, visible) { document.getElementById(id).hidden = !visible; }

async function route() {
  if (!signedIn()) {
    show('nav', false); show('view', false); show('sign-in', true);
    document.getElementById('key').focus();
    return;
  }
  show('sign-in', false); show('nav', true); show('view', true);
  const [name, ...rest] = (location.hash.replace(/^#\/?/, '') || 'overview').split('/');
  const view = VIEWS[name] ? name : 'overview';
  for (const a of document.querySelectorAll('#nav a')) a.classList.toggle('active', a.dataset.view === view);
  const params = {};
  (PATH_PARAMS[view] || []).forEach((name, i) => {
    if (rest[i]) params[name] = decodeURIComponent(rest[i]);
  });
  await VIEWS[view].render(document.getElementById('view'), params);
}

async function onSignIn(ev) {
  ev.preventDefault();
  const key = document.getElementById('key').value.trim();
  const error = document.getElementById('sign-in-error');
  error.textContent = '';
  signIn(key);
  try {
    // Any workspace's health answers only with a key the server knows (or none in development
    // mode); a key limited to other workspaces is still a key.
    await call('GET', '/v3/openapi/workspaces/default/memory/agentic-memory/health');
  } catch (e) {
    if (!(e instanceof ApiError) || e.status !== 403) {
      signOut();
      error.textContent = e.status === 401 ? 'This key is not one of the server\'s keys.' : e.message;
      return;
    }
  }
  document.getElementById('key').value = '';
  route();
}

document.addEventListener('DOMContentLoaded', () => {
  document.getElementById('sign-in-form').addEventListener('submit', onSignIn);
  document.getElementById('sign-out').addEventListener('click', () => { signOut(); route(); });
  window.addEventListener('hashchange', route);
  route();
});
