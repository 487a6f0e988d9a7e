// Generated from the Rust result types (rememberstack::calls::result_schemas) by
// `cargo test -p rememberstack-node --test types`; do not edit. Regenerate with
// `UPDATE_TYPES=1 cargo test -p rememberstack-node --test types`.
//
// The JSON every Memory method resolves to: the facade's serde JSON, field names in
// snake_case, ids as UUID strings, instants as RFC 3339 strings.

export type Uuid = string
/** An RFC 3339 instant, e.g. "2026-05-01T09:30:00Z". */
export type Instant = string
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue }
export type JsonObject = { [key: string]: JsonValue }

/** An append-only adjudication transcript row. */
export type AdjudicationId = Uuid

/** One adjudication transcript row: what was judged, against what, and why. */
export interface AdjudicationRecord {
  /** Its id. */
  adjudication_id: AdjudicationId
  /** The adjudicator generation. */
  adjudicator_version: string
  /** The assertion judged. */
  assertion_id: AssertionId
  /** The candidate facts shown, in order. */
  candidates: FactId[]
  /** Its claim. */
  claim_id: ClaimId
  /** When. */
  created_at: Instant
  /**
   * What the adjudicator read beyond the assertion and the candidates: a chat
   * model's rendered prompt, or the offline rule's inputs (`rule`: whether an
   * identical statement matched, any window revision, the chain links it
   * changed). The assertion judged is `assertion_id`, the facts shown
   * `candidates`.
   */
  input: JsonValue
  /** The model, when a chat model judged. */
  model: string | null
  /** The namespace. */
  namespace_id: NamespaceId
  /** Why (the rule that fired, or the model's reason). */
  reason: string
  /** The fact the assertion ended up in. */
  result_fact: FactId
  /**
   * The fact the verdict names (the matched, superseded or contradicted fact),
   * if any.
   */
  target_fact: FactId | null
  /** `evidence`, `supersede`, `contradict` or `new`. */
  verdict: string
}

/**
 * A version's admission state: only `promoted` versions are eligible for recall.
 * Ordinary documents are promoted on ingest; notes follow their lifecycle.
 */
export type Admission = 'candidate' | 'promoted' | 'archived' | 'revoked'

/** What appending messages to a conversation did. */
export interface AppendReceipt {
  /** Messages whose event id was already present with the same speaker and text. */
  already_present: number
  /** Messages added. */
  appended: number
  /** The conversation lineage. */
  document_id: DocumentId
  /** The namespace. */
  namespace: string
  /** Whether the conversation lineage was created by this append. */
  new_lineage: boolean
  /** `created` (a new version) or `unchanged` (every message was already there). */
  outcome: string
  /** The version holding every message (new, or the unchanged latest). */
  version_id: VersionId
}

/** A staged fact assertion (one relation or observation a claim asserts). */
export type AssertionId = Uuid

/** Which blocking tier surfaced a candidate. */
export type BlockingTier = 'T0' | 'T1' | 'T2'

/** How results were fitted to a character budget: whole items, in rank order. */
export interface BudgetReport {
  /** The budget, in characters. */
  chars: number
  /** Ids of ranked results left out because they did not fit. */
  omitted: string[]
  /** Characters of the returned results' texts. */
  used: number
}

/** A candidate as the resolver saw it, in D103 order (audit row of a decision). */
export interface CandidateAudit {
  /** Its canonical name. */
  canonical_name: string
  /** The candidate. */
  entity_id: EntityId
  /** The best blocking score (exact lemma 1.0, else trigram similarity, phonetic 0.5). */
  score: number
  /** Its T3 similarity, when computed. */
  t3_score?: number | null
  /** The tiers that surfaced it. */
  via: BlockingTier[]
}

/** A channel's status in one call. */
export interface ChannelReport {
  /** Candidates the channel returned. */
  candidates: number
  /** Why, for anything but `ok`. */
  message?: string | null
  /** `ok`, `partial` (ran over an incomplete index), `skipped` or `error`. */
  status: string
}

/** A channel's rank and score for one result. */
export interface ChannelScore {
  /** 1-based rank in the channel. */
  rank: number
  /** The channel's raw score (cosine; BM25 with higher = better). */
  score: number
}

/** A character span (Unicode scalar values) into a version's `document.md`. */
export interface CharSpan {
  /** End (exclusive). */
  end: number
  /** Start. */
  start: number
}

/** A chunk of a version's representation. */
export type ChunkId = Uuid

/** One chunk result of an evidence search. */
export interface ChunkResult {
  /** When the source said it (the version's source time). */
  asserted_at: Instant
  /** Where the chunk sits in the version's `document.md`. */
  char_span: CharSpan
  /** The chunk. */
  chunk_id: ChunkId
  /** Its document lineage. */
  document_id: DocumentId
  /** The document's title. */
  document_title: string
  /** Message ids of the conversation turns it covers. */
  event_ids: string[]
  /** Scores. */
  scores: Scores
  /** The section's title path. */
  section_path: string[]
  /** The section's role. */
  section_role: SectionRole
  /** Lineage key: source kind. */
  source_kind: string
  /** Lineage key: source reference. */
  source_ref: string
  /** The chunk text. */
  text: string
  /** The version the chunk belongs to. */
  version_id: VersionId
}

/** An immutable claim. */
export type ClaimId = Uuid

/** A claim with its provenance. */
export interface ClaimRecord {
  /** Added context. */
  added_context: string[]
  /** When the source said it. */
  asserted_at: Instant
  /** The claim. */
  claim_id: ClaimId
  /** Its lineage. */
  document_id: DocumentId
  /** The lineage's display title. */
  document_title: string
  /** Key of its vector. */
  embedding_key: string
  /** The extractor generation. */
  extractor_version: string
  /** Whether it is current testimony. */
  is_current: boolean
  /** Its occurrences, oldest version first. */
  occurrences: Occurrence[]
  /** Lineage key. */
  source_kind: string
  /** Lineage key. */
  source_ref: string
  /** The claim text. */
  text: string
  /** Validity. */
  validity: Validity
}

