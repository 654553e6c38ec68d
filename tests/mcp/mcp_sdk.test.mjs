// The MCP server driven by the official MCP SDK client (@modelcontextprotocol/sdk), over
// Streamable HTTP against a real `engram serve` and over stdio through `engram mcp`, plus raw
// requests for what an SDK never sends (malformed messages, foreign origins, stale sessions).
// Run: node --test tests/mcp/   (ENGRAM_BINARY, ENGRAM_MCP_SDK_DIR override the defaults)
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';

import {
  BINARY, loadSdk, rawPost, rawSession, rest, skipReason, startServer, zipOf, sleep,
} from './harness.mjs';

const SKIP = skipReason();
if (SKIP) console.log(`# skipped: ${SKIP}`);

const KEY = 'k-all';
const KEY_WS2 = 'k-ws2';
const P4 = (ws) => `/v4/openapi/workspaces/${ws}/memory/agentic-memory`;
const P3 = (ws) => `/v3/openapi/workspaces/${ws}/memory/agentic-memory`;
const EXPECTED_TOOLS = ['knowledge_search', 'memory_entities', 'memory_forget', 'memory_get',
  'memory_history', 'memory_list', 'memory_recall', 'memory_store', 'memory_update', 'skill_get', 'skill_search'];

describe('engram MCP server', { skip: SKIP || false }, () => {
  let sdk;
  let server;
  const clients = [];

  before(async () => {
    sdk = await loadSdk();
    server = await startServer(['--embedder', 'none', '--retrieval', 'bm25',
      '--api-key', KEY, '--api-key', `${KEY_WS2}:ws2`]);
  });
  after(async () => {
    for (const c of clients) await c.close().catch(() => {});
    if (server) await server.stop();
  });

  async function connect(url, key, headers = {}) {
    const client = new sdk.Client({ name: 'engram-test', version: '1.0.0' });
    const requestInit = { headers: { ...(key ? { authorization: `Bearer ${key}` } : {}), ...headers } };
    const transport = new sdk.StreamableHTTPClientTransport(new URL(url), { requestInit });
    await client.connect(transport);
    clients.push(client);
    return { client, transport };
  }
  const call = (client, name, args) => client.callTool({ name, arguments: args });

  test('initialize negotiates the latest revision and lists every tool with a valid schema', async () => {
    const { client, transport } = await connect(`${server.base}/mcp`, KEY);
    assert.equal(client.getServerVersion().name, 'engram');
    assert.equal(transport.protocolVersion, '2025-11-25');
    assert.ok(client.getServerCapabilities().tools);
    assert.match(client.getInstructions(), /memory_recall/);
    const { tools } = await client.listTools();
    assert.deepEqual(tools.map((t) => t.name).sort(), EXPECTED_TOOLS);
    const ajv = new sdk.Ajv({ strict: false });
    for (const t of tools) {
      assert.ok(ajv.validateSchema(t.inputSchema), `${t.name} inputSchema: ${ajv.errorsText()}`);
      assert.ok(ajv.validateSchema(t.outputSchema), `${t.name} outputSchema: ${ajv.errorsText()}`);
      ajv.compile(t.inputSchema);
      ajv.compile(t.outputSchema);
      assert.equal(t.inputSchema.type, 'object');
      for (const hint of ['readOnlyHint', 'destructiveHint', 'idempotentHint']) {
        assert.equal(typeof t.annotations[hint], 'boolean', `${t.name}.${hint}`);
      }
    }
    const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
    assert.equal(byName.memory_recall.annotations.readOnlyHint, true);
    assert.equal(byName.memory_forget.annotations.destructiveHint, true);
    assert.equal(byName.memory_store.annotations.readOnlyHint, false);
    assert.ok(byName.memory_recall.inputSchema.required.includes('query'));
  });

  test('store then recall at once finds it (read-your-writes), then get, update, history, forget', async () => {
    const { client } = await connect(`${server.base}/mcp`, KEY);
    const stored = await call(client, 'memory_store', {
      text: 'Alice prefers oolong tea over coffee', user_id: 'alice', infer: false,
      metadata: { topic: 'drinks' },
    });
    assert.equal(stored.isError, false, JSON.stringify(stored));
    assert.equal(stored.structuredContent.status, 'SUCCEEDED');
    const id = stored.structuredContent.results[0];
    assert.match(id, /^m-/);
    assert.match(stored.content[0].text, /oolong/);

    const recalled = await call(client, 'memory_recall', { query: 'oolong tea', user_id: 'alice' });
    assert.equal(recalled.isError, false);
    assert.equal(recalled.structuredContent.results[0].id, id);
    assert.equal(recalled.structuredContent.results[0].metadata.topic, 'drinks');
    assert.match(recalled.content[0].text, /oolong/);

    const filtered = await call(client, 'memory_recall', {
      query: 'tea', filters: { AND: [{ user_id: 'alice' }, { 'metadata.topic': 'work' }] },
    });
    assert.equal(filtered.structuredContent.results.length, 0);

    const got = await call(client, 'memory_get', { memory_id: id });
    assert.equal(got.structuredContent.memory, 'Alice prefers oolong tea over coffee');

    const updated = await call(client, 'memory_update', {
      memory_id: id, text: 'Alice prefers jasmine tea', metadata: { mood: 'calm' },
    });
    assert.equal(updated.isError, false, JSON.stringify(updated));
    assert.equal(updated.structuredContent.memory, 'Alice prefers jasmine tea');
    assert.deepEqual(updated.structuredContent.metadata, { topic: 'drinks', mood: 'calm' });
    const again = await call(client, 'memory_recall', { query: 'jasmine', user_id: 'alice' });
    assert.equal(again.structuredContent.results[0].id, id);

    const listed = await call(client, 'memory_list', { user_id: 'alice' });
    assert.equal(listed.structuredContent.total, 1);
    await call(client, 'memory_store', { text: 'Lunch with Bruno at the Louvre', user_id: 'erin', infer: false });
    const entities = await call(client, 'memory_entities', { user_id: 'erin' });
    assert.equal(entities.isError, false, JSON.stringify(entities));
    assert.deepEqual(entities.structuredContent.results.map((e) => `${e.name}:${e.kind}:${e.memory_count}`).sort(),
      ['Bruno:name:1', 'Louvre:name:1']);

    const forgotten = await call(client, 'memory_forget', { memory_id: id });
    assert.equal(forgotten.structuredContent.deleted, true);
    const history = await call(client, 'memory_history', { memory_id: id });
    assert.deepEqual(history.structuredContent.results.map((h) => h.event), ['ADD', 'UPDATE', 'DELETE']);
    assert.equal(history.structuredContent.results[1].old_memory, 'Alice prefers oolong tea over coffee');
    const gone = await call(client, 'memory_get', { memory_id: id });
    assert.equal(gone.isError, true);
    assert.match(gone.content[0].text, /memory_get failed/);
    const none = await call(client, 'memory_recall', { query: 'jasmine', user_id: 'alice' });
    assert.equal(none.structuredContent.results.length, 0);
  });

  test('memory_store with messages and infer extracts facts and waits for them', async () => {
    const { client } = await connect(`${server.base}/mcp`, KEY);
    const stored = await call(client, 'memory_store', {
      messages: [{ role: 'user', content: 'I live in Lisbon and I work at Acme.' },
        { role: 'assistant', content: 'Noted!' }],
      user_id: 'bob',
    });
    assert.equal(stored.isError, false, JSON.stringify(stored));
    assert.equal(stored.structuredContent.status, 'SUCCEEDED');
    assert.ok(stored.structuredContent.results.length >= 1);
    const recalled = await call(client, 'memory_recall', { query: 'where does the user live', user_id: 'bob' });
    assert.ok(recalled.structuredContent.results.some((r) => /Lisbon/.test(r.memory)));
    const pending = await call(client, 'memory_store', { text: 'Bob owns a red bicycle', user_id: 'bob', wait: false });
    assert.equal(pending.structuredContent.status, 'PENDING');
    assert.match(pending.structuredContent.event_id, /^me-/);
  });

  test('knowledge_search finds a chunk of a document uploaded through the REST API', async () => {
    // A key is limited to ws2, so each workspace reads its own import directory.
    fs.mkdirSync(path.join(server.importDir, 'default'), { recursive: true });
    fs.writeFileSync(path.join(server.importDir, 'default', 'handbook.md'),
      '# Handbook\n\nThe office espresso machine is descaled every Friday by the facilities team.\n');
    const up = await rest(server.base, 'POST', `${P3('default')}/knowledge-bases/kb1/docs`, KEY,
      { type: 'LOCAL', doc: { id: 'hb', title: 'Handbook', file_url: 'handbook.md' } });
    assert.equal(up.status, 200, JSON.stringify(up.body));
    for (let i = 0; i < 200; i++) {
      const d = await rest(server.base, 'GET', `${P3('default')}/knowledge-bases/kb1/docs/hb`, KEY);
      if (d.body.result.status !== 'PROCESSING') { assert.equal(d.body.result.status, 'SUCCESS'); break; }
      await sleep(50);
    }
    const { client } = await connect(`${server.base}/mcp`, KEY);
    const found = await call(client, 'knowledge_search', { kb_id: 'kb1', query: 'espresso descaled' });
    assert.equal(found.isError, false, JSON.stringify(found));
    assert.equal(found.structuredContent.results[0].doc_id, 'hb');
    assert.match(found.structuredContent.results[0].chunk, /espresso/);
    const elsewhere = await call(client, 'knowledge_search', { kb_id: 'kb-empty', query: 'espresso' });
    assert.equal(elsewhere.structuredContent?.results?.length ?? 0, 0);
  });

  test('skill_search and skill_get read a skill imported through the REST API', async () => {
    const zip = zipOf({
      'SKILL.md': '---\nname: release-notes\ndescription: Write release notes from merged changes\n---\n\n'
        + '# Release notes\n\n1. List merged changes.\n2. Group them by area.\n',
      'references/style.md': 'Use the past tense.',
    });
    const imported = await rest(server.base, 'POST', `${P3('default')}/skills/import`, KEY,
      { zip_base64: zip.toString('base64'), user_id: 'carol' });
    assert.equal(imported.status, 200, JSON.stringify(imported.body));
    const { client } = await connect(`${server.base}/mcp`, KEY);
    const found = await call(client, 'skill_search', { query: 'write release notes', user_id: 'carol' });
    assert.equal(found.isError, false, JSON.stringify(found));
    const hit = found.structuredContent.results[0];
    assert.equal(hit.name, 'release-notes');
    const skill = await call(client, 'skill_get', { skill_id: hit.skill_id, user_id: 'carol' });
    assert.equal(skill.isError, false, JSON.stringify(skill));
    assert.match(skill.structuredContent.files['SKILL.md'], /Group them by area/);
    assert.equal(skill.structuredContent.files['references/style.md'], 'Use the past tense.');
    const foreign = await call(client, 'skill_get', { skill_id: hit.skill_id, user_id: 'mallory' });
    assert.equal(foreign.isError, true);
    const none = await call(client, 'skill_search', { query: 'write release notes', user_id: 'mallory' });
    assert.equal(none.structuredContent.results.length, 0);
  });

  test('keys: 401 without or with a wrong key, 403 for a key limited to another workspace', async () => {
    await assert.rejects(connect(`${server.base}/mcp`, null), /401/);
    await assert.rejects(connect(`${server.base}/mcp`, 'wrong'), /401/);
    await assert.rejects(connect(`${server.base}/mcp`, KEY_WS2), /403/);
    await assert.rejects(connect(`${server.base}/v1/agentic-memory/mcp`, KEY_WS2), /403/);
    await assert.rejects(connect(`${server.base}/mcp/workspaces/ws3`, KEY_WS2), /403/);
    const raw = await rawPost(`${server.base}/mcp`, '{"jsonrpc":"2.0","id":1,"method":"ping"}');
    assert.equal(raw.status, 401);
    const byPath = await connect(`${server.base}/mcp/workspaces/ws2`, KEY_WS2);
    assert.equal((await byPath.client.listTools()).tools.length, EXPECTED_TOOLS.length);
    const byHeader = await connect(`${server.base}/mcp`, KEY_WS2, { 'x-engram-workspace': 'ws2' });
    assert.equal((await byHeader.client.listTools()).tools.length, EXPECTED_TOOLS.length);
    const alibabaPath = await connect(`${server.base}/v1/agentic-memory/mcp`, KEY);
    assert.equal((await alibabaPath.client.listTools()).tools.length, EXPECTED_TOOLS.length);
  });

  test('workspaces are isolated', async () => {
    const ws2 = (await connect(`${server.base}/mcp/workspaces/ws2`, KEY_WS2)).client;
    const dflt = (await connect(`${server.base}/mcp`, KEY)).client;
    const stored = await call(ws2, 'memory_store', { text: 'The vault code is kept by Dana', user_id: 'dana', infer: false });
    const id = stored.structuredContent.results[0];
    const mine = await call(ws2, 'memory_recall', { query: 'vault code', user_id: 'dana' });
    assert.equal(mine.structuredContent.results[0].id, id);
    const other = await call(dflt, 'memory_recall', { query: 'vault code', user_id: 'dana' });
    assert.equal(other.structuredContent.results.length, 0);
    assert.equal((await call(dflt, 'memory_get', { memory_id: id })).isError, true);
    assert.equal((await call(dflt, 'memory_forget', { memory_id: id })).isError, true);
    assert.equal((await call(dflt, 'memory_list', { user_id: 'dana' })).structuredContent.total, 0);
    // Still there in its own workspace, and REST agrees.
    assert.equal((await call(ws2, 'memory_get', { memory_id: id })).isError, false);
    const viaRest = await rest(server.base, 'GET', `${P4('ws2')}/memories/${id}`, KEY);
    assert.equal(viaRest.status, 200);
    // A session opened in ws2 is unknown in default.
    const s = await rawSession(`${server.base}/mcp/workspaces/ws2`, KEY);
    const crossed = await rawPost(`${server.base}/mcp`, { jsonrpc: '2.0', id: 1, method: 'ping' },
      { ...s.headers });
    assert.equal(crossed.status, 404);
  });

  test('malformed calls get the spec\'s errors and store nothing', async () => {
    const url = `${server.base}/mcp`;
    const s = await rawSession(url, KEY);
    const rpcError = async (body, httpStatus, code) => {
      const r = await s.post(body);
      assert.equal(r.status, httpStatus, `${typeof body === 'string' ? body : JSON.stringify(body)} -> ${r.text}`);
      assert.equal(r.body.error.code, code, r.text);
      return r;
    };
    // JSON-RPC level.
    await rpcError('{"jsonrpc":"2.0","id":1,', 400, -32700);
    await rpcError('{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}', 400, -32700);
    await rpcError({ id: 1, method: 'ping' }, 400, -32600);
    await rpcError({ jsonrpc: '2.0', id: null, method: 'ping' }, 400, -32600);
    await rpcError({ jsonrpc: '2.0', id: 1, method: 42 }, 400, -32600);
    await rpcError([{ jsonrpc: '2.0', id: 1, method: 'ping' }], 400, -32600);  // no batches in 2025-11-25
    await rpcError({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: [1] }, 400, -32602);
    await rpcError({ jsonrpc: '2.0', id: 2, method: 'resources/list' }, 200, -32601);
    await rpcError({ jsonrpc: '2.0', id: 3, method: 'tools/call', params: {} }, 200, -32602);
    await rpcError({ jsonrpc: '2.0', id: 4, method: 'tools/call', params: { name: 'memory_eat' } }, 200, -32602);
    await rpcError({ jsonrpc: '2.0', id: 5, method: 'tools/call', params: { name: 'memory_store', arguments: 'x' } }, 200, -32602);
    await rpcError({ jsonrpc: '2.0', id: 6, method: 'initialize', params: { protocolVersion: '2025-11-25' } }, 400, -32600);

    // Tool level: isError results whose text names the argument.
    const toolError = async (name, args, pattern) => {
      const r = await s.post({ jsonrpc: '2.0', id: 10, method: 'tools/call', params: { name, arguments: args } });
      assert.equal(r.status, 200, r.text);
      assert.equal(r.body.result.isError, true, r.text);
      assert.match(r.body.result.content[0].text, pattern);
      assert.equal(r.body.result.structuredContent, undefined);
    };
    const U = 'eve';
    await toolError('memory_store', { text: 'x' }, /user_id, agent_id, run_id is required/);
    await toolError('memory_store', { text: 'x', messages: 'y', user_id: U }, /exactly one of messages or text/);
    await toolError('memory_store', { user_id: U }, /exactly one of messages or text/);
    await toolError('memory_store', { messages: [{ role: 'bot', content: 'x' }], user_id: U }, /messages\[0\]\.role/);
    await toolError('memory_store', { messages: [], user_id: U }, /messages/);
    await toolError('memory_store', { text: 'x', user_id: U, colour: 'red' }, /colour is not a known argument/);
    await toolError('memory_store', { text: 'x', user_id: U, metadata: 'm' }, /metadata must be an object/);
    await toolError('memory_store', { text: 'x', user_id: U, infer: 'yes' }, /infer must be a boolean/);
    await toolError('memory_store', { text: 'x'.repeat(70000), user_id: U }, /text is too long/);
    await toolError('memory_store', { text: 'x', user_id: U, expiration_date: '2024-02-30' }, /expiration_date/);
    await toolError('memory_store', { text: 'x', user_id: U, metadata: { big: 'y'.repeat(70000) } }, /metadata is too large/);
    await toolError('memory_store', { text: 'x', user_id: 'u'.repeat(300) }, /user_id is too long/);
    await toolError('memory_recall', { query: 'q', user_id: U, filters: { colour: 'red' } }, /colour/);
    await toolError('memory_recall', { query: 'q', user_id: U, top_k: 0 }, /top_k must be at least 1/);
    await toolError('memory_recall', { query: '', user_id: U }, /query must not be empty/);
    await toolError('memory_recall', { query: 'q' }, /user_id/);
    await toolError('memory_recall', { query: 'q', user_id: U, threshold: 2 }, /threshold must be at most 1/);
    await toolError('memory_update', { memory_id: 'm-none' }, /at least one of text, metadata/);
    await toolError('memory_get', {}, /memory_id is required/);
    await toolError('knowledge_search', { kb_id: '../etc', query: 'q' }, /kb_id must not contain/);
    await toolError('skill_search', { query: 'q' }, /user_id is required/);

    // Transport level.
    const noSession = await rawPost(url, { jsonrpc: '2.0', id: 1, method: 'ping' }, { authorization: `Bearer ${KEY}` });
    assert.equal(noSession.status, 400);
    const stale = await rawPost(url, { jsonrpc: '2.0', id: 1, method: 'ping' },
      { authorization: `Bearer ${KEY}`, 'mcp-session-id': 'f'.repeat(48) });
    assert.equal(stale.status, 404);
    assert.equal((await s.post({ jsonrpc: '2.0', id: 1, method: 'ping' }, { 'mcp-protocol-version': '2099-01-01' })).status, 400);
    assert.equal((await s.post({ jsonrpc: '2.0', id: 1, method: 'ping' }, { origin: 'https://evil.example' })).status, 403);
    assert.equal((await s.post({ jsonrpc: '2.0', id: 1, method: 'ping' }, { 'content-type': 'text/plain' })).status, 415);
    assert.equal((await s.post({ jsonrpc: '2.0', id: 1, method: 'ping' }, { accept: 'text/event-stream' })).status, 406);
    const get = await fetch(url, { headers: { authorization: `Bearer ${KEY}`, accept: 'text/event-stream', 'mcp-session-id': s.id } });
    assert.equal(get.status, 405);
    // The session still works, and nothing was stored for the user.
    assert.deepEqual((await s.post({ jsonrpc: '2.0', id: 99, method: 'ping' })).body.result, {});
    const list = await rest(server.base, 'GET', `${P4('default')}/memories?user_id=${U}`, KEY);
    assert.equal(list.body.total, 0);
    assert.doesNotMatch(server.stderr(), /status=500|InternalServerError/);  // no 500 anywhere
  });

  test('version negotiation and 2025-03-26 batches', async () => {
    const url = `${server.base}/mcp`;
    const auth = { authorization: `Bearer ${KEY}` };
    const init = (v) => rawPost(url, { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: v, capabilities: {}, clientInfo: { name: 'x', version: '1' } } }, auth);
    assert.equal((await init('2025-06-18')).body.result.protocolVersion, '2025-06-18');
    assert.equal((await init('1999-01-01')).body.result.protocolVersion, '2025-11-25');
    const old = await rawSession(url, KEY, '2025-03-26');
    assert.equal(old.version, '2025-03-26');
    const batch = await old.post([
      { jsonrpc: '2.0', id: 1, method: 'ping' },
      { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 7 } },
      { jsonrpc: '2.0', id: 2, method: 'tools/list' },
    ]);
    assert.equal(batch.status, 200);
    assert.deepEqual(batch.body.map((r) => r.id), [1, 2]);
    assert.equal(batch.body[1].result.tools[0].outputSchema, undefined);  // not in 2025-03-26
  });

  test('DELETE ends a session', async () => {
    const { client, transport } = await connect(`${server.base}/mcp`, KEY);
    const id = transport.sessionId;
    assert.ok(id);
    await transport.terminateSession();
    const after = await rawPost(`${server.base}/mcp`, { jsonrpc: '2.0', id: 1, method: 'ping' },
      { authorization: `Bearer ${KEY}`, 'mcp-session-id': id });
    assert.equal(after.status, 404);
    void client;
  });

  test('engram mcp speaks stdio, relaying to the server', async () => {
    const spawnClient = async (key, extra = []) => {
      const transport = new sdk.StdioClientTransport({
        command: BINARY,
        args: ['mcp', '--url', server.base, ...(key ? ['--api-key', key] : []), ...extra],
        stderr: 'pipe',
      });
      const client = new sdk.Client({ name: 'engram-stdio-test', version: '1.0.0' });
      await client.connect(transport);
      clients.push(client);
      return client;
    };
    const client = await spawnClient(KEY);
    const { tools } = await client.listTools();
    assert.deepEqual(tools.map((t) => t.name).sort(), EXPECTED_TOOLS);
    const stored = await call(client, 'memory_store', { text: 'Frank climbs on Sundays', user_id: 'frank', infer: false });
    assert.equal(stored.structuredContent.status, 'SUCCEEDED');
    const recalled = await call(client, 'memory_recall', { query: 'climbs', user_id: 'frank' });
    assert.equal(recalled.structuredContent.results[0].memory, 'Frank climbs on Sundays');
    const bad = await call(client, 'memory_recall', { query: 'climbs' });
    assert.equal(bad.isError, true);
    await assert.rejects(client.callTool({ name: 'nope', arguments: {} }), /Unknown tool/);
    // Workspace limits apply through the relay too.
    const ws2 = await spawnClient(KEY_WS2, ['--workspace', 'ws2']);
    const none = await call(ws2, 'memory_recall', { query: 'climbs', user_id: 'frank' });
    assert.equal(none.structuredContent.results.length, 0);
    await assert.rejects(spawnClient(KEY_WS2), /403|Forbidden/);
    await assert.rejects(spawnClient('wrong'), /401|InvalidApiKey/);
  });
});
