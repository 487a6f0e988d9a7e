'use strict';
// rememberstack/ai-sdk against the real `ai` and `zod` packages: the tools' schemas
// are the registry's, their execute functions answer from the engine, and
// generateText drives them with the SDK's own mock model (no network).

const { describe, it, before, after } = require('node:test');
const assert = require('node:assert/strict');

const { generateText, stepCountIs, asSchema } = require('ai');
const { MockLanguageModelV3 } = require('ai/test');
const { RememberStackError } = require('rememberstack');
const { rememberStackTools, jsonSchemaToZod, TOOL_NAMES, OPERATIONS } = require('rememberstack/ai-sdk');
const { openFixture, runExample } = require('./fixture');

const CALL = { toolCallId: 'call-1', messages: [] };
const USAGE = {
  inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 1, text: 1, reasoning: 0 },
};

function toolCalls(...calls) {
  return {
    content: calls.map(([toolName, input], i) => ({
      type: 'tool-call',
      toolCallId: `c${i + 1}`,
      toolName,
      input: JSON.stringify(input),
    })),
    finishReason: { unified: 'tool-calls', raw: undefined },
    usage: USAGE,
    warnings: [],
  };
}

function text(value) {
  return { content: [{ type: 'text', text: value }], finishReason: { unified: 'stop', raw: undefined }, usage: USAGE, warnings: [] };
}

