//! Lifecycle writes: deleting a document lineage (D135), retracting a claim and
//! invalidating a fact.

use super::*;

impl Engine {
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
