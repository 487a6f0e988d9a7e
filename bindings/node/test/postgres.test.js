'use strict';
// Memory.connect against PostgreSQL, when DATABASE_URL names one (CI sets it;
// scripts/pg-local.sh starts one). Each run works in a schema of its own.

const { it } = require('node:test');
const assert = require('node:assert/strict');
const crypto = require('node:crypto');

const { Memory } = require('..');

const url = process.env.DATABASE_URL;

it('connects to PostgreSQL and answers from it', { skip: url ? false : 'DATABASE_URL is not set' }, async () => {
  const schema = `node_${crypto.randomBytes(6).toString('hex')}`;
  const memory = await Memory.connect(url, { namespace: 'pg-node', config: { store: { schema } } });
  try {
    const receipt = await memory.ingestText('# Boats\n\nThe ferry to Ilha Grande leaves at 08:15.\n', {
      sourceRef: 'notes/ferry',
    });
    assert.equal(receipt.namespace, 'pg-node');
    await memory.processUntilIdle();
    const status = await memory.status();
    assert.equal(status.store, 'postgres');
    const bundle = await memory.combinedContext('When does the ferry leave?');
    const hit = bundle.claims_and_sources.results.find((r) => /ferry/i.test(r.text));
    assert.ok(hit, 'no ferry evidence');
    assert.equal(hit.document_id, receipt.document_id);
    await assert.rejects(memory.document('123e4567-e89b-12d3-a456-426614174000'), {
      code: 'document_not_found',
    });
  } finally {
    await memory.close();
  }
});
