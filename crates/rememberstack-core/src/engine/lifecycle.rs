//! Lifecycle writes: conversation appends, deleting a document lineage (D135),
//! retracting a claim, invalidating a fact; feedback on receipts and the export pack.

use super::*;
use crate::facts::FactFilter;
use crate::forget::{ForgetManifest, ForgetReport, ForgetTarget};

/// What appending messages to a conversation did.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AppendReceipt {
    /// The namespace.
    pub namespace: String,
    /// The conversation lineage.
    pub document_id: DocumentId,
    /// The version holding every message (new, or the unchanged latest).
    pub version_id: VersionId,
    /// `created` (a new version) or `unchanged` (every message was already there).
    pub outcome: String,
    /// Whether the conversation lineage was created by this append.
    pub new_lineage: bool,
    /// Messages added.
    pub appended: u64,
    /// Messages whose event id was already present with the same speaker and text.
    pub already_present: u64,
}

/// A conversation's messages, in order, exactly as they were ingested and appended.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ConversationMessages {
    /// The namespace.
    pub namespace: String,
    /// The conversation lineage's reference.
    pub conversation_ref: String,
    /// The conversation lineage.
    pub document_id: DocumentId,
    /// The version that holds them: the lineage's latest (its messages are every
    /// message ingested or appended so far, processed or not).
    pub version_id: VersionId,
    /// When the session took place, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_time: Option<Timestamp>,
    /// The messages, in order.
    pub messages: Vec<text::Message>,
}

/// Feedback on one item of a recall receipt.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FeedbackInput {
    /// The receipt.
    pub receipt_id: ReceiptId,
    /// One of its selections, `kind:id` (e.g. `claim:…`, `chunk:…`, `fact:…`).
    pub item_ref: String,
    /// `useful`, `not_useful` or `wrong`.
    pub rating: String,
    /// A comment (at most 2,000 characters).
    #[serde(default)]
    pub comment: Option<String>,
}

/// What an export pack holds.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ExportSelection {
    /// Only facts about these entities (merges followed); empty = every entity.
    pub entities: Vec<EntityId>,
    /// Only facts supported by current testimony of these documents; empty = all.
    pub documents: Vec<DocumentId>,
    /// Closed and superseded facts too.
    pub history: bool,
    /// At most this many facts (1 to 100,000).
    pub limit: u32,
}

impl Default for ExportSelection {
    fn default() -> Self {
        ExportSelection {
            entities: vec![],
            documents: vec![],
            history: false,
            limit: 10_000,
        }
    }
}

/// An explicit memory write: one revision of a note.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NoteInput {
    /// The caller's idempotency key (1 to 200 characters).
    pub request_id: String,
    /// The note's stable source key (1 to 200 characters): its lineage.
    pub source_key: String,
    /// The revision label (1 to 200 characters).
    pub source_revision: String,
    /// The text.
    pub text: String,
    /// Caller metadata (a JSON object), stored with the revision.
    #[serde(default)]
    pub metadata: Option<serde_json::Value>,
}

/// What correcting a fact did.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FactCorrection {
    /// The corrected (now invalidated) fact.
    pub fact_id: FactId,
    /// When it stopped being believed.
    pub invalidated_at: Timestamp,
    /// The caller's reason.
    pub reason: String,
    /// The corrected statement.
    pub statement: String,
    /// The system-origin note carrying the statement through the pipeline.
    pub note: NoteRecord,
}

/// A page of note metadata.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NotePage {
    /// Revisions in remember order (metadata only, never text).
    pub notes: Vec<NoteRecord>,
    /// Pass it back to continue; absent on the last page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
}

/// The export pack format.
pub const PACK_FORMAT: &str = "rememberstack.pack/v1";

/// How often an append re-reads the conversation when another append moved it.
const APPEND_ATTEMPTS: usize = 5;

/// A conversation lineage as its latest version holds it.
enum LatestConversation {
    /// No such lineage (or no such namespace).
    Missing,
    /// The lineage was deleted: an append starts it over.
    Deleted {
        document_id: DocumentId,
        version_id: VersionId,
    },
    /// Every message ingested or appended so far.
    Live {
        document_id: DocumentId,
        version_id: VersionId,
        conversation: text::Conversation,
    },
}

impl Engine {
    /// The conversation lineage `conversation_ref` as its latest version holds it
    /// (read by appends and by [`Self::conversation_messages`]); a lineage whose
    /// latest version is not a conversation is `invalid_conversation`.
    async fn latest_conversation(
        &self,
        namespace: &str,
        conversation_ref: &str,
    ) -> Result<LatestConversation> {
        let Some(ns) = self.store.namespace(namespace).await? else {
            return Ok(LatestConversation::Missing);
        };
        let Some(row) = self
            .store
            .document_by_ref(ns.id, "conversation", conversation_ref)
            .await?
        else {
            return Ok(LatestConversation::Missing);
        };
        if row.deleted_at.is_some() {
            return Ok(LatestConversation::Deleted {
                document_id: row.document_id,
                version_id: row.latest_version_id,
            });
        }
        let version = self
            .store
            .version(ns.id, row.latest_version_id)
            .await?
            .ok_or_else(|| Error::store("a lineage's latest version is missing"))?;
        if version.format != Some(SourceFormat::Conversation) {
            return Err(Error::new(
                ErrorCode::InvalidConversation,
                format!(
                    "`{conversation_ref}` is not a conversation lineage: its latest version is not a conversation"
                ),
            ));
        }
        let bytes = self.store.content(ns.id, &version.content_sha256).await?;
        Ok(LatestConversation::Live {
            document_id: row.document_id,
            version_id: row.latest_version_id,
            conversation: text::parse_conversation(&bytes)?,
        })
    }

