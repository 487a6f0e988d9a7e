'use strict';
// A LangChain.js retriever over RememberStack (`@langchain/core`): a `BaseRetriever`
// whose documents are the engine's evidence (claims and source chunks, from
// `claimsAndSourcesContext`), its facts (`factsContext`) or both (`combinedContext`),
// best first, each with its provenance in `metadata`.
//
//   const { RememberStackRetriever } = require('rememberstack/langchain');
//   const retriever = new RememberStackRetriever({ memory, k: 5 });
//   const docs = await retriever.invoke('When does version 2.0 ship?');
//
// Metadata keeps the engine's snake_case field names (as every result of the
// package does); see the `RememberStackMetadata` declaration in langchain.d.ts.

function peer(name) {
  try {
    return require(name);
  } catch (e) {
    if (e && e.code === 'MODULE_NOT_FOUND' && String(e.message).includes(`'${name}'`)) {
      const err = new Error(
        `rememberstack/langchain needs the peer dependency \`@langchain/core\`: npm install @langchain/core (${e.message})`,
      );
      err.code = 'peer_not_found';
      throw err;
    }
    throw e;
  }
}

const { BaseRetriever } = peer('@langchain/core/retrievers');
const { Document } = peer('@langchain/core/documents');

const MODES = {
  claimsAndSources: 'claims_and_sources_context',
  facts: 'facts_context',
  combined: 'combined_context',
};
// The recall options each mode sends (camelCase, as the Memory methods take them).
const RECALL = ['k', 'budget', 'entityIds', 'recordReceipt', 'subject', 'purpose'];
const MODE_OPTIONS = {
  claimsAndSources: RECALL,
  facts: [...RECALL, 'temporalScope'],
  combined: ['entityIds', 'temporalScope'],
};
const OWN_OPTIONS = ['memory', 'mode', 'minRelevance', 'hydrateProvenance'];
const BASE_OPTIONS = ['callbacks', 'tags', 'metadata', 'verbose'];
const ALL_OPTIONS = new Set([...OWN_OPTIONS, ...BASE_OPTIONS, ...MODE_OPTIONS.facts]);
// `hydrate` takes at most this many records a call (the engine's HYDRATE_MAX_RECORDS).
const HYDRATE_BATCH = 50;

function invalid(message) {
  const err = new Error(`RememberStackRetriever: ${message}`);
  err.code = 'invalid_input';
  return err;
}

function relevanceOf(scores) {
  return scores && typeof scores.relevance === 'number' ? scores.relevance : null;
}

function common(envelope, rank) {
  return {
    operation: envelope.operation.name,
    namespace: envelope.namespace,
    rank,
    receipt_id: envelope.receipt_id ?? null,
  };
}

function evidenceDocument(envelope, r, rank) {
  const id = r.kind === 'claim' ? r.claim_id : r.chunk_id;
  const metadata = {
    kind: r.kind,
    ref: `${r.kind}:${id}`,
    ...common(envelope, rank),
    document_id: r.document_id,
    version_id: r.version_id,
    document_title: r.document_title,
    source_kind: r.source_kind,
    source_ref: r.source_ref,
    source: r.source_ref,
    chunk_id: r.chunk_id,
    claim_id: r.kind === 'claim' ? r.claim_id : null,
    fact_id: null,
    section_path: r.kind === 'chunk' ? r.section_path : null,
    section_role: r.kind === 'chunk' ? r.section_role : null,
    event_ids: r.event_ids,
    asserted_at: r.asserted_at,
    scores: r.scores,
    relevance: relevanceOf(r.scores),
  };
  if (r.kind === 'chunk') {
    metadata.char_span = r.char_span;
  } else {
    metadata.spans = r.spans;
    metadata.validity = r.validity;
    metadata.is_current = r.is_current;
    metadata.added_context = r.added_context;
    metadata.extractor_version = r.extractor_version;
    metadata.needs_context = r.needs_context ?? false;
  }
  return new Document({ pageContent: r.text, metadata, id });
}

function factDocument(envelope, f, rank) {
  const provenance = f.provenance ?? [];
  const first = provenance[0];
  const metadata = {
    kind: 'fact',
    ref: `fact:${f.fact_id}`,
    ...common(envelope, rank),
    // The first supporting claim's (current testimony first); all of them are in `provenance`.
    document_id: first ? first.document_id : null,
    version_id: first ? first.version_id : null,
    document_title: first ? first.document_title : null,
    source_kind: null,
    source_ref: null,
    source: null,
    chunk_id: null,
    claim_id: first ? first.claim_id : null,
    fact_id: f.fact_id,
    section_path: null,
    section_role: null,
    event_ids: first ? first.event_ids : [],
    asserted_at: first ? first.asserted_at : null,
    scores: f.scores,
    relevance: relevanceOf(f.scores),
    fact_kind: f.kind,
    subject: f.subject,
    subject_name: f.subject_name,
    predicate: f.predicate,
    object: f.object,
    object_name: f.object_name,
    window: f.window,
    validity_kind: f.validity_kind,
    recorded_at: f.recorded_at,
    invalidated_at: f.invalidated_at,
    superseded_by: f.superseded_by,
    support_state: f.support_state ?? null,
    evidence_count: f.evidence_count,
    contradict_count: f.contradict_count,
    contradiction_group: f.contradiction_group,
    provenance,
  };
  return new Document({ pageContent: f.statement, metadata, id: f.fact_id });
}

