'use strict';
// RememberStack for Node.js: the Rust engine in this process (a N-API addon), every
// facade method as a Promise. Results are plain objects equal to the JSON the Rust
// facade serializes (what `remember --json` prints and the HTTP API returns);
// failures reject with a `RememberStackError` whose `code` is the engine's code.
//
// This file is the whole JavaScript layer: it maps camelCase option keys to the
// engine's snake_case input fields, sends JSON to the addon and parses the answer.
// It holds no logic the engine does not have.

const path = require('node:path');

function loadNative() {
  const file = process.env.REMEMBERSTACK_NODE_ADDON || path.join(__dirname, 'rememberstack.node');
  try {
    return require(file);
  } catch (e) {
    const err = new Error(
      `rememberstack: cannot load the native addon ${file} (${e.message}). ` +
        'Build it with `bash bindings/node/test.sh` or see bindings/node/README.md.',
    );
    err.code = 'addon_not_found';
    throw err;
  }
}

const native = loadNative();

/** An engine error: `code` is machine-readable ("invalid_input", "document_not_found", …). */
class RememberStackError extends Error {
  constructor(code, message) {
    super(message);
    this.name = 'RememberStackError';
    this.code = code;
  }
}

function invalid(message) {
  return new RememberStackError('invalid_input', message);
}

function snakeKey(key) {
  return key.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
}

function isPlainObject(v) {
  if (v === null || typeof v !== 'object') return false;
  const proto = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
}

// Values kept exactly as given: the caller's own metadata.
const VERBATIM_KEYS = new Set(['metadata']);

/** camelCase keys to snake_case, recursively; Dates to RFC 3339 strings. */
function toWire(value) {
  if (value instanceof Date) return value.toISOString();
  if (Array.isArray(value)) return value.map(toWire);
  if (isPlainObject(value)) {
    const out = {};
    for (const [k, v] of Object.entries(value)) {
      if (v === undefined) continue;
      const key = snakeKey(k);
      out[key] = VERBATIM_KEYS.has(key) ? v : toWire(v);
    }
    return out;
  }
  return value;
}

function options(name, opts) {
  if (opts === undefined || opts === null) return {};
  if (!isPlainObject(opts)) {
    throw invalid(`${name}: options must be an object, not ${typeof opts}`);
  }
  return toWire(opts);
}

function encode(input) {
  try {
    return JSON.stringify(input);
  } catch (e) {
    throw invalid(`the input cannot be sent as JSON: ${e.message}`);
  }
}

function decode(text) {
  const frame = JSON.parse(text);
  if (frame.error) throw new RememberStackError(frame.error.code, frame.error.message);
  return frame.ok;
}

class Memory {
  #native;
  #namespace;

  /** @private Use `Memory.open` or `Memory.connect`. */
  constructor(handle, namespace) {
    if (!(handle instanceof native.NativeMemory)) {
      throw new TypeError('use `await Memory.open(path)` or `await Memory.connect(url)`');
    }
    this.#native = handle;
    this.#namespace = namespace;
  }