/** One claim result of an evidence search. */
export interface ClaimResult {
  /** Context the extractor added to make the claim standalone. */
  added_context: string[]
  /** When the source said it. */
  asserted_at: Instant
  /** The chunk of that occurrence. */
  chunk_id: ChunkId
  /** The claim. */
  claim_id: ClaimId
  /** Its document lineage. */
  document_id: DocumentId
  /** The document's title. */
  document_title: string
  /** Message ids of the conversation turns the evidence falls in. */
  event_ids: string[]
  /** The extractor generation. */
  extractor_version: string
  /** Whether the claim is current testimony. */
  is_current: boolean
  /**
   * Whether the claim opens with a third-person pronoun the extractor could
   * not resolve (`She moved to Oslo.`): read it with its source.
   */
  needs_context?: boolean
  /** Scores. */
  scores: Scores
  /** Lineage key: source kind. */
  source_kind: string
  /** Lineage key: source reference. */
  source_ref: string
  /** Exact evidence spans in that version's `document.md`. */
  spans: CharSpan[]
  /** The standalone claim text. */
  text: string
  /** When the claim says it happened or held (source-asserted, immutable). */
  validity: Validity
  /** The version of the occurrence shown (the newest). */
  version_id: VersionId
}

/** What retracting a claim did. */
export interface ClaimRetraction {
  /** The claim. */
  claim_id: ClaimId
  /** Facts the claim evidenced (either stance), whose support was recounted. */
  facts_recounted: number
  /** Observations closed likewise. */
  observations_closed: number
  /** The recorded reason. */
  reason: string
  /** Relations closed (`retracted_claim`) because it was their only current support. */
  relations_closed: number
  /** When it was retracted (the first retraction's instant on a repeat). */
  retracted_at: Instant
  /** Whether the claim was current testimony when retracted. */
  was_current: boolean
}

/** The combined operation's answer (D87): exactly the two child envelopes. */
export interface ContextBundle {
  /** The `claims_and_sources_context` envelope. */
  claims_and_sources: Envelope<EvidenceResult>
  /** Always [`CONTEXT_BUNDLE_CONTRACT`]. */
  contract: string
  /** The `facts_context` envelope. */
  facts: Envelope<FactResult>
}

/** A contradiction group shown with a fact. */
export interface Contradiction {
  /** The group. */
  group_id: Uuid
  /** The other members, up to [`CONTRADICTION_CAP`]. */
  members: FactRecord[]
  /** Members returned here (the fact itself included). */
  returned: number
  /** Members in the group. */
  total: number
}

/** A conversation's messages, in order, exactly as they were ingested and appended. */
export interface ConversationMessages {
  /** The conversation lineage's reference. */
  conversation_ref: string
  /** The conversation lineage. */
  document_id: DocumentId
  /** The messages, in order. */
  messages: Message[]
  /** The namespace. */
  namespace: string
  /** When the session took place, if known. */
  session_time?: Instant | null
  /**
   * The version that holds them: the lineage's latest (its messages are every
   * message ingested or appended so far, processed or not).
   */
  version_id: VersionId
}

/** One dead letter in a status report. */
export interface DeadLetter {
  /** Attempts made. */
  attempts: number
  /** The last error. */
  last_error: string | null
  /** The limit. */
  max_attempts: number
  /** The stage. */
  stage: Stage
  /** The target. */
  target_id: Uuid
  /** The target's kind. */
  target_kind: TargetKind
  /** The version. */
  version_id: VersionId
  /** The work item. */
  work_id: WorkId
}

/** An append-only entity-resolution decision. */
export type DecisionId = Uuid

/** A stored ledger row with its coordinates. */
export interface DecisionRecord {
  /** The chunk. */
  chunk_id: ChunkId
  /** The claim it concerns. */
  claim_id?: ClaimId | null
  /** When. */
  created_at: Instant
  /** Details: passage text, edits, failing tokens. */
  detail: JsonValue
  /** The extractor generation. */
  extractor_version: string
  /**
   * `keep`, `keep_flagged`, `drop`, `accepted`, `grounding_rejected`,
   * `claimify_omitted` or `reused`.
   */
  kind: string
  /** The passage label it concerns. */
  passage?: string | null
  /** A drop reason or a failed gate. */
  reason?: string | null
  /** The version. */
  version_id: VersionId
}

/** What `doctor` found. */
export interface DoctorReport {
  /** Every check. */
  checks: ProviderCheck[]
  /** Whether claim extraction runs offline (no chat model configured). */
  offline_extractor: boolean
  /** All checks passed. */
  ok: boolean
}

/** What deleting a document lineage did (D135): one atomic episode. */
export interface DocumentDeletion {
  /** Claims of the lineage that stopped being current testimony in this episode. */
  claims_retired: number
  /** The tombstone instant (the first deletion's, for an episode finished by a repeat). */
  deleted_at: Instant
  /** The lineage. */
  doc_id: DocumentId
  /** Observations closed likewise. */
  observations_closed: number
  /**
   * Relations closed (`retracted_source_removal`) because the lineage was their
   * only current support.
   */
  relations_closed: number
}

/** A document's detail. */
export interface DocumentDetail {
  /** Chunks of the current version. */
  chunk_count: number
  /** The served version. */
  current_version_id: VersionId | null
  /**
   * When the lineage was deleted (shown by a document's detail; deleted lineages
   * are not listed).
   */
  deleted_at?: Instant | null
  /** The lineage. */
  doc_id: DocumentId
  /** File name, if any. */
  file_name: string | null
  /** The newest observed version. */
  latest_version_id: VersionId
  /** Versioning mode. */
  mode: VersioningMode
  /** Every name (file name, title) the lineage was observed under. */
  names: string[]
  /** Sections of the current version. */
  sections: SectionRow[]
  /** Lineage key. */
  source_kind: string
  /** Lineage key. */
  source_ref: string
  /**
   * `processing`, `ready`, `parked` (no conversion route), `stalled` (a dead
   * letter) or `deleted`.
   */
  status: string
  /** Display title. */
  title: string
  /** Versions. */
  version_count: number
  /** Every version, oldest first. */
  versions: VersionSummary[]
}

/** A document lineage. */
export type DocumentId = Uuid

