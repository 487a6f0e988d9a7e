//! Listings and reports over a namespace: freshness, documents, claims and the
//! ledger's status.

use super::*;

impl Engine {
    pub(super) async fn freshness(&self, ns: NamespaceId, generation: &str) -> Result<Freshness> {
        // The stamp is read before the aggregates: a write that lands in between
        // bumps it again, so a stale value is never kept under a current stamp.
        let stamp = self.store.change_stamp(ns).await?;
        let key = (ns, generation.to_string());
        if let Some(f) = cached(&self.aggregates.freshness, &key, stamp) {
            return Ok(f);
        }
        let fresh = self.compute_freshness(ns, generation).await?;
        remember_cached(&self.aggregates.freshness, key, stamp, fresh.clone());
        Ok(fresh)
    }

    /// Coverage of a target's current records by vectors of `generation`, through
    /// the stamped cache. `target` names the records (`claims`, `facts`).
    pub(super) async fn coverage<F>(
        &self,
        ns: NamespaceId,
        target: &str,
        generation: &str,
        compute: F,
    ) -> Result<VectorCoverage>
    where
        F: std::future::Future<Output = Result<VectorCoverage>>,
    {
        let stamp = self.store.change_stamp(ns).await?;
        let key = (ns, format!("{target}|{generation}"));
        if let Some(c) = cached(&self.aggregates.coverage, &key, stamp) {
            return Ok(c);
        }
        let c = compute.await?;
        remember_cached(&self.aggregates.coverage, key, stamp, c);
        Ok(c)
    }

    async fn compute_freshness(&self, ns: NamespaceId, generation: &str) -> Result<Freshness> {
        let counts = self.store.unfinished_work_counts(ns).await?;
        let mut pending_work = BTreeMap::new();
        let mut parked = 0;
        let mut dead = 0;
        for c in &counts {
            match c.status {
                WorkStatus::Pending | WorkStatus::Running | WorkStatus::Failed => {
                    let open = c.count - c.parked_no_route;
                    if open > 0 {
                        *pending_work
                            .entry(c.stage.as_str().to_string())
                            .or_insert(0) += open;
                    }
                    parked += c.parked_no_route;
                }
                WorkStatus::DeadLetter => dead += c.count,
                WorkStatus::Done => {}
            }
        }
        let coverage = self.store.vector_coverage(ns, generation).await?;
        Ok(Freshness {
            pending_work,
            parked_no_route: parked,
            dead_letters: dead,
            semantic: SemanticReadiness {
                generation: generation.to_string(),
                ready: coverage.missing == 0,
                chunks: coverage.chunks,
                missing_vectors: coverage.missing,
                degraded: self.semantic_degraded(),
            },
        })
    }

    /// Lineages in a namespace (empty when the namespace does not exist).
    pub async fn documents(&self, namespace: &str) -> Result<Vec<DocumentSummary>> {
        validate_namespace(namespace)?;
        let Some(ns) = self.store.namespace(namespace).await? else {
            return Ok(vec![]);
        };
        let rows = self.store.documents(ns.id).await?;
        let mut out = Vec::with_capacity(rows.len());
        for row in rows {
            out.push(self.summarize(ns.id, row).await?);
        }
        Ok(out)
    }

    async fn summarize(&self, ns: NamespaceId, row: DocumentRow) -> Result<DocumentSummary> {
        let status = if row.deleted_at.is_some() {
            "deleted"
        } else if row.latest_work.parked > 0 {
            "parked"
        } else if row.latest_work.dead_letter > 0 {
            "stalled"
        } else if row.latest_work.open > 0 || row.current_version_id != Some(row.latest_version_id)
        {
            "processing"
        } else {
            let barrier = self
                .store
                .barrier(ns, row.latest_version_id, Stage::Embed)
                .await?;
            if barrier.is_complete() {
                "ready"
            } else {
                "processing"
            }
        };
        Ok(DocumentSummary {
            doc_id: row.document_id,
            source_kind: row.source_kind.clone(),
            source_ref: row.source_ref.clone(),
            file_name: row.metadata.file_name.as_ref().map(|f| f.value.clone()),
            title: row.metadata.display_title(&row.source_ref),
            current_version_id: row.current_version_id,
            latest_version_id: row.latest_version_id,
            status: status.to_string(),
            mode: row.mode,
            version_count: row.version_count,
            deleted_at: row.deleted_at,
        })
    }

    /// One lineage with its versions and the current version's sections.
    pub async fn document(&self, namespace: &str, id: DocumentId) -> Result<DocumentDetail> {
        validate_namespace(namespace)?;
        let not_found = || {
            Error::new(
                ErrorCode::DocumentNotFound,
                format!("document {id} not found in namespace `{namespace}`"),
            )
        };
        let ns = self
            .store
            .namespace(namespace)
            .await?
            .ok_or_else(not_found)?;
        let row = self
            .store
            .document(ns.id, id)
            .await?
            .ok_or_else(not_found)?;
        let versions = self.store.versions(ns.id, id).await?;
        let current = row.current_version_id;
        let current_ordinal = versions
            .iter()
            .find(|v| Some(v.version_id) == current)
            .map(|v| v.ordinal);
        let mode = row.mode;
        let summaries = versions
            .into_iter()
            .map(|v| {
                let testimony = match (mode, current_ordinal) {
                    (_, None) => "pending",
                    (_, Some(c)) if v.ordinal == c => "current",
                    (VersioningMode::Snapshot, Some(c)) if v.ordinal < c => "current",
                    (VersioningMode::Living, Some(c)) if v.ordinal < c => "superseded",
                    _ => "pending",
                };
                VersionSummary {
                    version_id: v.version_id,
                    ordinal: v.ordinal,
                    content_sha256: v.content_sha256,
                    size: v.size,
                    mime: v.mime,
                    format: v.format,
                    source_modified_at: v.source_modified_at,
                    origin: v.origin,
                    created_at: v.created_at,
                    is_current: v.is_current,
                    testimony: testimony.to_string(),
                    metadata: v.metadata,
                    ingested_by: v.ingested_by,
                    compacted_at: v.compacted_at,
                }
            })
            .collect();
        let sections = match current {
            Some(v) => self.store.sections(ns.id, v).await?,
            None => vec![],
        };
        let chunk_count = sections.iter().map(|s| s.chunk_count).sum();
        Ok(DocumentDetail {
            summary: self.summarize(ns.id, row).await?,
            versions: summaries,
            names: self.store.document_names(ns.id, id).await?,
            sections,
            chunk_count,
        })
    }

