// Type declarations of the `rememberstack` package: the `Memory` class of index.js
// and its options. What the methods resolve to is declared in types.d.ts, which is
// generated from the Rust result types: each method returns `Results['<method>']`
// (the Rust facade's serde JSON: field names in snake_case, ids as UUID strings,
// instants as RFC 3339 strings). Option keys are camelCase and mapped to the
// engine's snake_case input fields. The native addon's own declarations (generated
// by napi) are in native.d.ts.

import type {
  ChunkResult,
  ClaimResult,
  Envelope,
  FactResult,
  Instant,
  JsonObject,
  Results,
  SectionRole,
  SourceFormat,
  Uuid,
  VersioningMode,
} from './types'

export * from './types'

/** The engine's machine-readable error codes, plus the binding's `closed`. */
export type ErrorCode =
  | 'invalid_input'
  | 'invalid_parameter'
  | 'empty_input'
  | 'too_large'
  | 'invalid_utf8'
  | 'invalid_conversation'
  | 'not_found'
  | 'document_not_found'
  | 'conflict'
  | 'request_conflict'
  | 'revision_conflict'
  | 'revoked'
  | 'forgotten_content'
  | 'forget_in_progress'
  | 'lease_lost'
  | 'provider'
  | 'config'
  | 'store'
  | 'timeout'
  | 'internal'
  | 'closed'

/** Every rejection of a `Memory` method is one of these. */
export declare class RememberStackError extends Error {
  readonly name: 'RememberStackError'
  readonly code: ErrorCode
}

export type SourceKind = 'auto' | SourceFormat

// ---------------------------------------------------------------- options

export interface OpenOptions {
  /** The handle's namespace (default "default"): 1–64 of a-z, 0-9, '-', '_'. */
  namespace?: string
  /** A TOML configuration file, or overrides (the TOML shape) on top of the CLI's configuration. */
  config?: string | JsonObject
}

export interface IngestOptions {
  /** The lineage reference (files: default the canonical path; required for text and conversations). */
  sourceRef?: string
  /** The declared kind (default: detect; text: markdown). */
  kind?: SourceKind
  /** When the source said it (RFC 3339 or a Date). */
  sourceTime?: Instant | Date
  mode?: VersioningMode
  threadRef?: string
}

export interface Message {
  event_id?: string
  /** Also accepted as `eventId`. */
  eventId?: string
  speaker: string
  text: string
  timestamp?: Instant
}

export interface Conversation {
  session_time?: Instant
  /** Also accepted as `sessionTime`. */
  sessionTime?: Instant
  messages: Message[]
}

export interface NoteInput {
  requestId: string
  sourceKey: string
  sourceRevision: string
  text: string
  /** Kept exactly as given (keys are not renamed). */
  metadata?: JsonObject
}

export interface DocumentFilterOptions {
  documentIds?: Uuid[]
  fileName?: string
  title?: string
  author?: string
  from?: Instant
  to?: Instant
}

export interface SearchOptions {
  k?: number
  grain?: 'chunks' | 'claims' | 'facts'
  roles?: SectionRole[]
  cursor?: string
  includeRetired?: boolean
  entities?: Uuid[]
  exact?: boolean
  documents?: DocumentFilterOptions
}

export interface TemporalScope {
  mode: 'current' | 'at' | 'overlap' | 'history'
  at?: Instant
  from?: Instant
  to?: Instant
}

export interface RecallOptions {
  entityIds?: Uuid[]
  k?: number
  budget?: number
  cursor?: string
  recordReceipt?: boolean
  requestId?: string
  subject?: string
  purpose?: string
}

export interface FactsContextOptions extends RecallOptions {
  temporalScope?: TemporalScope
}

export interface CombinedContextOptions {
  entityIds?: Uuid[]
  temporalScope?: TemporalScope
}

export interface DocumentSearchOptions {
  fileName?: string
  title?: string
  author?: string
  from?: Instant
  to?: Instant
  k?: number
}

export interface ExportSelection {
  entities?: Uuid[]
  documents?: Uuid[]
  history?: boolean
  limit?: number
}

export interface FeedbackInput {
  receiptId: Uuid
  /** `kind:id` of a selection of the receipt, e.g. "claim:…". */
  itemRef: string
  rating: 'useful' | 'not_useful' | 'wrong'
  comment?: string
}

export interface CorrectionOptions {
  requestId?: string
}

// ---------------------------------------------------------------- the class

export declare class Memory {
  private constructor()
  /** Open the embedded SQLite store at `path` (default: REMEMBERSTACK_DB, else the user's data directory). */
  static open(path?: string, options?: OpenOptions): Promise<Memory>
  static open(options: OpenOptions): Promise<Memory>
  /** Connect to the PostgreSQL store at `url` (postgres://…). */
  static connect(url: string, options?: OpenOptions): Promise<Memory>
  /** The engine methods the addon answers (snake_case). */
  static methods(): string[]

  readonly namespace: string
  /** The same memory (one engine) reading and writing `namespace`; throws a RememberStackError for an invalid namespace or a closed memory. */
  withNamespace(namespace: string): Memory

