//! The pipeline driver: claiming due work, running each stage, settling the
//! ledger, and replaying dead letters.

use super::*;

impl Engine {
    /// Claim and run due work until none is due. Returns what happened and when
    /// waiting work (backoffs, leases held elsewhere) becomes due next.
    pub async fn drain(&self) -> Result<DrainReport> {
        let mut report = DrainReport::default();
        loop {
            let (claimed, batch) = self.run_batch(&self.worker_id).await?;
            report.add(&batch);
            if claimed == 0 {
                break;
            }
        }
        report.next_wakeup = self.store.next_wakeup().await?;
        Ok(report)
    }

    /// When waiting work (backoffs, leases held elsewhere) falls due next, if any.
    pub async fn next_wakeup(&self) -> Result<Option<Timestamp>> {
        self.store.next_wakeup().await
    }

    /// Claim one batch of due work as `owner` and run it. Returns the number claimed.
    pub async fn run_batch(&self, owner: &str) -> Result<(usize, DrainReport)> {
        // Refreshes owed from before this process started come first, so what runs
        // next finds the currency an uninterrupted run would have left.
        if !self.resumed.swap(true, std::sync::atomic::Ordering::AcqRel) {
            self.refresh_due_currency().await?;
        }
        let now = self.clock.now();
        let lease_until = now
            + chrono::Duration::from_std(self.config.lease).unwrap_or(chrono::Duration::minutes(5));
        let items = self
            .store
            .claim(&ClaimRequest {
                owner: owner.to_string(),
                stages: Stage::ALL.to_vec(),
                limit: self.config.claim_limit,
                stage_limits: self.stage_limits(),
                lease_until,
                now,
            })
            .await?;
        let mut report = DrainReport::default();
        let Some(first) = items.first() else {
            // Idle: refreshes another worker did not live to apply are done here,
            // and the names that turned out to be one entity are merged.
            self.refresh_due_currency().await?;
            // Only after this process ran work (or on its first idle look): an idle
            // poll of a quiet store reads nothing.
            if !self
                .merge_pass_idle
                .swap(true, std::sync::atomic::Ordering::AcqRel)
            {
                Box::pin(self.apply_merge_proposals()).await?;
            }
            return Ok((0, report));
        };
        self.merge_pass_idle
            .store(false, std::sync::atomic::Ordering::Release);
        let stage = first.stage;
        let claimed = items.len();
        let started = std::time::Instant::now();
        if self.runs_grouped(stage) {
            let mut ran = Ok(());
            let grouped = self
                .store
                .grouped(Box::pin(async {
                    ran = self.run_items(stage, items, &mut report).await;
                }))
                .await;
            if let Err(e) = grouped {
                // The group's writes were rolled back: what this process remembers
                // of them goes too.
                self.bootstrapped
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .clear();
                return Err(e);
            }
            ran?;
        } else {
            self.run_items(stage, items, &mut report).await?;
        }
        let micros = started.elapsed().as_micros() as u64;
        tracing::debug!(
            target: "rememberstack::work",
            stage = stage.as_str(),
            items = claimed,
            micros,
            "batch ran"
        );
        report.stages.insert(
            stage.as_str().to_string(),
            StageStats {
                batches: 1,
                items: claimed as u64,
                micros,
            },
        );
        Ok((claimed, report))
    }

    /// The claim sizes of stages whose batches run as one write group on a store
    /// this process alone writes ([`EngineConfig::grouped_claim_limit`]).
    fn stage_limits(&self) -> Vec<(Stage, u32)> {
        if !self.tuning.one_writer_process {
            return vec![];
        }
        Stage::ALL
            .iter()
            .filter(|s| self.runs_grouped(**s))
            .map(|s| (*s, self.config.grouped_claim_limit))
            .collect()
    }

    /// Whether a batch of `stage` runs as one write group
    /// ([`MemoryStore::grouped`]): it calls no remote provider, that is no chat
    /// model takes part, and where the stage embeds, the embedder runs in this
    /// process ([`Embedder::is_in_process`]).
    pub fn runs_grouped(&self, stage: Stage) -> bool {
        let embeds_here = self.embedder.is_in_process();
        let facts = &self.fact_models;
        match stage {
            Stage::Prepare | Stage::Chunk => true,
            Stage::Extract => self.extractor.is_none(),
            Stage::Normalize => facts.normalizer.is_none() && facts.resolver.is_none(),
            Stage::Adjudicate => facts.adjudicator.is_none() && embeds_here,
            Stage::Embed | Stage::EmbedClaims | Stage::EmbedFacts => embeds_here,
        }
    }