    /// The messages of the conversation lineage `conversation_ref`, in order, as
    /// its latest version holds them (every message ingested or appended so far).
    /// A lineage that does not exist or was deleted is `document_not_found`; one
    /// whose latest version is not a conversation is `invalid_conversation`.
    pub async fn conversation_messages(
        &self,
        namespace: &str,
        conversation_ref: &str,
    ) -> Result<ConversationMessages> {
        validate_namespace(namespace)?;
        validate_lineage("conversation", conversation_ref)?;
        let LatestConversation::Live {
            document_id,
            version_id,
            conversation,
        } = self
            .latest_conversation(namespace, conversation_ref)
            .await?
        else {
            return Err(Error::new(
                ErrorCode::DocumentNotFound,
                format!("no conversation `{conversation_ref}` in namespace `{namespace}`"),
            ));
        };
        Ok(ConversationMessages {
            namespace: namespace.to_string(),
            conversation_ref: conversation_ref.to_string(),
            document_id,
            version_id,
            session_time: conversation.session_time,
            messages: conversation.messages,
        })
    }

    /// Append messages to a conversation lineage (`source_kind = conversation`,
    /// `source_ref = conversation_ref`), creating it on first use. Every message needs
    /// an `event_id`: an id already present with the same speaker and text is skipped
    /// (so a replayed append is `unchanged`), with anything else it is refused
    /// (`conflict`) and nothing changes. Each append that adds messages is a new
    /// version of the lineage holding every message; unchanged chunks reuse their
    /// claims, and superseded versions are compacted (their bytes and derived rows go
    /// once a newer version is processed, or at once if their processing never
    /// began), so an append costs what it adds. A message without a timestamp is
    /// stamped with `source_time` (else now), so its time never shifts with later
    /// appends. A deleted conversation starts over from the appended messages.
    pub async fn append_messages(
        &self,
        namespace: &str,
        conversation_ref: &str,
        messages: Vec<text::Message>,
        source_time: Option<Timestamp>,
    ) -> Result<AppendReceipt> {
        validate_namespace(namespace)?;
        validate_lineage("conversation", conversation_ref)?;
        // A message keeps the time it was appended at (its own timestamp, else the
        // append's source time, else now) in every later version of the conversation.
        let stamp = source_time.unwrap_or_else(|| self.clock.now());
        let mut incoming = dedupe_appended(messages)?;
        for m in &mut incoming {
            m.timestamp = m.timestamp.or(Some(stamp));
        }
        for attempt in 0..APPEND_ATTEMPTS {
            let (base, latest, deleted) = match self
                .latest_conversation(namespace, conversation_ref)
                .await?
            {
                LatestConversation::Missing => (None, None, false),
                LatestConversation::Deleted {
                    document_id,
                    version_id,
                } => (None, Some((document_id, version_id)), true),
                LatestConversation::Live {
                    document_id,
                    version_id,
                    conversation,
                } => (Some(conversation), Some((document_id, version_id)), false),
            };
            let mut conversation = base.unwrap_or(text::Conversation {
                session_time: None,
                messages: vec![],
            });
            let known: HashMap<&str, &text::Message> = conversation
                .messages
                .iter()
                .filter_map(|m| m.event_id.as_deref().map(|id| (id, m)))
                .collect();
            let mut fresh = Vec::new();
            let mut already = 0u64;
            for m in &incoming {
                let id = m.event_id.as_deref().unwrap_or_default();
                match known.get(id) {
                    Some(old) if old.speaker == m.speaker && old.text == m.text => already += 1,
                    Some(_) => {
                        return Err(Error::new(
                            ErrorCode::Conflict,
                            format!(
                                "event id `{id}` already holds a different message in `{conversation_ref}`; nothing was appended"
                            ),
                        ));
                    }
                    None => fresh.push(m.clone()),
                }
            }
            if fresh.is_empty()
                && let (Some((document_id, latest)), false) = (latest, deleted)
            {
                return Ok(AppendReceipt {
                    namespace: namespace.to_string(),
                    document_id,
                    version_id: latest,
                    outcome: "unchanged".into(),
                    new_lineage: false,
                    appended: 0,
                    already_present: already,
                });
            }
            let appended = fresh.len() as u64;
            conversation.messages.extend(fresh);
            let bytes = serde_json::to_vec(&conversation)
                .map_err(|e| Error::internal(format!("conversation: {e}")))?;
            let mut req = IngestRequest::new(namespace, "conversation", conversation_ref, bytes);
            req.kind = DeclaredKind::Format(SourceFormat::Conversation);
            req.source_time = source_time;
            req.expected_latest = latest.map(|(_, v)| v);
            match self.ingest(req).await {
                Ok(r) => {
                    // The version this one supersedes goes now if its processing never
                    // began (or earlier ones finished since): an append costs what it adds.
                    self.compact_conversation(&r.namespace, r.document_id).await;
                    return Ok(AppendReceipt {
                        namespace: r.namespace,
                        document_id: r.document_id,
                        version_id: r.version_id,
                        outcome: r.outcome,
                        new_lineage: r.new_lineage,
                        appended,
                        already_present: already,
                    });
                }
                Err(e) if e.code() == ErrorCode::Conflict && attempt + 1 < APPEND_ATTEMPTS => {
                    tracing::info!(
                        conversation_ref,
                        attempt,
                        "conversation moved during an append: re-read"
                    );
                }
                Err(e) => return Err(e),
            }
        }
        Err(Error::new(
            ErrorCode::Conflict,
            format!("`{conversation_ref}` kept changing under concurrent appends; retry"),
        ))
    }