/** General document metadata, the same fields whatever the format (D134). */
export interface DocumentMetadata {
  /** Authors (a conversation's speakers). */
  authors?: Field<string[]> | null
  /** When the source was created. */
  created_at?: Field<Instant> | null
  /** The file name the version was observed under. */
  file_name?: Field<string> | null
  /** The language (BCP 47 tag) where declared. */
  language?: Field<string> | null
  /** When the source was last modified. */
  modified_at?: Field<Instant> | null
  /** The thread the source belongs to (a conversation id, an email thread). */
  thread_ref?: Field<string> | null
  /** The title. */
  title?: Field<string> | null
}

/** One document result. */
export interface DocumentResult {
  /** The document's best content hit, if the query matched its content. */
  best_chunk: ChunkResult | null
  /** The lineage. */
  document_id: DocumentId
  /** The judged version's metadata, with provenance. */
  metadata: DocumentMetadata
  /** Every name the lineage was observed under. */
  names: string[]
  /** Names rank, content rank and the fused score. */
  scores: Scores
  /** Lineage key: source kind. */
  source_kind: string
  /** Lineage key: source reference. */
  source_ref: string
  /** Display title. */
  title: string
  /** The version judged (the current one). */
  version_id: VersionId
}

/** A lineage as listed. */
export interface DocumentSummary {
  /** The served version. */
  current_version_id: VersionId | null
  /**
   * When the lineage was deleted (shown by a document's detail; deleted lineages
   * are not listed).
   */
  deleted_at?: Instant | null
  /** The lineage. */
  doc_id: DocumentId
  /** File name, if any. */
  file_name: string | null
  /** The newest observed version. */
  latest_version_id: VersionId
  /** Versioning mode. */
  mode: VersioningMode
  /** Lineage key. */
  source_kind: string
  /** Lineage key. */
  source_ref: string
  /**
   * `processing`, `ready`, `parked` (no conversion route), `stalled` (a dead
   * letter) or `deleted`.
   */
  status: string
  /** Display title. */
  title: string
  /** Versions. */
  version_count: number
}

/** What one drain did. */
export interface DrainReport {
  /** Work items completed. */
  completed: number
  /** Items dead-lettered. */
  dead_lettered: number
  /** The next instant at which waiting work becomes due, if any. */
  next_wakeup: Instant | null
  /** Items parked. */
  parked: number
  /** Attempts that failed and will be retried. */
  retried: number
  /**
   * Per stage (keyed by the stage name, e.g. `e3.normalize`): batches, items
   * claimed and time spent running them. Stages that ran nothing are absent.
   */
  stages?: { [key: string]: StageStats }
}

/** An entity with its facts, evidence and decisions. */
export interface EntityDetail {
  /** The entity asked for. */
  entity: EntityRecord
  /** Its current facts. */
  facts: FactRecord[]
  /** Its mentions (most recent 50). */
  mentions: Mention[]
  /** Entities merged into it. */
  merged_members: EntityId[]
  /** Merge events touching it. */
  merges: MergeEvent[]
  /** Set when the id asked for was merged: the entity it redirects to (shown as `entity`). */
  redirected_from?: EntityId | null
}

/** An entity: one real-world referent (D95). */
export type EntityId = Uuid

/** An entity as stored. */
export interface EntityRecord {
  /** Distinct source surfaces and canonical names it was referred to by, oldest first. */
  aliases: string[]
  /** The canonical name (the first name it was minted with). */
  canonical_name: string
  /** When it was minted. */
  created_at: Instant
  /** Its id. */
  entity_id: EntityId
  /** The canonical name's [`normalize::lemma`]. */
  lemma: string
  /** How many mentions resolved to it. */
  mention_count: number
  /** Set while the entity is merged into another (a redirect). */
  merged_into: EntityId | null
  /** The namespace. */
  namespace_id: NamespaceId
  /** The embedding key of the profile text (content-keyed vector store). */
  profile_key: string | null
  /** Summary prose from salient observations and relations (D96); `None` until built. */
  profile_summary: string | null
}

/** One entity result (`resolve_entity`, grain `entity`). */
export interface EntityResult {
  /** Names it is known by. */
  aliases: string[]
  /** Its canonical name. */
  canonical_name: string
  /** The entity (an active one: redirects are followed). */
  entity_id: EntityId
  /** How it matched: `T0` exact name, `T1` trigrams, `T2` phonetic. */
  matched_by: BlockingTier[]
  /** Mentions resolved to it. */
  mention_count: number
  /** Entities merged into it that matched the name (redirects disclosed). */
  merged_from: EntityId[]
  /** Its profile summary, if built. */
  profile: string | null
  /** Cosine of the name's embedding and the profile's, when both exist (T3 signal). */
  profile_similarity: number | null
  /** The blocking score (exact name 1.0, trigram similarity, phonetic 0.5). */
  score: number
}

/** A result envelope. */
export interface Envelope<R> {
  /** Why a name is ambiguous (`resolve_entity`): several entities match it. */
  ambiguity?: string | null
  /** The parameters as applied (defaults filled in). */
  applied?: JsonValue
  /** How results were fitted to a character budget. */
  budget?: BudgetReport | null
  /** Per-channel status. */
  channels: { [key: string]: ChannelReport }
  /** Always [`ENVELOPE_CONTRACT`]. */
  contract: string
  /** How current the answer is. */
  freshness: Freshness
  /** The grain. */
  grain: Grain
  /**
   * Candidates dropped at confirmation (the record changed or vanished after
   * ranking), by reason.
   */
  hydration_drops?: { [key: string]: number }
  /** The namespace the operation ran in. */
  namespace: string
  /** A typed negative when there is nothing (or nothing trustworthy) to return. */
  negative?: Negative | null
  /** The operation. */
  operation: OperationInfo
  /** The recall receipt recorded for this answer (`record_receipt: true`). */
  receipt_id?: ReceiptId | null
  /** The results, best first. */
  results: R[]
  /** The time scope facts were evaluated in, echoed with the evaluation instant. */
  temporal_scope?: ScopeEcho | null
  /** What was cut, and how to continue. */
  truncation: Truncation
}

/** One evidence result of `claims_and_sources_context`: a claim or a source chunk. */
export type EvidenceResult = ({ kind: 'claim' } & ClaimResult) | ({ kind: 'chunk' } & ChunkResult)