/**
 * The documents of an engine answer, best first: a `claims_and_sources_context` or
 * `facts_context` envelope, or a `combined_context` bundle (evidence, then facts).
 * Synchronous: a claim's `section_path` and a fact's `source_ref`, `chunk_id` and
 * `section_path` stay null (the retriever hydrates them).
 */
function documentsFromResult(result) {
  if (result && result.contract === 'ContextBundle/v2') {
    return [...documentsFromResult(result.claims_and_sources), ...documentsFromResult(result.facts)];
  }
  if (!result || !Array.isArray(result.results) || !result.operation || !['evidence', 'fact'].includes(result.grain)) {
    throw invalid('not an evidence or fact envelope, nor a ContextBundle/v2');
  }
  return result.results.map((r, i) =>
    result.grain === 'fact' ? factDocument(result, r, i + 1) : evidenceDocument(result, r, i + 1),
  );
}

class RememberStackRetriever extends BaseRetriever {
  #recall;

  static lc_name() {
    return 'RememberStackRetriever';
  }

  lc_namespace = ['rememberstack', 'retrievers'];

  constructor(fields = {}) {
    const base = {};
    for (const key of BASE_OPTIONS) if (fields[key] !== undefined) base[key] = fields[key];
    super(base);
    for (const key of Object.keys(fields)) {
      if (!ALL_OPTIONS.has(key)) throw invalid(`unknown option \`${key}\``);
    }
    const { memory } = fields;
    if (!memory || typeof memory.claimsAndSourcesContext !== 'function') {
      throw invalid('`memory` must be a rememberstack Memory');
    }
    const mode = fields.mode ?? 'claimsAndSources';
    if (!Object.hasOwn(MODES, mode)) throw invalid(`mode must be one of ${Object.keys(MODES).join(', ')}, not ${JSON.stringify(mode)}`);
    const recall = {};
    for (const key of MODE_OPTIONS.facts) {
      if (fields[key] === undefined) continue;
      if (!MODE_OPTIONS[mode].includes(key)) throw invalid(`\`${key}\` does not apply to mode ${mode}`);
      recall[key] = fields[key];
    }
    const min = fields.minRelevance;
    if (min !== undefined && (typeof min !== 'number' || !(min >= 0 && min <= 1))) {
      throw invalid('minRelevance must be a number in [0, 1]');
    }
    Object.defineProperty(this, 'memory', { value: memory, enumerable: false });
    this.mode = mode;
    this.#recall = recall;
    this.minRelevance = min;
    this.hydrateProvenance = fields.hydrateProvenance ?? true;
  }

  async _getRelevantDocuments(query) {
    const opts = { ...this.#recall };
    let result;
    if (this.mode === 'facts') result = await this.memory.factsContext(query, opts);
    else if (this.mode === 'combined') result = await this.memory.combinedContext(query, opts);
    else result = await this.memory.claimsAndSourcesContext(query, opts);
    let docs = documentsFromResult(result);
    if (this.minRelevance !== undefined) {
      docs = docs.filter((d) => d.metadata.relevance === null || d.metadata.relevance >= this.minRelevance);
    }
    if (this.hydrateProvenance) await this.#hydrateProvenance(docs);
    return docs;
  }

  // Claims carry their chunk's id, not its section; facts their supporting claims,
  // not the source's lineage key or section. Take a claim's section from the same
  // answer's chunk when there is one; hydrate the rest (chunks for claims, the first
  // supporting claim for facts) in batches. A record gone meanwhile is left as is.
  async #hydrateProvenance(docs) {
    const chunks = new Map();
    for (const d of docs) {
      if (d.metadata.kind === 'chunk') chunks.set(d.metadata.chunk_id, d.metadata);
    }
    const refs = new Set();
    for (const d of docs) {
      const m = d.metadata;
      if (m.kind === 'claim' && !chunks.has(m.chunk_id)) refs.add(`chunk:${m.chunk_id}`);
      if (m.kind === 'fact' && m.claim_id) refs.add(`claim:${m.claim_id}`);
    }
    const hydrated = new Map();
    const all = [...refs];
    for (let i = 0; i < all.length; i += HYDRATE_BATCH) {
      const answer = await this.memory.hydrate(all.slice(i, i + HYDRATE_BATCH));
      for (const h of answer.results) hydrated.set(h.record, h.sources ?? []);
    }
    for (const d of docs) {
      const m = d.metadata;
      if (m.kind === 'claim') {
        const chunk = chunks.get(m.chunk_id) ?? (hydrated.get(`chunk:${m.chunk_id}`) ?? [])[0];
        if (chunk) {
          m.section_path = chunk.section_path;
          m.section_role = chunk.section_role;
        }
      } else if (m.kind === 'fact' && m.claim_id) {
        const sources = hydrated.get(`claim:${m.claim_id}`) ?? [];
        const chunk = sources.find((s) => s.version_id === m.version_id) ?? sources[0];
        if (chunk) {
          m.source_kind = chunk.source_kind;
          m.source_ref = chunk.source_ref;
          m.source = chunk.source_ref;
          m.chunk_id = chunk.chunk_id;
          m.section_path = chunk.section_path;
          m.section_role = chunk.section_role;
        }
      }
    }
  }
}

module.exports = { RememberStackRetriever, documentsFromResult };
