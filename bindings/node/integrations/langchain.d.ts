// Type declarations of `rememberstack/langchain` (integrations/langchain.js): a
// LangChain.js retriever over RememberStack. Metadata keeps the engine's snake_case
// field names (types.d.ts).

import { BaseRetriever, type BaseRetrieverInput } from '@langchain/core/retrievers'
import type { Document } from '@langchain/core/documents'
import type { CallbackManagerForRetrieverRun } from '@langchain/core/callbacks/manager'
import type { Memory, TemporalScope } from '../index'
import type {
  CharSpan,
  ChunkId,
  ClaimId,
  ContextBundle,
  DocumentId,
  EntityId,
  Envelope,
  EvidenceResult,
  FactId,
  FactKind,
  FactResult,
  FactSupport,
  Instant,
  ReceiptId,
  Scores,
  SectionRole,
  Uuid,
  Validity,
  ValidityKind,
  VersionId,
  Window,
} from '../types'

/** What the retriever asks: evidence (default), facts, or both (evidence first, then facts). */
export type RememberStackRetrieverMode = 'claimsAndSources' | 'facts' | 'combined'

/** The provenance every document carries, whatever its kind. */
export interface RememberStackMetadataBase {
  /** `claim`, `chunk` (a source passage) or `fact`. */
  kind: 'claim' | 'chunk' | 'fact'
  /** `kind:id`: the reference `memory.hydrate` and feedback's `itemRef` take. */
  ref: string
  /** The engine operation that answered. */
  operation: 'claims_and_sources_context' | 'facts_context'
  namespace: string
  /** 1-based position in its operation's answer (best first). */
  rank: number
  /** The recall receipt, when `recordReceipt` was set. */
  receipt_id: ReceiptId | null
  /** The document lineage (a fact: its first supporting claim's, current testimony first). */
  document_id: DocumentId | null
  version_id: VersionId | null
  document_title: string | null
  /** Lineage key: source kind (`text`, `conversation`, `note`, …). */
  source_kind: string | null
  /** Lineage key: source reference (the `sourceRef` it was ingested under). */
  source_ref: string | null
  /** LangChain's conventional citation field: equal to `source_ref`. */
  source: string | null
  chunk_id: ChunkId | null
  claim_id: ClaimId | null
  fact_id: FactId | null
  /** The section's title path (chunks; claims and facts: their chunk's, hydrated). */
  section_path: string[] | null
  section_role: SectionRole | null
  /** Message ids of the conversation turns the evidence covers. */
  event_ids: string[]
  /** Source time: when the source said it. */
  asserted_at: Instant | null
  /** The engine's scores (semantic, lexical, fused, relevance). */
  scores: Scores
  /** `scores.relevance`: in [0, 1], comparable across questions; null when absent. */
  relevance: number | null
}

export interface RememberStackChunkMetadata extends RememberStackMetadataBase {
  kind: 'chunk'
  char_span: CharSpan
}

export interface RememberStackClaimMetadata extends RememberStackMetadataBase {
  kind: 'claim'
  spans: CharSpan[]
  validity: Validity
  is_current: boolean
  added_context: string[]
  extractor_version: string
  needs_context: boolean
}

export interface RememberStackFactMetadata extends RememberStackMetadataBase {
  kind: 'fact'
  fact_kind: FactKind
  subject: EntityId
  subject_name: string
  predicate: string | null
  object: EntityId | null
  object_name: string | null
  window: Window
  validity_kind: ValidityKind
  recorded_at: Instant
  invalidated_at: Instant | null
  superseded_by: FactId | null
  support_state: string | null
  evidence_count: number
  contradict_count: number
  contradiction_group: Uuid | null
  /** The supporting claims (current testimony first). */
  provenance: FactSupport[]
}

/** A document's metadata; `kind` narrows it. */
export type RememberStackMetadata = RememberStackChunkMetadata | RememberStackClaimMetadata | RememberStackFactMetadata

export interface RememberStackRetrieverInput extends BaseRetrieverInput {
  memory: Memory
  /** Default `claimsAndSources`. */
  mode?: RememberStackRetrieverMode
  /** Not with mode `combined`. */
  k?: number
  /** Not with mode `combined`. */
  budget?: number
  entityIds?: Uuid[]
  /** Modes `facts` and `combined`. */
  temporalScope?: TemporalScope
  /** Not with mode `combined`. */
  recordReceipt?: boolean
  /** Not with mode `combined`. */
  subject?: string
  /** Not with mode `combined`. */
  purpose?: string
  /** Drop documents whose `relevance` is below this (those without one are kept). */
  minRelevance?: number
  /** Fill claims' sections and facts' source, chunk and section with `memory.hydrate` (default true). */
  hydrateProvenance?: boolean
}

export declare class RememberStackRetriever extends BaseRetriever<RememberStackMetadata> {
  static lc_name(): string
  lc_namespace: string[]
  readonly memory: Memory
  mode: RememberStackRetrieverMode
  minRelevance: number | undefined
  hydrateProvenance: boolean
  constructor(fields: RememberStackRetrieverInput)
  _getRelevantDocuments(query: string, runManager?: CallbackManagerForRetrieverRun): Promise<Document<RememberStackMetadata>[]>
}

/**
 * The documents of an engine answer, best first (synchronous, nothing hydrated): an
 * evidence or fact envelope, or a ContextBundle/v2 (evidence, then facts).
 */
export declare function documentsFromResult(
  result: Envelope<EvidenceResult> | Envelope<FactResult> | ContextBundle,
): Document<RememberStackMetadata>[]
