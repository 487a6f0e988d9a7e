// RememberStack as a LangChain.js retriever: `RememberStackRetriever` is a
// `BaseRetriever` over claimsAndSourcesContext (or factsContext / combinedContext,
// `mode`), so it runs wherever a retriever does — `invoke`, LCEL chains, agents —
// and every Document carries its provenance in `metadata`. Offline: no model; the
// chain stops at the prompt a chat model would be given (pipe one on to answer).
// Run from the repository root once bindings/node is built and its devDependencies
// installed:
//
//   (cd bindings/node && npm ci) && node examples/node/langchain_retriever.mjs
import { createRequire } from 'node:module';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

// In an app these are plain imports:
//   import { Memory } from 'rememberstack';
//   import { RememberStackRetriever } from 'rememberstack/langchain';
//   import { ChatPromptTemplate } from '@langchain/core/prompts';
// Here they resolve from bindings/node (the package, and @langchain/core in its devDependencies).
const require = createRequire(new URL('../../bindings/node/package.json', import.meta.url));
const { Memory } = require('rememberstack');
const { RememberStackRetriever } = require('rememberstack/langchain');
const { ChatPromptTemplate } = require('@langchain/core/prompts');
const { RunnablePassthrough, RunnableSequence } = require('@langchain/core/runnables');

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rememberstack-langchain-'));
const memory = await Memory.open(path.join(dir, 'memory.db'), { namespace: 'rag' });

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

// One line per document: what it says and where it comes from.
function cite(doc) {
  const m = doc.metadata;
  const where = [m.source_ref, ...(m.section_path ?? [])].join(' > ');
  const turns = m.event_ids.length ? ` turns ${m.event_ids.join(',')}` : '';
  return `[${m.kind} ${m.rank}: ${where}${turns} @ ${m.asserted_at}] ${doc.pageContent.replace(/\s+/g, ' ')}`;
}

try {
  // 1. Evidence: claims and the source passages they come from, best first.
  const retriever = new RememberStackRetriever({ memory, k: 4 });
  const docs = await retriever.invoke('When does Atlas 2.0 ship?');
  console.log('evidence:');
  for (const doc of docs) console.log(`  ${cite(doc)}`);
  const top = docs[0].metadata;
  console.log(`  top: ${top.ref} document ${top.document_id} version ${top.version_id} relevance ${top.relevance}`);

  // 2. Facts, each with the claims that support it.
  const facts = new RememberStackRetriever({ memory, mode: 'facts', k: 2 });
  console.log('facts:');
  for (const doc of await facts.invoke('Who owns the Atlas release?')) {
    console.log(`  ${cite(doc)} (${doc.metadata.evidence_count} source, subject ${doc.metadata.subject_name})`);
  }

  // 3. In an LCEL chain: the retrieved context, rendered into a prompt.
  const prompt = ChatPromptTemplate.fromMessages([
    ['system', 'Answer from the context only and cite it.\n\nContext:\n{context}'],
    ['human', '{question}'],
  ]);
  const chain = RunnableSequence.from([
    {
      context: new RememberStackRetriever({ memory, k: 2 }).pipe((found) => found.map(cite).join('\n')),
      question: new RunnablePassthrough(),
    },
    prompt,
    // .pipe(chatModel) here answers the question.
  ]);
  const rendered = await chain.invoke('Did QA sign off on the sync engine?');
  console.log('prompt:');
  for (const message of rendered.toChatMessages()) {
    const [first, ...rest] = String(message.content).split('\n');
    console.log([`  ${message.getType()}: ${first}`, ...rest.map((line) => (line ? `    ${line}` : ''))].join('\n'));
  }
} finally {
  await memory.close();
  fs.rmSync(dir, { recursive: true, force: true });
}
