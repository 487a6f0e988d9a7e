'use strict';
// The store both integration suites read: a document with sections and a
// conversation with event ids, ingested into a temporary embedded store and
// processed (offline: the suites run on the hashing embedder).

const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { execFileSync } = require('node:child_process');

const { Memory } = require('rememberstack');

const PLAN = `# Atlas release plan

## Dates

Version 2.0 of Atlas ships on 14 March 2025.

## Owners

Priya Shah owns the Atlas release and lives in Lisbon.
`;

const CHAT = {
  sessionTime: '2025-02-03T09:00:00Z',
  messages: [
    { eventId: 'm1', speaker: 'Ana', text: 'Did QA sign off on the Atlas sync engine?' },
    { eventId: 'm2', speaker: 'Ben', text: 'Yes, QA signed off after the load tests passed on Friday.' },
  ],
};

async function openFixture(name) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `rememberstack-${name}-`));
  const memory = await Memory.open(path.join(dir, 'memory.db'), { namespace: name });
  const plan = await memory.ingestText(PLAN, { sourceRef: 'plans/atlas', sourceTime: '2025-02-01T10:00:00Z' });
  const chat = await memory.ingestConversation(CHAT, { sourceRef: 'chat/atlas' });
  await memory.processUntilIdle();
  return {
    memory,
    plan,
    chat,
    async close() {
      await memory.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Run examples/node/<name> with this Node and return its stdout. */
function runExample(name) {
  const script = path.join(__dirname, '..', '..', '..', 'examples', 'node', name);
  return execFileSync(process.execPath, [script], { encoding: 'utf8', timeout: 60_000 });
}

module.exports = { openFixture, runExample, PLAN, CHAT };