    /// Claims of a namespace (optionally of one lineage), newest first: current
    /// testimony only unless `include_retired`.
    pub async fn claims(
        &self,
        namespace: &str,
        document: Option<DocumentId>,
        include_retired: bool,
        limit: u32,
    ) -> Result<Vec<ClaimRecord>> {
        validate_namespace(namespace)?;
        let Some(ns) = self.store.namespace(namespace).await? else {
            return Ok(vec![]);
        };
        if let Some(doc) = document
            && self.store.document(ns.id, doc).await?.is_none()
        {
            return Err(Error::new(
                ErrorCode::DocumentNotFound,
                format!("document {doc} not found in namespace `{namespace}`"),
            ));
        }
        let filter = ClaimFilter {
            namespace_id: ns.id,
            include_retired,
            document_id: document,
            entities: vec![],
            documents: None,
        };
        self.store
            .list_claims(&filter, limit.clamp(1, 10_000))
            .await
    }

    /// The extraction ledger of one lineage, in write order (D33).
    pub async fn claim_decisions(
        &self,
        namespace: &str,
        document: DocumentId,
    ) -> Result<Vec<DecisionRecord>> {
        validate_namespace(namespace)?;
        let not_found = || {
            Error::new(
                ErrorCode::DocumentNotFound,
                format!("document {document} not found in namespace `{namespace}`"),
            )
        };
        let ns = self
            .store
            .namespace(namespace)
            .await?
            .ok_or_else(not_found)?;
        self.store
            .document(ns.id, document)
            .await?
            .ok_or_else(not_found)?;
        self.store.decisions(ns.id, document).await
    }

    /// Ledger counts by stage and status, dead letters with their errors.
    pub async fn status(&self, namespace: &str) -> Result<StatusReport> {
        validate_namespace(namespace)?;
        let generation = self.component_version(Stage::Embed);
        let mut ledger: BTreeMap<String, BTreeMap<String, u64>> = Stage::ALL
            .iter()
            .map(|s| {
                (
                    s.as_str().to_string(),
                    WorkStatus::ALL
                        .iter()
                        .map(|st| (st.as_str().to_string(), 0))
                        .collect(),
                )
            })
            .collect();
        // A namespace closed by an incomplete forget still reports its ledger and
        // says what keeps it closed: status is how an operator finds out.
        let (ns, forget_in_progress) = match self.store.namespace(namespace).await {
            Ok(ns) => (ns, None),
            Err(e) if e.code() == ErrorCode::ForgetInProgress => {
                let pending = self
                    .store
                    .pending_forgets()
                    .await?
                    .into_iter()
                    .find(|p| p.namespace == namespace);
                let ns = self
                    .store
                    .namespaces()
                    .await?
                    .into_iter()
                    .find(|n| n.slug == namespace);
                (ns, pending)
            }
            Err(e) => return Err(e),
        };
        let Some(ns) = ns else {
            return Ok(StatusReport {
                store: self.store.kind().to_string(),
                namespace: namespace.to_string(),
                ledger,
                parked_no_route: 0,
                dead_letters: vec![],
                embedder: generation.clone(),
                embedder_fallback: self.embedder_fallback(),
                semantic: empty_freshness(generation, self.semantic_degraded()).semantic,
                documents: 0,
                forget_in_progress: None,
            });
        };
        let mut parked = 0;
        for c in self.store.work_counts(Some(ns.id)).await? {
            *ledger
                .entry(c.stage.as_str().to_string())
                .or_default()
                .entry(c.status.as_str().to_string())
                .or_insert(0) += c.count;
            parked += c.parked_no_route;
        }
        let dead_letters = self
            .store
            .work_items(Some(ns.id), WorkStatus::DeadLetter, 1000)
            .await?
            .into_iter()
            .map(|w| DeadLetter {
                work_id: w.id,
                stage: w.stage,
                target_kind: w.target_kind,
                target_id: w.target_id,
                version_id: w.version_id,
                attempts: w.attempts,
                max_attempts: w.max_attempts,
                last_error: w.last_error,
            })
            .collect();
        let freshness = self.freshness(ns.id, &generation).await?;
        Ok(StatusReport {
            store: self.store.kind().to_string(),
            namespace: namespace.to_string(),
            ledger,
            parked_no_route: parked,
            dead_letters,
            embedder: generation,
            embedder_fallback: self.embedder_fallback(),
            semantic: freshness.semantic,
            documents: self.store.documents(ns.id).await?.len() as u64,
            forget_in_progress,
        })
    }
}