  /**
   * Any call of the engine by its name (`Memory.methods()`) with its JSON input
   * (snake_case fields, as MCP's tool of that name takes them); every call is
   * reachable this way, with or without a named method.
   */
  call<M extends keyof Results>(method: M, input?: JsonObject): Promise<Results[M]>
  ingestFile(path: string, options?: IngestOptions): Promise<Results['ingest_file']>
  ingestText(text: string, options: IngestOptions & { sourceRef: string }): Promise<Results['ingest_text']>
  ingestConversation(conversation: Conversation | Message[], options: IngestOptions & { sourceRef: string }): Promise<Results['ingest_conversation']>
  appendMessages(conversationRef: string, messages: Message[], options?: { sourceTime?: Instant | Date }): Promise<Results['append_messages']>
  /** A conversation's messages, in order, exactly as ingested and appended. */
  conversationMessages(conversationRef: string): Promise<Results['conversation_messages']>
  processUntilIdle(): Promise<Results['process_until_idle']>
  documents(): Promise<Results['documents']>
  document(documentId: Uuid): Promise<Results['document']>
  deleteDocument(documentId: Uuid): Promise<Results['delete_document']>
  forgetDocument(documentId: Uuid): Promise<Results['forget_document']>

  rememberNote(note: NoteInput): Promise<Results['remember_note']>
  promoteNote(versionId: Uuid, expectedVersion: number): Promise<Results['promote_note']>
  archiveNote(versionId: Uuid, expectedVersion: number): Promise<Results['archive_note']>
  revokeNote(versionId: Uuid, expectedVersion: number): Promise<Results['revoke_note']>
  listNotes(options?: { cursor?: string; limit?: number }): Promise<Results['list_notes']>
  setNotePolicy(startAs: 'promoted' | 'candidate'): Promise<Results['set_note_policy']>
  forgetNote(noteId: Uuid): Promise<Results['forget_note']>

  search(query: string, options?: SearchOptions & { grain?: 'chunks' }): Promise<Envelope<ChunkResult>>
  search(query: string, options: SearchOptions & { grain: 'claims' }): Promise<Envelope<ClaimResult>>
  search(query: string, options: SearchOptions & { grain: 'facts' }): Promise<Envelope<FactResult>>
  resolveEntity(query: string, options?: { k?: number }): Promise<Results['resolve_entity']>
  claimsAndSourcesContext(query: string, options?: RecallOptions): Promise<Results['claims_and_sources_context']>
  factsContext(query: string, options?: FactsContextOptions): Promise<Results['facts_context']>
  combinedContext(query: string, options?: CombinedContextOptions): Promise<Results['combined_context']>
  /** Run a registry operation with the CLI's `--input` JSON (camelCase keys accepted). */
  runOperation(name: string, input: JsonObject): Promise<Results['run_operation']>
  operations(): Promise<Results['operations']>
  adjacentChunks(chunkId: Uuid, options?: { window?: number }): Promise<Results['adjacent_chunks']>
  searchDocuments(query: string, options?: DocumentSearchOptions): Promise<Results['search_documents']>
  trace(factId: Uuid): Promise<Results['trace']>
  resolveReceipt(receiptId: Uuid): Promise<Results['resolve_receipt']>
  inspectReceipt(receiptId: Uuid): Promise<Results['inspect_receipt']>
  entities(options?: { includeMerged?: boolean; limit?: number }): Promise<Results['entities']>
  entity(nameOrId: string): Promise<Results['entity']>
  claims(options?: { documentId?: string; includeRetired?: boolean }): Promise<Results['claims']>
  claimDecisions(documentId: string): Promise<Results['claim_decisions']>
  facts(options?: { entityId?: string; at?: string | Date; history?: boolean; limit?: number }): Promise<Results['facts']>
  predicates(): Promise<Results['predicates']>
  neighborhood(entityIds: string[], options?: { depth?: number; predicates?: string[]; temporalScope?: JsonObject }): Promise<Results['neighborhood']>
  hydrate(records: string[]): Promise<Results['hydrate']>

  retractClaim(claimId: Uuid, reason: string, options?: CorrectionOptions): Promise<Results['retract_claim']>
  invalidateFact(factId: Uuid, reason: string, options?: CorrectionOptions): Promise<Results['invalidate_fact']>
  correctFact(factId: Uuid, statement: string, reason: string, options?: CorrectionOptions): Promise<Results['correct_fact']>
  mergeEntities(from: Uuid, into: Uuid): Promise<Results['merge_entities']>
  unmergeEntities(mergeId: Uuid): Promise<Results['unmerge_entities']>
  /** The merges this namespace's names propose: one-word names that abbreviate exactly one longer name. */
  mergeProposals(): Promise<Results['merge_proposals']>
  /** Accept a proposal: an ordinary, reversible merge recording its rule. */
  acceptMergeProposal(from: Uuid, into: Uuid): Promise<Results['accept_merge_proposal']>
  /** Reject a proposal: the pair becomes cannot-link and is never proposed again. */
  rejectMergeProposal(from: Uuid, into: Uuid): Promise<Results['reject_merge_proposal']>
  /** A memory pack (rememberstack.pack/v1). */
  export(selection?: ExportSelection): Promise<Results['export']>
  feedback(input: FeedbackInput): Promise<Results['feedback']>
  listFeedback(options?: { receiptId?: Uuid; limit?: number }): Promise<Results['list_feedback']>

  status(): Promise<Results['status']>
  doctor(): Promise<Results['doctor']>
  /** Later calls reject with code "closed". Idempotent. */
  close(): Promise<void>
}