/** An exact span of a claim's evidence in one version's `document.md`. */
export interface EvidenceSpan {
  /** Unicode-scalar offset of `end`. */
  char_end: number
  /** Unicode-scalar offset of `start`. */
  char_start: number
  /** Byte offset one past the end. */
  end: number
  /** Byte offset. */
  start: number
}

/** What correcting a fact did. */
export interface FactCorrection {
  /** The corrected (now invalidated) fact. */
  fact_id: FactId
  /** When it stopped being believed. */
  invalidated_at: Instant
  /** The system-origin note carrying the statement through the pipeline. */
  note: NoteRecord
  /** The caller's reason. */
  reason: string
  /** The corrected statement. */
  statement: string
}

/** One lifecycle event of a fact (append-only; shown by `trace`). */
export interface FactEvent {
  /** When. */
  created_at: Instant
  /** Ids the event concerns (a document, a claim, a request). */
  detail: JsonValue
  /** `closed`, `invalidated`, `support_retracted`. */
  event: string
  /** The reason (`retracted_source_removal`, `retracted_claim`, or the caller's). */
  reason: string
}

/** A fact: a relation or an observation. */
export type FactId = Uuid

/** What invalidating a fact did. */
export interface FactInvalidation {
  /** The recorded closing reason (`invalidated` or `corrected`). */
  closed_reason: string
  /** The fact. */
  fact_id: FactId
  /** When it stopped being believed. */
  invalidated_at: Instant
  /** The caller's reason. */
  reason: string
}

/** Relation or observation. */
export type FactKind = 'relation' | 'observation'

/** A page of a fact listing. */
export interface FactPage {
  /** Pass it back with the same query to continue; absent on the last page. */
  cursor?: string | null
  /** Facts by subject name, then recorded order. */
  facts: FactRecord[]
}

/** A fact as stored, with counts computed from current testimony. */
export interface FactRecord {
  /**
   * Why a lifecycle operation closed it (`retracted_source_removal`,
   * `invalidated`, `corrected`), if one did.
   */
  closed_reason?: string | null
  /** Distinct lineages with current contradicting testimony (D54). */
  contradict_count: number
  /** The contradiction group, when incompatible facts stand together. */
  contradiction_group: Uuid | null
  /** The embedding key of its label. */
  embedding_key: string
  /** Distinct lineages with current supporting testimony (D54). */
  evidence_count: number
  /** Its id. */
  fact_id: FactId
  /** When it stopped being believed (a belief-clock close), if it did. */
  invalidated_at: Instant | null
  /** Relation or observation. */
  kind: FactKind
  /** The namespace. */
  namespace_id: NamespaceId
  /** The object entity (relations). */
  object: EntityId | null
  /** The object's canonical name (relations). */
  object_name: string | null
  /** The predicate (relations). */
  predicate: string | null
  /** When it was first believed. */
  recorded_at: Instant
  /** The fact label (relations) or statement (observations). */
  statement: string
  /** The subject entity. */
  subject: EntityId
  /** The subject's canonical name. */
  subject_name: string
  /** The fact that superseded it, if one did. */
  superseded_by: FactId | null
  /** Last change. */
  updated_at: Instant
  /** What the window means. */
  validity_kind: ValidityKind
  /** The chosen world-time window. */
  window: Window
}

/** One fact result of a fact search (grain `fact`). */
export interface FactResult {
  /** How many of the operation's anchored entities the fact touches. */
  anchors?: number | null
  /**
   * Why a lifecycle operation closed it (`retracted_source_removal`,
   * `invalidated`, `corrected`), if one did.
   */
  closed_reason?: string | null
  /** Distinct lineages with current contradicting testimony (D54). */
  contradict_count: number
  /** The fact's contradiction group, with its co-members inline (never one-sided). */
  contradiction?: Contradiction | null
  /** The contradiction group, when incompatible facts stand together. */
  contradiction_group: Uuid | null
  /** The embedding key of its label. */
  embedding_key: string
  /** Distinct lineages with current supporting testimony (D54). */
  evidence_count: number
  /** Its id. */
  fact_id: FactId
  /** When it stopped being believed (a belief-clock close), if it did. */
  invalidated_at: Instant | null
  /** Relation or observation. */
  kind: FactKind
  /** The namespace. */
  namespace_id: NamespaceId
  /** The object entity (relations). */
  object: EntityId | null
  /** The object's canonical name (relations). */
  object_name: string | null
  /** The predicate (relations). */
  predicate: string | null
  /**
   * Where it comes from: supporting claims with their document, version, spans and
   * dates, current testimony first (at most [`PROVENANCE_CAP`]; `trace` has all).
   */
  provenance?: FactSupport[]
  /** When it was first believed. */
  recorded_at: Instant
  /** Scores. */
  scores: Scores
  /** The fact label (relations) or statement (observations). */
  statement: string
  /** The subject entity. */
  subject: EntityId
  /** The subject's canonical name. */
  subject_name: string
  /** The fact that superseded it, if one did. */
  superseded_by: FactId | null
  /** `supported` (current testimony backs it) or `support_withdrawn` (none does). */
  support_state?: string | null
  /** Last change. */
  updated_at: Instant
  /** What the window means. */
  validity_kind: ValidityKind
  /** The chosen world-time window. */
  window: Window
}

/** One supporting claim of a fact. */
export interface FactSupport {
  /** When the source said it. */
  asserted_at: Instant
  /** The claim. */
  claim_id: ClaimId
  /** Its document. */
  document_id: DocumentId
  /** The document's title. */
  document_title: string
  /** Message ids of conversation turns. */
  event_ids: string[]
  /** Whether the claim is current testimony. */
  is_current: boolean
  /** Evidence spans in that version. */
  spans: CharSpan[]
  /** Its text. */
  text: string
  /** The version of the occurrence shown (the newest). */
  version_id: VersionId
}

/** Everything behind one fact (`remember trace`). */
export interface FactTrace {
  /** Its adjudication transcripts. */
  adjudications: AdjudicationRecord[]
  /**
   * Its lifecycle events (closed with a deleted source, support retracted,
   * invalidated), oldest first, with their reasons.
   */
  events: FactEvent[]
  /** Its evidence claims, with spans and source text. */
  evidence: TracedEvidence[]
  /** The fact. */
  fact: FactRecord
  /** The resolution decisions of its entities. */
  resolutions: ResolutionDecision[]
}

