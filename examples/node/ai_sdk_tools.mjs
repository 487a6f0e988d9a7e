// RememberStack as tools of a Vercel AI SDK agent: `rememberStackTools(memory)` gives
// `generateText` the engine's four assured operations (resolveEntity,
// claimsAndSourcesContext, factsContext, combinedContext) and rememberNote. Offline:
// the model is the AI SDK's own mock (`MockLanguageModelV3` from `ai/test`), scripted
// to call the tools the way a real model would and to answer from what they return;
// pass a real model (e.g. `openai('gpt-4.1')`) instead. Run from the repository root
// once bindings/node is built and its devDependencies installed:
//
//   (cd bindings/node && npm ci) && node examples/node/ai_sdk_tools.mjs
import { createRequire } from 'node:module';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

// In an app these are plain imports:
//   import { Memory } from 'rememberstack';
//   import { rememberStackTools } from 'rememberstack/ai-sdk';
//   import { generateText, stepCountIs } from 'ai';
// Here they resolve from bindings/node (the package, and ai and zod in its devDependencies).
const require = createRequire(new URL('../../bindings/node/package.json', import.meta.url));
const { Memory } = require('rememberstack');
const { rememberStackTools } = require('rememberstack/ai-sdk');
const { generateText, stepCountIs } = require('ai');
const { MockLanguageModelV3 } = require('ai/test');

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rememberstack-ai-sdk-'));
const memory = await Memory.open(path.join(dir, 'memory.db'), { namespace: 'agent' });

// What the agent knows: a document and a conversation.
await memory.ingestText(
  '# Atlas release plan\n\n## Dates\n\nVersion 2.0 of Atlas ships on 14 March 2025.\n\n' +
    '## Owners\n\nPriya Shah owns the Atlas release.\n',
  { sourceRef: 'plans/atlas', sourceTime: '2025-02-01T10:00:00Z' },
);
await memory.ingestConversation(
  {
    sessionTime: '2025-02-03T09:00:00Z',
    messages: [
      { eventId: 'm1', speaker: 'Ana', text: 'Did QA sign off on the Atlas sync engine?' },
      { eventId: 'm2', speaker: 'Ben', text: 'Yes, QA signed off after the load tests passed on Friday.' },
    ],
  },
  { sourceRef: 'chat/atlas' },
);
await memory.processUntilIdle();

const tools = await rememberStackTools(memory);

// A scripted stand-in for a model: it remembers the user's preference and asks the
// memory in its first step, then answers from the tool results it is given.
const usage = { inputTokens: { total: 0, noCache: 0, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: 0, text: 0, reasoning: 0 } };
const call = (id, toolName, input) => ({ type: 'tool-call', toolCallId: id, toolName, input: JSON.stringify(input) });
const model = new MockLanguageModelV3({
  doGenerate: async ({ prompt }) => {
    const results = prompt.filter((m) => m.role === 'tool').flatMap((m) => m.content);
    if (results.length === 0) {
      return {
        content: [
          call('c1', 'rememberNote', { source_key: 'prefs/release-notes', text: 'Ana wants release notes in French.' }),
          call('c2', 'combinedContext', { query: 'When does Atlas 2.0 ship?' }),
          call('c3', 'claimsAndSourcesContext', { query: 'Did QA sign off on the sync engine?', k: 3 }),
        ],
        finishReason: { unified: 'tool-calls', raw: undefined },
        usage,
        warnings: [],
      };
    }
    // Answer from the first piece of evidence each recall returned, citing it.
    const cite = (r) => `${r.text.replace(/\s+/g, ' ')} [${r.kind} ${r.source_ref}${r.event_ids.length ? ` ${r.event_ids.join(',')}` : ''}]`;
    const bundle = results.find((r) => r.toolName === 'combinedContext').output.value;
    const evidence = results.find((r) => r.toolName === 'claimsAndSourcesContext').output.value;
    const text = `${cite(bundle.claims_and_sources.results[0])} ${cite(evidence.results[0])}`;
    return { content: [{ type: 'text', text }], finishReason: { unified: 'stop', raw: undefined }, usage, warnings: [] };
  },
});

try {
  const result = await generateText({
    model,
    tools,
    stopWhen: stepCountIs(3),
    prompt: 'Remember that I want release notes in French. When does Atlas 2.0 ship, and did QA sign off?',
  });
  for (const step of result.steps) {
    for (const c of step.toolCalls) console.log(`tool call: ${c.toolName} ${JSON.stringify(c.input)}`);
    for (const r of step.toolResults) {
      const out = r.output;
      const first = out.contract === 'ContextBundle/v2' ? out.claims_and_sources.results[0] : out.results?.[0];
      const shown = first
        ? `[${first.kind} from ${first.source_ref} @ ${first.asserted_at}] ${first.text.replace(/\s+/g, ' ')}`
        : `note ${out.source_key} (${out.lifecycle})`;
      console.log(`tool result: ${r.toolName} -> ${shown}`);
    }
  }
  console.log(`assistant: ${result.text}`);

  // The note is memory now: the next recall finds it.
  const later = await tools.claimsAndSourcesContext.execute({ query: 'Which language for the release notes?', k: 1 }, { toolCallId: 'c4', messages: [] });
  console.log(`later recall: [${later.results[0].kind} from ${later.results[0].source_ref}] ${later.results[0].text}`);
} finally {
  await memory.close();
  fs.rmSync(dir, { recursive: true, force: true });
}
