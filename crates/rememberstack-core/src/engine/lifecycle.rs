//! Lifecycle writes: deleting a document lineage (D135).

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

    /// Refresh the profiles of entities whose facts a deletion closed. Best effort:
    /// the deletion has committed; a failed refresh is logged and the profile is
    /// rebuilt by the entity's next adjudication.
    async fn after_deletion(&self, ns: NamespaceId, deletion: &DocumentDeletion) {
        let roots = match self.roots_of(ns, &deletion.touched_entities).await {
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