    /// Compact the superseded versions of a conversation lineage (the rules are on
    /// `MemoryStore::compact_conversation`). It is an optimisation of storage, never
    /// part of the write that triggered it: a failure is logged and the next append or
    /// completed extraction retries.
    pub(super) async fn compact_conversation(&self, namespace: &str, doc: DocumentId) {
        let ns = match self.store.namespace(namespace).await {
            Ok(Some(ns)) => ns.id,
            Ok(None) => return,
            Err(e) => {
                tracing::warn!(%doc, error = %e, "conversation compaction skipped");
                return;
            }
        };
        self.compact_conversation_in(ns, doc).await;
    }

    pub(super) async fn compact_conversation_in(&self, ns: NamespaceId, doc: DocumentId) {
        match self
            .store
            .compact_conversation(ns, doc, self.clock.now())
            .await
        {
            Ok(0) => {}
            Ok(n) => tracing::debug!(%doc, versions = n, "conversation versions compacted"),
            Err(e) => tracing::warn!(%doc, error = %e, "conversation compaction failed"),
        }
    }

    /// Delete a document lineage (D135): soft, lineage grain, one atomic episode.
    /// Its claims stop being current testimony, evidence counts follow, and facts it
    /// alone supported close with the reason `retracted_source_removal`; facts with
    /// other current support stay. The stored original and the retired claims remain
    /// for audit (deletion is not erasure). Bytes ingested again later are a new
    /// version, processed afresh.
    ///
    /// An unknown id, and a repeat after a completed episode, are
    /// `document_not_found`; a repeat that finds work landed since the tombstone
    /// retires it and answers again.
    pub async fn delete_document(
        &self,
        namespace: &str,
        doc: DocumentId,
    ) -> Result<DocumentDeletion> {
        validate_namespace(namespace)?;
        let not_found = || {
            Error::new(
                ErrorCode::DocumentNotFound,
                format!("document {doc} not found in namespace `{namespace}`"),
            )
        };
        let Some(ns) = self.store.namespace(namespace).await? else {
            return Err(not_found());
        };
        match self
            .store
            .delete_document(ns.id, doc, self.clock.now())
            .await?
        {
            DeletionOutcome::NotFound | DeletionOutcome::AlreadyDeleted => Err(not_found()),
            DeletionOutcome::Deleted(deletion) => {
                self.after_deletion(ns.id, &deletion).await;
                tracing::info!(
                    %doc,
                    claims_retired = deletion.claims_retired,
                    relations_closed = deletion.relations_closed,
                    observations_closed = deletion.observations_closed,
                    "document deleted"
                );
                Ok(deletion)
            }
        }
    }

    /// Hard-forget a document lineage (D74): erasure, not deletion. A content-free
    /// manifest is appended to the manifest root first; while the forget is
    /// incomplete every read and write in the namespace fails with
    /// `forget_in_progress`. The lineage's bytes, representations, chunks, claims,
    /// mentions, evidence, vectors, lexical rows, ledger rows and transcripts go,
    /// with the facts and entities left without support; receipts that selected
    /// its records resolve as if they never existed; surviving entities' profiles
    /// are rebuilt. The content hash stays as a guard: ingesting the same bytes
    /// again is `forgotten_content`.
    ///
    /// A forget that was interrupted (in this namespace, for any lineage) is
    /// finished first. An unknown id, and a repeat after completion, are
    /// `document_not_found`.
    pub async fn forget_document(&self, namespace: &str, doc: DocumentId) -> Result<ForgetReport> {
        self.forget_lineage(namespace, doc, ForgetTarget::Document)
            .await
    }

    /// Hard-forget a note: every revision of the note lineage `note`, as
    /// [`Engine::forget_document`] does. `document_not_found` when `note` is not a
    /// note of the namespace.
    pub async fn forget_note(&self, namespace: &str, note: DocumentId) -> Result<ForgetReport> {
        self.forget_lineage(namespace, note, ForgetTarget::Note)
            .await
    }

    async fn forget_lineage(
        &self,
        namespace: &str,
        doc: DocumentId,
        target: ForgetTarget,
    ) -> Result<ForgetReport> {
        validate_namespace(namespace)?;
        let not_found = || {
            Error::new(
                ErrorCode::DocumentNotFound,
                format!(
                    "{} {doc} not found in namespace `{namespace}`",
                    match target {
                        ForgetTarget::Document => "document",
                        ForgetTarget::Note => "note",
                    }
                ),
            )
        };
        // The namespace may be closed by an interrupted forget: find it without the gate.
        let Some(ns) = self
            .store
            .namespaces()
            .await?
            .into_iter()
            .find(|n| n.slug == namespace)
        else {
            return Err(not_found());
        };
        let mut resumed = None;
        for m in self.store.incomplete_forgets(ns.id).await? {
            tracing::info!(manifest = %m.manifest_id, doc = %m.document_id, "resuming an interrupted forget");
            let (report, touched) = self.store.forget(&m, self.clock.now()).await?;
            self.refresh_touched(ns.id, &touched).await;
            if m.document_id == doc {
                resumed = Some(report);
            }
        }
        if let Some(report) = resumed {
            return Ok(report);
        }
        let row = self
            .store
            .document(ns.id, doc)
            .await?
            .ok_or_else(not_found)?;
        if target == ForgetTarget::Note && row.source_kind != "note" {
            return Err(not_found());
        }
        let versions = self.store.versions(ns.id, doc).await?;
        let manifest = ForgetManifest::new(
            &ns,
            target,
            doc,
            &versions,
            (&row.source_kind, &row.source_ref),
            self.clock.now(),
        );
        let (report, touched) = self.store.forget(&manifest, self.clock.now()).await?;
        self.refresh_touched(ns.id, &touched).await;
        tracing::info!(
            %doc,
            manifest = %manifest.manifest_id,
            claims = report.claims,
            facts = report.facts,
            entities = report.entities,
            "lineage forgotten"
        );
        Ok(report)
    }

