'use strict';
// rememberstack/langchain against the real `@langchain/core`: the retriever is a
// BaseRetriever returning Documents, best first, whose metadata is the engine's
// provenance; it runs under invoke, batch, LCEL and callbacks (no network).

const { describe, it, before, after } = require('node:test');
const assert = require('node:assert/strict');

const { BaseRetriever } = require('@langchain/core/retrievers');
const { Document } = require('@langchain/core/documents');
const { RunnableLambda } = require('@langchain/core/runnables');
const { ChatPromptTemplate } = require('@langchain/core/prompts');
const { RememberStackRetriever, documentsFromResult } = require('rememberstack/langchain');
const { openFixture, runExample } = require('./fixture');

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const COMMON = [
  'kind', 'ref', 'operation', 'namespace', 'rank', 'receipt_id', 'document_id', 'version_id', 'document_title',
  'source_kind', 'source_ref', 'source', 'chunk_id', 'claim_id', 'fact_id', 'section_path', 'section_role',
  'event_ids', 'asserted_at', 'scores', 'relevance',
];

function checkCommon(doc) {
  assert.ok(doc instanceof Document);
  const m = doc.metadata;
  for (const key of COMMON) assert.ok(key in m, `metadata.${key} of ${m.kind}`);
  assert.equal(m.ref, `${m.kind}:${doc.id}`);
  assert.match(doc.id, UUID);
  assert.equal(m[`${m.kind}_id`], doc.id);
  assert.ok(Array.isArray(m.event_ids));
  assert.equal(typeof m.scores.fused, 'number');
  assert.equal(m.relevance, m.scores.relevance ?? null);
  assert.ok(doc.pageContent.length > 0);
}

