// The mem0-compatible REST API driven by the unmodified official mem0 JS clients (mem0ai 3.3.1 and
// 2.4.6) against a real `engram serve`: every MemoryClient method the API serves, the typed errors
// the clients raise from its statuses, workspace isolation between keys, and one memory seen
// through the mem0, V4 and MCP APIs alike.
// Run: node --test tests/mem0/   (ENGRAM_BINARY, ENGRAM_NODE_DIR override the defaults)
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';

import {
  P4, guardFetch, loadMem0, loadSdk, mem0Raw, rejection, rest, skipReason, startServer,
  waitMem0Event, waitV4Event,
} from './harness.mjs';

const SKIP = skipReason();
if (SKIP) console.log(`# skipped: ${SKIP}`);

const KEY = 'k-all';  // every workspace; mem0 requests land in `default`
const K1 = 'k1';  // only ws1
const K2 = 'k2';  // only ws2
const UNKNOWN_ID = 'm-00000000-0000-7000-8000-000000000000';
const MEM0_DEFAULT_CATEGORIES = ['personal_details', 'family', 'professional_details', 'sports',
  'travel', 'food', 'music', 'health', 'technology', 'hobbies', 'fashion', 'entertainment',
  'milestones', 'user_preferences', 'misc'];
const CUSTOM_CATEGORIES = [
  { pets: 'pets: dogs, cats and other animals people keep and care for' },
  { finance: 'finance: money, banking, salary, budgets and taxes' },
];
const DOG = 'My dog Rex is a golden retriever who loves to fetch tennis balls';
const TAXES = 'I pay my income taxes through my bank account every April';

const idsOf = (results) => results.map((r) => r.id).sort();
const sorted = (...ids) => [...ids].sort();

// The body of a client error: the clients put the server's response text in the message.
function detailOf(err) {
  const body = JSON.parse(err.message);
  assert.equal(typeof body.detail, 'string', err.message);
  assert.ok(body.detail.length > 0);
  return body.detail;
}

// Asserts a typed client error: class (by the module's export), errorCode and optionally detail.
function assertError(err, mod, className, status, detailPattern) {
  assert.ok(err instanceof mod[className], `expected ${className}, got ${err.name}: ${err.message}`);
  assert.equal(err.name, className);
  assert.equal(err.errorCode, `HTTP_${status}`, err.message);
  if (detailPattern) assert.match(detailOf(err), detailPattern);
}

function assertScoresDescending(results) {
  for (const r of results) {
    assert.equal(typeof r.score, 'number');
    assert.ok(r.score >= 0 && r.score <= 1, `score ${r.score}`);
  }
  for (let i = 1; i < results.length; i++) assert.ok(results[i - 1].score >= results[i].score);
}