    /// Run one claimed batch of `stage` and settle each item.
    async fn run_items(
        &self,
        stage: Stage,
        items: Vec<WorkItem>,
        report: &mut DrainReport,
    ) -> Result<()> {
        match stage {
            Stage::Prepare | Stage::Chunk => {
                for item in items {
                    let result = if stage == Stage::Prepare {
                        self.run_prepare(&item).await
                    } else {
                        self.run_chunk(&item).await
                    };
                    self.settle(&[item], result, report).await?;
                }
            }
            Stage::Extract => self.run_extract_batch(items, report).await?,
            Stage::Normalize | Stage::Adjudicate if self.decides_together(stage) => {
                let mut by_ns: BTreeMap<NamespaceId, Vec<WorkItem>> = BTreeMap::new();
                for item in items {
                    by_ns.entry(item.namespace_id).or_default().push(item);
                }
                for (ns, group) in by_ns {
                    let decided = if stage == Stage::Normalize {
                        self.normalize_together(ns, &group).await
                    } else {
                        self.adjudicate_together(ns, &group).await
                    };
                    match decided {
                        Ok(outcomes) => {
                            for (item, result) in outcomes {
                                self.settle(&[item], result, report).await?;
                            }
                        }
                        Err(e) => self.settle(&group, Err(e), report).await?,
                    }
                }
            }
            Stage::Normalize | Stage::Adjudicate => {
                for item in items {
                    let result = if stage == Stage::Normalize {
                        self.run_normalize(&item).await
                    } else {
                        self.run_adjudicate(&item).await
                    };
                    self.settle(&[item], result, report).await?;
                }
            }
            Stage::Embed | Stage::EmbedClaims | Stage::EmbedFacts => {
                let mut by_ns: BTreeMap<NamespaceId, Vec<WorkItem>> = BTreeMap::new();
                for item in items {
                    by_ns.entry(item.namespace_id).or_default().push(item);
                }
                for (ns, group) in by_ns {
                    let result = self.run_embed(ns, &group).await;
                    self.settle(&group, result, report).await?;
                }
            }
        }
        Ok(())
    }

    pub(super) async fn settle(
        &self,
        items: &[WorkItem],
        result: std::result::Result<Outcome, StageError>,
        report: &mut DrainReport,
    ) -> Result<()> {
        let now = self.clock.now();
        match result {
            Ok(Outcome::Completed) => report.completed += items.len() as u64,
            Ok(Outcome::Parked) => report.parked += items.len() as u64,
            Ok(Outcome::Deferred) => {}
            Err(StageError::LeaseLost) => {
                tracing::warn!(
                    count = items.len(),
                    "lease lost: another worker finishes this work"
                );
            }
            Err(StageError::Failed { message, retryable }) => {
                for item in items {
                    let outcome = self.config.backoff().outcome(item, retryable, now);
                    tracing::warn!(stage = item.stage.as_str(), work_id = %item.id, attempts = item.attempts, error = %message, "stage failed");
                    match &outcome {
                        FailureOutcome::DeadLetter => report.dead_lettered += 1,
                        FailureOutcome::Retry { .. } => report.retried += 1,
                    }
                    match self
                        .store
                        .fail(&Lease::of(item), &message, outcome, now)
                        .await
                    {
                        Ok(()) => {}
                        Err(e) if e.code() == ErrorCode::LeaseLost => {}
                        Err(e) => return Err(e),
                    }
                }
            }
        }
        Ok(())
    }

    async fn run_prepare(&self, item: &WorkItem) -> std::result::Result<Outcome, StageError> {
        let ns = item.namespace_id;
        let version = self
            .store
            .version(ns, item.version_id)
            .await?
            .ok_or_else(|| Error::not_found(format!("version {} not found", item.version_id)))?;
        let Some(format) = version.format else {
            let now = self.clock.now();
            self.store
                .park(&Lease::of(item), DeferReason::NoRoute, now, now)
                .await?;
            return Ok(Outcome::Parked);
        };
        let bytes = self.store.content(ns, &version.content_sha256).await?;
        let title = version.metadata.display_title(&version.source_ref);
        let source_time = version.source_modified_at;
        let (representation, blocks, sections, title) = blocking(move || {
            let converted = text::convert(format, &bytes, Some(source_time))?;
            let representation = converted.representation;
            let blocks = text::blockize(&representation);
            let sections = text::build_sections(&representation.markdown, &blocks, &title);
            Ok((representation, blocks, sections, title))
        })
        .await?;
        let now = self.clock.now();
        let follow_up = vec![NewWork::now(
            ns,
            Stage::Chunk,
            version.version_id.uuid(),
            version.version_id,
            self.component_version(Stage::Chunk),
            now,
        )];
        self.store
            .commit_prepared(
                &Lease::of(item),
                PreparedVersion {
                    version_id: version.version_id,
                    representation,
                    blocks,
                    sections,
                    title,
                    component_version: item.component_version.clone(),
                },
                follow_up,
                now,
            )
            .await?;
        Ok(Outcome::Completed)
    }