    /// Revoke a note revision (candidate or promoted) if its lifecycle version is
    /// still `expected_version` (a stale version is a `conflict`): the revision
    /// serves nothing from now on, its text, chunks, the claims only it carried,
    /// their vectors and index rows are removed, and a tombstone (ids, digests,
    /// times) stays. The revoked revision can never be remembered again
    /// (`revoked`).
    pub async fn revoke_note(
        &self,
        namespace: &str,
        version: VersionId,
        expected_version: u32,
    ) -> Result<NoteRecord> {
        validate_namespace(namespace)?;
        let ns = self.namespace_or_not_found(namespace).await?;
        let (note, touched) = self
            .store
            .revoke_note(ns, version, expected_version, self.clock.now())
            .await?;
        self.refresh_touched(ns, &touched).await;
        Ok(note)
    }

    /// Rerun the deletion cascade for the document of `version` if its lineage is
    /// deleted: work that lands after the tombstone is retired the same way.
    pub(super) async fn retire_if_deleted(
        &self,
        ns: NamespaceId,
        version: VersionId,
    ) -> Result<()> {
        let Some(v) = self.store.version(ns, version).await? else {
            return Ok(());
        };
        let deleted = self
            .store
            .document(ns, v.document_id)
            .await?
            .is_some_and(|d| d.deleted_at.is_some());
        if !deleted {
            return Ok(());
        }
        if let DeletionOutcome::Deleted(deletion) = self
            .store
            .delete_document(ns, v.document_id, self.clock.now())
            .await?
        {
            self.after_deletion(ns, &deletion).await;
        }
        Ok(())
    }

    /// Retract a claim: it stops being current testimony for good, with `reason`
    /// recorded; support is recounted, and a fact it alone supported closes
    /// (`retracted_claim`) while a fact with other support survives. Every fact it
    /// evidences shows the retraction in `trace`. Idempotent: a repeat returns the
    /// first retraction; a `request_id` replays exactly and refuses another input
    /// (`request_conflict`).
    pub async fn retract_claim(
        &self,
        namespace: &str,
        claim: ClaimId,
        reason: &str,
        request_id: Option<&str>,
    ) -> Result<ClaimRetraction> {
        validate_namespace(namespace)?;
        let reason = lifecycle_reason(reason)?;
        let request = request_key(
            request_id,
            "retract_claim",
            &serde_json::json!({"claim_id": claim, "reason": reason}),
        )?;
        let ns = self.namespace_or_not_found(namespace).await?;
        let r = self
            .store
            .retract_claim(ns, claim, reason, request.as_ref(), self.clock.now())
            .await?;
        self.refresh_touched(ns, &r.touched_entities).await;
        Ok(r)
    }

    /// Invalidate a fact: the belief ends now (`invalidated_at`, `closed_reason =
    /// invalidated`) with the caller's reason as an event in `trace`. The evidence
    /// stays. A `request_id` replays exactly and refuses another input; invalidating
    /// a fact that is already closed is a `conflict`.
    pub async fn invalidate_fact(
        &self,
        namespace: &str,
        fact: FactId,
        reason: &str,
        request_id: Option<&str>,
    ) -> Result<FactInvalidation> {
        validate_namespace(namespace)?;
        let reason = lifecycle_reason(reason)?;
        let request = request_key(
            request_id,
            "invalidate_fact",
            &serde_json::json!({"fact_id": fact, "reason": reason}),
        )?;
        let ns = self.namespace_or_not_found(namespace).await?;
        let r = self
            .store
            .invalidate_fact(ns, fact, reason, None, request.as_ref(), self.clock.now())
            .await?;
        self.refresh_touched(ns, &r.touched_entities).await;
        Ok(r)
    }

    /// Remember a note revision (an explicit memory write). Exact replay of a
    /// request id returns the original revision with its current lifecycle; the same
    /// request id with different content is `request_conflict`; different text under
    /// an existing source key and revision is `revision_conflict`; another request
    /// id naming the same exact revision returns the same note. New revisions start
    /// `promoted` (archiving the source's earlier promoted revision) or, under the
    /// namespace policy `candidate` ([`Engine::set_note_policy`]), as candidates
    /// that are never served until promoted.
    pub async fn remember_note(&self, namespace: &str, input: NoteInput) -> Result<NoteRecord> {
        self.remember_note_as(namespace, input, Origin::External, None)
            .await
    }

