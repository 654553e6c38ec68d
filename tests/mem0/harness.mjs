// Shared set-up of the mem0 compatibility tests: loads the official mem0 JS clients (mem0ai 3.x and
// 2.x, installed by scripts/setup.sh into third_party/node under the aliases mem0ai-v3 and
// mem0ai-v2), starts `engram serve` through the MCP tests' harness, and offers the few raw
// requests a client does not make (event polling, the V4 API).
import { createRequire } from 'node:module';
import fs from 'node:fs';
import path from 'node:path';

import { BINARY, ROOT, loadSdk, rest, sleep, startServer } from '../mcp/harness.mjs';

export { BINARY, loadSdk, rest, sleep, startServer };

export const NODE_DIR = process.env.ENGRAM_NODE_DIR || path.join(ROOT, 'third_party', 'node');
export const CLIENTS = [
  { name: 'mem0ai-v3', version: '3.3.1' },
  { name: 'mem0ai-v2', version: '2.4.6' },
];

const requireFromNodeDir = createRequire(path.join(NODE_DIR, 'package.json'));
const packageJson = (name) => path.join(NODE_DIR, 'node_modules', name, 'package.json');

// Why the tests cannot run here, or null.
export function skipReason() {
  for (const c of [...CLIENTS, { name: '@modelcontextprotocol/sdk', version: null }]) {
    const file = packageJson(c.name);
    if (!fs.existsSync(file)) return `${c.name} not found in ${NODE_DIR} (run scripts/setup.sh)`;
    const found = JSON.parse(fs.readFileSync(file, 'utf8')).version;
    if (c.version && found !== c.version) {
      return `${c.name} is ${found}, the tests pin ${c.version} (run scripts/setup.sh)`;
    }
  }
  if (!fs.existsSync(BINARY)) return `server binary not found at ${BINARY}`;
  return null;
}

// The client module of one pinned version. Telemetry is read when the module loads: it must be
// off before, or the client posts every call to a third-party analytics host.
export function loadMem0(name) {
  process.env.MEM0_TELEMETRY = 'false';
  return requireFromNodeDir(name);
}

// Records every fetch the clients make to a host other than the server's (there must be none).
export function guardFetch(allowedBase) {
  const foreign = [];
  const original = globalThis.fetch;
  globalThis.fetch = (input, init) => {
    const url = typeof input === 'string' ? input : input.url ?? String(input);
    if (!url.startsWith(allowedBase)) foreign.push(url);
    return original(input, init);
  };
  return { foreign, restore: () => { globalThis.fetch = original; } };
}

// Fetch with a mem0-style key: {status, body}.
export async function mem0Raw(base, method, p, key, body) {
  const r = await fetch(base + p, {
    method,
    headers: { 'content-type': 'application/json', authorization: `Token ${key}` },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await r.text();
  let parsed = null;
  try { parsed = text ? JSON.parse(text) : null; } catch { parsed = text; }
  return { status: r.status, body: parsed };
}

// Polls GET /v1/event/{id}/ until the event is done; returns the event (raw snake_case).
export async function waitMem0Event(base, key, eventId, timeoutMs = 30000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const r = await mem0Raw(base, 'GET', `/v1/event/${encodeURIComponent(eventId)}/`, key);
    if (r.status !== 200) throw new Error(`GET /v1/event/${eventId}/: HTTP ${r.status} ${JSON.stringify(r.body)}`);
    if (r.body.status === 'SUCCEEDED' || r.body.status === 'FAILED') return r.body;
    if (Date.now() > deadline) throw new Error(`event ${eventId} still ${r.body.status}`);
    await sleep(30);
  }
}

export const P4 = (ws) => `/v4/openapi/workspaces/${ws}/memory/agentic-memory`;

// Polls the V4 event endpoint until the event is done; returns the event.
export async function waitV4Event(base, key, ws, eventId, timeoutMs = 30000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const r = await rest(base, 'GET', `${P4(ws)}/events/${eventId}`, key);
    if (r.status !== 200) throw new Error(`V4 event ${eventId}: HTTP ${r.status} ${JSON.stringify(r.body)}`);
    if (r.body.status === 'SUCCEEDED' || r.body.status === 'FAILED') return r.body;
    if (Date.now() > deadline) throw new Error(`V4 event ${eventId} still ${r.body.status}`);
    await sleep(30);
  }
}

// The error a call rejects with (fails the test when it resolves).
export async function rejection(promise) {
  try {
    const value = await promise;
    throw Object.assign(new Error(`expected a rejection, got ${JSON.stringify(value)}`), { resolved: true });
  } catch (e) {
    if (e.resolved) throw e;
    return e;
  }
}