/** Feedback on one item a recall receipt selected. */
export interface FeedbackRecord {
  /** The caller's comment. */
  comment?: string | null
  /** When. */
  created_at: Instant
  /** Its id. */
  feedback_id: Uuid
  /** The selected item, `kind:id` (e.g. `claim:…`). */
  item_ref: string
  /** The namespace. */
  namespace_id: NamespaceId
  /** `useful`, `not_useful` or `wrong`. */
  rating: string
  /** The receipt. */
  receipt_id: ReceiptId
}

/** One metadata value with its provenance. */
export interface Field<T> {
  /** Who declared it. */
  provenance: Provenance
  /** The value. */
  value: T
}

/** One verification query of a forget and what it found (0 when clean). */
export interface ForgetCheck {
  /** What was checked (`chunks`, `claims`, `blob`, …). */
  check: string
  /** Rows (or files) still holding the forgotten records. */
  remaining: number
}

/** What a completed hard forget removed, and its verification. */
export interface ForgetReport {
  /** Blob files removed. */
  blobs: number
  /** Chunks removed. */
  chunks: number
  /** Claims removed (every claim of the lineage). */
  claims: number
  /** The lineage. */
  doc_id: DocumentId
  /** Entities removed: nothing mentioned them any more. */
  entities: number
  /** Facts removed: no support was left. */
  facts: number
  /**
   * Set when every row is erased but the store could not rewrite its files to
   * drop the freed pages yet (the embedded store's VACUUM, e.g. for want of
   * free disk): why. Freed pages are zeroed as they are freed, so no text
   * remains readable; the rewrite is retried when the store next opens or
   * forgets, and `doctor` reports it until then.
   */
  file_rewrite_pending?: string | null
  /** When the forget completed. */
  forgotten_at: Instant | null
  /** The manifest. */
  manifest_id: Uuid
  /** Recall receipts rewritten without the forgotten records. */
  receipts_rewritten: number
  /** Blobs kept because another live lineage holds the same bytes. */
  shared_blobs_kept: number
  /** Vectors removed: nothing used their key any more. */
  vectors: number
  /** The verification queries, all 0. */
  verification: ForgetCheck[]
  /** Versions removed. */
  versions: number
}

/** Freshness: what the store has not finished yet. */
export interface Freshness {
  /** Dead-lettered work items (see `remember status`). */
  dead_letters: number
  /** Originals stored without a conversion route. */
  parked_no_route: number
  /** Open (pending, running, failed) work items by stage. */
  pending_work: { [key: string]: number }
  /** The semantic channel's readiness. */
  semantic: SemanticReadiness
}

/** The grain of an envelope's results. */
export type Grain = 'evidence' | 'fact' | 'entity'

/** One claim behind a hydrated record. */
export interface HydratedEvidence {
  /** The claim with its occurrences (version, chunk, spans, event ids). */
  claim: ClaimRecord
  /** For a fact: whether the claim supports or contradicts it. */
  stance?: Stance | null
}

/** A record with its evidence and sources. */
export interface HydratedRecord {
  /**
   * The claims behind it: a fact's evidence (current testimony first), or the
   * claim itself.
   */
  evidence: HydratedEvidence[]
  /** The fact itself (facts only; entity names follow merges). */
  fact?: FactRecord | null
  /** The reference as given (`kind:id`). */
  record: string
  /**
   * The source chunks: where each evidence claim last occurs, or the chunk
   * itself; in order, without repeats.
   */
  sources: ChunkResult[]
  /** The record's text: a fact's statement, a claim's text or a chunk's text. */
  text: string
}

/**
 * Who created a document version (D101): a typed principal, recorded only on a
 * newly created version and never changed. It comes from the caller (an HTTP
 * request's `X-Ingest-Principal-*` headers presented by a full-write key), never
 * inferred from a credential.
 */
export interface IngestPrincipal {
  /** The caller's reference for it (printable ASCII, 1–256 characters). */
  external_ref: string
  /** What kind of principal. */
  kind: PrincipalKind
}

/** What an ingest did. */
export interface IngestReceipt {
  /** The lineage. */
  document_id: DocumentId
  /** The routed format, or `None` when the original is parked without a route. */
  format: SourceFormat | null
  /** The namespace. */
  namespace: string
  /** Whether the lineage was new. */
  new_lineage: boolean
  /** `created` or `unchanged`. */
  outcome: string
  /** Whether the original was parked (`defer_reason = no_route`). */
  parked: boolean
  /** The lineage key. */
  source_kind: string
  /** The lineage key. */
  source_ref: string
  /** The created (or, for identical bytes, existing) version. */
  version_id: VersionId
}

/** A mention: where a claim names an entity (a naming transcript, D96). */
export interface Mention {
  /** The claim. */
  claim_id: ClaimId
  /** Byte offset one past the end. */
  end: number | null
  /**
   * Byte offset of the surface in the claim text (`None` when the name is not
   * written in the claim verbatim).
   */
  start: number | null
  /** The surface as the claim writes it (or the canonical name). */
  surface: string
}

/** A merge or unmerge event (D21): append-only, with the membership snapshot. */
export interface MergeEvent {
  /** When. */
  created_at: Instant
  /** The entity redirected. */
  from: EntityId
  /** The entity it was redirected into. */
  into: EntityId
  /** Its id. */
  merge_id: MergeId
  /** The namespace. */
  namespace_id: NamespaceId
  /** When it was undone, if it was. */
  reverted_at: Instant | null
  /**
   * Membership before the merge: every entity id whose redirect chain ended at
   * `from` and at `into` (themselves included).
   */
  snapshot: JsonValue
}

/** A merge event (reversible, D21). */
export type MergeId = Uuid

/** One proposed merge of `from` (the short form) into `into`. */
export interface MergeProposal {
  /**
   * Whether the idle pipeline merges it by itself: the first word of one longer
   * name, or another rule with a shared document, and at most
   * `auto_merge_max_mentions` mentions moved.
   */
  automatic: boolean
  /** The short form's entity (active root). */
  from: EntityId
  /** Its canonical name. */
  from_name: string
  /** The longer name's entity (active root). */
  into: EntityId
  /** Its canonical name. */
  into_name: string
  /** Mentions the merge moves (the short form's). */
  mentions: number
  /** Why, in words. */
  reason: string
  /**
   * The rule that found it (`short_form_first_word`, `short_form_last_word`,
   * `short_form_prefix`).
   */
  rule: string
  /** Documents that name both. */
  shared_documents: number
}