    /// [`Engine::remember_note`] with the note's origin (D42).
    async fn remember_note_as(
        &self,
        namespace: &str,
        input: NoteInput,
        origin: Origin,
        title: Option<&str>,
    ) -> Result<NoteRecord> {
        validate_namespace(namespace)?;
        let candidate = self.note_policy(namespace).await? == Admission::Candidate;
        for (what, v) in [
            ("request_id", &input.request_id),
            ("source_key", &input.source_key),
            ("source_revision", &input.source_revision),
        ] {
            if v.trim().is_empty() || v.chars().count() > 200 {
                return Err(Error::new(
                    ErrorCode::InvalidParameter,
                    format!("{what} must be 1 to 200 characters"),
                ));
            }
        }
        if input.text.trim().is_empty() {
            return Err(Error::new(ErrorCode::EmptyInput, "the note text is empty"));
        }
        let metadata = input.metadata.clone().unwrap_or(serde_json::json!({}));
        if !metadata.is_object() {
            return Err(Error::new(
                ErrorCode::InvalidParameter,
                "metadata must be a JSON object",
            ));
        }
        let content_digest = sha256_hex(input.text.as_bytes());
        let request_digest = sha256_hex(
            canonical_json(&serde_json::json!({
                "source_key": input.source_key,
                "source_revision": input.source_revision,
                "text_sha256": content_digest,
                "metadata": metadata,
            }))
            .as_bytes(),
        );
        for _ in 0..3 {
            let ns = self
                .store
                .ensure_namespace(namespace, self.clock.now())
                .await?;
            match self
                .store
                .note_lookup(
                    ns.id,
                    &input.request_id,
                    &input.source_key,
                    &input.source_revision,
                )
                .await?
            {
                NoteLookup::Request(digest, note) if digest == request_digest => return Ok(note),
                NoteLookup::Request(..) => {
                    return Err(Error::new(
                        ErrorCode::RequestConflict,
                        format!(
                            "request id `{}` already remembered different content",
                            input.request_id
                        ),
                    ));
                }
                NoteLookup::Revision(note) if note.lifecycle == Admission::Revoked => {
                    return Err(Error::new(
                        ErrorCode::Revoked,
                        format!(
                            "revision `{}` of `{}` was revoked and can never be remembered again",
                            note.source_revision, note.source_key
                        ),
                    ));
                }
                NoteLookup::Revision(note) if note.digest == content_digest => {
                    match self
                        .store
                        .add_note_request(
                            ns.id,
                            &input.request_id,
                            &request_digest,
                            note.version_id,
                            self.clock.now(),
                        )
                        .await
                    {
                        Ok(()) => return Ok(note),
                        Err(e) if e.code() == ErrorCode::Conflict => continue,
                        Err(e) => return Err(e),
                    }
                }
                NoteLookup::Revision(note) => {
                    return Err(Error::new(
                        ErrorCode::RevisionConflict,
                        format!(
                            "revision `{}` of `{}` already holds different text (digest {})",
                            note.source_revision, note.source_key, note.digest
                        ),
                    ));
                }
                NoteLookup::New => {}
            }
            let mut req = IngestRequest::new(
                namespace,
                "note",
                &input.source_key,
                input.text.clone().into_bytes(),
            );
            req.kind = DeclaredKind::Format(SourceFormat::Markdown);
            req.mode = Some(VersioningMode::Living);
            req.origin = origin;
            req.title = title.map(str::to_string);
            req.distinct = true;
            req.admission = if candidate {
                Admission::Candidate
            } else {
                Admission::Promoted
            };
            let note = NewNote {
                source_key: input.source_key.clone(),
                source_revision: input.source_revision.clone(),
                content_digest: content_digest.clone(),
                request_digest: request_digest.clone(),
                request_id: input.request_id.clone(),
                metadata: metadata.clone(),
            };
            match self.ingest_with(req, Some(note)).await {
                Ok(receipt) => {
                    return self
                        .store
                        .note(ns.id, receipt.version_id)
                        .await?
                        .ok_or_else(|| Error::store("the remembered note vanished"));
                }
                Err(e) if e.code() == ErrorCode::Conflict => continue,
                Err(e) => return Err(e),
            }
        }
        Err(Error::new(
            ErrorCode::Conflict,
            "the note kept changing under concurrent writers; retry",
        ))
    }

    /// The namespace's note policy: the state new note revisions start in
    /// (`promoted`, the default, or `candidate`).
    pub async fn note_policy(&self, namespace: &str) -> Result<Admission> {
        validate_namespace(namespace)?;
        match self
            .store
            .setting(&format!("note_policy/{namespace}"))
            .await?
        {
            Some(s) => Admission::parse(&s),
            None => Ok(Admission::Promoted),
        }
    }

    /// Set the namespace's note policy: `promoted` or `candidate`.
    pub async fn set_note_policy(&self, namespace: &str, start_as: Admission) -> Result<()> {
        validate_namespace(namespace)?;
        if !matches!(start_as, Admission::Promoted | Admission::Candidate) {
            return Err(Error::new(
                ErrorCode::InvalidParameter,
                "new notes start as promoted or candidate",
            ));
        }
        self.store
            .set_setting(&format!("note_policy/{namespace}"), start_as.as_str())
            .await
    }

    /// Move a note revision along its lifecycle (`candidate → promoted →
    /// archived`) if its lifecycle version is still `expected_version`; a stale
    /// version is a `conflict`, never guessed. Promotion archives the source's
    /// earlier promoted revision in the same transaction and makes this revision the
    /// one served; archiving the served revision leaves the note serving nothing.
    pub async fn transition_note(
        &self,
        namespace: &str,
        version: VersionId,
        expected_version: u32,
        to: Admission,
    ) -> Result<NoteRecord> {
        validate_namespace(namespace)?;
        if !matches!(to, Admission::Promoted | Admission::Archived) {
            return Err(Error::new(
                ErrorCode::InvalidParameter,
                "a note revision can be promoted or archived",
            ));
        }
        let ns = self.namespace_or_not_found(namespace).await?;
        let note = self
            .store
            .transition_note(ns, version, expected_version, to, self.clock.now())
            .await?;
        if to == Admission::Promoted {
            self.refresh_currency(ns, note.note_id, Some(version), "note_promoted")
                .await?;
        }
        Ok(note)
    }

