// Calls to the server's APIs with the key the user signed in with (kept in this tab's session
// storage). Every failure becomes an Error whose message is the API's own.
const KEY = 'engram.apiKey';

export function signedIn() { return sessionStorage.getItem(KEY) !== null; }
export function signIn(key) { sessionStorage.setItem(KEY, key); }
export function signOut() { sessionStorage.removeItem(KEY); }

export class ApiError extends Error {
  constructor(status, message) { super(message); this.status = status; }
}

export async function call(method, path, body) {
  const headers = { accept: 'application/json' };
  const key = sessionStorage.getItem(KEY);
  if (key) headers.authorization = `Bearer ${key}`;
  if (body !== undefined) headers['content-type'] = 'application/json';
  let response;
  try {
    response = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  } catch (e) {
    throw new ApiError(0, `The server cannot be reached (${e.message}).`);
  }
  const text = await response.text();
  let parsed = null;
  try { parsed = text ? JSON.parse(text) : null; } catch { parsed = null; }
  if (!response.ok) {
    const said = parsed && (parsed.message || (parsed.error && parsed.error.message));
    throw new ApiError(response.status, `${response.status}: ${said || text || response.statusText}`);
  }
  return parsed === null ? text : parsed;
}

// The V4 memory API of a workspace.
export function memoryPath(workspace, rest = '') {
  return `/v4/openapi/workspaces/${encodeURIComponent(workspace)}/memory/agentic-memory${rest}`;
}

// The V3 APIs of a workspace (skills, knowledge bases, health); their answers carry `result`.
export function v3Path(workspace, rest = '') {
  return `/v3/openapi/workspaces/${encodeURIComponent(workspace)}/memory/agentic-memory${rest}`;
}

export function query(params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== '' && v !== undefined && v !== null) q.set(k, v);
  const s = q.toString();
  return s ? `?${s}` : '';
}