/** One conversation message as given by the caller. */
export interface Message {
  /** The caller's message id, kept as block metadata all the way into results. */
  event_id?: string | null
  /** Who spoke. */
  speaker: string
  /** What they said. */
  text: string
  /** When, if known. */
  timestamp?: Instant | null
}

/** A namespace: one trust domain. */
export type NamespaceId = Uuid

/** A typed negative (D49). */
export interface Negative {
  /** The best result's relevance, for `no_relevant_memory`. */
  best_relevance?: number | null
  /**
   * `unknown_entity` (an anchor is not a current entity of the namespace),
   * `known_empty` (everything was searched and nothing matches), `boundary`
   * (nothing found, but the search was limited: the named limitation) or
   * `no_relevant_memory` (results are listed, but none reaches the relevance
   * floor: they are weak guesses, not memories of the subject).
   */
  kind: string
  /** The limitation of a `boundary` (e.g. `semantic_channel_unready`, `pending_work`). */
  limitation?: string | null
  /** What it means. */
  message: string
}

/** A page of note metadata. */
export interface NotePage {
  /** Pass it back to continue; absent on the last page. */
  cursor?: string | null
  /** Revisions in remember order (metadata only, never text). */
  notes: NoteRecord[]
}

/** A note revision's metadata (never its text). */
export interface NoteRecord {
  /** When the revision was remembered. */
  created_at: Instant
  /** sha256 of the text. */
  digest: string
  /** `candidate`, `promoted`, `archived` or `revoked`. */
  lifecycle: Admission
  /** Bumped by every transition; a transition names the version it expects. */
  lifecycle_version: number
  /** Caller metadata. */
  metadata: JsonValue
  /** The note lineage. */
  note_id: DocumentId
  /** The source key. */
  source_key: string
  /** The revision label. */
  source_revision: string
  /** The last transition. */
  updated_at: Instant
  /** The revision's version. */
  version_id: VersionId
}

/** Where a claim occurs in one version chunk (the `chunk_claims` map). */
export interface Occurrence {
  /** The chunk. */
  chunk_id: ChunkId
  /** The claim. */
  claim_id: ClaimId
  /** The lineage. */
  document_id: DocumentId
  /** Message ids of the conversation turns the spans fall in. */
  event_ids: string[]
  /** The reuse key. */
  extraction_input_hash: string
  /** The extractor generation of the extraction basis. */
  extractor_version: string
  /** Position among the chunk's claims. */
  ordinal: number
  /** Passage labels cited (positional within the bundle that produced it). */
  passages: string[]
  /** Whether the occurrence was reused from an earlier version. */
  reused: boolean
  /** Exact spans in this version's `document.md`. */
  spans: EvidenceSpan[]
  /** The chunk's version. */
  version_id: VersionId
}

/** One operation of the registry. */
export interface OperationDescriptor {
  /** When an agent should use it. */
  description: string
  /** The grain of its results. */
  grain: string
  /** JSON schema of the input. */
  input_schema: JsonValue
  /** The name. */
  name: string
  /** Its version. */
  version: number
}

/** Which operation produced an envelope. */
export interface OperationInfo {
  /** The operation name. */
  name: string
  /** The operation's version. */
  version: number
}

/** Where an input came from (D42). */
export type Origin = 'external' | 'system'

/** One edge reached by a traversal. */
export interface PathResult {
  /** The hop it was reached at (1-based). */
  depth: number
  /** The relation. */
  fact: FactRecord
  /** The relations from a start entity to this one, this one last. */
  path: FactId[]
}

/**
 * A forget that has not completed: its namespace refuses reads and writes
 * (`forget_in_progress`) until the forget is run again and finishes.
 */
export interface PendingForget {
  /** The lineage being forgotten. */
  document_id: DocumentId
  /** Why the last attempt stopped, if one failed (none: it was interrupted). */
  last_error?: string | null
  /** The manifest. */
  manifest_id: Uuid
  /** The namespace's slug. */
  namespace: string
  /** The command that runs the forget again; it resumes where it stopped. */
  resume_with: string
  /** When the forget started. */
  started_at: Instant
}

/** The precision of a claim's source-asserted validity (D41). */
export type Precision = 'instant' | 'day' | 'month' | 'quarter' | 'year' | 'open' | 'unknown'

/** A predicate registry row of a namespace (D5). */
export interface PredicateRow {
  /** Its description (empty for `other:` values). */
  description: string
  /** The name (`works_for`, or `other:<text>`). */
  name: string
  /** `core` or `other` (an `other:` value awaiting review). */
  status: string
  /** Synonyms. */
  synonyms: string[]
  /** How many staged assertions used it. */
  uses: number
}

/** The kinds of ingest principal. */
export type PrincipalKind = 'user' | 'api_credential' | 'service'

/** Who declared a metadata value (D134). */
export type Provenance = 'source' | 'connector'

/** One provider (or store) check of `doctor`. */
export interface ProviderCheck {
  /** The error, if any. */
  error?: string | null
  /** The identity checked (store kind, embedder generation, model). */
  identity: string
  /** How long it took, in milliseconds (wall clock, informational). */
  millis: number
  /**
   * What was checked: `store`, `embedder`, or `chat:<seat>` for the first seat of each
   * distinct chat model (`selection`, `claimify`, `normalize`, `resolve`, `adjudicate`).
   */
  name: string
  /** Whether the cheap call succeeded. */
  ok: boolean
}

/**
 * A durable recall receipt (Archive ADR): what a context operation selected, with
 * no query or source text.
 */
export interface Receipt {
  /** Coverage: candidates considered, returned, omitted by the budget. */
  coverage: JsonValue
  /** When. */
  created_at: Instant
  /** The namespace. */
  namespace_id: NamespaceId
  /** The operation that selected. */
  operation: string
  /** The applied parameters and budgets (anchors, k, budget, time scope) — never the query. */
  parameters: JsonValue
  /** What it was for, if given. */
  purpose: string | null
  /** sha256 of the trimmed query. */
  query_digest: string
  /** Its id. */
  receipt_id: ReceiptId
  /** The caller's request id (a replay returns this receipt). */
  request_id: string | null
  /** The selected records, in rank order. */
  selections: ReceiptSelection[]
  /** Who the recall was for, if given. */
  subject: string | null
}

