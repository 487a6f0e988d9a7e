// An agent loop over RememberStack from Node: remember a conversation, then, for each
// user question, ask the memory (combinedContext) before answering. No LLM is
// needed: the "answer" step prints the context an LLM would be given, with its
// provenance. Offline: embedded SQLite store, hashing embedder, offline extractor.
//
//   bash bindings/node/test.sh          # builds bindings/node/rememberstack.node
//   node examples/node/agent_loop.mjs
import { createRequire } from 'node:module';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const require = createRequire(import.meta.url);
const { Memory } = require('../../bindings/node'); // `require('rememberstack')` once installed

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rememberstack-agent-'));
const memory = await Memory.open(path.join(dir, 'memory.db'), { namespace: 'agent' });

// 1. What the agent heard earlier.
await memory.ingestConversation(
  {
    sessionTime: '2024-06-03T09:30:00Z',
    messages: [
      { eventId: 'm1', speaker: 'Maria', text: 'The nightly backup failed again on Saturday.' },
      { eventId: 'm2', speaker: 'Joao', text: 'The cold-storage bucket hit its quota, so I raised it to 2 TB.' },
      { eventId: 'm3', speaker: 'Maria', text: 'Can you move the runners to the new rack next week?' },
      { eventId: 'm4', speaker: 'Joao', text: 'I will schedule the runner migration for Tuesday afternoon.' },
    ],
  },
  { sourceRef: 'standup/2024-06-03' },
);
// New turns arrive as the conversation goes on (replays are skipped by event id).
await memory.appendMessages('standup/2024-06-03', [
  { eventId: 'm5', speaker: 'Maria', text: 'Great, and please update the backup runbook afterwards.' },
]);
await memory.processUntilIdle();

// 2. The loop: recall before answering.
function render(bundle) {
  const lines = [];
  for (const r of bundle.claims_and_sources.results.slice(0, 4)) {
    const turns = r.event_ids.length ? ` turns ${r.event_ids.join(',')}` : '';
    const text = r.text.replace(/\s+/g, ' ').trim();
    lines.push(`  [${r.kind} from ${r.source_ref}${turns} @ ${r.asserted_at}] ${text.slice(0, 160)}`);
  }
  for (const f of bundle.facts.results.slice(0, 3)) lines.push(`  [fact] ${f.statement}`);
  if (lines.length === 0) lines.push(`  (nothing relevant: ${bundle.claims_and_sources.negative?.message ?? 'no results'})`);
  return lines.join('\n');
}

const questions = [
  'Why did the nightly backup fail?',
  'When is the runner migration?',
  'What should happen after the migration?',
];
try {
  for (const question of questions) {
    const bundle = await memory.combinedContext(question);
    console.log(`user: ${question}`);
    console.log(`context for the model (${bundle.contract}):\n${render(bundle)}\n`);
  }
} finally {
  await memory.close();
  fs.rmSync(dir, { recursive: true, force: true });
}
