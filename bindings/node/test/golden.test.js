'use strict';
// The golden scenario (tests/golden/): driven through the Node binding on a fresh
// embedded store, it must give exactly tests/golden/expected.json after the
// normalisation tests/golden/README.md describes — the same envelopes the Rust
// facade, the CLI, HTTP, MCP and Python give. Its adjudicate seat calls the fake
// chat endpoint below, scripted by tests/golden/chat.json.

const { it } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const http = require('node:http');
const os = require('node:os');
const path = require('node:path');

const { Memory } = require('..');

const GOLDEN = path.join(__dirname, '..', '..', '..', 'tests', 'golden');
const UUID = /[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}/g;

function isRunTime(s) {
  return s.length >= 20 && s[4] === '-' && s[10] === 'T' && /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d/.test(s) &&
    !Number.isNaN(Date.parse(s)) && s.slice(0, 4) >= '2025';
}

/** UUIDs → <idN> by first appearance (keys sorted), run times → <now>, cursors → <cursor>, floats to 9 digits. */
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
      // Cursors are signed with each store's own secret.
      for (const k of Object.keys(v).sort()) {
        out[k] = k === 'continuation' && typeof v[k] === 'string' ? '<cursor>' : walk(v[k]);
      }
      return out;
    }
    return v;
  };
  return walk(value);
}

/** The handle (F1, F2, …) of the candidate whose statement is `statement`. */
function candidateHandle(user, statement) {
  let handle = null;
  for (const line of user.split('\n')) {
    if (line.startsWith('[')) handle = line.slice(1).split(']')[0];
    else if (line === `  Statement: ${statement}`) return handle;
  }
  return null;
}

/**
 * The script's answer to an adjudication prompt and the index of the rule that
 * matched (null: the default), as tests/conformance/src/golden/chat.rs answers.
 */
function scriptedAnswer(script, user) {
  const lines = user.split('\n');
  for (const [i, rule] of script.rules.entries()) {
    if (!lines.includes(`Statement: ${rule.incoming}`)) continue;
    const handle = candidateHandle(user, rule.candidate);
    if (handle !== null) return [{ ...rule.answer, fact: handle }, i];
  }
  return [script.default, null];
}

/** The fake OpenAI-compatible POST /v1/chat/completions on a loopback port. */
async function fakeChat(script) {
  const fired = new Set();
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}');
      let status = 200;
      let answer;
      if (req.method !== 'POST' || req.url !== '/v1/chat/completions') {
        status = 404;
        answer = { error: { message: `no such endpoint: ${req.method} ${req.url}` } };
      } else if (body.model !== script.config.model) {
        status = 404;
        answer = {
          error: { message: `the golden chat script serves model \`${script.config.model}\` only, not \`${body.model}\`` },
        };
      } else {
        const user = [...body.messages].reverse().find((m) => m.role === 'user').content;
        const [content, rule] = scriptedAnswer(script, user);
        fired.add(rule);
        answer = {
          id: 'golden-chat',
          object: 'chat.completion',
          created: 0,
          model: body.model,
          choices: [
            { index: 0, message: { role: 'assistant', content: JSON.stringify(content) }, finish_reason: 'stop' },
          ],
          usage: { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 },
        };
      }
      const data = Buffer.from(JSON.stringify(answer));
      res.writeHead(status, { 'content-type': 'application/json', 'content-length': data.length });
      res.end(data);
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    fired,
    config: {
      ...script.config,
      provider: 'openai',
      base_url: `http://127.0.0.1:${server.address().port}/v1`,
    },
    close: () => {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(resolve));
    },
  };
}

it('the fake chat names the candidate a rule names', () => {
  const script = JSON.parse(fs.readFileSync(path.join(GOLDEN, 'chat.json'), 'utf8'));
  const rule = script.rules[0];
  const prompt =
    `INCOMING ASSERTION\nStatement: ${rule.incoming}\n\nCANDIDATE FACTS\n` +
    `[F1] relation: x\n  Statement: other\n[F2] relation: y\n  Statement: ${rule.candidate}\n`;
  const [answer, fired] = scriptedAnswer(script, prompt);
  assert.deepEqual([answer.fact, answer.verdict, fired], ['F2', rule.answer.verdict, 0]);
  assert.deepEqual(scriptedAnswer(script, prompt.replace(`Statement: ${rule.incoming}`, 'Statement: x')), [
    script.default,
    null,
  ]);
});

it('drives the golden scenario to the golden envelopes', async () => {
  const scenario = JSON.parse(fs.readFileSync(path.join(GOLDEN, 'scenario.json'), 'utf8'));
  const expected = JSON.parse(fs.readFileSync(path.join(GOLDEN, 'expected.json'), 'utf8'));
  const script = JSON.parse(fs.readFileSync(path.join(GOLDEN, 'chat.json'), 'utf8'));
  const chat = await fakeChat(script);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rs-golden-'));
  const memory = await Memory.open(path.join(dir, 'memory.db'), {
    namespace: scenario.namespace,
    config: { chat: chat.config },
  });
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
    for (const i of script.rules.keys()) {
      assert.ok(chat.fired.has(i), `rule ${i} of tests/golden/chat.json never fired`);
    }
    const got = normalize(out);
    if (JSON.stringify(got) !== JSON.stringify(normalize(expected))) {
      fs.writeFileSync(path.join(os.tmpdir(), 'golden-node.json'), JSON.stringify(got, null, 2));
    }
    assert.deepStrictEqual(got, normalize(expected));
  } finally {
    await memory.close();
    await chat.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