/** A durable recall receipt. */
export type ReceiptId = Uuid

/** The outcome of resolving a receipt: every record, or a refusal naming why. */
export interface ReceiptResolution {
  /**
   * Why it was refused: `deleted` (its document was deleted, or the fact closed
   * with it), `revoked`, `archived`, `superseded`, `changed` or `missing`.
   */
  reason?: string | null
  /** The receipt. */
  receipt_id: ReceiptId
  /** The record that caused the refusal. */
  record?: string | null
  /** The selected records in their original order (empty when refused). */
  records: ResolvedRecord[]
  /** `resolved` or `refused`. */
  status: string
}

/** One selected record of a receipt. */
export interface ReceiptSelection {
  /** sha256 of the record's content as selected (text; a fact's statement and window). */
  content_digest: string
  /** The record id. */
  id: string
  /** `claim`, `chunk` or `fact`. */
  kind: string
  /** Its fused score. */
  score: number
  /** The version the record belonged to (claims, chunks). */
  version_id?: VersionId | null
}

/** One append-only resolution decision (D21, D99, D100). */
export interface ResolutionDecision {
  /** Candidates in the order they were considered. */
  candidates: CandidateAudit[]
  /** The claim whose reference was resolved. */
  claim_id: ClaimId
  /** Whether blocking was not truncated. */
  complete: boolean
  /** When. */
  created_at: Instant
  /** Its id. */
  decision_id: DecisionId
  /** The claim's lineage (D102 bindings are per document). */
  document_id: DocumentId
  /** The entity the reference resolved to. */
  entity_id: EntityId
  /** Extra features (D102 coordinates, offline-policy disclosure). */
  features: JsonValue
  /** Its lemma. */
  lemma: string
  /** The model that decided (T4), if any. */
  model: string | null
  /** The canonical name the normalizer emitted. */
  name: string
  /** The namespace. */
  namespace_id: NamespaceId
  /** The reference's position in the claim's normalization. */
  ordinal: number
  /** Why. */
  rationale: string
  /** The resolver generation. */
  resolver_version: string
  /**
   * Why T3 accepted or not: `accepted`, `below_threshold`, `multiple_candidates`,
   * `profile_missing`, `no_candidates`, `not_run`.
   */
  t3_outcome: string
  /** The best T3 score. */
  t3_score: number | null
  /**
   * `mint` (no candidate), `T0` (document-local replay, D102), `T3`, `T4`, or
   * `offline_exact` (the labelled offline resolver).
   */
  tier: string
  /** `match` or `new`. */
  verdict: string
}

/** One record of a resolved receipt, with its current text. */
export interface ResolvedRecord {
  /** The document (claims and chunks). */
  document_title?: string | null
  /** The record id. */
  id: string
  /** `claim`, `chunk` or `fact`. */
  kind: string
  /** The score it was selected with. */
  score: number
  /** Its text (a fact's statement). */
  text: string
}

/** The time scope an operation applied, with the instant it was evaluated at. */
export interface ScopeEcho {
  /** The instant of `at`. */
  at?: Instant | null
  /** When the scope was evaluated. */
  evaluated_at: Instant
  /** The start of `overlap`. */
  from?: Instant | null
  /** `current`, `at`, `overlap` or `history`. */
  mode: string
  /** The end of `overlap`. */
  to?: Instant | null
}

/** Scores of one result. */
export interface Scores {
  /**
   * The fused score: reciprocal rank fusion, or under `[engine.fusion]
   * method = "scores"` the weighted sum of cosine and relative lexical score.
   * Relative to this answer's other results.
   */
  fused: number
  /** Lexical channel, if the result was in it. */
  lexical: ChannelScore | null
  /**
   * How likely the result is to be about the question, in [0, 1], calibrated
   * from its semantic similarity (comparable across questions, unlike
   * `fused`). Absent on results that were fetched, not ranked for a question.
   */
  relevance?: number | null
  /** Semantic channel, if the result was in it. */
  semantic: ChannelScore | null
}

/** What a section is for; search drops some roles by default. */
export type SectionRole = 'body' | 'references' | 'nav' | 'boilerplate' | 'legal'

/** A stored section. */
export interface SectionRow {
  /** One past the last block ordinal. */
  block_end: number
  /** First block ordinal (inclusive). */
  block_start: number
  /** Chunks in the section. */
  chunk_count: number
  /** Heading level (0 for the root section). */
  level: number
  /** Position in document order, from 0. */
  ordinal: number
  /** The enclosing section's ordinal. */
  parent?: number | null
  /** Titles from the outermost heading down to this one (empty for the root). */
  path: string[]
  /** The role. */
  role: SectionRole
  /** The section's title (the heading text, or the document title for the root). */
  title: string
}

/** Whether the semantic channel covers every current chunk with the configured generation. */
export interface SemanticReadiness {
  /** Current chunks. */
  chunks: number
  /**
   * Set when the embedder is not a semantic model: `lexical embedder` when the
   * hashing embedder runs (configured, or standing in for a model that could not
   * be had), so the semantic channel matches words, not meaning.
   */
  degraded?: string | null
  /** The configured embedder generation. */
  generation: string
  /** Current chunks still without a vector of `generation`. */
  missing_vectors: number
  /** True when every current chunk has a vector of `generation`. */
  ready: boolean
}

/** The formats the engine converts. Anything else is stored and parked. */
export type SourceFormat = 'markdown' | 'text' | 'html' | 'json' | 'ndjson' | 'conversation'

/** A pipeline stage. */
export type Stage = 'e0.prepare' | 'e1.chunk' | 'e1.embed' | 'e2.extract' | 'e2.embed' | 'e3.normalize' | 'e3.adjudicate' | 'e3.embed'

/** What one stage did during a drain. */
export interface StageStats {
  /** Batches of this stage that ran. */
  batches: number
  /**
   * Work items claimed by those batches (completed, retried, parked or
   * dead-lettered).
   */
  items: number
  /**
   * Wall time inside those batches (running the stage and settling its items;
   * claiming excluded), in microseconds.
   */
  micros: number
}

