// The MCP server driven by the official 2.x client (@modelcontextprotocol/client), which speaks the
// stateless revision 2026-07-28 when asked to negotiate (versionNegotiation 'auto' or a pin) and
// the session-based 2025-11-25 otherwise: over Streamable HTTP against a real `engram serve`, over
// stdio through `engram mcp`, and, with ENGRAM_TEST_PG_URL set, against two nodes sharing one
// PostgreSQL database that a single client reaches alternately, as behind a load balancer.
// Run: node --test tests/mcp/   (ENGRAM_BINARY, ENGRAM_MCP_SDK_DIR override the defaults)
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import crypto from 'node:crypto';

import { BINARY, loadClientV2, rawPost, skipReasonV2, startServer } from './harness.mjs';

const SKIP = skipReasonV2();
if (SKIP) console.log(`# skipped: ${SKIP}`);

const KEY = 'k-all';
const KEY_WS2 = 'k-ws2';
const MODERN = '2026-07-28';
const EXPECTED_TOOLS = ['knowledge_search', 'memory_entities', 'memory_forget', 'memory_get',
  'memory_history', 'memory_list', 'memory_recall', 'memory_store', 'memory_update', 'skill_get', 'skill_search'];
const ENVELOPE = {
  'io.modelcontextprotocol/protocolVersion': MODERN,
  'io.modelcontextprotocol/clientCapabilities': {},
};

