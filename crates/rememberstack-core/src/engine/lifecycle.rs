//! Lifecycle writes: deleting a document lineage (D135), retracting a claim and
//! invalidating a fact.

use super::*;

/// What appending messages to a conversation did.
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

/// How often an append re-reads the conversation when another append moved it.
const APPEND_ATTEMPTS: usize = 5;

impl Engine {
    /// Append messages to a conversation lineage (`source_kind = conversation`,
    /// `source_ref = conversation_ref`), creating it on first use. Every message needs
    /// an `event_id`: an id already present with the same speaker and text is skipped
    /// (so a replayed append is `unchanged`), with anything else it is refused
    /// (`conflict`) and nothing changes. Each append that adds messages is a new
    /// version of the lineage holding every message; unchanged chunks reuse their
    /// claims, so an append costs what it adds. A message without a timestamp is
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
            let (base, latest, deleted) = match self.store.namespace(namespace).await? {
                None => (None, None, false),
                Some(ns) => match self
                    .store
                    .document_by_ref(ns.id, "conversation", conversation_ref)
                    .await?
                {
                    None => (None, None, false),
                    Some(row) if row.deleted_at.is_some() => {
                        (None, Some(row.latest_version_id), true)
                    }
                    Some(row) => {
                        let v = self
                            .store
                            .version(ns.id, row.latest_version_id)
                            .await?
                            .ok_or_else(|| Error::store("a lineage's latest version is missing"))?;
                        if v.format != Some(SourceFormat::Conversation) {
                            return Err(Error::new(
                                ErrorCode::InvalidConversation,
                                format!(
                                    "`{conversation_ref}` is not a conversation lineage: its latest version is not a conversation"
                                ),
                            ));
                        }
                        let bytes = self.store.content(ns.id, &v.content_sha256).await?;
                        (
                            Some(text::parse_conversation(&bytes)?),
                            Some(row.latest_version_id),
                            false,
                        )
                    }
                },
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
                && let (Some(latest), false) = (latest, deleted)
            {
                let ns = self.namespace_or_not_found(namespace).await?;
                let doc = self
                    .store
                    .document_by_ref(ns, "conversation", conversation_ref)
                    .await?
                    .ok_or_else(|| Error::store("the conversation vanished"))?;
                return Ok(AppendReceipt {
                    namespace: namespace.to_string(),
                    document_id: doc.document_id,
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
            req.expected_latest = latest;
            match self.ingest(req).await {
                Ok(r) => {
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
            .invalidate_fact(ns, fact, reason, request.as_ref(), self.clock.now())
            .await?;
        self.refresh_touched(ns, &r.touched_entities).await;
        Ok(r)
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
            let lock = self.locks.get(format!("entity:{ns}:{}", root.entity_id));
            let _guard = lock.lock().await;
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
        digest: sha256_hex(input.to_string().as_bytes()),
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