    async fn run_chunk(&self, item: &WorkItem) -> std::result::Result<Outcome, StageError> {
        let ns = item.namespace_id;
        let prepared = self
            .store
            .prepared(ns, item.version_id)
            .await?
            .ok_or_else(|| {
                Error::internal(format!(
                    "version {} has no prepared structure",
                    item.version_id
                ))
            })?;
        let plans = text::chunk_document(
            &prepared.representation.markdown,
            &prepared.blocks,
            &prepared.sections,
            &self.config.chunk,
        );
        let is_conversation = !prepared.representation.turns.is_empty();
        let mut chunks = Vec::with_capacity(plans.len());
        let mut paths = Vec::with_capacity(plans.len());
        for plan in plans {
            let section = prepared
                .sections
                .iter()
                .find(|s| s.ordinal == plan.section_ordinal);
            let path: &[String] = section.map(|s| s.path.as_slice()).unwrap_or(&[]);
            let embed_text = embedding_text(&prepared.title, path, is_conversation, &plan.text);
            let event_ids = prepared
                .blocks
                .iter()
                .filter(|b| b.ordinal >= plan.block_start && b.ordinal < plan.block_end)
                .filter_map(|b| b.turn.as_ref().and_then(|t| t.event_id.clone()))
                .collect();
            paths.push(path.to_vec());
            chunks.push(NewChunk {
                id: ChunkId::new(),
                embedding_key: embedding_key(&embed_text),
                plan,
                event_ids,
            });
        }
        // A conversation version is its predecessor plus appended turns: the chunks
        // before the last anchor are byte-identical, so their extractions are carried
        // over in this commit and only the new chunks get `e2.extract` units — the
        // processing of an append costs what the append adds.
        let version = self
            .store
            .version(ns, item.version_id)
            .await?
            .ok_or_else(|| Error::not_found(format!("version {} not found", item.version_id)))?;
        let carried = if version.source_kind == "conversation" {
            let ctx = extract::VersionContext::new(
                version.clone(),
                prepared,
                chunks
                    .iter()
                    .zip(paths)
                    .map(|(c, path)| {
                        let p = &c.plan;
                        let span = crate::claims::bundle::ChunkSpan {
                            ordinal: p.ordinal,
                            section_ordinal: p.section_ordinal,
                            block_start: p.block_start,
                            block_end: p.block_end,
                            start: p.start,
                            end: p.end,
                        };
                        (c.id, path, span)
                    })
                    .collect(),
            );
            self.carried_extractions(&ctx).await?
        } else {
            vec![None; chunks.len()]
        };
        // Reuse: a chunk whose embedding key already has a vector of the current
        // generation (an unchanged chunk of an earlier version) is not embedded again.
        let generation = self.component_version(Stage::Embed);
        let keys: Vec<String> = chunks.iter().map(|c| c.embedding_key.clone()).collect();
        let existing: HashSet<String> = self
            .store
            .existing_vectors(ns, &generation, &keys)
            .await?
            .into_iter()
            .collect();
        let now = self.clock.now();
        let extractor = self.component_version(Stage::Extract);
        let follow_up = chunks
            .iter()
            .filter(|c| !existing.contains(&c.embedding_key))
            .map(|c| {
                NewWork::now(
                    ns,
                    Stage::Embed,
                    c.id.uuid(),
                    item.version_id,
                    generation.clone(),
                    now,
                )
            })
            .chain(
                chunks
                    .iter()
                    .zip(&carried)
                    .filter(|(_, x)| x.is_none())
                    .map(|(c, _)| {
                        NewWork::now(
                            ns,
                            Stage::Extract,
                            c.id.uuid(),
                            item.version_id,
                            extractor.clone(),
                            now,
                        )
                    }),
            )
            .collect::<Vec<_>>();
        let carried: Vec<ExtractionCommit> = carried.into_iter().flatten().collect();
        let extracts_left = follow_up.iter().any(|w| w.stage == Stage::Extract);
        let carried_any = !carried.is_empty();
        self.store
            .commit_chunks_carrying(
                &Lease::of(item),
                item.version_id,
                chunks,
                carried,
                follow_up,
                now,
            )
            .await?;
        // Nothing left to extract: the version's currency is refreshed now (the
        // commit recorded that it is owed, so a failure here is retried).
        if carried_any
            && !extracts_left
            && let Err(e) = self.after_extraction(ns, &version).await
        {
            tracing::warn!(version_id = %version.version_id, error = %e, "testimony currency refresh postponed");
        }
        Ok(Outcome::Completed)
    }