/** Support or contradiction. */
export type Stance = 'support' | 'contradict'

/** Ledger status. */
export interface StatusReport {
  /** Dead letters with their errors. */
  dead_letters: DeadLetter[]
  /** Documents in the namespace. */
  documents: number
  /** The configured embedder generation. */
  embedder: string
  /**
   * Why the configured semantic model is not in use, when the hashing embedder
   * stands in for it (with the command that fixes it).
   */
  embedder_fallback?: string | null
  /**
   * The incomplete forget that keeps this namespace closed (every read and
   * write is `forget_in_progress` until it finishes), with why it stopped and
   * the command that resumes it.
   */
  forget_in_progress?: PendingForget | null
  /** Counts by stage, then status. */
  ledger: { [key: string]: { [key: string]: number } }
  /** The namespace reported on. */
  namespace: string
  /** Originals parked without a conversion route. */
  parked_no_route: number
  /** Semantic channel readiness. */
  semantic: SemanticReadiness
  /** The store kind. */
  store: string
}

/** The kind of record a work item targets. */
export type TargetKind = 'version' | 'chunk' | 'claim' | 'unit' | 'fact'

/** One evidence row with its claim. */
export interface TracedEvidence {
  /** When the row was added. */
  added_at: Instant
  /** The claim. */
  claim: ClaimRecord | null
  /** The claim. */
  claim_id: ClaimId
  /** The claim's lineage. */
  document_id: DocumentId
  /** The fact. */
  fact_id: FactId
  /** Whether the claim is current testimony. */
  is_current: boolean
  /** Support or contradict. */
  stance: Stance
}

/** Truncation markers: every cap is disclosed with a continuation. */
export interface Truncation {
  /** Pass back as `cursor` to get the next page. */
  continuation: string | null
  /** Whether more results exist past this page. */
  more_available: boolean
  /** Results returned. */
  returned: number
}

/**
 * A claim's source-asserted world-time window. `from` is inclusive, `until`
 * exclusive (a day `2023-05-07` is `[2023-05-07T00:00Z, 2023-05-08T00:00Z)`).
 */
export interface Validity {
  /** Start (inclusive). */
  from: Instant | null
  /** Meaning. */
  kind: ValidityKind
  /** Precision. */
  precision: Precision
  /** End (exclusive). */
  until: Instant | null
}

/** What the validity window means (D41). */
export type ValidityKind = 'state' | 'event' | 'measurement_period'

/** One immutable version of a document lineage. */
export type VersionId = Uuid

/** One version in a document's detail. */
export interface VersionSummary {
  /**
   * When this superseded conversation version was compacted: its original bytes
   * and derived rows are gone (every message it held is in the latest version).
   */
  compacted_at?: Instant | null
  /** sha256 of the original. */
  content_sha256: string
  /** Ingested at. */
  created_at: Instant
  /** Routed format. */
  format: SourceFormat | null
  /** Who created this version (D101), when its creator said so. */
  ingested_by?: IngestPrincipal | null
  /** Served by search. */
  is_current: boolean
  /** Metadata. */
  metadata: DocumentMetadata
  /** MIME type. */
  mime: string
  /** 1-based position. */
  ordinal: number
  /** Origin. */
  origin: Origin
  /** Size. */
  size: number
  /** Source time. */
  source_modified_at: Instant
  /**
   * `current` when the version is testimony the source still stands by (every
   * processed version of a snapshot lineage; only the current one of a living
   * lineage), `superseded` for older living versions, `pending` before processing.
   */
  testimony: string
  /** The version. */
  version_id: VersionId
}

/** How successive versions of a lineage relate (D55). */
export type VersioningMode = 'snapshot' | 'living'

/**
 * One world-time window (D118): `from` inclusive, `until` exclusive; unknown stays
 * unknown. A said-on date is never a validity bound.
 */
export interface Window {
  /** Precision of the bounds. */
  precision: Precision
  /** Start. */
  valid_from: Instant | null
  /** End (exclusive). */
  valid_until: Instant | null
}

/** A row of the work ledger. */
export type WorkId = Uuid

/** What each engine method resolves to, by its name (`Memory.methods()`). */
export interface Results {
  ingest_file: IngestReceipt
  ingest_text: IngestReceipt
  ingest_conversation: IngestReceipt
  append_messages: AppendReceipt
  conversation_messages: ConversationMessages
  remember_note: NoteRecord
  promote_note: NoteRecord
  archive_note: NoteRecord
  revoke_note: NoteRecord
  list_notes: NotePage
  set_note_policy: { start_as: 'promoted' | 'candidate' }
  process_until_idle: DrainReport
  search: Envelope<ChunkResult> | Envelope<ClaimResult> | Envelope<FactResult>
  resolve_entity: Envelope<EntityResult>
  claims_and_sources_context: Envelope<EvidenceResult>
  facts_context: Envelope<FactResult>
  combined_context: ContextBundle
  run_operation: JsonObject
  operations: { operations: OperationDescriptor[] }
  adjacent_chunks: Envelope<ChunkResult>
  search_documents: Envelope<DocumentResult>
  trace: FactTrace
  resolve_receipt: ReceiptResolution
  inspect_receipt: Receipt
  delete_document: DocumentDeletion
  forget_document: ForgetReport
  forget_note: ForgetReport
  export: JsonObject
  feedback: FeedbackRecord
  list_feedback: { feedback: FeedbackRecord[] }
  documents: { documents: DocumentSummary[] }
  document: DocumentDetail
  entities: { entities: EntityRecord[] }
  entity: EntityDetail
  retract_claim: ClaimRetraction
  invalidate_fact: FactInvalidation
  correct_fact: FactCorrection
  merge_entities: MergeEvent
  unmerge_entities: MergeEvent
  merge_proposals: { proposals: MergeProposal[] }
  accept_merge_proposal: MergeEvent
  reject_merge_proposal: MergeProposal
  claims: { claims: ClaimRecord[] }
  claim_decisions: { decisions: DecisionRecord[] }
  facts: FactPage
  predicates: { predicates: PredicateRow[] }
  neighborhood: Envelope<PathResult>
  hydrate: Envelope<HydratedRecord>
  status: StatusReport
  doctor: DoctorReport
}