describe('mem0 clients against engram serve', { skip: SKIP || false }, () => {
  let server;
  let guard;
  let sdk;
  let v3;
  let v2;

  before(async () => {
    v3 = loadMem0('mem0ai-v3');
    v2 = loadMem0('mem0ai-v2');
    sdk = await loadSdk();
    server = await startServer(['--api-key', KEY, '--api-key', `${K1}:ws1`, '--api-key', `${K2}:ws2`]);
    guard = guardFetch(server.base);
  });
  after(async () => {
    if (guard) guard.restore();
    if (server) await server.stop();
  });

  // 3.x add: {message, status: PENDING, eventId}; waits for the event and returns it.
  async function add3(client, key, messages, options) {
    const r = await client.add(messages, options);
    assert.equal(r.status, 'PENDING', JSON.stringify(r));
    assert.match(r.eventId, /^me-/);
    const ev = await waitMem0Event(server.base, key, r.eventId);
    assert.equal(ev.status, 'SUCCEEDED', ev.error_message);
    assert.equal(ev.id, r.eventId);
    assert.equal(ev.event_type, 'ADD');
    return ev;
  }
  // 2.x add: [{message, status: PENDING, event_id}]; waits for the event and returns it.
  async function add2(client, key, messages, options) {
    const r = await client.add(messages, options);
    assert.ok(Array.isArray(r), JSON.stringify(r));
    assert.equal(r.length, 1);
    assert.equal(r[0].status, 'PENDING');
    assert.match(r[0].event_id, /^me-/);
    const ev = await waitMem0Event(server.base, key, r[0].event_id);
    assert.equal(ev.status, 'SUCCEEDED', ev.error_message);
    return ev;
  }
  const onlyAdded = (ev) => {
    assert.equal(ev.results.length, 1, JSON.stringify(ev.results));
    assert.equal(ev.results[0].event, 'ADD');
    assert.match(ev.results[0].id, /^m-/);
    return ev.results[0].id;
  };

  test('GET /v1/ping/ names the organisation and the workspace of the key', async () => {
    const all = await mem0Raw(server.base, 'GET', '/v1/ping/', KEY);
    assert.equal(all.status, 200);
    assert.deepEqual(all.body, { status: 'ok', org_id: 'engram', project_id: 'default', user_email: null });
    const one = await mem0Raw(server.base, 'GET', '/v1/ping/', K1);
    assert.equal(one.body.project_id, 'ws1');
    const c3 = new v3.MemoryClient({ apiKey: K2, host: server.base });
    await c3.ping();
    assert.equal(c3.organizationId, 'engram');
    assert.equal(c3.projectId, 'ws2');
    const c2 = new v2.MemoryClient({ apiKey: K1, host: server.base });
    await c2.ping();
    assert.equal(c2.projectId, 'ws1');
  });

  describe('mem0ai 3.3.1', () => {
    const U = 'v3-alice';  // verbatim memory, updated then deleted
    const UX = 'v3-bob';  // inferred memories
    const US = 'v3-carol';  // three memories in three scopes
    const UC = 'v3-dana';  // categories
    const AGENT = 'v3-barista';
    const APP = 'v3-cafe-app';
    let c;
    let hikingId;
    const scoped = {};  // agent, app, user -> id

    before(() => { c = new v3.MemoryClient({ apiKey: KEY, host: server.base }); });

    test('add with infer false stores the message verbatim; get returns the memory object', async () => {
      const text = 'I love hiking in the Swiss Alps';
      const ev = await add3(c, KEY, [{ role: 'user', content: text }],
        { userId: U, infer: false, metadata: { source: 'test' } });
      hikingId = onlyAdded(ev);
      assert.equal(ev.results[0].memory, text);
      const m = await c.get(hikingId);
      assert.equal(m.id, hikingId);
      assert.equal(m.memory, text);
      assert.equal(m.userId, U);
      assert.equal(m.agentId, null);
      assert.equal(m.appId, null);
      assert.equal(m.runId, null);
      assert.deepEqual(m.metadata, { source: 'test' });
      assert.equal(m.expirationDate, null);
      assert.equal(m.immutable, false);
      assert.match(m.createdAt, /^\d{4}-\d\d-\d\dT/);
      assert.match(m.updatedAt, /^\d{4}-\d\d-\d\dT/);
      // The built-in embedder is on: the memory gets some of mem0's default categories.
      assert.ok(Array.isArray(m.categories) && m.categories.length > 0, JSON.stringify(m.categories));
      for (const cat of m.categories) assert.ok(MEM0_DEFAULT_CATEGORIES.includes(cat), cat);
      // The event's results name the memory's scope as well (mem0's event object).
      assert.equal(ev.results[0].user_id, U, JSON.stringify(ev.results[0]));
    });

    test('add with infer true extracts facts from the conversation', async () => {
      const ev = await add3(c, KEY, [
        { role: 'user', content: 'I live in Lisbon and I work at Acme.' },
        { role: 'assistant', content: 'Noted!' },
      ], { userId: UX });
      assert.ok(ev.results.length >= 1);
      assert.ok(ev.results.some((r) => r.event === 'ADD' && /Lisbon/.test(r.memory)), JSON.stringify(ev.results));
      const all = await c.getAll({ filters: { user_id: UX } });
      assert.equal(all.count, ev.results.length);
      assert.ok(all.results.some((r) => /Lisbon/.test(r.memory)));
      assert.ok(all.results.every((r) => r.userId === UX));
    });

    test('search: a simple filter, nested AND/OR over agent_id and app_id, app_id alone', async () => {
      for (const [scope, text, extra] of [
        ['agent', 'Orders an espresso coffee every morning', { agentId: AGENT }],
        ['app', 'Drinks decaf coffee after lunch', { appId: APP }],
        ['user', 'Never takes sugar in coffee', {}],
      ]) {
        scoped[scope] = onlyAdded(await add3(c, KEY, text, { userId: US, infer: false, ...extra }));
      }
      const simple = await c.search('coffee', { filters: { user_id: US }, topK: 10 });
      assert.deepEqual(idsOf(simple.results), sorted(scoped.agent, scoped.app, scoped.user));
      assertScoresDescending(simple.results);
      for (const r of simple.results) {
        assert.equal(r.userId, US);
        assert.match(r.memory, /coffee/);
      }
      const nested = await c.search('coffee', {
        filters: { AND: [{ user_id: US }, { OR: [{ agent_id: AGENT }, { app_id: APP }] }] },
      });
      assert.deepEqual(idsOf(nested.results), sorted(scoped.agent, scoped.app));
      const byId = Object.fromEntries(nested.results.map((r) => [r.id, r]));
      assert.equal(byId[scoped.agent].agentId, AGENT);
      assert.equal(byId[scoped.agent].appId, null);
      assert.equal(byId[scoped.app].appId, APP);
      const app = await c.search('coffee', { filters: { app_id: APP } });
      assert.deepEqual(idsOf(app.results), [scoped.app]);
      const top1 = await c.search('coffee', { filters: { user_id: US }, topK: 1 });
      assert.equal(top1.results.length, 1);
    });

    test('categories: custom categories assigned at add, filtered by `in` and by the categories field', async () => {
      const dog = onlyAdded(await add3(c, KEY, [{ role: 'user', content: DOG }],
        { userId: UC, infer: false, customCategories: CUSTOM_CATEGORIES }));
      const taxes = onlyAdded(await add3(c, KEY, [{ role: 'user', content: TAXES }],
        { userId: UC, infer: false, customCategories: CUSTOM_CATEGORIES }));
      const dogCats = (await c.get(dog)).categories;
      const taxCats = (await c.get(taxes)).categories;
      assert.ok(dogCats.includes('pets') && !dogCats.includes('finance'), JSON.stringify(dogCats));
      assert.ok(taxCats.includes('finance') && !taxCats.includes('pets'), JSON.stringify(taxCats));
      const query = 'dog retriever taxes bank';
      const pets = await c.search(query, { filters: { AND: [{ user_id: UC }, { categories: { in: ['pets'] } }] } });
      assert.deepEqual(idsOf(pets.results), [dog]);
      const finance = await c.search(query, { filters: { user_id: UC }, categories: ['finance'] });
      assert.deepEqual(idsOf(finance.results), [taxes]);
      const both = await c.search(query, { filters: { user_id: UC } });
      assert.deepEqual(idsOf(both.results), sorted(dog, taxes));
    });

    test('getAll pages with page/pageSize: count, next and previous', async () => {
      const p1 = await c.getAll({ filters: { user_id: US }, page: 1, pageSize: 2 });
      assert.equal(p1.count, 3);
      assert.equal(p1.results.length, 2);
      assert.equal(typeof p1.next, 'string');
      assert.match(p1.next, /page=2/);
      assert.equal(p1.previous, null);
      const p2 = await c.getAll({ filters: { user_id: US }, page: 2, pageSize: 2 });
      assert.equal(p2.count, 3);
      assert.equal(p2.results.length, 1);
      assert.equal(p2.next, null);
      assert.equal(typeof p2.previous, 'string');
      assert.match(p2.previous, /page=1/);
      assert.deepEqual(idsOf([...p1.results, ...p2.results]), sorted(scoped.agent, scoped.app, scoped.user));
      const nested = await c.getAll({ filters: { AND: [{ user_id: US }, { agent_id: AGENT }] } });
      assert.deepEqual(idsOf(nested.results), [scoped.agent]);
    });

    test('update text and metadata, then history lists ADD then UPDATE', async () => {
      const before_ = 'I love hiking in the Swiss Alps';
      const after_ = 'I love hiking in the Dolomites';
      const u = await c.update(hikingId, { text: after_, metadata: { source: 'test', trip: '2025' } });
      assert.equal(u.id, hikingId);
      assert.equal(u.memory, after_);
      const m = await c.get(hikingId);
      assert.equal(m.memory, after_);
      assert.equal(m.metadata.trip, '2025');
      const found = await c.search('Dolomites', { filters: { user_id: U } });
      assert.equal(found.results[0].id, hikingId);
      const h = await c.history(hikingId);
      assert.ok(Array.isArray(h), JSON.stringify(h));
      assert.deepEqual(h.map((r) => r.event), ['ADD', 'UPDATE']);
      for (const r of h) assert.equal(r.memoryId, hikingId);
      assert.equal(h[0].newMemory, before_);
      assert.equal(h[1].oldMemory, before_);
      assert.equal(h[1].newMemory, after_);
      const meta = await c.update(hikingId, { metadata: { mood: 'happy' } });
      assert.equal(meta.metadata.mood, 'happy');
      assert.equal((await c.get(hikingId)).memory, after_);
    });

    test('users lists entities with counts and pages; deleteUsers removes one entity', async () => {
      const all = await c.users();
      const find = (res, type, name) => res.results.find((e) => e.type === type && e.name === name);
      assert.equal(find(all, 'user', US)?.totalMemories, 3);
      assert.equal(find(all, 'agent', AGENT)?.totalMemories, 1);
      assert.equal(find(all, 'app', APP)?.totalMemories, 1);
      assert.equal(find(all, 'user', UX)?.totalMemories >= 1, true);
      assert.equal(all.count, all.results.length);
      const page = await c.users({ page: 1, pageSize: 1 });
      assert.equal(page.results.length, 1);
      assert.equal(page.count, all.count);
      assert.equal(typeof page.next, 'string');
      const r = await c.deleteUsers({ userId: UX });
      assert.equal(r.message, 'Entity deleted successfully.');
      assert.equal((await c.getAll({ filters: { user_id: UX } })).count, 0);
      assert.equal(find(await c.users(), 'user', UX), undefined);
    });

    test('batchUpdate and batchDelete; a batch naming an unknown memory changes nothing', async () => {
      const up = await c.batchUpdate([
        { memoryId: scoped.agent, text: 'Orders a ristretto coffee every morning' },
        { memoryId: scoped.app, text: 'Drinks oat milk coffee after lunch' },
      ]);
      assert.equal(up.message, 'Successfully updated 2 memories');
      assert.equal((await c.get(scoped.agent)).memory, 'Orders a ristretto coffee every morning');
      assert.equal((await c.get(scoped.app)).memory, 'Drinks oat milk coffee after lunch');
      const bad = await rejection(c.batchUpdate([
        { memoryId: scoped.user, text: 'changed' }, { memoryId: UNKNOWN_ID, text: 'changed' }]));
      assert.ok(bad instanceof v3.MemoryError, bad.message);
      assert.equal((await c.get(scoped.user)).memory, 'Never takes sugar in coffee');
      const del = await c.batchDelete([scoped.agent, scoped.app]);
      assert.equal(del.message, 'Successfully deleted 2 memories');
      assertError(await rejection(c.get(scoped.agent)), v3, 'MemoryNotFoundError', 404);
      assert.deepEqual(idsOf((await c.getAll({ filters: { user_id: US } })).results), [scoped.user]);
    });

    test('feedback is recorded; unknown memory and unknown feedback value are refused', async () => {
      const f = await c.feedback({ memoryId: scoped.user, feedback: 'POSITIVE', feedbackReason: 'accurate' });
      assert.equal(f.memoryId, scoped.user);
      assert.equal(f.feedback, 'POSITIVE');
      assert.equal(f.feedbackReason, 'accurate');
      assert.equal(typeof f.id, 'string');
      assertError(await rejection(c.feedback({ memoryId: UNKNOWN_ID, feedback: 'NEGATIVE' })),
        v3, 'MemoryNotFoundError', 404);
      assertError(await rejection(c.feedback({ memoryId: scoped.user, feedback: 'GREAT' })),
        v3, 'ValidationError', 400, /feedback/);
    });

    test('delete one memory, deleteAll of a user; deleteAll without an entity is refused', async () => {
      const d = await c.delete(hikingId);
      assert.equal(d.message, 'Memory deleted successfully!');
      assertError(await rejection(c.get(hikingId)), v3, 'MemoryNotFoundError', 404);
      assertError(await rejection(c.delete(hikingId)), v3, 'MemoryNotFoundError', 404);
      const all = await c.deleteAll({ userId: UC });
      assert.equal(all.message, 'Memories deleted successfully!');
      assert.equal((await c.getAll({ filters: { user_id: UC } })).count, 0);
      assertError(await rejection(c.deleteAll({})), v3, 'ValidationError', 400);
      assert.equal((await c.getAll({ filters: { user_id: US } })).count, 1);
    });

    test('typed errors: wrong key, unknown id, bad requests, unsupported features', async () => {
      const wrong = new v3.MemoryClient({ apiKey: 'not-a-key', host: server.base });
      assertError(await rejection(wrong.getAll({ filters: { user_id: US } })), v3, 'AuthenticationError', 401);
      assertError(await rejection(wrong.add('hello', { userId: US })), v3, 'AuthenticationError', 401);
      assertError(await rejection(c.get(UNKNOWN_ID)), v3, 'MemoryNotFoundError', 404);
      assertError(await rejection(c.history(UNKNOWN_ID)), v3, 'MemoryNotFoundError', 404);
      assertError(await rejection(c.update(UNKNOWN_ID, { text: 'x' })), v3, 'MemoryNotFoundError', 404);
      assertError(await rejection(c.search('coffee')), v3, 'ValidationError', 400);
      assertError(await rejection(c.search('coffee', { filters: { colour: 'red' } })), v3, 'ValidationError', 400, /colour/);
      assertError(await rejection(c.update(scoped.user, { text: 5 })), v3, 'ValidationError', 400, /text/);
      assertError(await rejection(c.add([{ role: 'user', content: 'no scope' }], { infer: false })),
        v3, 'ValidationError', 400, /user_id|agent_id|app_id|run_id/);
      assertError(await rejection(c.getAll({ filters: { user_id: US }, page: 1, pageSize: 0 })),
        v3, 'ValidationError', 400, /page_size/);
      const hooks = await rejection(c.getWebhooks({ projectId: 'default' }));
      assertError(hooks, v3, 'MemoryError', 501, /webhook/i);
      const exp = await rejection(c.createMemoryExport({ filters: { user_id: US }, schema: { type: 'object' } }));
      assertError(exp, v3, 'MemoryError', 501, /export/i);
      const graph = await rejection(c.add('Graph me', { userId: US, enableGraph: true }));
      assertError(graph, v3, 'MemoryError', 501, /enable_graph|graph/i);
      // Nothing was stored by any refused add.
      assert.equal((await c.getAll({ filters: { user_id: US } })).count, 1);
    });
  });

  describe('mem0ai 2.4.6', () => {
    const U = 'v2-alice';
    const UX = 'v2-bob';
    const US = 'v2-carol';
    const UC = 'v2-dana';
    const AGENT = 'v2-barista';
    const APP = 'v2-cafe-app';
    let c;
    let hikingId;
    const scoped = {};

    before(() => { c = new v2.MemoryClient({ apiKey: KEY, host: server.base }); });

    test('add with infer false stores verbatim; async_mode false answers the memories; get', async () => {
      const text = 'I love hiking in the Pyrenees';
      const ev = await add2(c, KEY, [{ role: 'user', content: text }],
        { user_id: U, infer: false, metadata: { source: 'test' } });
      hikingId = onlyAdded(ev);
      const m = await c.get(hikingId);
      assert.equal(m.id, hikingId);
      assert.equal(m.memory, text);
      assert.equal(m.user_id, U);
      assert.equal(m.agent_id, null);
      assert.equal(m.app_id, null);
      assert.equal(m.run_id, null);
      assert.deepEqual(m.metadata, { source: 'test' });
      assert.equal(m.expiration_date, null);
      assert.equal(m.immutable, false);
      assert.ok(Array.isArray(m.categories) && m.categories.length > 0, JSON.stringify(m.categories));
      const sync = await c.add([{ role: 'user', content: 'I keep my bicycle in the garage' }],
        { user_id: U, infer: false, async_mode: false });
      assert.ok(Array.isArray(sync), JSON.stringify(sync));
      assert.equal(sync.length, 1);
      assert.match(sync[0].id, /^m-/);
      assert.equal(sync[0].memory, 'I keep my bicycle in the garage');
      assert.equal(sync[0].event, 'ADD');
      assert.equal((await c.get(sync[0].id)).user_id, U);
    });

    test('add with infer true extracts facts from the conversation', async () => {
      const ev = await add2(c, KEY, [
        { role: 'user', content: 'I live in Porto and I work at Globex.' },
        { role: 'assistant', content: 'Noted!' },
      ], { user_id: UX });
      assert.ok(ev.results.some((r) => r.event === 'ADD' && /Porto/.test(r.memory)), JSON.stringify(ev.results));
      const all = await c.getAll({ user_id: UX });
      assert.ok(Array.isArray(all), JSON.stringify(all));
      assert.ok(all.some((r) => /Porto/.test(r.memory)));
    });

    test('search: top-level user_id (v1), nested filters (api_version v2), output_format v1.1', async () => {
      for (const [scope, text, extra] of [
        ['agent', 'Orders an espresso coffee every morning', { agent_id: AGENT }],
        ['app', 'Drinks decaf coffee after lunch', { app_id: APP }],
        ['user', 'Never takes sugar in coffee', {}],
      ]) {
        scoped[scope] = onlyAdded(await add2(c, KEY, text, { user_id: US, infer: false, ...extra }));
      }
      const v1 = await c.search('coffee', { user_id: US });
      assert.ok(Array.isArray(v1), JSON.stringify(v1));
      assert.deepEqual(idsOf(v1), sorted(scoped.agent, scoped.app, scoped.user));
      assertScoresDescending(v1);
      for (const r of v1) assert.equal(r.user_id, US);
      const nested = await c.search('coffee', {
        filters: { AND: [{ user_id: US }, { OR: [{ agent_id: AGENT }, { app_id: APP }] }] },
        api_version: 'v2',
      });
      assert.ok(Array.isArray(nested), JSON.stringify(nested));
      assert.deepEqual(idsOf(nested), sorted(scoped.agent, scoped.app));
      const agentOnly = await c.search('coffee', { user_id: US, agent_id: AGENT });
      assert.deepEqual(idsOf(agentOnly), [scoped.agent]);
      const wrapped = await c.search('coffee', { user_id: US, output_format: 'v1.1', top_k: 2 });
      assert.ok(Array.isArray(wrapped.results), JSON.stringify(wrapped));
      assert.equal(wrapped.results.length, 2);
    });

    test('categories: custom categories filtered with contains and the categories field', async () => {
      const dog = onlyAdded(await add2(c, KEY, [{ role: 'user', content: DOG }],
        { user_id: UC, infer: false, custom_categories: CUSTOM_CATEGORIES }));
      const taxes = onlyAdded(await add2(c, KEY, [{ role: 'user', content: TAXES }],
        { user_id: UC, infer: false, custom_categories: CUSTOM_CATEGORIES }));
      assert.ok((await c.get(dog)).categories.includes('pets'));
      assert.ok((await c.get(taxes)).categories.includes('finance'));
      const query = 'dog retriever taxes bank';
      const pets = await c.search(query, {
        filters: { AND: [{ user_id: UC }, { categories: { contains: 'pets' } }] }, api_version: 'v2',
      });
      assert.deepEqual(idsOf(pets), [dog]);
      const finance = await c.search(query, { user_id: UC, categories: ['finance'] });
      assert.deepEqual(idsOf(finance), [taxes]);
    });

    test('getAll: v1 bare array and page/page_size, api_version v2 with filters and pages', async () => {
      const bare = await c.getAll({ user_id: US });
      assert.ok(Array.isArray(bare), JSON.stringify(bare));
      assert.deepEqual(idsOf(bare), sorted(scoped.agent, scoped.app, scoped.user));
      const g1 = await c.getAll({ user_id: US, page: 1, page_size: 2 });
      assert.equal(g1.count, 3);
      assert.equal(g1.results.length, 2);
      assert.match(g1.next, /page=2/);
      assert.equal(g1.previous, null);
      const p1 = await c.getAll({ filters: { user_id: US }, api_version: 'v2', page: 1, page_size: 2 });
      assert.equal(p1.count, 3);
      assert.equal(p1.results.length, 2);
      assert.match(p1.next, /page=2/);
      assert.equal(p1.previous, null);
      const p2 = await c.getAll({ filters: { user_id: US }, api_version: 'v2', page: 2, page_size: 2 });
      assert.equal(p2.count, 3);
      assert.equal(p2.results.length, 1);
      assert.equal(p2.next, null);
      assert.match(p2.previous, /page=1/);
      assert.deepEqual(idsOf([...p1.results, ...p2.results]), sorted(scoped.agent, scoped.app, scoped.user));
      const v2all = await c.getAll({ filters: { AND: [{ user_id: US }, { app_id: APP }] }, api_version: 'v2' });
      assert.ok(Array.isArray(v2all), JSON.stringify(v2all));
      assert.deepEqual(idsOf(v2all), [scoped.app]);
    });

    test('update text and metadata, then history lists ADD then UPDATE', async () => {
      const before_ = 'I love hiking in the Pyrenees';
      const after_ = 'I love hiking in the Picos de Europa';
      const u = await c.update(hikingId, { text: after_, metadata: { source: 'test', trip: '2025' } });
      assert.equal(u.id, hikingId);
      assert.equal(u.memory, after_);
      const m = await c.get(hikingId);
      assert.equal(m.memory, after_);
      assert.equal(m.metadata.trip, '2025');
      const h = await c.history(hikingId);
      assert.ok(Array.isArray(h), JSON.stringify(h));
      assert.deepEqual(h.map((r) => r.event), ['ADD', 'UPDATE']);
      for (const r of h) assert.equal(r.memory_id, hikingId);
      assert.equal(h[0].new_memory, before_);
      assert.equal(h[1].old_memory, before_);
      assert.equal(h[1].new_memory, after_);
      assert.equal(h[1].user_id, U);
    });

    test('users lists entities; deleteUsers (axios, org_id/project_id params) removes one', async () => {
      const all = await c.users();
      const find = (res, type, name) => res.results.find((e) => e.type === type && e.name === name);
      assert.equal(find(all, 'user', US)?.total_memories, 3);
      assert.equal(find(all, 'agent', AGENT)?.total_memories, 1);
      assert.equal(find(all, 'app', APP)?.total_memories, 1);
      const r = await c.deleteUsers({ user_id: UX });
      assert.equal(r.message, 'Entity deleted successfully.');
      assert.deepEqual(await c.getAll({ user_id: UX }), []);
      assert.equal(find(await c.users(), 'user', UX), undefined);
      const agent = await c.deleteUsers({ agent_id: AGENT });
      assert.equal(agent.message, 'Entity deleted successfully.');
      assertError(await rejection(c.get(scoped.agent)), v2, 'MemoryNotFoundError', 404);
      assert.deepEqual(idsOf(await c.getAll({ user_id: US })), sorted(scoped.app, scoped.user));
    });

    test('batchUpdate and batchDelete', async () => {
      const up = await c.batchUpdate([
        { memoryId: scoped.app, text: 'Drinks oat milk coffee after lunch' },
        { memoryId: scoped.user, text: 'Never takes honey in coffee' },
      ]);
      assert.equal(up.message, 'Successfully updated 2 memories');
      assert.equal((await c.get(scoped.user)).memory, 'Never takes honey in coffee');
      const del = await c.batchDelete([scoped.app]);
      assert.equal(del.message, 'Successfully deleted 1 memories');
      assertError(await rejection(c.get(scoped.app)), v2, 'MemoryNotFoundError', 404);
      const unknown = await rejection(c.batchDelete([UNKNOWN_ID]));
      assert.ok(unknown instanceof v2.MemoryError && /^HTTP_4\d\d$/.test(unknown.errorCode), unknown.message);
    });

    test('feedback', async () => {
      const f = await c.feedback({ memory_id: scoped.user, feedback: 'VERY_NEGATIVE', feedback_reason: 'wrong' });
      assert.equal(f.memory_id, scoped.user);
      assert.equal(f.feedback, 'VERY_NEGATIVE');
      assert.equal(f.feedback_reason, 'wrong');
      assertError(await rejection(c.feedback({ memory_id: UNKNOWN_ID, feedback: 'POSITIVE' })),
        v2, 'MemoryNotFoundError', 404);
    });

    test('delete and deleteAll({user_id})', async () => {
      const d = await c.delete(hikingId);
      assert.equal(d.message, 'Memory deleted successfully!');
      assertError(await rejection(c.get(hikingId)), v2, 'MemoryNotFoundError', 404);
      const all = await c.deleteAll({ user_id: UC });
      assert.equal(all.message, 'Memories deleted successfully!');
      assert.deepEqual(await c.getAll({ user_id: UC }), []);
      assertError(await rejection(c.deleteAll({})), v2, 'ValidationError', 400);
    });

    test('typed errors: wrong key, unknown id, bad requests, unsupported features', async () => {
      const wrong = new v2.MemoryClient({ apiKey: 'not-a-key', host: server.base });
      assertError(await rejection(wrong.add('hello', { user_id: US })), v2, 'AuthenticationError', 401);
      assertError(await rejection(c.get(UNKNOWN_ID)), v2, 'MemoryNotFoundError', 404);
      assertError(await rejection(c.search('coffee', {})), v2, 'ValidationError', 400);
      assertError(await rejection(c.update(scoped.user, { text: 5 })), v2, 'ValidationError', 400, /text/);
      assertError(await rejection(c.add([{ role: 'user', content: 'no scope' }], { infer: false })),
        v2, 'ValidationError', 400, /user_id|agent_id|app_id|run_id/);
      assertError(await rejection(c.getWebhooks()), v2, 'MemoryError', 501, /webhook/i);
      assertError(await rejection(c.createMemoryExport({ filters: { user_id: US }, schema: { type: 'object' } })),
        v2, 'MemoryError', 501, /export/i);
      assertError(await rejection(c.getProject({ fields: ['custom_instructions'] })), v2, 'MemoryError', 501, /project/i);
      assert.deepEqual(idsOf(await c.getAll({ user_id: US })), [scoped.user]);
    });
  });

  // Keys limited to ws1 and ws2: neither client sees, changes or deletes the other's memories.
  for (const [label, mod, camel] of [['3.3.1', () => v3, true], ['2.4.6', () => v2, false]]) {
    test(`isolation between workspaces through mem0ai ${label}`, async () => {
      const m = mod();
      const uid = (name) => (camel ? { userId: name } : { user_id: name });
      const tag = camel ? 'v3' : 'v2';
      const SHARED = `${tag}-iso-shared`;
      const ONLY1 = `${tag}-iso-only1`;
      const c1 = new m.MemoryClient({ apiKey: K1, host: server.base });
      const c2 = new m.MemoryClient({ apiKey: K2, host: server.base });
      const cAll = new m.MemoryClient({ apiKey: KEY, host: server.base });
      const addOne = async (client, key, text, user) => {
        const r = await client.add([{ role: 'user', content: text }], { ...uid(user), infer: false });
        const ev = await waitMem0Event(server.base, key, camel ? r.eventId : r[0].event_id);
        assert.equal(ev.status, 'SUCCEEDED', ev.error_message);
        return onlyAdded(ev);
      };
      const id1 = await addOne(c1, K1, 'The vault code is 1234', SHARED);
      const only1 = await addOne(c1, K1, 'The spare key is under the mat', ONLY1);
      const id2 = await addOne(c2, K2, 'The vault code is 9876', SHARED);
      const search = (client, user) => (camel
        ? client.search('vault code', { filters: { user_id: user } }).then((r) => r.results)
        : client.search('vault code', { user_id: user }));
      const list = (client, user) => (camel
        ? client.getAll({ filters: { user_id: user } }).then((r) => r.results)
        : client.getAll({ user_id: user }));
      assert.deepEqual(idsOf(await search(c1, SHARED)), [id1]);
      assert.deepEqual(idsOf(await search(c2, SHARED)), [id2]);
      assert.deepEqual(idsOf(await list(c1, SHARED)), [id1]);
      assert.deepEqual(idsOf(await list(c2, SHARED)), [id2]);
      assert.deepEqual(await search(cAll, SHARED), []);
      assert.deepEqual(await list(c2, ONLY1), []);
      const names = (await c2.users()).results.map((e) => e.name);
      assert.ok(names.includes(SHARED) && !names.includes(ONLY1), JSON.stringify(names));
      for (const call of [() => c2.get(id1), () => c2.history(id1), () => c2.update(id1, { text: 'stolen' }),
        () => c2.delete(id1), () => cAll.get(id1)]) {
        assertError(await rejection(call()), m, 'MemoryNotFoundError', 404);
      }
      await rejection(c2.batchDelete([id1]));
      await rejection(c2.batchUpdate([{ memoryId: id1, text: 'stolen' }]));
      await c2.deleteAll(uid(SHARED));
      await c2.deleteUsers(uid(ONLY1)).catch(() => {});  // unknown in ws2: refused or a no-op
      assert.equal((await c1.get(id1)).memory, 'The vault code is 1234');
      assert.equal((await c1.get(only1)).memory, 'The spare key is under the mat');
      assert.deepEqual(await list(c2, SHARED), []);
      if (!camel) {
        // 2.x sends project_id: a key valid everywhere may name ws1; a key limited to ws2 may not.
        const named = new m.MemoryClient({ apiKey: KEY, host: server.base, organizationId: 'engram', projectId: 'ws1' });
        assert.deepEqual(idsOf(await named.getAll({ user_id: SHARED })), [id1]);
        assert.deepEqual(idsOf(await named.search('vault code', { user_id: SHARED })), [id1]);
        const forbidden = new m.MemoryClient({ apiKey: K2, host: server.base, organizationId: 'engram', projectId: 'ws1' });
        assertError(await rejection(forbidden.getAll({ user_id: SHARED })), m, 'AuthenticationError', 403);
      }
    });
  }

  test('one memory store: mem0 adds are found by V4 search and MCP recall, V4 adds by mem0', async () => {
    const c3 = new v3.MemoryClient({ apiKey: KEY, host: server.base });
    const c2 = new v2.MemoryClient({ apiKey: KEY, host: server.base });
    const text = 'Carol keeps her passport in the blue drawer';
    const mem0Id = onlyAdded(await add3(c3, KEY, [{ role: 'user', content: text }],
      { userId: 'x-carol', infer: false }));
    const v4 = await rest(server.base, 'POST', `${P4('default')}/memories/search`, KEY,
      { query: 'passport drawer', user_id: 'x-carol' });
    assert.equal(v4.status, 200, JSON.stringify(v4.body));
    assert.equal(v4.body.results[0].id, mem0Id);
    assert.equal(v4.body.results[0].memory, text);
    const v4get = await rest(server.base, 'GET', `${P4('default')}/memories/${mem0Id}`, KEY);
    assert.equal(v4get.body.user_id, 'x-carol');

    const mcp = new sdk.Client({ name: 'engram-mem0-test', version: '1.0.0' });
    const transport = new sdk.StreamableHTTPClientTransport(new URL(`${server.base}/mcp`),
      { requestInit: { headers: { authorization: `Bearer ${KEY}` } } });
    await mcp.connect(transport);
    try {
      const recalled = await mcp.callTool({ name: 'memory_recall', arguments: { query: 'passport drawer', user_id: 'x-carol' } });
      assert.equal(recalled.isError, false, JSON.stringify(recalled));
      assert.equal(recalled.structuredContent.results[0].id, mem0Id);
      assert.equal(recalled.structuredContent.results[0].memory, text);
    } finally {
      await mcp.close();
    }

    const added = await rest(server.base, 'POST', `${P4('default')}/memories/add`, KEY, {
      messages: [{ role: 'user', content: 'Dave parks his car on level three' }], user_id: 'x-dave', infer: false,
    });
    assert.equal(added.status, 200, JSON.stringify(added.body));
    const ev = await waitV4Event(server.base, KEY, 'default', added.body.event_id);
    assert.equal(ev.status, 'SUCCEEDED', ev.error_message);
    const v4Id = ev.results[0];
    const found3 = await c3.search('car parking level', { filters: { user_id: 'x-dave' } });
    assert.deepEqual(idsOf(found3.results), [v4Id]);
    const got3 = await c3.get(v4Id);
    assert.equal(got3.memory, 'Dave parks his car on level three');
    assert.equal(got3.userId, 'x-dave');
    assert.equal(got3.appId, null);
    const found2 = await c2.search('car parking level', { user_id: 'x-dave' });
    assert.deepEqual(idsOf(found2), [v4Id]);
    assert.equal((await c2.get(v4Id)).memory, 'Dave parks his car on level three');
  });

  test('the clients sent nothing to any host but the server (telemetry off)', () => {
    assert.deepEqual(guard.foreign, []);
  });
});