describe('engram MCP server with the 2.x client', { skip: SKIP || false }, () => {
  let sdk;
  let server;
  const clients = [];

  before(async () => {
    sdk = await loadClientV2();
    server = await startServer(['--embedder', 'none', '--retrieval', 'bm25',
      '--api-key', KEY, '--api-key', `${KEY_WS2}:ws2`]);
  });
  after(async () => {
    for (const c of clients) await c.close().catch(() => {});
    if (server) await server.stop();
  });

  // negotiation: 'auto' (probe server/discover, fall back to initialize), a pinned revision, or
  // undefined (the client's default, the session-based handshake).
  async function connect(url, key, { negotiation = { mode: 'auto' }, headers = {}, fetch } = {}) {
    const client = new sdk.Client({ name: 'engram-v2-test', version: '2.0.0' },
      negotiation ? { versionNegotiation: negotiation } : {});
    const requestInit = { headers: { ...(key ? { authorization: `Bearer ${key}` } : {}), ...headers } };
    const transport = new sdk.StreamableHTTPClientTransport(new URL(url), { requestInit, fetch });
    await client.connect(transport);
    clients.push(client);
    return { client, transport };
  }

  test('negotiates 2026-07-28 without a session and lists the tools with cache hints', async () => {
    const seen = [];
    const spy = async (url, init) => {
      const r = await fetch(url, init);
      seen.push({ status: r.status, session: r.headers.get('mcp-session-id') });
      return r;
    };
    const { client, transport } = await connect(`${server.base}/mcp`, KEY, { fetch: spy });
    assert.equal(client.getProtocolEra(), 'modern');
    assert.equal(client.getNegotiatedProtocolVersion(), MODERN);
    assert.equal(client.getServerVersion().name, 'engram');
    assert.deepEqual(client.getDiscoverResult().supportedVersions, [MODERN]);
    assert.match(client.getInstructions(), /memory_recall/);
    assert.equal(transport.sessionId, undefined);
    const { tools } = await client.listTools();
    assert.deepEqual(tools.map((t) => t.name).sort(), EXPECTED_TOOLS);
    for (const t of tools) {
      assert.equal(t.inputSchema.type, 'object', t.name);
      assert.equal(typeof t.outputSchema, 'object', t.name);
    }
    assert.ok(seen.length >= 2);
    assert.ok(seen.every((s) => s.session === null), 'no response opens a session');
    // The wire result carries the revision's fields.
    const raw = await rawPost(`${server.base}/mcp`,
      { jsonrpc: '2.0', id: 9, method: 'tools/list', params: { _meta: ENVELOPE } },
      { authorization: `Bearer ${KEY}`, 'mcp-protocol-version': MODERN, 'mcp-method': 'tools/list' });
    assert.equal(raw.status, 200, raw.text);
    assert.equal(raw.body.result.resultType, 'complete');
    assert.equal(raw.body.result.cacheScope, 'public');
    assert.ok(Number.isInteger(raw.body.result.ttlMs));
  });

  test('stores then recalls with structured results; bad calls are errors the model can read', async () => {
    const { client } = await connect(`${server.base}/mcp`, KEY, { negotiation: { mode: { pin: MODERN } } });
    assert.equal(client.getNegotiatedProtocolVersion(), MODERN);
    const stored = await call(client, 'memory_store', {
      text: 'Dana keeps bees on the roof', user_id: 'dana', infer: false,
    });
    assert.equal(stored.isError, false);
    assert.equal(stored.structuredContent.status, 'SUCCEEDED');
    const id = stored.structuredContent.results[0];
    assert.match(id, /^m-/);
    const recalled = await call(client, 'memory_recall', { query: 'bees', user_id: 'dana' });
    assert.equal(recalled.structuredContent.results[0].id, id);
    assert.equal(typeof recalled.structuredContent.results[0].score, 'number');
    const got = await call(client, 'memory_get', { memory_id: id });
    assert.equal(got.structuredContent.memory, 'Dana keeps bees on the roof');
    const bad = await call(client, 'memory_recall', { query: 'bees', top_k: 0, user_id: 'dana' });
    assert.equal(bad.isError, true);
    assert.match(bad.content[0].text, /top_k/);
    await assert.rejects(client.callTool({ name: 'nope', arguments: {} }), /Unknown tool/);
  });

  test('a recall about an earlier time shows the version that held then', async () => {
    const { client } = await connect(`${server.base}/mcp`, KEY);
    const first = await call(client, 'memory_store', {
      text: 'I live in Lisbon.', user_id: 'fay', timestamp: '2022-03-01T10:00:00Z',
    });
    assert.equal(first.structuredContent.status, 'SUCCEEDED');
    const second = await call(client, 'memory_store', {
      text: 'I live in Porto.', user_id: 'fay', timestamp: '2024-06-15T10:00:00Z',
    });
    assert.equal(second.structuredContent.events[0].event, 'UPDATE');
    const then = await call(client, 'memory_recall', {
      query: 'Where did I live last year?', user_id: 'fay', reference_date: '2023-02-01',
    });
    assert.equal(then.isError, false);
    const hit = then.structuredContent.results[0];
    assert.match(hit.memory, /Lisbon/);
    assert.equal(hit.valid_from, '2022-03-01T10:00:00.000000Z');
    assert.equal(hit.valid_to, '2024-06-15T10:00:00.000000Z');
    assert.match(then.content[0].text, /held from 2022-03-01T10:00:00.000000Z until 2024-06-15/);
    const now = await call(client, 'memory_recall', { query: 'Where do I live?', user_id: 'fay' });
    assert.match(now.structuredContent.results[0].memory, /Porto/);
    assert.equal(now.structuredContent.results[0].valid_to, null);
    const bad = await call(client, 'memory_recall', {
      query: 'where', user_id: 'fay', reference_date: 'soon',
    });
    assert.equal(bad.isError, true);
    assert.match(bad.content[0].text, /reference_date/);
  });

  test('workspaces and keys hold without sessions', async () => {
    const { client: all } = await connect(`${server.base}/mcp`, KEY);
    await call(all, 'memory_store', { text: 'Erin sails in June', user_id: 'erin', infer: false });
    const { client: ws2 } = await connect(`${server.base}/mcp/workspaces/ws2`, KEY_WS2);
    const none = await call(ws2, 'memory_recall', { query: 'sails', user_id: 'erin' });
    assert.equal(none.structuredContent.results.length, 0);
    await assert.rejects(connect(`${server.base}/mcp`, KEY_WS2), /403|Forbidden/);
    await assert.rejects(connect(`${server.base}/mcp`, 'wrong'), /401|InvalidApiKey|Unauthorized/);
  });

  test('a page in a browser cannot drive the server: a foreign Origin is refused', async () => {
    await assert.rejects(
      connect(`${server.base}/mcp`, KEY, { headers: { origin: 'https://attacker.example' } }),
      /403|Forbidden/);
    const raw = await rawPost(`${server.base}/mcp`,
      { jsonrpc: '2.0', id: 1, method: 'server/discover', params: { _meta: ENVELOPE } },
      { authorization: `Bearer ${KEY}`, origin: 'https://attacker.example',
        'mcp-protocol-version': MODERN, 'mcp-method': 'server/discover' });
    assert.equal(raw.status, 403);
  });

  test('the revision\'s refusals: header mismatch, unsupported version, no session to end', async () => {
    const auth = { authorization: `Bearer ${KEY}` };
    const url = `${server.base}/mcp`;
    const mismatch = await rawPost(url,
      { jsonrpc: '2.0', id: 1, method: 'tools/call',
        params: { name: 'memory_get', arguments: { memory_id: 'm-x' }, _meta: ENVELOPE } },
      { ...auth, 'mcp-protocol-version': MODERN, 'mcp-method': 'tools/call', 'mcp-name': 'memory_forget' });
    assert.equal(mismatch.status, 400);
    assert.equal(mismatch.body.error.code, -32020);
    assert.equal(mismatch.body.id, 1);
    const future = { ...ENVELOPE, 'io.modelcontextprotocol/protocolVersion': '2031-01-01' };
    const unsupported = await rawPost(url,
      { jsonrpc: '2.0', id: 2, method: 'server/discover', params: { _meta: future } },
      { ...auth, 'mcp-protocol-version': '2031-01-01', 'mcp-method': 'server/discover' });
    assert.equal(unsupported.status, 400);
    assert.equal(unsupported.body.error.code, -32022);
    assert.deepEqual(unsupported.body.error.data.supported, [MODERN]);
    const del = await fetch(url, { method: 'DELETE', headers: { ...auth, 'mcp-protocol-version': MODERN } });
    assert.equal(del.status, 405);
  });

  test('without negotiation the 2.x client uses the session-based handshake, as 1.x does', async () => {
    const { client, transport } = await connect(`${server.base}/mcp`, KEY, { negotiation: null });
    assert.equal(client.getProtocolEra(), 'legacy');
    assert.equal(client.getNegotiatedProtocolVersion(), '2025-11-25');
    assert.ok(transport.sessionId);
    const { tools } = await client.listTools();
    assert.equal(tools.length, EXPECTED_TOOLS.length);
  });

  test('engram mcp relays the stateless revision over stdio', async () => {
    const transport = new sdk.StdioClientTransport({
      command: BINARY, args: ['mcp', '--url', server.base, '--api-key', KEY], stderr: 'pipe',
    });
    const client = new sdk.Client({ name: 'engram-v2-stdio', version: '2.0.0' },
      { versionNegotiation: { mode: 'auto' } });
    await client.connect(transport);
    clients.push(client);
    assert.equal(client.getNegotiatedProtocolVersion(), MODERN);
    const stored = await call(client, 'memory_store', { text: 'Gus bakes rye bread', user_id: 'gus', infer: false });
    assert.equal(stored.structuredContent.status, 'SUCCEEDED');
    const recalled = await call(client, 'memory_recall', { query: 'rye', user_id: 'gus' });
    assert.equal(recalled.structuredContent.results[0].memory, 'Gus bakes rye bread');
    await assert.rejects(client.callTool({ name: 'nope', arguments: {} }), /Unknown tool/);
  });

  test('engram mcp answers lines no SDK sends with errors, and keeps going', async () => {
    const relay = spawn(BINARY, ['mcp', '--url', server.base, '--api-key', KEY],
      { stdio: ['pipe', 'pipe', 'ignore'] });
    const lines = [];
    let buffered = '';
    relay.stdout.on('data', (d) => {
      buffered += d;
      let nl;
      while ((nl = buffered.indexOf('\n')) >= 0) { lines.push(JSON.parse(buffered.slice(0, nl))); buffered = buffered.slice(nl + 1); }
    });
    const send = (m) => relay.stdin.write(JSON.stringify(m) + '\n');
    send([{ jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: ENVELOPE } }]);  // a batch
    send({ jsonrpc: '2.0', id: 2, method: 'tools/list', params: { _meta: { ...ENVELOPE, 'io.modelcontextprotocol/clientCapabilities': 3 } } });
    send({ jsonrpc: '2.0', id: 3, method: 'server/discover', params: { _meta: ENVELOPE } });
    for (let i = 0; i < 200 && lines.length < 3; i++) await new Promise((r) => setTimeout(r, 25));
    relay.stdin.end();
    assert.equal(lines.length, 3, JSON.stringify(lines));
    assert.equal(lines[0].error.code, -32600);
    assert.equal(lines[1].id, 2);
    assert.equal(lines[1].error.code, -32602);
    assert.deepEqual(lines[2].result.supportedVersions, [MODERN]);
  });
});

