// The web console in a real browser: Debian's Chromium driven through chromedriver by the
// official WebDriver client (selenium-webdriver, installed by scripts/setup.sh into
// third_party/node) against a real `engram serve`. Screenshots of each view go to
// ENGRAM_CONSOLE_SCREENSHOTS (default: a temporary folder).
// Run: node --test tests/console/   (ENGRAM_BINARY, ENGRAM_NODE_DIR override the defaults)
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

import { BINARY, rest, startServer } from '../mcp/harness.mjs';

const NODE_DIR = process.env.ENGRAM_NODE_DIR || path.resolve(BINARY, '..', '..', 'third_party', 'node');
const WEBDRIVER = path.join(NODE_DIR, 'node_modules', 'selenium-webdriver');
const CHROMIUM = process.env.ENGRAM_CHROMIUM || '/usr/bin/chromium';
const CHROMEDRIVER = process.env.ENGRAM_CHROMEDRIVER || '/usr/bin/chromedriver';
const SHOTS = process.env.ENGRAM_CONSOLE_SCREENSHOTS || fs.mkdtempSync(path.join(os.tmpdir(), 'engram-console-'));

function skipReason() {
  if (!fs.existsSync(path.join(WEBDRIVER, 'package.json'))) return `selenium-webdriver not found in ${NODE_DIR} (run scripts/setup.sh)`;
  if (!fs.existsSync(CHROMIUM) || !fs.existsSync(CHROMEDRIVER)) return 'chromium and chromium-driver are not installed (run scripts/setup.sh)';
  if (!fs.existsSync(BINARY)) return `server binary not found at ${BINARY}`;
  return null;
}
const SKIP = skipReason();
if (SKIP) console.log(`# skipped: ${SKIP}`);

const KEY = 'k-all';
const KEY_A = 'k-a';
const P4 = (ws) => `/v4/openapi/workspaces/${ws}/memory/agentic-memory`;

// A ZIP archive of `entries` ([name, text]) with stored (uncompressed) members.
function storedZip(entries) {
  const crcTable = Array.from({ length: 256 }, (_, n) => {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    return c >>> 0;
  });
  const crc32 = (buf) => {
    let c = 0xffffffff;
    for (const b of buf) c = crcTable[(c ^ b) & 0xff] ^ (c >>> 8);
    return (c ^ 0xffffffff) >>> 0;
  };
  const locals = [];
  const centrals = [];
  let offset = 0;
  for (const [name, text] of entries) {
    const nameBytes = Buffer.from(name);
    const data = Buffer.from(text);
    const crc = crc32(data);
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0); local.writeUInt16LE(20, 4);
    local.writeUInt32LE(crc, 14); local.writeUInt32LE(data.length, 18); local.writeUInt32LE(data.length, 22);
    local.writeUInt16LE(nameBytes.length, 26);
    const central = Buffer.alloc(46);
    central.writeUInt32LE(0x02014b50, 0); central.writeUInt16LE(20, 4); central.writeUInt16LE(20, 6);
    central.writeUInt32LE(crc, 16); central.writeUInt32LE(data.length, 20); central.writeUInt32LE(data.length, 24);
    central.writeUInt16LE(nameBytes.length, 28); central.writeUInt32LE(offset, 42);
    locals.push(local, nameBytes, data);
    centrals.push(central, nameBytes);
    offset += 30 + nameBytes.length + data.length;
  }
  const dir = Buffer.concat(centrals);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0); end.writeUInt16LE(entries.length, 8); end.writeUInt16LE(entries.length, 10);
  end.writeUInt32LE(dir.length, 12); end.writeUInt32LE(offset, 16);
  return Buffer.concat([...locals, dir, end]);
}

