'use strict';
// examples/node/agent_loop.mjs runs and shows cited context.

const { it } = require('node:test');
const assert = require('node:assert/strict');
const { execFileSync } = require('node:child_process');
const path = require('node:path');

it('runs the agent loop example', () => {
  const script = path.join(__dirname, '..', '..', '..', 'examples', 'node', 'agent_loop.mjs');
  const out = execFileSync(process.execPath, [script], { encoding: 'utf8', timeout: 60_000 });
  assert.match(out, /user: When is the runner migration\?/);
  assert.match(out, /ContextBundle\/v2/);
  // The migration question is answered from Joao's turn m4, cited by event id.
  assert.match(out, /turns m4 @ 2024-06-03T09:30:00Z\] Joao will schedule the runner migration/);
});

it('runs the quick start example', () => {
  const script = path.join(__dirname, '..', '..', '..', 'examples', 'node', 'quickstart.mjs');
  const out = execFileSync(process.execPath, [script], { encoding: 'utf8', timeout: 60_000 });
  const lines = out.trim().split('\n');
  assert.ok(lines.length >= 1 && lines.length <= 3, out);
  assert.match(out, /14 March/);
  assert.match(lines[0], /^\[(claim|chunk)\] /);
});