describe('RememberStackRetriever', () => {
  let fx;

  before(async () => {
    fx = await openFixture('langchain');
  });
  after(async () => {
    await fx.close();
  });

  it('is a LangChain retriever returning Documents, the dated evidence first', async () => {
    const retriever = new RememberStackRetriever({ memory: fx.memory, k: 4 });
    assert.ok(retriever instanceof BaseRetriever);
    assert.equal(RememberStackRetriever.lc_name(), 'RememberStackRetriever');
    assert.deepEqual(retriever.lc_namespace, ['rememberstack', 'retrievers']);
    const docs = await retriever.invoke('When does Atlas 2.0 ship?');
    assert.ok(docs.length >= 2 && docs.length <= 4, String(docs.length));
    docs.forEach((d, i) => {
      checkCommon(d);
      assert.equal(d.metadata.rank, i + 1);
      assert.equal(d.metadata.operation, 'claims_and_sources_context');
      assert.equal(d.metadata.namespace, 'langchain');
    });
    const top = docs[0];
    assert.match(top.pageContent, /14 March 2025/);
    assert.equal(top.metadata.source_ref, 'plans/atlas');
    assert.equal(top.metadata.source, 'plans/atlas');
    assert.equal(top.metadata.source_kind, 'text');
    assert.equal(top.metadata.document_id, fx.plan.document_id);
    assert.equal(top.metadata.version_id, fx.plan.version_id);
    assert.equal(top.metadata.document_title, 'Atlas release plan');
    assert.equal(top.metadata.asserted_at, '2025-02-01T10:00:00Z');
    assert.deepEqual(top.metadata.section_path, ['Atlas release plan', 'Dates']);
    assert.equal(top.metadata.section_role, 'body');
    assert.equal(typeof top.metadata.relevance, 'number');
    assert.ok(top.metadata.relevance > 0);
  });

  it('carries a claim\'s spans, validity and (hydrated) section, and a chunk\'s char span', async () => {
    const docs = await new RememberStackRetriever({ memory: fx.memory, k: 10 }).invoke('When does Atlas 2.0 ship?');
    const claim = docs.find((d) => d.metadata.kind === 'claim' && /14 March/.test(d.pageContent));
    assert.ok(claim, JSON.stringify(docs.map((d) => d.pageContent)));
    const m = claim.metadata;
    assert.equal(m.claim_id, claim.id);
    assert.match(m.chunk_id, UUID);
    assert.equal(m.fact_id, null);
    assert.deepEqual(m.section_path, ['Atlas release plan', 'Dates']);
    assert.equal(m.validity.precision, 'day');
    assert.equal(m.validity.from, '2025-03-14T00:00:00Z');
    assert.equal(m.is_current, true);
    assert.ok(m.spans.length >= 1 && m.spans[0].end > m.spans[0].start);
    assert.equal(typeof m.extractor_version, 'string');
    assert.equal(m.needs_context, false);
    const chunk = docs.find((d) => d.metadata.kind === 'chunk' && d.metadata.chunk_id === m.chunk_id);
    assert.ok(chunk);
    assert.equal(chunk.metadata.claim_id, null);
    assert.ok(chunk.metadata.char_span.end > chunk.metadata.char_span.start);
    assert.ok(chunk.pageContent.includes(claim.pageContent.slice(0, 20)));
    // Without hydration the claim's section is unknown.
    const bare = await new RememberStackRetriever({ memory: fx.memory, k: 10, hydrateProvenance: false }).invoke('When does Atlas 2.0 ship?');
    assert.ok(bare.filter((d) => d.metadata.kind === 'claim').every((d) => d.metadata.section_path === null));
  });

  it('cites conversation turns by event id', async () => {
    const docs = await new RememberStackRetriever({ memory: fx.memory, k: 4 }).invoke('Did QA sign off on the sync engine?');
    const top = docs[0];
    assert.equal(top.metadata.source_ref, 'chat/atlas');
    assert.equal(top.metadata.source_kind, 'conversation');
    assert.equal(top.metadata.document_id, fx.chat.document_id);
    assert.ok(top.metadata.event_ids.includes('m2'));
    const claim = docs.find((d) => d.metadata.kind === 'claim' && d.metadata.source_ref === 'chat/atlas');
    assert.ok(claim);
    assert.deepEqual(claim.metadata.event_ids, ['m2']);
    assert.match(claim.pageContent, /^Ben said: QA signed off/);
    assert.deepEqual(claim.metadata.added_context, ['Ben said:']);
    assert.deepEqual(claim.metadata.section_path, []);
  });

  it('mode facts: facts with their supporting claims and hydrated source', async () => {
    const docs = await new RememberStackRetriever({ memory: fx.memory, mode: 'facts', temporalScope: { mode: 'current' } }).invoke(
      'Where does Priya Shah live?',
    );
    docs.forEach(checkCommon);
    const top = docs[0];
    const m = top.metadata;
    assert.equal(m.kind, 'fact');
    assert.equal(m.operation, 'facts_context');
    assert.match(top.pageContent, /Lisbon/);
    assert.equal(m.subject_name, 'Priya Shah');
    assert.equal(m.support_state, 'supported');
    assert.equal(m.evidence_count, 1);
    assert.equal(m.provenance.length, 1);
    assert.equal(m.provenance[0].document_id, fx.plan.document_id);
    assert.equal(m.document_id, fx.plan.document_id);
    assert.equal(m.version_id, fx.plan.version_id);
    assert.equal(m.claim_id, m.provenance[0].claim_id);
    assert.equal(m.asserted_at, '2025-02-01T10:00:00Z');
    // Hydrated from the supporting claim: its lineage key, chunk and section.
    assert.equal(m.source_ref, 'plans/atlas');
    assert.equal(m.source, 'plans/atlas');
    assert.match(m.chunk_id, UUID);
    assert.deepEqual(m.section_path, ['Atlas release plan', 'Owners']);
    const bare = await new RememberStackRetriever({ memory: fx.memory, mode: 'facts', hydrateProvenance: false }).invoke('Where does Priya Shah live?');
    assert.equal(bare[0].metadata.source_ref, null);
    assert.equal(bare[0].metadata.section_path, null);
  });

  it('mode combined: the evidence first, then the facts, each ranked from 1', async () => {
    const docs = await new RememberStackRetriever({ memory: fx.memory, mode: 'combined' }).invoke('Did QA sign off on the sync engine?');
    const kinds = docs.map((d) => d.metadata.operation);
    const firstFact = kinds.indexOf('facts_context');
    assert.ok(firstFact > 0, JSON.stringify(kinds));
    assert.ok(kinds.slice(firstFact).every((k) => k === 'facts_context'));
    assert.equal(docs[0].metadata.source_ref, 'chat/atlas');
    assert.equal(docs[firstFact].metadata.rank, 1);
    assert.match(docs[firstFact].pageContent, /QA signed off/);
    docs.forEach(checkCommon);
  });

  it('records a receipt and filters by relevance when asked', async () => {
    const withReceipt = await new RememberStackRetriever({ memory: fx.memory, k: 3, recordReceipt: true, purpose: 'test' }).invoke('Atlas 2.0');
    const receipt = withReceipt[0].metadata.receipt_id;
    assert.match(receipt, UUID);
    assert.ok(withReceipt.every((d) => d.metadata.receipt_id === receipt));
    const all = await new RememberStackRetriever({ memory: fx.memory, k: 10 }).invoke('When does Atlas 2.0 ship?');
    const kept = await new RememberStackRetriever({ memory: fx.memory, k: 10, minRelevance: 0.1 }).invoke('When does Atlas 2.0 ship?');
    assert.ok(kept.length >= 1 && kept.length < all.length, `${kept.length} of ${all.length}`);
    assert.ok(kept.every((d) => d.metadata.relevance === null || d.metadata.relevance >= 0.1));
    assert.match(kept[0].pageContent, /14 March 2025/);
  });

  it('runs in LCEL, batch and callbacks', async () => {
    const retriever = new RememberStackRetriever({ memory: fx.memory, k: 2 });
    const seen = [];
    const chain = retriever.pipe(RunnableLambda.from((docs) => docs.map((d) => `${d.metadata.ref} ${d.metadata.source_ref}`).join('\n')));
    const out = await chain.invoke('When does Atlas 2.0 ship?', {
      callbacks: [{ handleRetrieverEnd: (docs) => seen.push(docs.length) }],
    });
    assert.match(out, /^(claim|chunk):[0-9a-f-]{36} plans\/atlas/);
    assert.deepEqual(seen, [2]);
    const [a, b] = await retriever.batch(['When does Atlas 2.0 ship?', 'Did QA sign off on the sync engine?']);
    assert.equal(a[0].metadata.source_ref, 'plans/atlas');
    assert.equal(b[0].metadata.source_ref, 'chat/atlas');
    const prompt = ChatPromptTemplate.fromTemplate('Context:\n{context}\n\nQ: {question}');
    const rendered = await prompt.invoke({ context: a.map((d) => d.pageContent).join('\n'), question: 'When?' });
    assert.match(rendered.toString(), /14 March 2025/);
  });

  it('refuses bad options', () => {
    const refused = (fields, pattern) =>
      assert.throws(() => new RememberStackRetriever(fields), (e) => e.code === 'invalid_input' && pattern.test(e.message));
    refused({}, /memory/);
    refused({ memory: fx.memory, mode: 'chunks' }, /mode/);
    refused({ memory: fx.memory, mode: 'toString' }, /mode/);
    refused({ memory: fx.memory, mode: 'combined', k: 3 }, /`k` does not apply to mode combined/);
    refused({ memory: fx.memory, temporalScope: { mode: 'history' } }, /temporalScope/);
    refused({ memory: fx.memory, minRelevance: 2 }, /minRelevance/);
    refused({ memory: fx.memory, topK: 3 }, /unknown option `topK`/);
    refused({ memory: fx.memory, requestId: 'r1' }, /unknown option `requestId`/);
  });

  it('documentsFromResult converts an envelope or a bundle as it stands', async () => {
    const envelope = await fx.memory.claimsAndSourcesContext('When does Atlas 2.0 ship?', { k: 3 });
    const docs = documentsFromResult(envelope);
    assert.equal(docs.length, envelope.results.length);
    assert.equal(docs[0].pageContent, envelope.results[0].text);
    const bundle = await fx.memory.combinedContext('When does Atlas 2.0 ship?');
    const all = documentsFromResult(bundle);
    assert.equal(all.length, bundle.claims_and_sources.results.length + bundle.facts.results.length);
    assert.throws(() => documentsFromResult({ results: 'no' }), (e) => e.code === 'invalid_input');
    const entities = await fx.memory.resolveEntity('Priya Shah');
    assert.throws(() => documentsFromResult(entities), (e) => e.code === 'invalid_input');
  });
});

it('runs the LangChain example', () => {
  const out = runExample('langchain_retriever.mjs');
  assert.match(out, /^evidence:\n {2}\[(claim|chunk) 1: plans\/atlas > Atlas release plan > Dates @ 2025-02-01T10:00:00Z\] .*14 March 2025\./m);
  assert.match(out, /^ {2}top: (claim|chunk):[0-9a-f-]{36} document [0-9a-f-]{36} version [0-9a-f-]{36} relevance [0-9.]+$/m);
  assert.match(out, /^facts:\n {2}\[fact 1: plans\/atlas > Atlas release plan > Owners @ 2025-02-01T10:00:00Z\] Priya Shah owns the Atlas release\. \(1 source, subject Priya Shah\)$/m);
  assert.match(out, /^ {4}\[(claim|chunk) 1: chat\/atlas turns [m12,]+ @ 2025-02-03T09:00:00Z\] .*QA signed off/m);
  assert.match(out, /^ {2}human: Did QA sign off on the sync engine\?$/m);
});