describe('the web console', { skip: SKIP || false }, () => {
  let server;
  let driver;
  let By;
  let until;
  let memoryId;

  before(async () => {
    server = await startServer(['--embedder', 'none', '--retrieval', 'bm25',
      '--api-key', KEY, '--api-key', `${KEY_A}:wsa`]);
    const add = async (ws, user, text) => {
      const r = await rest(server.base, 'POST', `${P4(ws)}/memories/add`, KEY,
        { messages: [{ role: 'user', content: text }], user_id: user, infer: false });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      for (let i = 0; i < 200; i++) {
        const e = await rest(server.base, 'GET', `${P4(ws)}/events/${r.body.event_id}`, KEY);
        if (e.body.status === 'SUCCEEDED') return e.body.results?.[0] ?? e.body.events?.[0]?.id;
        await new Promise((res) => setTimeout(res, 50));
      }
      throw new Error('event did not finish');
    };
    await add('wsa', 'alice', 'Alice drinks oolong tea every morning');
    await add('wsb', 'bob', 'Bob keeps a secret garden');
    await add('wsa', 'carol', 'Carol brews oolong tea in a clay pot');
    await add('wsa', 'carol', 'Carol bought green tea for her sister Dana in Kyoto');
    // A Leaderboard conversation, for the playground's Leaderboard target.
    const lb = await rest(server.base, 'POST', '/leaderboard/add', KEY, {
      request_id: 'console-lb-1', user_id: 'lb-user', session_id: 's1',
      messages: [{ role: 'user', content: 'We paddled the red kayak across the bay.', timestamp: 1704067200000 },
        { role: 'assistant', content: 'That sounds like a calm morning on the water.', timestamp: 1704067260000 }],
    });
    assert.equal(lb.status, 200, JSON.stringify(lb.body));
    // A skill task in wsa, run to its end, for the events-and-tasks view.
    const task = await rest(server.base, 'POST', '/v3/openapi/workspaces/wsa/memory/agentic-memory/skills/add', KEY,
      { user_id: 'erin', messages: [{ role: 'user', content: 'How do I repot a fern?' },
        { role: 'assistant', content: '1. Water it the day before.\n2. Lift it out gently.\n3. Set it in fresh soil.' }] });
    assert.equal(task.status, 200, JSON.stringify(task.body));
    for (let i = 0; i < 200; i++) {
      const t = await rest(server.base, 'GET', `/v3/openapi/workspaces/wsa/memory/agentic-memory/skills/tasks/${task.body.result.task_id}`, KEY);
      if (t.body.result.status === 'completed') break;
      await new Promise((res) => setTimeout(res, 50));
    }
    const wd = await import(pathToFileURL(path.join(WEBDRIVER, 'index.js')).href);
    const chrome = await import(pathToFileURL(path.join(WEBDRIVER, 'chrome.js')).href);
    ({ By, until } = wd);
    const options = new chrome.Options()
      .addArguments('--headless=new', '--no-sandbox', '--disable-gpu', '--window-size=1280,900')
      .setChromeBinaryPath(CHROMIUM);
    driver = await new wd.Builder().forBrowser('chrome').setChromeOptions(options)
      .setChromeService(new chrome.ServiceBuilder(CHROMEDRIVER)).build();
  });
  after(async () => {
    if (driver) await driver.quit().catch(() => {});
    if (server) await server.stop();
    console.log(`# screenshots in ${SHOTS}`);
  });

  const shot = async (name) => {
    fs.writeFileSync(path.join(SHOTS, `${name}.png`), Buffer.from(await driver.takeScreenshot(), 'base64'));
  };
  const text = async (css, timeout = 10000) => {
    const e = await driver.wait(until.elementLocated(By.css(css)), timeout);
    await driver.wait(until.elementIsVisible(e), timeout);
    return e.getText();
  };
  const waitText = (css, pattern) => driver.wait(async () => {
    try { return pattern.test(await driver.findElement(By.css(css)).getText()); } catch { return false; }
  }, 10000, `${css} never matched ${pattern}`);
  const type = async (css, value) => {
    const e = await driver.findElement(By.css(css));
    await e.clear();
    await e.sendKeys(value);
  };
  const signIn = async (key) => {
    await driver.get(`${server.base}/console`);
    await driver.wait(until.elementIsVisible(await driver.findElement(By.id('sign-in'))), 10000);
    await type('#key', key);
    await driver.findElement(By.css('#sign-in-form button')).click();
  };
  const showMemories = async (ws, user, q = '') => {
    await driver.get(`${server.base}/console#/memories`);
    await driver.wait(until.elementLocated(By.id('memory-filter')), 10000);
    await type('#f-workspace', ws);
    await type('#f-user_id', user);
    await type('#f-q', q);
    await driver.findElement(By.id('memory-go')).click();
  };

  test('a wrong key is refused with a message; the right one shows the overview', async () => {
    await signIn('not-a-key');
    await waitText('#sign-in-error', /not one of the server's keys/);
    await shot('sign-in');
    await signIn(KEY);
    assert.match(await text('#health'), /ok/);
    await waitText('#counts', /agent memories/);
    assert.match(await driver.findElement(By.id('counts')).getText(), /^4\s/m);
    // Each workspace with what it holds: wsa has three memories of two users.
    await waitText('#workspace-table', /wsb/);
    const wsa = await driver.findElement(By.css('#workspace-table tr[data-workspace="wsa"]')).getText();
    assert.match(wsa, /^wsa 3 \(2 users\) 3\b/);
    // Every request the page made so far named a route (no favicon or missing file asked for).
    assert.doesNotMatch(await driver.findElement(By.id('view')).getText(), /unmatched/);
    await shot('overview');
  });

  test('a memory added through the API is listed, opens with its history and provenance', async () => {
    await showMemories('wsa', 'alice');
    await waitText('#memory-total', /1 memories/);
    assert.match(await text('#memory-table'), /oolong tea/);
    await driver.findElement(By.css('#memory-table tr.row')).click();
    await waitText('#memory-history', /ADD/);
    assert.match(await text('#memory-provenance'), /event_id/);
    memoryId = await driver.findElement(By.css('#memory-table tr.row')).getAttribute('data-id');
    assert.match(memoryId, /^m-/);
    await shot('memory-detail');
  });

  test('editing a memory\'s text saves it and adds an UPDATE to its history; empty text is refused', async () => {
    await showMemories('wsa', 'alice');
    await driver.wait(until.elementLocated(By.css('#memory-table tr.row')), 10000);
    await driver.findElement(By.css('#memory-table tr.row')).click();
    await driver.wait(until.elementLocated(By.id('memory-text')), 10000);
    await type('#memory-text', 'Alice drinks oolong tea every morning, with honey');
    await driver.findElement(By.id('memory-save')).click();
    await waitText('#memory-saved', /Saved/);
    await waitText('#memory-history', /UPDATE/);
    assert.match(await text('#memory-table'), /with honey/);
    const stored = await rest(server.base, 'GET', `${P4('wsa')}/memories/${memoryId}`, KEY);
    assert.equal(stored.body.memory, 'Alice drinks oolong tea every morning, with honey');
    await driver.executeScript("document.getElementById('memory-text').value = ''");
    await driver.findElement(By.id('memory-save')).click();
    await waitText('#memory-saved .error', /^400: /);
  });

  test('a search shows scored results', async () => {
    await showMemories('wsa', 'alice', 'what does alice drink');
    await waitText('#memory-table', /oolong/);
    assert.match(await text('#memory-table thead'), /Score/);
    await shot('search');
  });

  test('a scope lists who and what its memories mention; a click searches for it', async () => {
    await showMemories('wsa', 'carol');
    await waitText('#memory-entities', /Kyoto \(1\)/);
    assert.match(await text('#memory-entities'), /Dana \(1\)/);
    await driver.findElement(By.xpath("//p[@id='memory-entities']/a[starts-with(., 'Kyoto')]")).click();
    await waitText('#memory-table', /green tea/);
    assert.doesNotMatch(await text('#memory-table'), /oolong/);
    assert.equal(await driver.findElement(By.id('f-q')).getAttribute('value'), 'Kyoto');
    await showMemories('wsa', 'alice');
    await waitText('#memory-entities', /No names mentioned/);
  });

  test('a search is narrowed by a filter built with the form; a filter the API refuses shows its message', async () => {
    await showMemories('wsa', 'carol', 'tea');
    await waitText('#memory-table', /oolong[\s\S]*green|green[\s\S]*oolong/);
    await driver.findElement(By.id('filter-add')).click();
    await driver.findElement(By.css('.filter-row .filter-field option[value="keywords"]')).click();
    await driver.findElement(By.css('.filter-row .filter-op option[value="contains"]')).click();
    await type('.filter-row .filter-value', 'green');
    assert.equal(await text('#filter-json'), '{"keywords":{"contains":"green"}}');
    await driver.findElement(By.id('memory-go')).click();
    await waitText('#memory-table', /green tea/);
    assert.doesNotMatch(await text('#memory-table'), /oolong/);
    await shot('memory-filter');
    // A date the grammar does not read: the API's 400, naming where in the filter.
    await driver.findElement(By.css('.filter-row .filter-field option[value="created_at"]')).click();
    await driver.findElement(By.css('.filter-row .filter-op option[value="gte"]')).click();
    await type('.filter-row .filter-value', 'last week');
    await driver.findElement(By.id('memory-go')).click();
    await waitText('#memory-results .error', /^400: .*filters/);
    await driver.findElement(By.css('.filter-row .filter-remove')).click();
    assert.equal((await driver.findElements(By.css('.filter-row'))).length, 0);
  });

  test('the search playground shows how each result scored', async () => {
    await driver.get(`${server.base}/console#/search`);
    await driver.wait(until.elementLocated(By.id('search-form')), 10000);
    await type('#s-workspace', 'wsa');
    await type('#s-scope', 'carol');
    await type('#s-q', 'oolong tea');
    await driver.findElement(By.id('search-go')).click();
    await waitText('#search-table', /oolong/);
    const rows = await driver.findElements(By.css('#search-table tbody tr'));
    assert.equal(rows.length, 2);
    const row = await rows[0].getText();
    assert.match(row, /clay pot/, 'the memory with both words first');
    // BM25 found it (this server runs BM25 only): its score and part are shown, the vector's not;
    // it stands out from the other match, so its part is positive and the other's negative.
    assert.match(row, /BM25 \d+\.\d{3}, part \+(?!0\.000)\d+\.\d{3}/);
    assert.match(await rows[1].getText(), /BM25 \d+\.\d{3}, part -(?!0\.000)\d+\.\d{3}/);
    assert.match(row, /vector not returned/);
    assert.match(row, /zscore fusion 0\.\d{3}/);
    assert.equal((await driver.findElements(By.css('#search-table svg.parts rect.bm25'))).length, 2);
    await shot('search-playground');
    // A user id longer than the API takes: the API's own message, not a blank page.
    await driver.findElement(By.css('#s-target option[value="skills"]')).click();
    await type('#s-scope', 'u'.repeat(300));
    await driver.findElement(By.id('search-go')).click();
    await waitText('#search-results .error', /^400: .*user_id/);
    // A Leaderboard user's messages, explained the same way.
    await driver.findElement(By.css('#s-target option[value="leaderboard"]')).click();
    await type('#s-scope', 'lb-user');
    await type('#s-q', 'red kayak');
    await driver.findElement(By.id('search-go')).click();
    await waitText('#search-table', /kayak across the bay/);
    assert.match(await text('#search-table tbody tr'), /BM25 \d+\.\d{3}, part/);
  });

  const showKb = async (ws, kb) => {
    await driver.get(`${server.base}/console#/knowledge`);
    await driver.wait(until.elementLocated(By.id('kb-form')), 10000);
    await type('#k-workspace', ws);
    await type('#k-kb', kb);
    await driver.findElement(By.id('kb-go')).click();
  };
  const uploadFile = async (name, bytes) => {
    const file = path.join(SHOTS, name);
    fs.writeFileSync(file, bytes);
    await driver.wait(until.elementLocated(By.id('kb-file')), 10000);
    await driver.findElement(By.id('kb-file')).sendKeys(file);
    await driver.findElement(By.id('kb-send')).click();
  };

  test('a document uploaded from the browser reaches SUCCESS, is searched with its breakdown and deleted', async () => {
    await showKb('wsa', 'manuals');
    await waitText('#kb-total', /^0 documents/);
    await uploadFile('kettle.md', '# Kettle\n\nDescale the kettle with citric acid every month.\n');
    await waitText('#kb-upload-status', /: SUCCESS/);
    await waitText('#kb-table', /kettle\.md\s+\S+\s+SUCCESS/);
    await driver.findElement(By.css('#kb-table tr.row')).click();
    await waitText('#kb-content', /citric acid/);
    await shot('knowledge-base');
    // The API holds it too, ingested from the bytes the page sent.
    const id = await driver.findElement(By.css('#kb-table tr.row')).getAttribute('data-id');
    const stored = await rest(server.base, 'GET', `/v3/openapi/workspaces/wsa/memory/agentic-memory/knowledge-bases/manuals/docs/${id}`, KEY);
    assert.equal(stored.body.result.status, 'SUCCESS');

    await driver.get(`${server.base}/console#/search`);
    await driver.wait(until.elementLocated(By.id('search-form')), 10000);
    await driver.findElement(By.css('#s-target option[value="kb"]')).click();
    await type('#s-workspace', 'wsa');
    await type('#s-scope', 'manuals');
    await type('#s-q', 'descale kettle');
    await driver.findElement(By.id('search-go')).click();
    await waitText('#search-table', /citric acid/);
    assert.match(await text('#search-table tbody tr'), /BM25 \d+\.\d{3}, part/);

    // A file the server cannot read fails, and the page says why.
    await showKb('wsa', 'manuals');
    await uploadFile('noise.bin', Buffer.from([0, 159, 146, 150, 0, 1, 2, 3, 255, 254]));
    await waitText('#kb-upload-status', /: FAIL \(.+\)/);
    await waitText('#kb-table', /noise\.bin\s+\S+\s+FAIL/);

    // Delete asks first.
    await driver.findElement(By.css(`#kb-table tr.row[data-id="${id}"]`)).click();
    await driver.wait(until.elementLocated(By.id('kb-delete')), 10000);
    await driver.findElement(By.id('kb-delete')).click();
    await driver.wait(until.alertIsPresent(), 5000);
    await (await driver.switchTo().alert()).accept();
    await waitText('#kb-deleted', /deleted/);
    await waitText('#kb-total', /^1 documents/);
    assert.equal((await rest(server.base, 'GET', `/v3/openapi/workspaces/wsa/memory/agentic-memory/knowledge-bases/manuals/docs/${id}`, KEY)).status, 404);
  });

  test('a ZIP of skills imported from the browser is listed, opened with its files and deleted', async () => {
    await driver.get(`${server.base}/console#/skills`);
    await driver.wait(until.elementLocated(By.id('skill-form')), 10000);
    await type('#sk-workspace', 'wsa');
    await type('#sk-user_id', 'dana');
    await driver.findElement(By.id('skill-go')).click();
    await waitText('#skill-total', /^0 skills/);
    const skill = (name, what) => `---\nname: ${name}\ndescription: ${what}\n---\n\n1. First step.\n2. Second step.\n`;
    const zip = storedZip([
      ['brew/SKILL.md', skill('brew-oolong', 'Brew oolong tea in a clay pot')],
      ['brew/notes.txt', 'Rinse the leaves first.'],
      ['bake/SKILL.md', skill('bake-bread', 'Bake a sourdough loaf')],
    ]);
    const file = path.join(SHOTS, 'skills.zip');
    fs.writeFileSync(file, zip);
    await driver.findElement(By.id('skill-file')).sendKeys(file);
    await driver.findElement(By.id('skill-send')).click();
    await waitText('#skill-import-status', /Imported 2/);
    await waitText('#skill-total', /^2 skills/);
    await driver.findElement(By.xpath("//table[@id='skill-table']//tr[td[text()='brew-oolong']]")).click();
    await waitText('#skill-files', /notes\.txt/);
    assert.match(await text('#skill-files'), /SKILL\.md/);
    await shot('skills');
    // A file that is no ZIP: the API's message.
    fs.writeFileSync(file, 'not a zip');
    await driver.findElement(By.id('skill-file')).sendKeys(file);
    await driver.findElement(By.id('skill-send')).click();
    await waitText('#skill-import-status .error', /^400: /);
    await driver.findElement(By.id('skill-delete')).click();
    await driver.wait(until.alertIsPresent(), 5000);
    await (await driver.switchTo().alert()).accept();
    await waitText('#skill-deleted', /brew-oolong deleted/);
    await waitText('#skill-total', /^1 skills/);
    assert.doesNotMatch(await text('#skill-table'), /brew-oolong/);
  });

  test('events and tasks show a workspace\'s work; a memory opens the event that made it', async () => {
    await showMemories('wsa', 'carol');
    await driver.wait(until.elementLocated(By.css('#memory-table tr.row')), 10000);
    await driver.findElement(By.css('#memory-table tr.row')).click();
    await driver.wait(until.elementLocated(By.id('memory-event')), 10000);
    await driver.findElement(By.id('memory-event')).click();
    await waitText('#event', /SUCCEEDED/);
    assert.match(await text('#event-decisions'), /ADD\s+m-\S+\s+Carol/);
    // The workspace's events (three adds), its skill task, and its knowledge base's document jobs.
    await waitText('#event-total', /^3 events/);
    await waitText('#task-table', /completed/);
    assert.match(await text('#job-table'), /manuals\s+1\s+0\s+1/);
    await shot('events-and-tasks');
    // A decision's memory opens in the memories view.
    await driver.findElement(By.css('#event-decisions a')).click();
    await waitText('#memory-history', /ADD/);
    // A knowledge base's row opens its documents, with the failure and its reason.
    await driver.get(`${server.base}/console#/activity/wsa`);
    await driver.wait(until.elementLocated(By.css('#job-table tr.row')), 10000);
    await driver.findElement(By.css('#job-table tr.row[data-kb="manuals"]')).click();
    await waitText('#kb-table', /noise\.bin\s+\S+\s+FAIL/);
    // Without a knowledge base named, the view lists the workspace's.
    await showKb('wsa', '');
    await waitText('#kb-bases', /manuals/);
  });

  test('bad input shows the API\'s message', async () => {
    await showMemories('no such/workspace', 'alice');
    await waitText('#memory-results .error', /^4\d\d: /);
  });

  test('deleting asks first, then the memory is gone', async () => {
    await showMemories('wsa', 'alice');
    await driver.wait(until.elementLocated(By.css('#memory-table tr.row')), 10000);
    await driver.findElement(By.css('#memory-table tr.row')).click();
    await driver.wait(until.elementLocated(By.id('memory-delete')), 10000);
    await driver.findElement(By.id('memory-delete')).click();
    await driver.wait(until.alertIsPresent(), 5000);
    await (await driver.switchTo().alert()).dismiss();  // changed their mind: nothing happens
    assert.equal((await rest(server.base, 'GET', `${P4('wsa')}/memories/${memoryId}`, KEY)).status, 200);
    await driver.findElement(By.id('memory-delete')).click();
    await driver.wait(until.alertIsPresent(), 5000);
    await (await driver.switchTo().alert()).accept();
    await waitText('#memory-deleted', /deleted/);
    await waitText('#memory-total', /^0 memories/);
    assert.equal((await rest(server.base, 'GET', `${P4('wsa')}/memories/${memoryId}`, KEY)).status, 404);
  });

  test('a key limited to workspace A sees A and not B', async () => {
    await driver.get(`${server.base}/console`);
    await driver.findElement(By.id('sign-out')).click();
    await signIn(KEY_A);
    await waitText('#view', /key valid for every workspace/);
    // The overview names the key's workspace only; a click on it opens its memories.
    await waitText('#workspace-table', /wsa/);
    assert.doesNotMatch(await driver.findElement(By.id('workspace-table')).getText(), /wsb/);
    await driver.findElement(By.css('#workspace-table tr[data-workspace="wsa"]')).click();
    await driver.wait(until.elementLocated(By.id('memory-filter')), 10000);
    assert.equal(await driver.findElement(By.id('f-workspace')).getAttribute('value'), 'wsa');
    await showMemories('wsb', 'bob');
    await waitText('#memory-results .error', /^403: /);
    assert.doesNotMatch(await driver.findElement(By.id('view')).getText(), /secret garden/);
    await showMemories('wsa', 'alice');
    await waitText('#memory-total', /memories/);
    await shot('limited-key');
  });
});