    async fn run_embed(
        &self,
        ns: NamespaceId,
        items: &[WorkItem],
    ) -> std::result::Result<Outcome, StageError> {
        let identity = self.embedder.identity().clone();
        let generation = identity.generation();
        // Work enqueued for another embedder generation is obsolete: the open that
        // changed the generation enqueued fresh work for everything still missing.
        let (stale, items): (Vec<&WorkItem>, Vec<&WorkItem>) = items
            .iter()
            .partition(|i| i.component_version != generation);
        for item in stale {
            tracing::info!(work_id = %item.id, "embed work of a former generation: completed as obsolete");
            self.store
                .complete(&Lease::of(item), vec![], self.clock.now())
                .await?;
        }
        if items.is_empty() {
            return Ok(Outcome::Completed);
        }
        let mut texts: Vec<(String, String)> = Vec::new();
        let mut seen = HashSet::new();
        let chunk_ids: Vec<ChunkId> = items
            .iter()
            .filter(|i| i.target_kind == TargetKind::Chunk)
            .map(|i| ChunkId(i.target_id))
            .collect();
        for c in self.store.chunks(ns, &chunk_ids).await? {
            if seen.insert(c.embedding_key.clone()) {
                let is_conversation = c.format == Some(SourceFormat::Conversation);
                let text =
                    embedding_text(&c.document_title, &c.section_path, is_conversation, &c.text);
                texts.push((c.embedding_key.clone(), text));
            }
        }
        let claim_ids: Vec<ClaimId> = items
            .iter()
            .filter(|i| i.target_kind == TargetKind::Claim)
            .map(|i| ClaimId(i.target_id))
            .collect();
        if !claim_ids.is_empty() {
            for c in self.store.claims(ns, &claim_ids).await? {
                if seen.insert(c.embedding_key.clone()) {
                    texts.push((c.embedding_key.clone(), c.text.clone()));
                }
            }
        }
        let fact_ids: Vec<FactId> = items
            .iter()
            .filter(|i| i.target_kind == TargetKind::Fact)
            .map(|i| FactId(i.target_id))
            .collect();
        if !fact_ids.is_empty() {
            for f in self.store.facts(ns, &fact_ids).await? {
                if seen.insert(f.embedding_key.clone()) {
                    texts.push((f.embedding_key.clone(), f.statement.clone()));
                }
            }
        }
        let keys: Vec<String> = texts.iter().map(|(k, _)| k.clone()).collect();
        let existing: HashSet<String> = self
            .store
            .existing_vectors(ns, &generation, &keys)
            .await?
            .into_iter()
            .collect();
        texts.retain(|(k, _)| !existing.contains(k));
        let mut vectors = Vec::with_capacity(texts.len());
        for batch in texts.chunks(self.embedder.max_batch().max(1)) {
            let inputs: Vec<String> = batch.iter().map(|(_, t)| t.clone()).collect();
            let out = self
                .embedder
                .embed(&inputs, EmbedPurpose::Document)
                .await
                .map_err(Error::from)?;
            if out.len() != inputs.len() {
                return Err(Error::from(ProviderError::Malformed {
                    message: format!("asked for {} vectors, got {}", inputs.len(), out.len()),
                })
                .into());
            }
            for ((key, _), v) in batch.iter().zip(out) {
                if v.len() != identity.dimension {
                    return Err(Error::from(ProviderError::DimensionMismatch {
                        expected: identity.dimension,
                        got: v.len(),
                    })
                    .into());
                }
                vectors.push((key.clone(), v));
            }
        }
        let leases: Vec<Lease> = items.iter().map(|i| Lease::of(i)).collect();
        self.store
            .commit_vectors(&leases, ns, &identity, vectors, self.clock.now())
            .await?;
        Ok(Outcome::Completed)
    }

    /// Replay dead letters (and make failed items waiting for their backoff due now,
    /// unless `dead_letters_only`). Returns how many items were released.
    pub async fn retry(
        &self,
        namespace: Option<&str>,
        stage: Option<Stage>,
        dead_letters_only: bool,
    ) -> Result<u64> {
        let ns = match namespace {
            Some(slug) => match self.store.namespace(slug).await? {
                Some(n) => Some(n.id),
                None => return Ok(0),
            },
            None => None,
        };
        let now = self.clock.now();
        let mut n = self
            .store
            .replay_dead_letters(ns, stage, DEFAULT_MAX_ATTEMPTS, now)
            .await?;
        if !dead_letters_only {
            n += self.store.expedite_failed(ns, stage, now).await?;
        }
        Ok(n)
    }
}