    /// Note revisions' metadata (source, revision, digest, lifecycle, version,
    /// times — never text), `limit` (1 to 500) per page, in remember order.
    pub async fn list_notes(
        &self,
        namespace: &str,
        cursor: Option<&str>,
        limit: u32,
    ) -> Result<NotePage> {
        validate_namespace(namespace)?;
        if !(1..=500).contains(&limit) {
            return Err(Error::new(
                ErrorCode::InvalidParameter,
                "limit must be 1 to 500",
            ));
        }
        let after = match cursor {
            None => 0,
            Some(c) => c
                .strip_prefix("n")
                .and_then(|n| n.parse::<i64>().ok())
                .filter(|n| *n >= 0)
                .ok_or_else(|| Error::new(ErrorCode::InvalidParameter, "invalid cursor"))?,
        };
        let Some(ns) = self.store.namespace(namespace).await? else {
            return Ok(NotePage {
                notes: vec![],
                cursor: None,
            });
        };
        let mut notes = self.store.list_notes(ns.id, after, limit + 1).await?;
        let cursor = if notes.len() > limit as usize {
            notes.truncate(limit as usize);
            notes.last().map(|n| format!("n{}", n.seq))
        } else {
            None
        };
        Ok(NotePage { notes, cursor })
    }

    /// Record feedback on one item a recall receipt selected. The receipt must exist
    /// in the namespace and the item must be one of its selections. Feedback older
    /// than `feedback_retention` is pruned as new feedback arrives.
    pub async fn feedback(&self, namespace: &str, input: FeedbackInput) -> Result<FeedbackRecord> {
        const RATINGS: [&str; 3] = ["useful", "not_useful", "wrong"];
        if !RATINGS.contains(&input.rating.as_str()) {
            return Err(Error::new(
                ErrorCode::InvalidParameter,
                format!(
                    "rating must be one of useful, not_useful, wrong (got `{}`)",
                    input.rating
                ),
            ));
        }
        if input
            .comment
            .as_ref()
            .is_some_and(|c| c.chars().count() > 2000)
        {
            return Err(Error::new(
                ErrorCode::InvalidParameter,
                "a comment is at most 2,000 characters",
            ));
        }
        let receipt = self.inspect_receipt(namespace, input.receipt_id).await?;
        let selected = receipt
            .selections
            .iter()
            .any(|s| format!("{}:{}", s.kind, s.id) == input.item_ref);
        if !selected {
            return Err(Error::new(
                ErrorCode::InvalidParameter,
                format!(
                    "`{}` is not one of receipt {}'s selections (use `kind:id`, e.g. `claim:<id>`)",
                    input.item_ref, input.receipt_id
                ),
            ));
        }
        // Milliseconds, as stored: the answer equals what a listing returns.
        let now = chrono::SubsecRound::trunc_subsecs(self.clock.now(), 3);
        let record = FeedbackRecord {
            feedback_id: uuid::Uuid::new_v4(),
            namespace_id: receipt.namespace_id,
            receipt_id: input.receipt_id,
            item_ref: input.item_ref,
            rating: input.rating,
            comment: input.comment.filter(|c| !c.trim().is_empty()),
            created_at: now,
        };
        let cutoff = now
            - chrono::Duration::from_std(self.config.feedback_retention)
                .unwrap_or(chrono::Duration::days(180));
        self.store.put_feedback(record.clone(), cutoff).await?;
        Ok(record)
    }

    /// Feedback of a namespace (optionally one receipt's), oldest first.
    pub async fn list_feedback(
        &self,
        namespace: &str,
        receipt: Option<ReceiptId>,
        limit: u32,
    ) -> Result<Vec<FeedbackRecord>> {
        validate_namespace(namespace)?;
        let Some(ns) = self.store.namespace(namespace).await? else {
            return Ok(vec![]);
        };
        self.store
            .list_feedback(ns.id, receipt, limit.clamp(1, 10_000))
            .await
    }

    /// Delete feedback older than the configured retention (every namespace).
    /// Returns how many rows were removed.
    pub async fn prune_feedback(&self) -> Result<u64> {
        let cutoff = self.clock.now()
            - chrono::Duration::from_std(self.config.feedback_retention)
                .unwrap_or(chrono::Duration::days(180));
        self.store.prune_feedback(cutoff).await
    }