  static async #open(name, target, opts, requirePostgres) {
    if (isPlainObject(target) && opts === undefined) {
      opts = target;
      target = undefined;
    }
    const o = options(name, opts);
    const handle = new native.NativeMemory();
    const input = { ...o, require_postgres: requirePostgres };
    if (target !== undefined && target !== null) input.path = target;
    const opened = decode(await handle.open(encode(input)));
    return new Memory(handle, opened.namespace);
  }

  /**
   * Open the embedded SQLite store at `path` (default: REMEMBERSTACK_DB, else the
   * user's data directory). `{ namespace, config }`: `config` is a TOML file path,
   * or overrides in the file's shape on top of the CLI's configuration
   * (REMEMBERSTACK_CONFIG, then REMEMBERSTACK_*), section by section.
   */
  static async open(path, opts) {
    return Memory.#open('open', path, opts, false);
  }

  /** Connect to the PostgreSQL store at `url` (`postgres://…`). */
  static async connect(url, opts) {
    if (typeof url !== 'string') throw invalid('connect: the URL must be a string');
    return Memory.#open('connect', url, opts, true);
  }

  /** The methods the engine answers (snake_case names). */
  static methods() {
    return native.NativeMemory.methods();
  }

  /** This handle's namespace. */
  get namespace() {
    return this.#namespace;
  }

  /**
   * The same memory (one engine, one store) reading and writing `namespace`.
   * Closing either handle leaves the other open.
   */
  withNamespace(namespace) {
    if (typeof namespace !== 'string') throw invalid('withNamespace: the namespace must be a string');
    const handle = new native.NativeMemory();
    const shared = decode(handle.share(this.#native, namespace));
    return new Memory(handle, shared.namespace);
  }

  async #call(method, input) {
    return decode(await this.#native.call(method, encode(input)));
  }

  /**
   * Run any call of the engine by its name (`Memory.methods()`) with its JSON
   * input: the fields MCP's tool of that name and `remember call` take (snake_case;
   * camelCase keys and Dates are converted as for the named methods), omitted ones
   * at their defaults. Every call is reachable this way, with or without a named
   * method here. Resolves to the call's JSON object.
   */
  async call(method, input = {}) {
    if (typeof method !== 'string') throw invalid("call: the call's name must be a string");
    if (!isPlainObject(input)) throw invalid("call: a call's input must be a plain object");
    return this.#call(method, toWire(input));
  }

  // ---- sources

  async ingestFile(path, opts) {
    return this.#call('ingest_file', { ...options('ingestFile', opts), path });
  }

  async ingestText(text, opts) {
    return this.#call('ingest_text', { ...options('ingestText', opts), text });
  }

  async ingestConversation(conversation, opts) {
    return this.#call('ingest_conversation', {
      ...options('ingestConversation', opts),
      conversation: toWire(conversation),
    });
  }

  async appendMessages(conversationRef, messages, opts) {
    return this.#call('append_messages', {
      ...options('appendMessages', opts),
      conversation_ref: conversationRef,
      messages: toWire(messages),
    });
  }

  async conversationMessages(conversationRef) {
    return this.#call('conversation_messages', { conversation_ref: conversationRef });
  }

  async processUntilIdle() {
    return this.#call('process_until_idle', {});
  }

  async documents() {
    return this.#call('documents', {});
  }

  async document(documentId) {
    return this.#call('document', { document_id: documentId });
  }

  async deleteDocument(documentId) {
    return this.#call('delete_document', { document_id: documentId });
  }

  async forgetDocument(documentId) {
    return this.#call('forget_document', { document_id: documentId });
  }

  // ---- notes

  /** `{ requestId, sourceKey, sourceRevision, text, metadata? }` */
  async rememberNote(note) {
    return this.#call('remember_note', options('rememberNote', note));
  }

  async promoteNote(versionId, expectedVersion) {
    return this.#call('promote_note', { version_id: versionId, expected_version: expectedVersion });
  }

  async archiveNote(versionId, expectedVersion) {
    return this.#call('archive_note', { version_id: versionId, expected_version: expectedVersion });
  }

  async revokeNote(versionId, expectedVersion) {
    return this.#call('revoke_note', { version_id: versionId, expected_version: expectedVersion });
  }

  /** `{ cursor?, limit? }` */
  async listNotes(opts) {
    return this.#call('list_notes', options('listNotes', opts));
  }

  /** `startAs`: "promoted" (default) or "candidate". */
  async setNotePolicy(startAs) {
    return this.#call('set_note_policy', { start_as: startAs });
  }

  async forgetNote(noteId) {
    return this.#call('forget_note', { note_id: noteId });
  }

  // ---- reads

  /** `{ k?, grain?: "chunks"|"claims"|"facts", roles?, cursor?, includeRetired?, entities?, exact?, documents? }` */
  async search(query, opts) {
    return this.#call('search', { ...options('search', opts), query });
  }

  /** `{ k? }` */
  async resolveEntity(query, opts) {
    return this.#call('resolve_entity', { ...options('resolveEntity', opts), name: query });
  }

  async claimsAndSourcesContext(query, opts) {
    return this.#call('claims_and_sources_context', {
      ...options('claimsAndSourcesContext', opts),
      query,
    });
  }

  async factsContext(query, opts) {
    return this.#call('facts_context', { ...options('factsContext', opts), query });
  }

  /** `{ entityIds?, temporalScope? }` */
  async combinedContext(query, opts) {
    return this.#call('combined_context', { ...options('combinedContext', opts), query });
  }

  /** Run a registry operation by name with the CLI's `--input` JSON (camelCase keys accepted). */
  async runOperation(name, input) {
    return this.#call('run_operation', { name, input: options('runOperation', input) });
  }

  async operations() {
    return this.#call('operations', {});
  }

  /** `{ window? }` (1–2 chunks on each side, default 1) */
  async adjacentChunks(chunkId, opts) {
    return this.#call('adjacent_chunks', { ...options('adjacentChunks', opts), chunk_id: chunkId });
  }

  /** `{ fileName?, title?, author?, from?, to?, k? }` */
  async searchDocuments(query, opts) {
    return this.#call('search_documents', { ...options('searchDocuments', opts), query });
  }

  async trace(factId) {
    return this.#call('trace', { fact_id: factId });
  }

  async resolveReceipt(receiptId) {
    return this.#call('resolve_receipt', { receipt_id: receiptId });
  }

  async inspectReceipt(receiptId) {
    return this.#call('inspect_receipt', { receipt_id: receiptId });
  }

  /** `{ includeMerged?, limit? }` */
  async entities(opts) {
    return this.#call('entities', options('entities', opts));
  }

  async entity(nameOrId) {
    return this.#call('entity', { name_or_id: nameOrId });
  }

  /** `{ documentId?, includeRetired? }` — claims, newest first. */
  async claims(opts) {
    return this.#call('claims', options('claims', opts));
  }

  /** The extraction ledger of a document: kept, dropped and rejected sentences. */
  async claimDecisions(documentId) {
    return this.#call('claim_decisions', { document_id: documentId });
  }

  /**
   * `{ entityId?, at?, history?, limit?, cursor? }` — facts holding now, at an instant, or
   * all: `{ facts, cursor? }`, a page of at most 1,000; pass `cursor` back for the next.
   */
  async facts(opts) {
    return this.#call('facts', options('facts', opts));
  }

  /** The namespace's predicate registry. */
  async predicates() {
    return this.#call('predicates', {});
  }

  /** Relations reachable from `entityIds`: `{ depth?, predicates?, temporalScope? }`. */
  async neighborhood(entityIds, opts) {
    return this.#call('neighborhood', { ...options('neighborhood', opts), entity_ids: entityIds });
  }

  /** Full records by reference: `fact:<id>`, `claim:<id>`, `chunk:<id>`. */
  async hydrate(records) {
    return this.#call('hydrate', { records });
  }

  // ---- corrections, export, feedback

  async retractClaim(claimId, reason, opts) {
    return this.#call('retract_claim', { ...options('retractClaim', opts), id: claimId, reason });
  }

  async invalidateFact(factId, reason, opts) {
    return this.#call('invalidate_fact', { ...options('invalidateFact', opts), id: factId, reason });
  }

  async correctFact(factId, statement, reason, opts) {
    return this.#call('correct_fact', {
      ...options('correctFact', opts),
      fact_id: factId,
      statement,
      reason,
    });
  }

  async mergeEntities(from, into) {
    return this.#call('merge_entities', { from, into });
  }

  async unmergeEntities(mergeId) {
    return this.#call('unmerge_entities', { merge_id: mergeId });
  }

  /** The merges this namespace's names propose (`{ proposals }`). */
  async mergeProposals() {
    return this.#call('merge_proposals', {});
  }

  async acceptMergeProposal(from, into) {
    return this.#call('accept_merge_proposal', { from, into });
  }

  async rejectMergeProposal(from, into) {
    return this.#call('reject_merge_proposal', { from, into });
  }

  /** A memory pack. `{ entities?, documents?, history?, limit? }` */
  async export(selection) {
    return this.#call('export', options('export', selection));
  }

  /** `{ receiptId, itemRef, rating, comment? }` */
  async feedback(input) {
    return this.#call('feedback', options('feedback', input));
  }

  /** `{ receiptId?, limit? }` */
  async listFeedback(opts) {
    return this.#call('list_feedback', options('listFeedback', opts));
  }

  // ---- operations of the deployment

  async status() {
    return this.#call('status', {});
  }

  async doctor() {
    return this.#call('doctor', {});
  }

  /** Close the handle: later calls reject with code "closed". Idempotent. */
  async close() {
    this.#native.close();
  }
}

module.exports = { Memory, RememberStackError };