describe('rememberStackTools', () => {
  let fx;
  let tools;
  let registry;

  before(async () => {
    fx = await openFixture('ai-sdk');
    tools = await rememberStackTools(fx.memory);
    registry = new Map((await fx.memory.operations()).operations.map((op) => [op.name, op]));
  });
  after(async () => {
    await fx.close();
  });

  it('gives a tool per assured operation and rememberNote, described and shaped by the registry', () => {
    assert.deepEqual(Object.keys(tools), TOOL_NAMES);
    assert.deepEqual(TOOL_NAMES, ['resolveEntity', 'claimsAndSourcesContext', 'factsContext', 'combinedContext', 'rememberNote']);
    for (const [name, opName] of Object.entries(OPERATIONS)) {
      const op = registry.get(opName);
      assert.ok(op, opName);
      const t = tools[name];
      assert.equal(typeof t.execute, 'function');
      assert.equal(t.description, op.description);
      // What the SDK sends to the model: the registry's fields, requirements and bounds.
      const sent = asSchema(t.inputSchema).jsonSchema;
      assert.deepEqual(Object.keys(sent.properties).sort(), Object.keys(op.input_schema.properties).sort(), name);
      assert.deepEqual([...sent.required].sort(), [...op.input_schema.required].sort(), name);
      assert.equal(sent.additionalProperties, false);
      for (const [field, spec] of Object.entries(op.input_schema.properties)) {
        const got = sent.properties[field];
        assert.equal(got.type, spec.type, `${name}.${field}`);
        if (spec.description) assert.equal(got.description, spec.description, `${name}.${field}`);
        for (const bound of ['minimum', 'maximum', 'minLength', 'maxLength', 'minItems', 'maxItems']) {
          if (spec[bound] !== undefined) assert.equal(got[bound], spec[bound], `${name}.${field}.${bound}`);
        }
        if (spec.type === 'object') {
          assert.deepEqual(got.properties.mode.enum, spec.properties.mode.enum);
          assert.deepEqual(got.required, spec.required);
        }
      }
    }
    const note = asSchema(tools.rememberNote.inputSchema).jsonSchema;
    assert.deepEqual(note.required, ['source_key', 'text']);
    assert.deepEqual(Object.keys(note.properties).sort(), ['metadata', 'source_key', 'source_revision', 'text']);
  });

  it('validates arguments as the engine does', () => {
    const ok = (name, input) => assert.equal(tools[name].inputSchema.safeParse(input).success, true, JSON.stringify(input));
    const bad = (name, input) => assert.equal(tools[name].inputSchema.safeParse(input).success, false, JSON.stringify(input));
    const id = fx.plan.document_id; // a UUID the engine issued
    ok('resolveEntity', { name: 'Priya', k: 20 });
    bad('resolveEntity', { name: 'Priya', k: 21 });
    bad('resolveEntity', { name: '' });
    bad('resolveEntity', { name: 'Priya', extra: true });
    ok('claimsAndSourcesContext', { query: 'q', entity_ids: [id], k: 1, budget: 400, record_receipt: true });
    bad('claimsAndSourcesContext', { query: 'q', entity_ids: ['not-a-uuid'] });
    bad('claimsAndSourcesContext', { query: 'q', entity_ids: [id, id] });
    bad('claimsAndSourcesContext', { query: 'q', entity_ids: [] });
    bad('claimsAndSourcesContext', { query: 'q', k: 1.5 });
    ok('factsContext', { query: 'q', temporal_scope: { mode: 'at', at: '2025-03-01T00:00:00+01:00' } });
    bad('factsContext', { query: 'q', temporal_scope: { mode: 'sometimes' } });
    bad('factsContext', { query: 'q', temporal_scope: { mode: 'at', at: 'March' } });
    bad('combinedContext', { query: 'q', k: 3 });
    ok('rememberNote', { source_key: 'k', text: 't', metadata: { any: ['thing'] } });
    bad('rememberNote', { text: 't' });
  });

  it('resolveEntity answers from the engine', async () => {
    const out = await tools.resolveEntity.execute({ name: 'Priya Shah' }, CALL);
    assert.equal(out.operation.name, 'resolve_entity');
    assert.equal(out.results[0].canonical_name, 'Priya Shah');
  });

  it('claimsAndSourcesContext puts the dated claim first, with its provenance', async () => {
    const out = await tools.claimsAndSourcesContext.execute({ query: 'When does Atlas 2.0 ship?', k: 4 }, CALL);
    assert.equal(out.operation.name, 'claims_and_sources_context');
    assert.ok(out.results.length >= 1 && out.results.length <= 4);
    const top = out.results[0];
    assert.match(top.text, /14 March 2025/);
    assert.equal(top.source_ref, 'plans/atlas');
    assert.equal(top.document_id, fx.plan.document_id);
    assert.equal(top.version_id, fx.plan.version_id);
    assert.equal(top.asserted_at, '2025-02-01T10:00:00Z');
    assert.equal(typeof top.scores.relevance, 'number');
  });

  it('factsContext answers with facts and their supporting claims', async () => {
    const out = await tools.factsContext.execute({ query: 'Where does Priya Shah live?', temporal_scope: { mode: 'current' } }, CALL);
    assert.equal(out.grain, 'fact');
    const top = out.results[0];
    assert.match(top.statement, /Lisbon/);
    assert.equal(top.subject_name, 'Priya Shah');
    assert.equal(top.provenance[0].document_id, fx.plan.document_id);
  });

  it('combinedContext finds the conversation turn, cited by event id', async () => {
    const out = await tools.combinedContext.execute({ query: 'Did QA sign off on the sync engine?' }, CALL);
    assert.equal(out.contract, 'ContextBundle/v2');
    const top = out.claims_and_sources.results[0];
    assert.equal(top.source_ref, 'chat/atlas');
    assert.equal(top.document_id, fx.chat.document_id);
    assert.ok(top.event_ids.includes('m2'), JSON.stringify(top.event_ids));
    assert.match(top.text, /QA signed off/);
    assert.ok(out.facts.results.length > 0);
  });

  it('surfaces engine errors as RememberStackErrors', async () => {
    await assert.rejects(
      tools.claimsAndSourcesContext.execute({ query: 'q', cursor: 'not-a-cursor' }, CALL),
      (e) => e instanceof RememberStackError && e.code === 'invalid_parameter',
    );
  });

  it('rememberNote remembers, replays, supersedes, and the note is recalled', async () => {
    const first = await tools.rememberNote.execute({ source_key: 'prefs/editor', text: 'Ana prefers vim.' }, CALL);
    assert.equal(first.source_key, 'prefs/editor');
    assert.equal(first.lifecycle, 'promoted');
    assert.match(first.source_revision, /^sha256-[0-9a-f]{16}$/);
    // A retried call (same content) replays the same revision instead of conflicting.
    const again = await tools.rememberNote.execute({ source_key: 'prefs/editor', text: 'Ana prefers vim.' }, CALL);
    assert.equal(again.version_id, first.version_id);
    // New text under the key is a new revision that supersedes the first.
    const second = await tools.rememberNote.execute(
      { source_key: 'prefs/editor', text: 'Ana switched to Helix as her editor.', metadata: { by: 'agent' } },
      CALL,
    );
    assert.notEqual(second.version_id, first.version_id);
    assert.deepEqual(second.metadata, { by: 'agent' });
    const { notes } = await fx.memory.listNotes();
    assert.equal(notes.find((n) => n.version_id === first.version_id).lifecycle, 'archived');
    // Processed on the spot (processNotes), so the next recall finds it.
    const recall = await tools.claimsAndSourcesContext.execute({ query: 'Which editor does Ana use, Helix?' }, CALL);
    assert.equal(recall.results[0].source_ref, 'prefs/editor');
    assert.match(recall.results[0].text, /Helix/);
  });

  it('honours include, defaults, noteKeyPrefix and processNotes, and refuses bad options', async () => {
    const some = await rememberStackTools(fx.memory, {
      include: ['claimsAndSourcesContext', 'rememberNote'],
      defaults: { claimsAndSourcesContext: { k: 1 }, rememberNote: { metadata: { from: 'defaults' } } },
      noteKeyPrefix: 'agent/',
      processNotes: false,
    });
    assert.deepEqual(Object.keys(some), ['claimsAndSourcesContext', 'rememberNote']);
    const one = await some.claimsAndSourcesContext.execute({ query: 'Atlas' }, CALL);
    assert.equal(one.results.length, 1);
    assert.equal(one.applied.k, 1);
    const three = await some.claimsAndSourcesContext.execute({ query: 'Atlas', k: 3 }, CALL); // the model's wins
    assert.equal(three.applied.k, 3);
    const note = await some.rememberNote.execute({ source_key: 'todo', text: 'Ship the Atlas notes.' }, CALL);
    assert.equal(note.source_key, 'agent/todo');
    assert.deepEqual(note.metadata, { from: 'defaults' });
    // processNotes: false leaves the note to whoever runs the pipeline.
    const before = await some.claimsAndSourcesContext.execute({ query: 'Ship the Atlas notes', k: 5 }, CALL);
    assert.ok(Object.keys(before.freshness.pending_work).length > 0, JSON.stringify(before.freshness));
    assert.ok(!before.results.some((r) => r.source_ref === 'agent/todo'));
    await fx.memory.processUntilIdle();
    const after = await some.claimsAndSourcesContext.execute({ query: 'Ship the Atlas notes', k: 5 }, CALL);
    assert.ok(after.results.some((r) => r.source_ref === 'agent/todo'));

    const refused = async (options) =>
      assert.rejects(rememberStackTools(fx.memory, options), (e) => e.code === 'invalid_input' && /rememberStackTools/.test(e.message));
    await refused({ include: ['search'] });
    await refused({ defaults: { search: {} } });
    await refused({ colour: 'blue' });
    await assert.rejects(rememberStackTools({}), (e) => e.code === 'invalid_input');
  });

  it('generateText with a mock model calls a tool and answers from its result', async () => {
    let answered;
    const model = new MockLanguageModelV3({
      doGenerate: async ({ prompt }) => {
        const results = prompt.filter((m) => m.role === 'tool').flatMap((m) => m.content);
        if (results.length === 0) return toolCalls(['claimsAndSourcesContext', { query: 'When does Atlas 2.0 ship?', k: 3 }]);
        // The tool's output reaches the model as JSON.
        assert.equal(results[0].toolName, 'claimsAndSourcesContext');
        assert.equal(results[0].output.type, 'json');
        answered = results[0].output.value.results[0];
        return text(`It ships on 14 March 2025 [${answered.kind}:${answered.kind === 'claim' ? answered.claim_id : answered.chunk_id}].`);
      },
    });
    const result = await generateText({ model, tools, stopWhen: stepCountIs(3), prompt: 'When does Atlas 2.0 ship?' });
    // The model was offered all five tools, with the converted schemas.
    const offered = model.doGenerateCalls[0].tools;
    assert.deepEqual(offered.map((t) => t.name), TOOL_NAMES);
    assert.deepEqual(offered.find((t) => t.name === 'resolveEntity').inputSchema.required, ['name']);
    assert.equal(result.steps.length, 2);
    const [call] = result.steps[0].toolCalls;
    assert.equal(call.toolName, 'claimsAndSourcesContext');
    const [res] = result.steps[0].toolResults;
    assert.equal(res.output.operation.name, 'claims_and_sources_context');
    assert.match(res.output.results[0].text, /14 March 2025/);
    assert.equal(res.output.results[0].document_id, fx.plan.document_id);
    assert.equal(answered.document_id, fx.plan.document_id);
    assert.match(result.text, /^It ships on 14 March 2025 \[(claim|chunk):[0-9a-f-]{36}\]\.$/);
  });

  it('generateText hands invalid arguments back to the model as a tool error', async () => {
    let seen;
    const model = new MockLanguageModelV3({
      doGenerate: async ({ prompt }) => {
        const results = prompt.filter((m) => m.role === 'tool').flatMap((m) => m.content);
        if (results.length === 0) return toolCalls(['resolveEntity', { name: 'Priya', k: 99 }]);
        seen = results[0];
        return text('sorry');
      },
    });
    const result = await generateText({ model, tools, stopWhen: stepCountIs(3), prompt: 'Who is Priya?' });
    assert.equal(result.steps[0].toolResults.length, 0);
    assert.deepEqual(result.steps[0].content.map((c) => c.type), ['tool-call', 'tool-error']);
    assert.equal(seen.output.type, 'error-text');
    assert.match(seen.output.value, /k/);
  });
});

