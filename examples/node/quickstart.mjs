// The Node quick start: an embedded memory in a temporary directory, one note and one
// conversation, processed, then asked. Run: node examples/node/quickstart.mjs
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Memory } from '../../bindings/node/index.js'; // 'rememberstack' once installed

const memory = await Memory.open(join(mkdtempSync(join(tmpdir(), 'memory-')), 'memory.db'));
await memory.ingestText('# Release plan\n\nVersion 2.0 ships on 14 March.\n', { sourceRef: 'notes/release' });
await memory.ingestConversation(
  {
    messages: [
      { event_id: 'm1', speaker: 'Ana', text: 'Did QA sign off on the sync engine?' },
      { event_id: 'm2', speaker: 'Ben', text: 'Yes, QA signed off after the load tests passed.' },
    ],
  },
  { sourceRef: 'chat/release' },
);
await memory.processUntilIdle();
const context = await memory.claimsAndSourcesContext('When does version 2.0 ship?');
for (const result of context.results.slice(0, 3)) console.log(`[${result.kind}] ${result.text.replace(/\s+/g, ' ')}`);
await memory.close();