    /// A canonical JSON memory pack: the selected facts, the claims that evidence
    /// them (text, validity, spans, provenance), the documents those come from
    /// (lineage, versions, content hashes), the entities they name, and the list of
    /// omissions (evidence that is no longer current testimony, facts beyond the
    /// limit). `digest` is the sha256 of the pack without it, serialized canonically
    /// ([`canonical_json`]: sorted keys, no whitespace).
    pub async fn export_pack(
        &self,
        namespace: &str,
        selection: &ExportSelection,
    ) -> Result<serde_json::Value> {
        use serde_json::{Value, json};
        if selection.limit == 0 || selection.limit > 100_000 {
            return Err(Error::new(
                ErrorCode::InvalidParameter,
                "limit must be 1 to 100000",
            ));
        }
        crate::limits::check_list_len("entities", selection.entities.len())?;
        crate::limits::check_list_len("documents", selection.documents.len())?;
        let ns = self.namespace_or_not_found(namespace).await?;
        let mut entities: Vec<EntityId> = Vec::new();
        for e in &selection.entities {
            entities.extend(
                self.members(ns, self.root_of(ns, *e).await?.entity_id)
                    .await?,
            );
        }
        let filter = FactFilter {
            namespace_id: ns,
            entities,
            at: None,
            history: selection.history,
            overlap: None,
            documents: (!selection.documents.is_empty()).then(|| selection.documents.clone()),
            group: None,
            unsupported: false,
        };
        let mut facts = self.store.list_facts(&filter, selection.limit + 1).await?;
        let mut omissions: Vec<Value> = Vec::new();
        if facts.len() > selection.limit as usize {
            facts.truncate(selection.limit as usize);
            omissions.push(json!({"kind": "facts", "reason": "limit", "limit": selection.limit}));
        }
        facts.sort_by_key(|f| f.fact_id);
        let mut claim_ids: Vec<ClaimId> = Vec::new();
        let mut entity_ids: Vec<EntityId> = Vec::new();
        let mut fact_rows = Vec::with_capacity(facts.len());
        for f in &facts {
            let mut evidence = Vec::new();
            for e in self.store.fact_evidence(ns, f.fact_id).await? {
                if !e.is_current {
                    omissions.push(json!({
                        "kind": "evidence",
                        "fact_id": f.fact_id,
                        "claim_id": e.claim_id,
                        "reason": "not_current_testimony",
                    }));
                    continue;
                }
                claim_ids.push(e.claim_id);
                evidence.push(json!({"claim_id": e.claim_id, "stance": e.stance}));
            }
            entity_ids.push(f.subject);
            entity_ids.extend(f.object);
            let mut row = serde_json::to_value(f).map_err(|e| Error::internal(e.to_string()))?;
            if let Some(obj) = row.as_object_mut() {
                obj.remove("namespace_id");
                obj.remove("embedding_key");
                obj.insert("evidence".into(), Value::Array(evidence));
            }
            fact_rows.push(row);
        }
        claim_ids.sort();
        claim_ids.dedup();
        let mut claims = self.store.claims(ns, &claim_ids).await?;
        claims.sort_by_key(|c| c.claim_id);
        let mut docs: Vec<DocumentId> = claims.iter().map(|c| c.document_id).collect();
        docs.sort();
        docs.dedup();
        let claim_rows: Vec<Value> = claims
            .iter()
            .map(|c| {
                json!({
                    "claim_id": c.claim_id,
                    "document_id": c.document_id,
                    "text": c.text,
                    "added_context": c.added_context,
                    "validity": c.validity,
                    "asserted_at": c.asserted_at,
                    "extractor_version": c.extractor_version,
                    "text_sha256": sha256_hex(c.text.as_bytes()),
                    "occurrences": c.occurrences.iter().map(|o| json!({
                        "version_id": o.version_id,
                        "chunk_id": o.chunk_id,
                        "spans": o.spans,
                        "event_ids": o.event_ids,
                    })).collect::<Vec<_>>(),
                })
            })
            .collect();
        let mut doc_rows = Vec::with_capacity(docs.len());
        for d in docs {
            let Some(row) = self.store.document(ns, d).await? else {
                continue;
            };
            let versions: Vec<Value> = self
                .store
                .versions(ns, d)
                .await?
                .into_iter()
                .map(|v| {
                    json!({
                        "version_id": v.version_id,
                        "ordinal": v.ordinal,
                        "content_sha256": v.content_sha256,
                        "source_modified_at": v.source_modified_at,
                    })
                })
                .collect();
            doc_rows.push(json!({
                "document_id": d,
                "source_kind": row.source_kind,
                "source_ref": row.source_ref,
                "title": row.metadata.display_title(&row.source_ref),
                "versions": versions,
            }));
        }
        entity_ids.sort();
        entity_ids.dedup();
        let mut ents = self.store.entities(ns, &entity_ids).await?;
        ents.sort_by_key(|e| e.entity_id);
        let entity_rows: Vec<Value> = ents
            .iter()
            .map(|e| {
                json!({
                    "entity_id": e.entity_id,
                    "canonical_name": e.canonical_name,
                    "aliases": e.aliases,
                    "merged_into": e.merged_into,
                })
            })
            .collect();
        let mut pack = json!({
            "format": PACK_FORMAT,
            "namespace": namespace,
            "exported_at": self.clock.now(),
            "selection": selection,
            "components": {
                "extractor": self.extractor_version(),
                "normalizer": self.normalizer_version(),
                "adjudicator": self.adjudicator_version(),
            },
            "facts": fact_rows,
            "claims": claim_rows,
            "documents": doc_rows,
            "entities": entity_rows,
            "omissions": omissions,
        });
        let digest = sha256_hex(canonical_json(&pack).as_bytes());
        if let Some(obj) = pack.as_object_mut() {
            obj.insert("digest".into(), Value::String(digest));
        }
        Ok(pack)
    }