describe('jsonSchemaToZod', () => {
  it('converts the subset and refuses anything else', () => {
    const s = jsonSchemaToZod({
      type: 'object',
      additionalProperties: false,
      required: ['a'],
      properties: { a: { type: 'string', enum: ['x', 'y'] }, b: { type: 'object', description: 'free' } },
    });
    assert.equal(s.safeParse({ a: 'x', b: { anything: [1] } }).success, true);
    assert.equal(s.safeParse({ a: 'z' }).success, false);
    for (const schema of [
      { type: 'string', pattern: '^a' },
      { type: 'string', format: 'email' },
      { type: ['string', 'null'] },
      { type: 'constructor' },
      { anyOf: [{ type: 'string' }] },
      { type: 'object', properties: {}, required: ['missing'] },
      { type: 'object', properties: { a: { type: 'string' } }, additionalProperties: { type: 'string' } },
    ]) {
      assert.throws(() => jsonSchemaToZod(schema), (e) => e.code === 'unsupported_schema', JSON.stringify(schema));
    }
  });
});

it('runs the AI SDK example', () => {
  const out = runExample('ai_sdk_tools.mjs');
  assert.match(out, /^tool call: rememberNote \{"source_key":"prefs\/release-notes"/m);
  assert.match(out, /^tool call: combinedContext \{"query":"When does Atlas 2\.0 ship\?"\}$/m);
  assert.match(out, /^tool result: rememberNote -> note prefs\/release-notes \(promoted\)$/m);
  assert.match(out, /^tool result: combinedContext -> \[(claim|chunk) from plans\/atlas @ 2025-02-01T10:00:00Z\] .*14 March 2025/m);
  assert.match(out, /^tool result: claimsAndSourcesContext -> \[(claim|chunk) from chat\/atlas @ 2025-02-03T09:00:00Z\] .*QA signed off/m);
  assert.match(out, /^assistant: .*14 March 2025\. \[(claim|chunk) plans\/atlas\] .*QA signed off.* \[(claim|chunk) chat\/atlas m[12]/m);
  assert.match(out, /^later recall: \[chunk from prefs\/release-notes\] Ana wants release notes in French\.$/m);
});
