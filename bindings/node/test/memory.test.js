'use strict';
// Behaviour of the Node binding against the real engine (embedded SQLite, offline
// hashing embedder and extractor): no network, no services.

const { describe, it, before, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const { Memory, RememberStackError } = require('..');

const MISSING_ID = '123e4567-e89b-12d3-a456-426614174000';

const STANDUP = {
  session_time: '2024-06-03T09:30:00Z',
  messages: [
    { event_id: 'm1', speaker: 'Maria', text: 'Morning! The nightly backup failed again on Saturday.' },
    { event_id: 'm2', speaker: 'Joao', text: 'I saw that. The cold-storage bucket hit its quota, so I raised it to 2 TB.' },
    { event_id: 'm3', speaker: 'Maria', text: 'Thanks. Can you also move the runners to the new rack next week?' },
    { event_id: 'm4', speaker: 'Joao', text: 'Sure, I will schedule the runner migration for Tuesday afternoon.' },
  ],
};

const HANDBOOK = `# Operations handbook

## Backups

The nightly backup runs at 02:00 and writes to the cold-storage bucket.
Maria Silva owns the backup system.

## Runners

The CI runners live in rack B. Joao Pereira maintains the runners.
`;

function tempDir(t) {
  return fs.mkdtempSync(path.join(os.tmpdir(), `rememberstack-node-${t}-`));
}

async function rejectsWith(promise, code) {
  await assert.rejects(promise, (e) => {
    assert.ok(e instanceof RememberStackError, `expected a RememberStackError, got ${e}`);
    assert.ok(e instanceof Error);
    assert.equal(e.code, code, `expected code ${code}, got ${e.code}: ${e.message}`);
    assert.ok(e.message.length > 0);
    return true;
  });
}

/**
 * The value without the instants evaluated per call, and with fractions compared
 * at f32 precision: the registry path (`run_operation`, as the CLI's `operations
 * run` and HTTP's POST …/operations/{name}) goes through `serde_json::Value`, which
 * widens the engine's f32 scores (0.55301005 becomes 0.5530100464820862).
 */
function stable(value) {
  return JSON.parse(JSON.stringify(value), (k, v) => {
    if (k === 'evaluated_at') return '<now>';
    if (typeof v === 'number' && !Number.isInteger(v)) return Math.fround(v);
    return v;
  });
}

describe('a memory with a document and a conversation', () => {
  let dir;
  let memory;
  let docReceipt;
  let convReceipt;

  before(async () => {
    dir = tempDir('main');
    memory = await Memory.open(path.join(dir, 'memory.db'), { namespace: 'team', config: {} });
    const file = path.join(dir, 'handbook.md');
    fs.writeFileSync(file, HANDBOOK);
    docReceipt = await memory.ingestFile(file, { kind: 'markdown', sourceTime: '2024-06-01T00:00:00Z' });
    convReceipt = await memory.ingestConversation(STANDUP, { sourceRef: 'standup/2024-06-03' });
    const drained = await memory.processUntilIdle();
    assert.ok(drained.completed > 0, `nothing was processed: ${JSON.stringify(drained)}`);
  });

  after(async () => {
    await memory.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('returns ingest receipts as the engine serializes them', () => {
    assert.equal(memory.namespace, 'team');
    assert.equal(docReceipt.namespace, 'team');
    assert.equal(docReceipt.source_kind, 'file');
    assert.equal(docReceipt.format, 'markdown');
    assert.equal(docReceipt.new_lineage, true);
    assert.match(docReceipt.document_id, /^[0-9a-f-]{36}$/);
    assert.equal(convReceipt.source_kind, 'conversation');
    assert.equal(convReceipt.source_ref, 'standup/2024-06-03');
    assert.equal(convReceipt.format, 'conversation');
  });

  it('runs every engine method by its name', async () => {
    const names = Memory.methods();
    for (const name of names) {
      // A field the call does not take is that call's own refusal, not an unknown name.
      await assert.rejects(memory.call(name, { no_such_field: 1 }), (e) => {
        assert.ok(e instanceof RememberStackError, `${name}: ${e}`);
        assert.ok(!e.message.includes('unknown method'), `${name}: ${e.message}`);
        return true;
      });
    }
    await assert.rejects(memory.call('no_such_call'), (e) => e.code === 'invalid_input' && e.message.includes('unknown method'));
    await assert.rejects(memory.call('search', ['not', 'an', 'object']), (e) => e.code === 'invalid_input');
    const byName = await memory.call('search', { query: 'who owns the backup system?', k: 3 });
    const named = await memory.search('who owns the backup system?', { k: 3 });
    assert.deepEqual(byName.results.map((r) => r.chunk_id), named.results.map((r) => r.chunk_id));
    const listed = await memory.call('documents');
    assert.deepEqual(listed.documents.map((d) => d.doc_id).sort(), (await memory.documents()).documents.map((d) => d.doc_id).sort());
  });

  it('lists documents and shows one', async () => {
    const { documents } = await memory.documents();
    assert.deepEqual(
      documents.map((d) => d.doc_id).sort(),
      [docReceipt.document_id, convReceipt.document_id].sort(),
    );
    const detail = await memory.document(convReceipt.document_id);
    assert.equal(JSON.stringify(detail).includes(convReceipt.version_id), true);
    const status = await memory.status();
    assert.equal(typeof status, 'object');
    assert.ok(status.ledger, 'status has a ledger');
  });

  it('answers combinedContext with evidence and its provenance', async () => {
    const bundle = await memory.combinedContext('Who raised the cold-storage bucket quota?');
    assert.equal(bundle.contract, 'ContextBundle/v2');
    const cs = bundle.claims_and_sources;
    assert.equal(cs.namespace, 'team');
    assert.equal(cs.operation.name, 'claims_and_sources_context');
    assert.ok(cs.results.length > 0, 'no evidence');
    for (const r of cs.results) {
      assert.ok(['claim', 'chunk'].includes(r.kind));
      assert.match(r.document_id, /^[0-9a-f-]{36}$/);
      assert.match(r.version_id, /^[0-9a-f-]{36}$/);
      assert.equal(typeof r.source_ref, 'string');
    }
    const fromStandup = cs.results.filter((r) => r.source_ref === 'standup/2024-06-03');
    assert.ok(fromStandup.length > 0, 'the conversation is not among the evidence');
    assert.ok(
      fromStandup.some((r) => r.event_ids.includes('m2') && /quota/i.test(r.text)),
      `turn m2 is not cited: ${JSON.stringify(fromStandup.map((r) => [r.event_ids, r.text]))}`,
    );
    const claim = cs.results.find((r) => r.kind === 'claim');
    if (claim) {
      assert.ok(claim.spans.length > 0, 'a claim without evidence spans');
    }
    assert.equal(bundle.facts.operation.name, 'facts_context');
  });

  it('gives the same JSON as the operation registry (the CLI --input path)', async () => {
    const query = 'Who owns the backup system?';
    const direct = await memory.combinedContext(query, { temporalScope: { mode: 'current' } });
    const viaRegistry = await memory.runOperation('combined_context', {
      query,
      temporalScope: { mode: 'current' },
    });
    assert.deepEqual(stable(direct), stable(viaRegistry));
    // Field order is the engine's own serialization order, not re-sorted.
    assert.deepEqual(Object.keys(direct), ['contract', 'claims_and_sources', 'facts']);
    assert.equal(Object.keys(direct.claims_and_sources)[0], 'contract');

    const cs = await memory.claimsAndSourcesContext(query, { k: 3 });
    const csOp = await memory.runOperation('claims_and_sources_context', { query, k: 3 });
    assert.deepEqual(stable(cs), stable(csOp));
    assert.ok(cs.results.length <= 3);

    const facts = await memory.factsContext(query, { k: 5 });
    assert.deepEqual(stable(facts), stable(await memory.runOperation('facts_context', { query, k: 5 })));

    const resolved = await memory.resolveEntity('Maria', { k: 3 });
    assert.ok(resolved.results.some((e) => e.canonical_name.startsWith('Maria')));
    assert.deepEqual(stable(resolved), stable(await memory.runOperation('resolve_entity', { name: 'Maria', k: 3 })));
    // Plain JSON values all the way down: nothing a JSON round trip would change.
    assert.deepEqual(JSON.parse(JSON.stringify(direct)), direct);
  });

  it('searches chunks and claims, and pages through adjacent chunks', async () => {
    const env = await memory.search('rack runners', { k: 2 });
    assert.ok(env.results.every((r) => typeof r.chunk_id === 'string'));
    assert.ok(env.results.length > 0 && env.results.length <= 2);
    const hit = env.results[0];
    assert.ok(/runner/i.test(hit.text));
    const around = await memory.adjacentChunks(hit.chunk_id, { window: 1 });
    assert.ok(around.results.some((c) => c.chunk_id === hit.chunk_id));
    const claims = await memory.search('backup', { grain: 'claims', k: 5 });
    assert.ok(claims.results.every((r) => typeof r.claim_id === 'string' && r.spans.length > 0));
    const docs = await memory.searchDocuments('handbook', { k: 5 });
    assert.ok(docs.results.some((d) => d.document_id === docReceipt.document_id));
  });

  it('lists the operation registry', async () => {
    const { operations } = await memory.operations();
    assert.deepEqual(
      operations.map((o) => o.name).sort(),
      ['claims_and_sources_context', 'combined_context', 'facts_context', 'resolve_entity'],
    );
    for (const o of operations) assert.equal(typeof o.input_schema, 'object');
  });

  it('appends messages idempotently', async () => {
    const msgs = [{ eventId: 'a1', speaker: 'Ana', text: 'The staging database moves to Frankfurt in July.' }];
    const first = await memory.appendMessages('chat/ops', msgs);
    assert.equal(first.appended, 1);
    assert.equal(first.new_lineage, true);
    const replay = await memory.appendMessages('chat/ops', msgs);
    assert.equal(replay.appended, 0);
    assert.equal(replay.already_present, 1);
    await rejectsWith(
      memory.appendMessages('chat/ops', [{ event_id: 'a1', speaker: 'Ana', text: 'Something else.' }]),
      'conflict',
    );
  });

  it('rejects bad input with typed codes and changes nothing', async () => {
    const before = (await memory.documents()).documents.length;
    await rejectsWith(memory.ingestText('x', { sourceRef: 'bad/kind', kind: 'pdf' }), 'invalid_input');
    await rejectsWith(memory.ingestText('x', { sourceRef: 'bad/mode', mode: 'forever' }), 'invalid_input');
    await rejectsWith(memory.ingestText('x', { sourceRef: 'bad/time', sourceTime: 'yesterday' }), 'invalid_input');
    await rejectsWith(memory.ingestText('x', { sourceRef: 'bad/key', bogus: true }), 'invalid_input');
    await rejectsWith(memory.ingestText(42, { sourceRef: 'bad/type' }), 'invalid_input');
    await rejectsWith(memory.ingestText('x', 'not options'), 'invalid_input');
    await rejectsWith(memory.ingestText('no lineage'), 'invalid_input');
    await rejectsWith(memory.ingestConversation({ turns: [] }, { sourceRef: 'bad/conv' }), 'invalid_conversation');
    await rejectsWith(memory.ingestFile(path.join(dir, 'missing.md')), 'not_found');
    await rejectsWith(memory.ingestText('x', { sourceRef: 'bad/big', k: 10n }), 'invalid_input');
    assert.equal((await memory.documents()).documents.length, before);

    await rejectsWith(memory.search(42), 'invalid_input');
    await rejectsWith(memory.search('q', { k: 'ten' }), 'invalid_input');
    await rejectsWith(memory.search('q', { grain: 'atoms' }), 'invalid_input');
    await rejectsWith(memory.runOperation('drop_everything', { query: 'x' }), 'not_found');
    // The operations refuse bad parameters as `invalid_parameter`, by either path.
    await rejectsWith(memory.runOperation('combined_context', { query: 'x', k: 3 }), 'invalid_parameter');
    await rejectsWith(memory.combinedContext('x', { k: 3 }), 'invalid_parameter');
    await rejectsWith(memory.claimsAndSourcesContext('x', { k: 1000 }), 'invalid_parameter');
    await rejectsWith(memory.resolveEntity(7), 'invalid_parameter');
    await rejectsWith(
      memory.factsContext('x', { temporalScope: { mode: 'someday' } }),
      'invalid_parameter',
    );
    await rejectsWith(memory.document('not-a-uuid'), 'invalid_input');
    await rejectsWith(memory.document(MISSING_ID), 'document_not_found');
    await rejectsWith(memory.deleteDocument(MISSING_ID), 'document_not_found');
    await rejectsWith(memory.forgetDocument(MISSING_ID), 'document_not_found');
    await rejectsWith(memory.trace(MISSING_ID), 'not_found');
    assert.equal((await memory.documents()).documents.length, before);
  });
  it('shares the engine with another namespace', async () => {
    const other = memory.withNamespace('other');
    assert.equal(other.namespace, 'other');
    assert.deepEqual((await other.documents()).documents, []);
    await other.ingestText('Only the other namespace knows about the heron.', { sourceRef: 'notes/heron' });
    await other.processUntilIdle();
    assert.ok(JSON.stringify(await other.search('heron')).includes('heron'));
    assert.ok(!JSON.stringify(await memory.search('heron')).includes('heron'));
    await other.close();
    await rejectsWith(other.status(), 'closed');
    assert.equal((await memory.status()).namespace, 'team');
    assert.throws(() => memory.withNamespace('Bad Name'), (e) => e.code === 'invalid_input');
    assert.throws(() => other.withNamespace('again'), (e) => e.code === 'closed');
  });

  it('answers many concurrent calls', async () => {
    const searches = Array.from({ length: 16 }, (_, i) =>
      memory.search(i % 2 ? 'nightly backup' : 'runners rack', { k: 3 }),
    );
    const [ingested, status, ...envelopes] = await Promise.all([
      memory.ingestText('A note written while others read.', { sourceRef: 'notes/concurrent' }),
      memory.status(),
      ...searches,
    ]);
    assert.equal(ingested.source_ref, 'notes/concurrent');
    assert.equal(status.namespace, 'team');
    assert.equal(envelopes.length, 16);
    for (const env of envelopes) assert.ok(env.results.length > 0);
  });
});

describe('hard forget', () => {
  it('leaves nothing searchable', async () => {
    const dir = tempDir('forget');
    const memory = await Memory.open(path.join(dir, 'memory.db'));
    try {
      const secret = 'The vault combination is quixotic zebra marmalade.';
      const receipt = await memory.ingestText(`# Vault\n\n${secret}\n`, { sourceRef: 'notes/vault' });
      await memory.ingestText('# Lunch\n\nThe team eats lunch at noon.\n', { sourceRef: 'notes/lunch' });
      await memory.processUntilIdle();
      const hasSecret = (env) => JSON.stringify(env).includes('marmalade');
      assert.ok(hasSecret(await memory.search('quixotic zebra marmalade', { k: 10 })));

      const report = await memory.forgetDocument(receipt.document_id);
      assert.equal(report.doc_id, receipt.document_id);
      assert.ok(report.chunks > 0);

      assert.ok(!hasSecret(await memory.search('quixotic zebra marmalade', { k: 10 })));
      assert.ok(!hasSecret(await memory.search('vault combination', { grain: 'claims', k: 10 })));
      assert.ok(!hasSecret(await memory.combinedContext('What is the vault combination?')));
      assert.ok(!hasSecret(await memory.searchDocuments('vault')));
      const { documents } = await memory.documents();
      assert.ok(!documents.some((d) => d.doc_id === receipt.document_id));
      await rejectsWith(memory.document(receipt.document_id), 'document_not_found');
      await rejectsWith(memory.forgetDocument(receipt.document_id), 'document_not_found');
      await rejectsWith(
        memory.ingestText(`# Vault\n\n${secret}\n`, { sourceRef: 'notes/vault' }),
        'forgotten_content',
      );
      // The rest of the memory is untouched.
      assert.ok(JSON.stringify(await memory.search('lunch noon')).includes('noon'));
    } finally {
      await memory.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('notes', () => {
  it('go through their lifecycle with expected-version checks', async () => {
    const dir = tempDir('notes');
    const memory = await Memory.open(path.join(dir, 'memory.db'));
    try {
      await memory.setNotePolicy('candidate');
      const input = {
        requestId: 'req-1',
        sourceKey: 'prefs/editor',
        sourceRevision: 'r1',
        text: 'Priya prefers tabs over spaces in Go code.',
        metadata: { camelCaseKept: true },
      };
      const note = await memory.rememberNote(input);
      assert.equal(note.lifecycle, 'candidate');
      assert.equal(note.source_key, 'prefs/editor');
      assert.deepEqual(note.metadata, { camelCaseKept: true });
      // A replay returns the same revision; the same request id with other text is refused.
      assert.deepEqual(await memory.rememberNote(input), note);
      await rejectsWith(memory.rememberNote({ ...input, text: 'Something else.' }), 'request_conflict');

      // A stale expected version is a conflict and changes nothing.
      await rejectsWith(memory.promoteNote(note.version_id, note.lifecycle_version + 1), 'conflict');
      const listed = await memory.listNotes({ limit: 10 });
      assert.equal(listed.notes.length, 1);
      assert.equal(listed.notes[0].lifecycle, 'candidate');
      assert.equal(listed.notes[0].lifecycle_version, note.lifecycle_version);

      const promoted = await memory.promoteNote(note.version_id, note.lifecycle_version);
      assert.equal(promoted.lifecycle, 'promoted');
      assert.ok(promoted.lifecycle_version > note.lifecycle_version);
      await memory.processUntilIdle();
      assert.ok(JSON.stringify(await memory.search('tabs over spaces')).includes('tabs'));

      // The old version number is now stale.
      await rejectsWith(memory.archiveNote(note.version_id, note.lifecycle_version), 'conflict');
      const archived = await memory.archiveNote(promoted.version_id, promoted.lifecycle_version);
      assert.equal(archived.lifecycle, 'archived');
      await rejectsWith(memory.revokeNote(archived.version_id, archived.lifecycle_version), 'conflict');
      await rejectsWith(memory.promoteNote('not-a-version', 1), 'invalid_input');

      const forgotten = await memory.forgetNote(note.note_id);
      assert.equal(forgotten.doc_id, note.note_id);
      await rejectsWith(memory.forgetNote(note.note_id), 'document_not_found');
    } finally {
      await memory.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('options', () => {
  it('map camelCase keys and Dates to the engine input', async () => {
    const dir = tempDir('options');
    const memory = await Memory.open(path.join(dir, 'memory.db'));
    try {
      const when = new Date('2024-01-02T03:04:05Z');
      const receipt = await memory.ingestText('# Birds\n\nThe heron nests by the lake.\n', {
        sourceRef: 'notes/birds',
        sourceTime: when,
        mode: 'living',
        threadRef: 'thread-7',
      });
      await memory.processUntilIdle();
      const env = await memory.search('heron lake', { k: 1, includeRetired: false, documents: { documentIds: [receipt.document_id] } });
      assert.equal(env.results.length, 1);
      assert.equal(env.results[0].asserted_at, '2024-01-02T03:04:05Z');
      const { documents } = await memory.documents();
      assert.equal(documents[0].mode, 'living');
      const none = await memory.search('heron lake', { documents: { title: 'no such title' } });
      assert.equal(none.results.length, 0);
    } finally {
      await memory.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('lifecycle of a handle', () => {
  it('rejects calls on a closed memory with code "closed"', async () => {
    const dir = tempDir('closed');
    const memory = await Memory.open(path.join(dir, 'memory.db'));
    await memory.ingestText('Closing time.', { sourceRef: 'notes/close' });
    await memory.close();
    await memory.close(); // idempotent
    await rejectsWith(memory.search('closing'), 'closed');
    await rejectsWith(memory.ingestText('More.', { sourceRef: 'notes/more' }), 'closed');
    await rejectsWith(memory.status(), 'closed');

    // The store is whole: a new handle sees what the closed one wrote.
    const again = await Memory.open(path.join(dir, 'memory.db'));
    try {
      const { documents } = await again.documents();
      assert.equal(documents.length, 1);
    } finally {
      await again.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses bad open options with typed codes', async () => {
    const dir = tempDir('open');
    try {
      await rejectsWith(Memory.open(path.join(dir, 'm.db'), { namespace: 'Not Valid!' }), 'invalid_input');
      await rejectsWith(Memory.open(path.join(dir, 'm.db'), { config: { engine: { bogus: 1 } } }), 'config');
      await rejectsWith(Memory.open(path.join(dir, 'm.db'), { colour: 'blue' }), 'invalid_input');
      await rejectsWith(Memory.connect(path.join(dir, 'm.db')), 'config');
      const tomlPath = path.join(dir, 'config.toml');
      fs.writeFileSync(tomlPath, '[embedder]\nprovider = "hashing"\n');
      const m = await Memory.open(path.join(dir, 'm.db'), { config: tomlPath });
      await m.close();
      await rejectsWith(Memory.open(path.join(dir, 'm2.db'), { config: path.join(dir, 'nope.toml') }), 'config');
      assert.throws(() => new Memory({}), TypeError);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('facts, the graph and entity administration', () => {
  it('lists facts and predicates, walks the graph, hydrates, merges and unmerges', async () => {
    const dir = tempDir('graph');
    const memory = await Memory.open(path.join(dir, 'memory.db'));
    try {
      const doc = await memory.ingestText(
        '# Team\n\nAlice works for Acme. Bob works for Acme. Acme is based in Lisbon.\n',
        { sourceRef: 'notes/team', sourceTime: '2024-04-01T00:00:00Z' },
      );
      await memory.processUntilIdle();
      const { facts } = await memory.facts();
      const works = facts.find((f) => f.statement === 'Alice works for Acme.');
      assert.ok(works, JSON.stringify(facts.map((f) => f.statement)));
      assert.ok((await memory.predicates()).predicates.some((p) => p.name === 'works_for'));
      // A page at a time, continuing with the cursor: the same facts in the same order.
      const paged = [];
      let cursor;
      do {
        const page = await memory.facts({ limit: 1, cursor });
        paged.push(...page.facts.map((f) => f.fact_id));
        cursor = page.cursor;
      } while (cursor);
      assert.deepEqual(paged, facts.map((f) => f.fact_id));
      await rejectsWith(memory.facts({ limit: 1001 }), 'invalid_parameter');
      assert.ok((await memory.claimDecisions(doc.document_id)).decisions.length > 0);
      const { claims } = await memory.claims({ documentId: doc.document_id });
      assert.ok(claims.some((c) => c.text === 'Alice works for Acme.'));

      const { entities } = await memory.entities();
      const id = (name) => entities.find((e) => e.canonical_name === name).entity_id;
      const mine = (await memory.facts({ entityId: id('Alice') })).facts;
      assert.deepEqual([...new Set(mine.map((f) => f.subject_name))], ['Alice']);
      const hood = await memory.neighborhood([id('Alice')], { depth: 2 });
      const reached = hood.results.map((r) => `${r.fact.subject_name}>${r.fact.object_name}@${r.depth}`);
      assert.ok(reached.includes('Alice>Acme@1'), reached.join(' '));
      assert.ok(hood.results.some((r) => r.depth === 2), reached.join(' '));

      const hydrated = await memory.hydrate([`fact:${works.fact_id}`]);
      assert.equal(hydrated.results[0].text, 'Alice works for Acme.');
      await rejectsWith(memory.hydrate(['fact:not-a-uuid']), 'invalid_parameter');

      const merge = await memory.mergeEntities(id('Alice'), id('Bob'));
      const names = async () => (await memory.entities()).entities.map((e) => e.canonical_name);
      assert.ok(!(await names()).includes('Alice'));
      await memory.unmergeEntities(merge.merge_id);
      assert.ok((await names()).includes('Alice'));
    } finally {
      await memory.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