// Two nodes on one PostgreSQL database: a stateless client needs no affinity, so each request may
// go to either node and every answer is the same.
const PG_URL = process.env.ENGRAM_TEST_PG_URL;
const PG_SKIP = SKIP || (!PG_URL && 'ENGRAM_TEST_PG_URL is not set (scripts/test.sh starts a cluster)');
describe('two nodes on PostgreSQL serve one stateless client alternately', { skip: PG_SKIP || false }, () => {
  let sdk;
  const nodes = [];
  let database;
  const psql = (sql) => execFileSync('psql', [`${PG_URL}/postgres`, '-qtAc', sql], { stdio: 'pipe' });

  before(async () => {
    sdk = await loadClientV2();
    database = `engram_mcp_${crypto.randomBytes(6).toString('hex')}`;
    psql(`CREATE DATABASE ${database}`);
    for (const name of ['a', 'b']) {
      nodes.push(await startServer(['--embedder', 'none', '--retrieval', 'bm25', '--api-key', KEY,
        '--store-url', `${PG_URL}/${database}`, '--node-id', name]));
    }
  });
  after(async () => {
    for (const n of nodes) await n.stop();
    if (database) {
      try { psql(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`); } catch { /* thrown away anyway */ }
    }
  });

  test('each request goes to the other node; writes are read back at once', async () => {
    const hits = [0, 0];
    let turn = 0;
    // The load balancer: the client's URL names node a; every request goes to the next node.
    const balance = async (url, init) => {
      const i = turn++ % 2;
      hits[i] += 1;
      const target = new URL(url.toString());
      const node = new URL(nodes[i].base);
      target.host = node.host;
      return fetch(target, init);
    };
    const client = new sdk.Client({ name: 'engram-v2-lb', version: '2.0.0' },
      { versionNegotiation: { mode: { pin: MODERN } } });
    const transport = new sdk.StreamableHTTPClientTransport(new URL(`${nodes[0].base}/mcp`),
      { requestInit: { headers: { authorization: `Bearer ${KEY}` } }, fetch: balance });
    await client.connect(transport);
    try {
      assert.equal(client.getNegotiatedProtocolVersion(), MODERN);
      const ids = [];
      for (let i = 0; i < 4; i++) {
        const stored = await call(client, 'memory_store',
          { text: `Hana visited city number ${i}`, user_id: 'hana', infer: false });
        assert.equal(stored.structuredContent.status, 'SUCCEEDED');
        ids.push(stored.structuredContent.results[0]);
        // The next request goes to the other node, which must see the write.
        const got = await call(client, 'memory_get', { memory_id: ids[i] });
        assert.equal(got.isError, false, got.content[0].text);
        assert.equal(got.structuredContent.memory, `Hana visited city number ${i}`);
      }
      const listed = await call(client, 'memory_list', { user_id: 'hana' });
      assert.deepEqual(listed.structuredContent.results.map((m) => m.id).sort(), [...ids].sort());
      assert.ok(hits[0] >= 4 && hits[1] >= 4, `both nodes served: ${hits}`);
    } finally {
      await client.close();
    }
  });
});

function call(client, name, args) { return client.callTool({ name, arguments: args }); }
