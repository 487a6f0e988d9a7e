'use strict';
// The golden scenario (tests/golden/): driven through the Node binding on a fresh
// embedded store, it must give exactly tests/golden/expected.json after the
// normalisation tests/golden/README.md describes — the same envelopes the Rust
// facade, the CLI, HTTP, MCP and Python give.

const { it } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const { Memory } = require('..');

const GOLDEN = path.join(__dirname, '..', '..', '..', 'tests', 'golden');
const UUID = /[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}/g;

function isRunTime(s) {
  return s.length >= 20 && s[4] === '-' && s[10] === 'T' && /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d/.test(s) &&
    !Number.isNaN(Date.parse(s)) && s.slice(0, 4) >= '2025';
}

/** UUIDs → <idN> by first appearance (keys sorted), run times → <now>, floats to 9 digits. */
function normalize(value) {
  const ids = new Map();
  const walk = (v) => {
    if (typeof v === 'string') {
      if (isRunTime(v)) return '<now>';
      return v.replace(UUID, (id) => {
        if (!ids.has(id)) ids.set(id, `<id${ids.size}>`);
        return ids.get(id);
      });
    }
    if (typeof v === 'number') return Number.isInteger(v) ? v : Number(v.toExponential(8));
    if (Array.isArray(v)) return v.map(walk);
    if (v !== null && typeof v === 'object') {
      const out = {};
      for (const k of Object.keys(v).sort()) out[k] = walk(v[k]);
      return out;
    }
    return v;
  };
  return walk(value);
}

it('drives the golden scenario to the golden envelopes', async () => {
  const scenario = JSON.parse(fs.readFileSync(path.join(GOLDEN, 'scenario.json'), 'utf8'));
  const expected = JSON.parse(fs.readFileSync(path.join(GOLDEN, 'expected.json'), 'utf8'));
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rs-golden-'));
  const memory = await Memory.open(path.join(dir, 'memory.db'), { namespace: scenario.namespace });
  try {
    for (const doc of scenario.documents) {
      await memory.ingestText(doc.text, { sourceRef: doc.source_ref, sourceTime: doc.source_time });
    }
    const conv = scenario.conversation;
    await memory.ingestConversation(conv.conversation, {
      sourceRef: conv.source_ref,
      sourceTime: conv.source_time,
    });
    await memory.processUntilIdle();
    const c = scenario.correction;
    const found = await memory.runOperation(c.find.operation, c.find.input);
    const target = found.results.find((r) => r.object_name === c.object_name);
    assert.ok(target, `no fact about ${c.object_name}`);
    await memory.correctFact(target.fact_id, c.statement, c.reason, { requestId: c.request_id });
    await memory.processUntilIdle();
    const out = {};
    for (const read of scenario.reads) {
      out[read.operation] = await memory.runOperation(read.operation, read.input);
    }
    const got = normalize(out);
    if (JSON.stringify(got) !== JSON.stringify(normalize(expected))) {
      fs.writeFileSync(path.join(os.tmpdir(), 'golden-node.json'), JSON.stringify(got, null, 2));
    }
    assert.deepStrictEqual(got, normalize(expected));
  } finally {
    await memory.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
