// Shared set-up of the MCP tests: finds the SDKs (installed by scripts/setup.sh into
// third_party/node: @modelcontextprotocol/sdk 1.x and @modelcontextprotocol/client 2.x) and the
// server binary, starts `engram serve` on a free port, and offers small
// helpers for raw JSON-RPC over HTTP and for building skill archives.
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
export const ROOT = path.resolve(here, '..', '..');
export const BINARY = process.env.ENGRAM_BINARY || path.join(ROOT, 'build', 'engram');
export const SDK_DIR = process.env.ENGRAM_MCP_SDK_DIR || path.join(ROOT, 'third_party', 'node');
const SDK = path.join(SDK_DIR, 'node_modules', '@modelcontextprotocol', 'sdk');
const CLIENT_V2 = path.join(SDK_DIR, 'node_modules', '@modelcontextprotocol', 'client');

// Why the tests of `sdk` (the folder of an SDK package) cannot run here, or null.
export function skipReason(sdk = SDK) {
  if (!fs.existsSync(path.join(sdk, 'package.json'))) {
    return `${path.basename(sdk)} SDK not found in ${SDK_DIR} (run scripts/setup.sh)`;
  }
  if (!fs.existsSync(BINARY)) return `server binary not found at ${BINARY}`;
  return null;
}
export const skipReasonV2 = () => skipReason(CLIENT_V2);

// The 2.x client: {Client, StreamableHTTPClientTransport, StdioClientTransport}.
export async function loadClientV2() {
  const load = (p) => import(pathToFileURL(path.join(CLIENT_V2, 'dist', p)).href);
  const { Client, StreamableHTTPClientTransport } = await load('index.mjs');
  const { StdioClientTransport } = await load('stdio.mjs');
  return { Client, StreamableHTTPClientTransport, StdioClientTransport };
}

export async function loadSdk() {
  const load = (p) => import(pathToFileURL(path.join(SDK, 'dist', 'esm', p)).href);
  const { Client } = await load('client/index.js');
  const { StreamableHTTPClientTransport } = await load('client/streamableHttp.js');
  const { StdioClientTransport } = await load('client/stdio.js');
  const require = createRequire(path.join(SDK_DIR, 'package.json'));
  const Ajv = require('ajv');
  return { Client, StreamableHTTPClientTransport, StdioClientTransport, Ajv: Ajv.default || Ajv };
}

// Starts `engram serve` with extra arguments; resolves once it prints its address.
export async function startServer(extraArgs = []) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'engram-mcp-'));
  const importDir = path.join(dir, 'import');
  fs.mkdirSync(importDir);
  const args = ['serve', '--listen', '127.0.0.1:0', '--data-dir', path.join(dir, 'data'),
    '--import-dir', importDir, ...extraArgs];
  const child = spawn(BINARY, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d) => { stderr = (stderr + d).slice(-20000); });
  const address = await new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error('server did not start:\n' + stderr)), 30000);
    child.stdout.on('data', (d) => {
      out += d;
      const m = out.match(/engram listening on (\S+)/);
      if (m) { clearTimeout(timer); resolve(m[1]); }
    });
    child.on('exit', (code) => { clearTimeout(timer); reject(new Error(`server exited ${code}:\n${stderr}`)); });
  });
  const base = `http://${address}`;
  return {
    base, dir, importDir, child,
    stderr: () => stderr,
    async stop() {
      if (child.exitCode !== null) return;
      const done = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await done;
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

export const JSON_HEADERS = {
  'content-type': 'application/json',
  accept: 'application/json, text/event-stream',
};

// One raw POST to an MCP endpoint: {status, headers, body (parsed JSON or null), text}.
export async function rawPost(url, body, headers = {}) {
  const r = await fetch(url, {
    method: 'POST',
    headers: { ...JSON_HEADERS, ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await r.text();
  let parsed = null;
  try { parsed = text ? JSON.parse(text) : null; } catch { parsed = null; }
  return { status: r.status, headers: r.headers, body: parsed, text };
}

// A raw session: initialize + initialized; returns {id, version, post(body, headers)}.
export async function rawSession(url, key, version = '2025-11-25', extraHeaders = {}) {
  const auth = key ? { authorization: `Bearer ${key}` } : {};
  const init = await rawPost(url, {
    jsonrpc: '2.0', id: 0, method: 'initialize',
    params: { protocolVersion: version, capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
  }, { ...auth, ...extraHeaders });
  if (init.status !== 200) throw new Error(`initialize: HTTP ${init.status} ${init.text}`);
  const id = init.headers.get('mcp-session-id');
  const negotiated = init.body.result.protocolVersion;
  const headers = { ...auth, ...extraHeaders, 'mcp-session-id': id, 'mcp-protocol-version': negotiated };
  await rawPost(url, { jsonrpc: '2.0', method: 'notifications/initialized' }, headers);
  return {
    id, version: negotiated, headers,
    post: (body, more = {}) => rawPost(url, body, { ...headers, ...more }),
  };
}

// REST helper with a key.
export async function rest(base, method, p, key, body) {
  const r = await fetch(base + p, {
    method,
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await r.text();
  return { status: r.status, body: text ? JSON.parse(text) : null };
}

// A ZIP archive (stored entries) of {path: content}.
export function zipOf(files) {
  const crcTable = new Int32Array(256).map((_, n) => {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    return c;
  });
  const crc32 = (buf) => {
    let c = -1;
    for (const b of buf) c = crcTable[(c ^ b) & 0xff] ^ (c >>> 8);
    return (c ^ -1) >>> 0;
  };
  const locals = [];
  const centrals = [];
  let offset = 0;
  for (const [name, content] of Object.entries(files)) {
    const data = Buffer.from(content, 'utf8');
    const nameBuf = Buffer.from(name, 'utf8');
    const crc = crc32(data);
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0); local.writeUInt16LE(20, 4); local.writeUInt16LE(0, 6);
    local.writeUInt16LE(0, 8); local.writeUInt32LE(0, 10); local.writeUInt32LE(crc, 14);
    local.writeUInt32LE(data.length, 18); local.writeUInt32LE(data.length, 22);
    local.writeUInt16LE(nameBuf.length, 26); local.writeUInt16LE(0, 28);
    const central = Buffer.alloc(46);
    central.writeUInt32LE(0x02014b50, 0); central.writeUInt16LE(20, 4); central.writeUInt16LE(20, 6);
    central.writeUInt16LE(0, 8); central.writeUInt16LE(0, 10); central.writeUInt32LE(0, 12);
    central.writeUInt32LE(crc, 16); central.writeUInt32LE(data.length, 20);
    central.writeUInt32LE(data.length, 24); central.writeUInt16LE(nameBuf.length, 28);
    central.writeUInt32LE(0, 38); central.writeUInt32LE(offset, 42);
    locals.push(local, nameBuf, data);
    centrals.push(central, nameBuf);
    offset += local.length + nameBuf.length + data.length;
  }
  const cd = Buffer.concat(centrals);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0); end.writeUInt16LE(Object.keys(files).length, 8);
  end.writeUInt16LE(Object.keys(files).length, 10); end.writeUInt32LE(cd.length, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...locals, cd, end]);
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