    /// Correct a fact: it is invalidated (`closed_reason = corrected`, a
    /// `corrected` event with the statement and reason), and the corrected statement
    /// is remembered as a system-origin note (`corrections/<fact id>`, titled
    /// `Correction`) that flows
    /// through the ordinary pipeline, so the correction has evidence of its own.
    /// Idempotent by `request_id` like [`Engine::invalidate_fact`]; a repeat after an
    /// interruption finishes the note.
    pub async fn correct_fact(
        &self,
        namespace: &str,
        fact: FactId,
        statement: &str,
        reason: &str,
        request_id: Option<&str>,
    ) -> Result<FactCorrection> {
        validate_namespace(namespace)?;
        let reason = lifecycle_reason(reason)?;
        let statement = statement.trim();
        if statement.is_empty() || statement.chars().count() > 2000 {
            return Err(Error::new(
                ErrorCode::InvalidInput,
                "a corrected statement of 1 to 2,000 characters is required",
            ));
        }
        let request = request_key(
            request_id,
            "correct_fact",
            &serde_json::json!({"fact_id": fact, "statement": statement, "reason": reason}),
        )?;
        let ns = self.namespace_or_not_found(namespace).await?;
        let invalidation = self
            .store
            .invalidate_fact(
                ns,
                fact,
                reason,
                Some(statement),
                request.as_ref(),
                self.clock.now(),
            )
            .await?;
        self.refresh_touched(ns, &invalidation.touched_entities)
            .await;
        let note = self
            .remember_note_as(
                namespace,
                NoteInput {
                    request_id: format!("correct_fact/{fact}"),
                    source_key: format!("corrections/{fact}"),
                    source_revision: "1".into(),
                    text: statement.to_string(),
                    metadata: Some(serde_json::json!({"corrects": fact, "reason": reason})),
                },
                Origin::System,
                // Titled in words, not by the fact id: the title is part of what
                // retrieval indexes (D80).
                Some("Correction"),
            )
            .await?;
        Ok(FactCorrection {
            fact_id: fact,
            invalidated_at: invalidation.invalidated_at,
            reason: reason.to_string(),
            statement: statement.to_string(),
            note,
        })
    }

    /// Refresh the profiles of entities whose facts a deletion closed.
    async fn after_deletion(&self, ns: NamespaceId, deletion: &DocumentDeletion) {
        self.refresh_touched(ns, &deletion.touched_entities).await;
    }

    /// Refresh the profiles of entities whose facts a lifecycle write changed. Best
    /// effort: the write has committed; a failed refresh is logged and the profile
    /// is rebuilt by the entity's next adjudication.
    async fn refresh_touched(&self, ns: NamespaceId, entities: &[EntityId]) {
        if entities.is_empty() {
            return;
        }
        let roots = match self.roots_of(ns, entities).await {
            Ok(r) => r,
            Err(e) => {
                tracing::warn!(error = %e, "profiles after a deletion: entities unreadable");
                return;
            }
        };
        let mut done = HashSet::new();
        for root in roots.values() {
            if !done.insert(root.entity_id) {
                continue;
            }
            let _guard = match self.lock(format!("entity:{ns}:{}", root.entity_id)).await {
                Ok(g) => g,
                Err(e) => {
                    tracing::warn!(entity = %root.entity_id, error = %e, "profile refresh after a deletion failed");
                    continue;
                }
            };
            if let Err(e) = self.refresh_profile(ns, root.entity_id).await {
                tracing::warn!(entity = %root.entity_id, error = %e, "profile refresh after a deletion failed");
            }
        }
    }
}

/// A caller's reason: trimmed, 1 to 1,000 characters.
fn lifecycle_reason(reason: &str) -> Result<&str> {
    let reason = reason.trim();
    if reason.is_empty() || reason.chars().count() > 1000 {
        return Err(Error::new(
            ErrorCode::InvalidInput,
            "a reason of 1 to 1,000 characters is required",
        ));
    }
    Ok(reason)
}

/// The replay key of a lifecycle write made under a caller's request id.
pub(super) fn request_key(
    request_id: Option<&str>,
    operation: &str,
    input: &serde_json::Value,
) -> Result<Option<RequestKey>> {
    let Some(id) = request_id else {
        return Ok(None);
    };
    if id.trim().is_empty() || id.len() > 200 {
        return Err(Error::new(
            ErrorCode::InvalidInput,
            "request_id must be 1 to 200 characters",
        ));
    }
    Ok(Some(RequestKey {
        request_id: id.to_string(),
        operation: operation.to_string(),
        digest: sha256_hex(canonical_json(input).as_bytes()),
    }))
}

/// The messages of one append, checked: at least one; every message has an event id,
/// a speaker and text; an id repeated within the append must repeat the same message
/// (it is kept once).
fn dedupe_appended(messages: Vec<text::Message>) -> Result<Vec<text::Message>> {
    let bad = |m: String| Error::new(ErrorCode::InvalidConversation, m);
    if messages.is_empty() {
        return Err(bad("an append needs at least one message".into()));
    }
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut out: Vec<text::Message> = Vec::with_capacity(messages.len());
    for (i, m) in messages.into_iter().enumerate() {
        let Some(id) = m.event_id.clone().filter(|id| !id.trim().is_empty()) else {
            return Err(bad(format!(
                "message {i} has no event_id: appended messages need one"
            )));
        };
        if m.speaker.trim().is_empty() || m.text.trim().is_empty() {
            return Err(bad(format!(
                "message {i} (`{id}`) needs a speaker and text"
            )));
        }
        match seen.get(&id) {
            Some(&j) if out[j].speaker == m.speaker && out[j].text == m.text => {}
            Some(_) => {
                return Err(Error::new(
                    ErrorCode::Conflict,
                    format!("event id `{id}` appears twice with different messages"),
                ));
            }
            None => {
                seen.insert(id, out.len());
                out.push(m);
            }
        }
    }
    Ok(out)
}

/// JSON with every object's keys sorted and no insignificant whitespace, whatever
/// the map order of the `serde_json` build: the text an export pack's digest covers.
pub fn canonical_json(value: &serde_json::Value) -> String {
    use serde_json::Value;
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            let fields: Vec<String> = keys
                .into_iter()
                .map(|k| format!("{}:{}", Value::String(k.clone()), canonical_json(&map[k])))
                .collect();
            format!("{{{}}}", fields.join(","))
        }
        Value::Array(items) => {
            let items: Vec<String> = items.iter().map(canonical_json).collect();
            format!("[{}]", items.join(","))
        }
        other => other.to_string(),
    }
}
