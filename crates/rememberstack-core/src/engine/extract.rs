//! E2: claim extraction per chunk (D84), reuse of unchanged inputs (D56, D119),
//! the extraction ledger (D33) and testimony currency (D54).

use super::*;
use crate::claims::bundle::{ChunkSpan, build_bundle};
use crate::claims::{
    ContextBundle, DocumentHeader, Extraction, GateFailure, GroundedClaim, SelectionLabel,
    claimify, grounding, offline, temporal,
};
use std::collections::BTreeSet;

/// Neighbouring chunks (each side, same section) an extraction bundle carries.
pub const EXTRACT_NEIGHBOURS: usize = 1;

/// A grounded claim, or the gate it failed.
type Grounding = std::result::Result<GroundedClaim, GateFailure>;

/// One chunk extracted afresh, waiting for its version's claim keys and vectors.
struct Fresh {
    /// Its place among the group's items.
    slot: usize,
    index: usize,
    bundle: ContextBundle,
    hash: String,
    extraction: Extraction,
    grounded: Vec<Grounding>,
}

/// Everything the chunks of one version share.
pub(super) struct VersionContext {
    version: VersionRecord,
    prepared: PreparedVersion,
    chunk_ids: Vec<ChunkId>,
    section_paths: Vec<Vec<String>>,
    spans: Vec<ChunkSpan>,
    char_index: CharIndex,
}

impl VersionContext {
    /// A version's context from its chunks (in document order): ids, section title
    /// paths and coordinates.
    pub(super) fn new(
        version: VersionRecord,
        prepared: PreparedVersion,
        chunks: Vec<(ChunkId, Vec<String>, ChunkSpan)>,
    ) -> Self {
        let char_index = CharIndex::new(&prepared.representation.markdown, &prepared.blocks);
        let mut chunk_ids = Vec::with_capacity(chunks.len());
        let mut section_paths = Vec::with_capacity(chunks.len());
        let mut spans = Vec::with_capacity(chunks.len());
        for (id, path, span) in chunks {
            chunk_ids.push(id);
            section_paths.push(path);
            spans.push(span);
        }
        VersionContext {
            version,
            prepared,
            chunk_ids,
            section_paths,
            spans,
            char_index,
        }
    }

    /// The hashes of the blocks a chunk spans, found by ordinal (blocks are stored
    /// in ordinal order) so hashing every chunk of a version stays linear.
    fn block_hashes(&self, c: &ChunkSpan) -> impl Iterator<Item = &String> {
        let blocks = &self.prepared.blocks;
        let from = blocks.partition_point(|b| b.ordinal < c.block_start);
        blocks[from..]
            .iter()
            .take_while(move |b| b.ordinal < c.block_end)
            .map(|b| &b.hash)
    }
}

/// Byte → Unicode-scalar offset conversion for one text, with a checkpoint at every
/// block start so a conversion counts only the characters since the nearest one.
struct CharIndex {
    checkpoints: Vec<(usize, usize)>,
}

impl CharIndex {
    fn new(text: &str, blocks: &[crate::text::Block]) -> Self {
        let mut starts: Vec<usize> = blocks
            .iter()
            .map(|b| b.start)
            .filter(|s| *s <= text.len())
            .collect();
        starts.sort_unstable();
        starts.dedup();
        let mut checkpoints = vec![(0, 0)];
        let (mut byte, mut chars) = (0usize, 0usize);
        for s in starts {
            if let Some(seg) = text.get(byte..s) {
                chars += seg.chars().count();
                byte = s;
                checkpoints.push((byte, chars));
            }
        }
        CharIndex { checkpoints }
    }

    fn chars_at(&self, text: &str, byte: usize) -> Option<usize> {
        let i = self
            .checkpoints
            .partition_point(|(b, _)| *b <= byte)
            .checked_sub(1)?;
        let (b, c) = self.checkpoints[i];
        Some(c + text.get(b..byte)?.chars().count())
    }
}

impl Engine {
    /// The extractor generation E2 runs with: the offline extractor's version, or the
    /// prompt generation plus both seats' models.
    pub fn extractor_version(&self) -> String {
        match &self.extractor {
            None => offline::OFFLINE_EXTRACTOR_VERSION.to_string(),
            Some(m) => format!(
                "{};selection={};claimify={}",
                claimify::CLAIMIFY_PROMPT_VERSION,
                m.selection.model(),
                m.claimify.model()
            ),
        }
    }

    /// Run D31's two calls for one bundle.
    async fn model_extraction(
        &self,
        models: &ExtractorModels,
        bundle: &ContextBundle,
        item: &WorkItem,
    ) -> Result<Extraction> {
        let request = claimify::selection_request(bundle);
        let answer = self.call_model(&models.selection, &request, item).await?;
        let selections = claimify::parse_selection(bundle, &answer)?;
        let kept: Vec<String> = selections
            .iter()
            .filter(|s| s.label != SelectionLabel::Drop)
            .map(|s| s.passage.clone())
            .collect();
        let claims = if kept.is_empty() {
            vec![]
        } else {
            let request = claimify::claimify_request(bundle, &kept);
            let answer = self.call_model(&models.claimify, &request, item).await?;
            claimify::parse_claims(&answer)?
        };
        Ok(Extraction { selections, claims })
    }

    /// One model call, recorded in the cost ledger and the transcript whatever its outcome.
    async fn call_model(
        &self,
        model: &Arc<dyn crate::chat::ChatModel>,
        request: &crate::chat::ChatRequest,
        item: &WorkItem,
    ) -> Result<serde_json::Value> {
        let (value, _) = self
            .call_recorded(
                model,
                request,
                item,
                request.call_key.clone(),
                claimify::CLAIMIFY_PROMPT_VERSION,
            )
            .await?;
        Ok(value)
    }

    /// Run claimed `e2.extract` items, grouped by version so each version's structure
    /// is loaded once; versions in the order their first item was claimed, so what
    /// they enqueue keeps the ledger's order.
    pub(super) async fn run_extract_batch(
        &self,
        items: Vec<WorkItem>,
        report: &mut DrainReport,
    ) -> Result<()> {
        let mut groups: Vec<((NamespaceId, VersionId), Vec<WorkItem>)> = Vec::new();
        for item in items {
            let key = (item.namespace_id, item.version_id);
            match groups.iter_mut().find(|(k, _)| *k == key) {
                Some((_, group)) => group.push(item),
                None => groups.push((key, vec![item])),
            }
        }
        for ((ns, version_id), group) in groups {
            let ctx = match self.version_context(ns, version_id).await {
                Ok(ctx) => ctx,
                Err(e) => {
                    let err = StageError::from(e);
                    for item in group {
                        self.settle(&[item], Err(err.clone()), report).await?;
                    }
                    continue;
                }
            };
            // One look-up of earlier extractions for the whole group (D56 reuse).
            let mut planned = Vec::with_capacity(group.len());
            let mut hashes = Vec::new();
            let positions: HashMap<uuid::Uuid, usize> = ctx
                .chunk_ids
                .iter()
                .enumerate()
                .map(|(i, c)| (c.uuid(), i))
                .collect();
            for item in &group {
                let index = positions.get(&item.target_id).copied();
                let plan = index.map(|i| {
                    let bundle = self.bundle_for(&ctx, i);
                    let hash = self.extraction_input_hash(&ctx, i, &bundle);
                    hashes.push(hash.clone());
                    (i, bundle, hash)
                });
                planned.push(plan);
            }
            let priors: HashMap<String, PriorExtraction> = match self
                .store
                .prior_extractions(ns, ctx.version.document_id, &hashes)
                .await
            {
                Ok(p) => p.into_iter().collect(),
                Err(e) => {
                    for item in group {
                        let err = StageError::from(Error::store(e.to_string()));
                        self.settle(&[item], Err(err), report).await?;
                    }
                    continue;
                }
            };
            // Each chunk is extracted (or its earlier extraction reused) in order; the
            // fresh ones then look up their claim keys and vectors together, one
            // statement each for the whole group.
            let mut slots = Vec::with_capacity(group.len());
            let mut fresh = Vec::new();
            for (item, plan) in group.into_iter().zip(planned) {
                let Some((index, bundle, hash)) = plan else {
                    // The chunk was replaced by a re-chunk: nothing to extract for it.
                    let done = self
                        .store
                        .complete(&Lease::of(&item), vec![], self.clock.now())
                        .await;
                    let result = done.map(|_| Outcome::Completed).map_err(StageError::from);
                    self.settle(&[item], result, report).await?;
                    continue;
                };
                if let Some(prior) = priors.get(&hash) {
                    match self.reuse_extraction(&ctx, index, &bundle, hash.clone(), prior) {
                        Ok(commit) => slots.push((item, Some((commit, vec![])))),
                        Err(e) => self.settle(&[item], Err(e), report).await?,
                    }
                    continue;
                }
                match self.fresh_extraction(&ctx, &item, &bundle).await {
                    Ok((extraction, grounded)) => {
                        fresh.push(Fresh {
                            slot: slots.len(),
                            index,
                            bundle,
                            hash,
                            extraction,
                            grounded,
                        });
                        slots.push((item, None));
                    }
                    Err(e) => self.settle(&[item], Err(e), report).await?,
                }
            }
            match self.ledger_fresh(&ctx, ns, &fresh).await {
                Ok(done) => {
                    for (f, commit) in fresh.iter().zip(done) {
                        slots[f.slot].1 = Some(commit);
                    }
                }
                Err(e) => {
                    let err = StageError::from(e);
                    let mut kept = Vec::with_capacity(slots.len());
                    for (item, commit) in slots {
                        match commit {
                            Some(c) => kept.push((item, Some(c))),
                            None => self.settle(&[item], Err(err.clone()), report).await?,
                        }
                    }
                    slots = kept;
                }
            }
            let mut commits = Vec::with_capacity(slots.len());
            let mut committed_items = Vec::with_capacity(slots.len());
            for (item, commit) in slots {
                if let Some((commit, follow_up)) = commit {
                    commits.push((Lease::of(&item), commit, follow_up));
                    committed_items.push(item);
                }
            }
            if commits.is_empty() {
                continue;
            }
            let outcomes = self
                .store
                .commit_extractions(ns, commits, self.clock.now())
                .await;
            let mut completed_any = false;
            match outcomes {
                Ok(flags) => {
                    for (item, ok) in committed_items.into_iter().zip(flags) {
                        let result = if ok {
                            completed_any = true;
                            Ok(Outcome::Completed)
                        } else {
                            Err(StageError::LeaseLost)
                        };
                        self.settle(&[item], result, report).await?;
                    }
                }
                Err(e) => {
                    let message = e.to_string();
                    for item in committed_items {
                        let err = StageError::Failed {
                            message: message.clone(),
                            retryable: true,
                        };
                        self.settle(&[item], Err(err), report).await?;
                    }
                }
            }
            if completed_any {
                self.after_extraction(ns, &ctx.version).await?;
            }
        }
        Ok(())
    }

    async fn version_context(
        &self,
        ns: NamespaceId,
        version_id: VersionId,
    ) -> Result<VersionContext> {
        let version = self
            .store
            .version(ns, version_id)
            .await?
            .ok_or_else(|| Error::not_found(format!("version {version_id} not found")))?;
        let prepared = self.store.prepared(ns, version_id).await?.ok_or_else(|| {
            Error::internal(format!("version {version_id} has no prepared structure"))
        })?;
        let chunks = self.store.version_chunks(ns, version_id).await?;
        let chunks = chunks
            .into_iter()
            .map(|c| {
                let span = ChunkSpan {
                    ordinal: c.ordinal,
                    section_ordinal: c.section_ordinal,
                    block_start: c.block_start,
                    block_end: c.block_end,
                    start: c.start as usize,
                    end: c.end as usize,
                };
                (c.chunk_id, c.section_path, span)
            })
            .collect();
        Ok(VersionContext::new(version, prepared, chunks))
    }

    /// The extractions a newly chunked version can carry over from earlier versions
    /// of its lineage (D56 reuse, decided when the chunks are made rather than per
    /// `e2.extract` unit): one look-up for every chunk, `None` where the input is new
    /// (or an earlier extraction cannot be remapped) and the chunk needs extracting.
    pub(super) async fn carried_extractions(
        &self,
        ctx: &VersionContext,
    ) -> Result<Vec<Option<ExtractionCommit>>> {
        let planned: Vec<(ContextBundle, String)> = (0..ctx.spans.len())
            .map(|i| {
                let bundle = self.bundle_for(ctx, i);
                let hash = self.extraction_input_hash(ctx, i, &bundle);
                (bundle, hash)
            })
            .collect();
        let hashes: Vec<String> = planned.iter().map(|(_, h)| h.clone()).collect();
        let priors: HashMap<String, PriorExtraction> = self
            .store
            .prior_extractions(ctx.version.namespace_id, ctx.version.document_id, &hashes)
            .await?
            .into_iter()
            .collect();
        Ok(planned
            .into_iter()
            .enumerate()
            .map(|(i, (bundle, hash))| {
                let prior = priors.get(&hash)?;
                self.reuse_extraction(ctx, i, &bundle, hash, prior).ok()
            })
            .collect())
    }

    fn bundle_for(&self, ctx: &VersionContext, index: usize) -> ContextBundle {
        let header = DocumentHeader {
            title: ctx.prepared.title.clone(),
            source_kind: ctx.version.source_kind.clone(),
            source_time: Some(ctx.version.source_modified_at),
            file_name: ctx
                .version
                .metadata
                .file_name
                .as_ref()
                .map(|f| f.value.clone()),
        };
        build_bundle(
            &ctx.prepared.representation.markdown,
            &ctx.prepared.blocks,
            &ctx.spans,
            index,
            header,
            ctx.section_paths[index].clone(),
            EXTRACT_NEIGHBOURS,
        )
    }

    /// The reuse key (D56): only stable inputs — the extractor generation, the target
    /// chunk's and its neighbours' block hashes, and the stable header facts. The
    /// source time takes part only when the bundle holds a relative time expression
    /// that resolves against it, so an edited file's unchanged, time-free chunks reuse
    /// their claims.
    fn extraction_input_hash(
        &self,
        ctx: &VersionContext,
        index: usize,
        bundle: &ContextBundle,
    ) -> String {
        let target = &ctx.spans[index];
        let section = target.section_ordinal;
        let lo = index.saturating_sub(EXTRACT_NEIGHBOURS);
        let hi = (index + EXTRACT_NEIGHBOURS + 1).min(ctx.spans.len());
        let mut parts: Vec<String> = vec![self.extractor_version(), "target".into()];
        parts.extend(ctx.block_hashes(target).cloned());
        // Parts of a split block share block hashes: the span's text tells them apart.
        parts.push(crate::hash::sha256_hex(bundle.target_text.as_bytes()));
        for (i, c) in ctx.spans.iter().enumerate().take(hi).skip(lo) {
            if i == index || c.section_ordinal != section {
                continue;
            }
            parts.push(if i < index {
                "before".into()
            } else {
                "after".into()
            });
            parts.extend(ctx.block_hashes(c).cloned());
        }
        let h = &bundle.header;
        parts.push(format!("title={}", h.title));
        parts.push(format!("kind={}", h.source_kind));
        parts.push(format!("file={}", h.file_name.clone().unwrap_or_default()));
        parts.push(format!("path={}", bundle.section_path.join("\u{1f}")));
        let mut relative = false;
        for p in bundle
            .target
            .iter()
            .chain(&bundle.before)
            .chain(&bundle.after)
        {
            let (resolved, _) = temporal::resolve_claim_text(&p.text, h.source_time);
            if resolved != p.text {
                relative = true;
                break;
            }
        }
        if relative && let Some(t) = h.source_time {
            parts.push(format!("anchor={}", t.format("%Y-%m-%d")));
        }
        sha256_parts(parts.iter().map(|s| s.as_bytes()))
    }

    /// An empty commit of one chunk's extraction; nothing is written here, the batch
    /// commits every prepared extraction in one transaction.
    fn commit_for(&self, ctx: &VersionContext, index: usize, hash: String) -> ExtractionCommit {
        ExtractionCommit {
            document_id: ctx.version.document_id,
            version_id: ctx.version.version_id,
            chunk_id: ctx.chunk_ids[index],
            extraction_input_hash: hash,
            extractor_version: self.extractor_version(),
            claims: vec![],
            occurrences: vec![],
            decisions: vec![],
        }
    }

    /// D56/D119: reuse an earlier extraction of the same input — the same claim ids,
    /// spans remapped into this version through the same bundle positions, each
    /// re-verified as an exact slice.
    fn reuse_extraction(
        &self,
        ctx: &VersionContext,
        index: usize,
        bundle: &ContextBundle,
        input_hash: String,
        prior: &PriorExtraction,
    ) -> std::result::Result<ExtractionCommit, StageError> {
        let markdown = &ctx.prepared.representation.markdown;
        let mut commit = self.commit_for(ctx, index, input_hash);
        for occ in &prior.occurrences {
            let spans =
                remap_spans(bundle, &ctx.char_index, markdown, &occ.passages).ok_or_else(|| {
                    Error::internal(format!(
                        "claim {} cannot be remapped into version {}",
                        occ.claim_id, ctx.version.version_id
                    ))
                })?;
            commit.occurrences.push(Occurrence {
                claim_id: occ.claim_id,
                chunk_id: commit.chunk_id,
                version_id: commit.version_id,
                document_id: commit.document_id,
                extractor_version: commit.extractor_version.clone(),
                extraction_input_hash: commit.extraction_input_hash.clone(),
                ordinal: occ.ordinal,
                spans,
                passages: occ.passages.clone(),
                event_ids: occ.event_ids.clone(),
                reused: true,
            });
        }
        commit.decisions.push(DecisionRow {
            kind: "reused".into(),
            passage: None,
            reason: None,
            claim_id: None,
            detail: serde_json::json!({
                "from_chunk": prior.chunk_id,
                "claims": prior.occurrences.len(),
            }),
        });
        Ok(commit)
    }

    /// Extract one bundle afresh (offline, or the two model calls) and ground every
    /// returned claim.
    async fn fresh_extraction(
        &self,
        ctx: &VersionContext,
        item: &WorkItem,
        bundle: &ContextBundle,
    ) -> std::result::Result<(Extraction, Vec<Grounding>), StageError> {
        let extraction = match &self.extractor {
            None => offline::extract(bundle),
            Some(models) => self.model_extraction(models, bundle, item).await?,
        };
        let union = grounding::Union::from_bundle(bundle);
        let markdown = &ctx.prepared.representation.markdown;
        let grounded = extraction
            .claims
            .iter()
            .map(|d| grounding::ground_with_union(bundle, &union, markdown, d))
            .collect();
        Ok((extraction, grounded))
    }

    /// The claims, occurrences, ledger rows and follow-up work of a version's fresh
    /// extractions, in their order. The same testimony (extractor, text, evidence text)
    /// in the same lineage keeps its claim id even when a neighbouring edit forced a
    /// fresh extraction; the claim keys and the claims' vectors are looked up once.
    async fn ledger_fresh(
        &self,
        ctx: &VersionContext,
        ns: NamespaceId,
        fresh: &[Fresh],
    ) -> Result<Vec<(ExtractionCommit, Vec<NewWork>)>> {
        if fresh.is_empty() {
            return Ok(vec![]);
        }
        let now = self.clock.now();
        let extractor_version = self.extractor_version();
        let keys: Vec<String> = fresh
            .iter()
            .flat_map(|f| {
                f.grounded
                    .iter()
                    .filter_map(|g| g.as_ref().ok())
                    .map(|g| claim_key(&extractor_version, &f.bundle, g))
            })
            .collect();
        let mut existing: HashMap<String, ClaimId> = HashMap::new();
        for (key, id) in self
            .store
            .claims_by_key(ns, ctx.version.document_id, &keys)
            .await?
        {
            existing.entry(key).or_insert(id);
        }
        // Claims first made by an earlier chunk of this group, by key: a later chunk
        // with the same testimony keeps their id, as it would in a later batch, so
        // the claims made do not depend on how chunks were batched (a resumed run
        // batches them differently). Each commit carries every new claim it cites,
        // so it stands alone if another loses its lease; the store writes a claim
        // carried twice once.
        let mut made: HashMap<ClaimId, NewClaim> = HashMap::new();
        let mut commits = Vec::with_capacity(fresh.len());
        for f in fresh {
            let mut commit = self.commit_for(ctx, f.index, f.hash.clone());
            let (mut claims, occurrences, decisions) = ledger_for(
                &f.bundle,
                &f.extraction,
                &f.grounded,
                &existing,
                &commit,
                ctx.version.source_modified_at,
            );
            for c in &claims {
                existing.insert(c.claim_key.clone(), c.id);
                made.insert(c.id, c.clone());
            }
            for o in &occurrences {
                if claims.iter().any(|c| c.id == o.claim_id) {
                    continue;
                }
                if let Some(c) = made.get(&o.claim_id) {
                    claims.push(c.clone());
                }
            }
            commit.claims = claims;
            commit.occurrences = occurrences;
            commit.decisions = decisions;
            commits.push(commit);
        }
        let generation = self.component_version(Stage::EmbedClaims);
        let keys: Vec<String> = commits
            .iter()
            .flat_map(|c| c.claims.iter().map(|c| c.embedding_key.clone()))
            .collect();
        let vectors: HashSet<String> = self
            .store
            .existing_vectors(ns, &generation, &keys)
            .await?
            .into_iter()
            .collect();
        let normalizer = self.component_version(Stage::Normalize);
        let version = ctx.version.version_id;
        Ok(commits
            .into_iter()
            .map(|commit| {
                let follow_up = commit
                    .claims
                    .iter()
                    .filter(|c| !vectors.contains(&c.embedding_key))
                    .map(|c| {
                        NewWork::now(
                            ns,
                            Stage::EmbedClaims,
                            c.id.uuid(),
                            version,
                            generation.clone(),
                            now,
                        )
                    })
                    .chain(commit.claims.iter().map(|c| {
                        // E3: every new claim is normalized on its own (D88).
                        NewWork::now(
                            ns,
                            Stage::Normalize,
                            c.id.uuid(),
                            version,
                            normalizer.clone(),
                            now,
                        )
                    }))
                    .collect();
                (commit, follow_up)
            })
            .collect())
    }

    /// Refresh the testimony currency every version owes since its extraction
    /// completed ([`MemoryStore::currency_due`]): the refreshes a process did not
    /// live to apply (the completion of a version's last `e2.extract` unit and the
    /// refresh are two transactions). Each refresh recomputes the currency rule from
    /// what is stored, so doing one twice changes nothing.
    pub(super) async fn refresh_due_currency(&self) -> Result<()> {
        for (ns, version_id) in self.store.currency_due().await? {
            // One version that cannot be refreshed now (its namespace closed by an
            // unfinished forget, say) holds up neither the others nor the pipeline.
            if let Err(e) = self.refresh_due_version(ns, version_id).await {
                tracing::warn!(%version_id, error = %e, "testimony currency refresh postponed");
            }
        }
        Ok(())
    }

    async fn refresh_due_version(&self, ns: NamespaceId, version_id: VersionId) -> Result<()> {
        let Some(version) = self.store.version(ns, version_id).await? else {
            return self.store.clear_currency_due(ns, version_id).await;
        };
        // Where the extraction is open again (a unit re-enqueued), its last
        // completion refreshes the currency; the row waits for it.
        self.after_extraction(ns, &version).await
    }

    /// When every `e2.extract` unit of the version is done, recompute the lineage's
    /// testimony currency (D54).
    pub(super) async fn after_extraction(
        &self,
        ns: NamespaceId,
        version: &VersionRecord,
    ) -> Result<()> {
        let barrier = self
            .store
            .barrier(ns, version.version_id, Stage::Extract)
            .await?;
        if !barrier.is_complete() {
            return Ok(());
        }
        self.refresh_currency(
            ns,
            version.document_id,
            Some(version.version_id),
            "extraction_completed",
        )
        .await?;
        // A conversation's earlier versions can go once this one's extraction no
        // longer needs theirs.
        if version.source_kind == "conversation" {
            self.compact_conversation_in(ns, version.document_id).await;
        }
        Ok(())
    }

    /// Recompute which of a lineage's claims are current testimony once `version`'s
    /// extraction is complete, and record the transitions.
    pub async fn refresh_currency(
        &self,
        ns: NamespaceId,
        doc: DocumentId,
        version: Option<VersionId>,
        reason: &str,
    ) -> Result<()> {
        let Some(version) = version else {
            return Ok(());
        };
        let Some(row) = self.store.document(ns, doc).await? else {
            return self.store.clear_currency_due(ns, version).await;
        };
        let versions = self.store.versions(ns, doc).await?;
        let ordinal = |id: Option<VersionId>| {
            id.and_then(|id| versions.iter().find(|v| v.version_id == id))
                .map(|v| v.ordinal)
        };
        let extractor = self.extractor_version();
        let version_claims = self.store.version_claims(ns, version, &extractor).await?;
        let current = self.store.current_claim_refs(ns, doc).await?;
        let Some(next) = next_current_claims(
            row.mode,
            ordinal(Some(version)),
            ordinal(row.current_version_id),
            &version_claims,
            &current,
            &extractor,
        ) else {
            return self.store.clear_currency_due(ns, version).await;
        };
        let ids: Vec<ClaimId> = next.into_iter().collect();
        let changed = self
            .store
            .apply_currency(ns, doc, &ids, reason, Some(version), self.clock.now())
            .await?;
        tracing::debug!(%doc, current = ids.len(), changed, "testimony currency refreshed");
        Ok(())
    }
}

/// The testimony-currency rule (D54), applied when a version's extraction completes:
/// a claim is current iff it occurs in the current extraction basis (the current
/// extractor generation) of the lineage's current version (living) or of any version
/// up to the current one (snapshot). Returns the new current set, or `None` when the
/// completed version changes nothing (a living lineage's superseded version, or a
/// version newer than the current one).
pub fn next_current_claims(
    mode: VersioningMode,
    version_ordinal: Option<u32>,
    current_ordinal: Option<u32>,
    version_claims: &[ClaimId],
    current: &[(ClaimId, String)],
    extractor_version: &str,
) -> Option<BTreeSet<ClaimId>> {
    let (v, c) = (version_ordinal?, current_ordinal?);
    match mode {
        VersioningMode::Living if v == c => Some(version_claims.iter().copied().collect()),
        VersioningMode::Snapshot if v <= c => Some(
            current
                .iter()
                .filter(|(_, e)| e == extractor_version)
                .map(|(id, _)| *id)
                .chain(version_claims.iter().copied())
                .collect(),
        ),
        _ => None,
    }
}

/// Recompute an earlier occurrence's spans in this version from the passages it cited:
/// every cited passage must exist in this bundle and be an exact slice of this
/// version's text (gate layer 1).
fn remap_spans(
    bundle: &ContextBundle,
    chars: &CharIndex,
    markdown: &str,
    passages: &[String],
) -> Option<Vec<crate::claims::EvidenceSpan>> {
    let mut ranges = Vec::with_capacity(passages.len());
    for label in passages {
        let p = bundle.passage(label)?;
        if markdown.get(p.start..p.end)? != p.text {
            return None;
        }
        ranges.push((p.start, p.end));
    }
    ranges.sort_unstable();
    let mut merged: Vec<(usize, usize)> = Vec::with_capacity(ranges.len());
    for (s, e) in ranges {
        match merged.last_mut() {
            Some(last) if s <= last.1 => last.1 = last.1.max(e),
            _ => merged.push((s, e)),
        }
    }
    merged
        .into_iter()
        .map(|(start, end)| {
            Some(crate::claims::EvidenceSpan {
                start,
                end,
                char_start: chars.chars_at(markdown, start)?,
                char_end: chars.chars_at(markdown, end)?,
            })
        })
        .collect()
}

/// A claim's identity within its lineage: extractor generation, text and the exact
/// text of the passages it cites.
fn claim_key(extractor_version: &str, bundle: &ContextBundle, claim: &GroundedClaim) -> String {
    let mut parts: Vec<&str> = vec![extractor_version, &claim.text];
    for label in &claim.passages {
        parts.push(bundle.passage(label).map(|p| p.text.as_str()).unwrap_or(""));
    }
    sha256_parts(parts.iter().map(|s| s.as_bytes()))
}

/// Turn an extraction into claims, occurrences and the ledger rows that account for
/// every passage and every returned claim (D33).
fn ledger_for(
    bundle: &ContextBundle,
    extraction: &Extraction,
    grounded: &[Grounding],
    existing: &HashMap<String, ClaimId>,
    commit: &ExtractionCommit,
    asserted_at: Timestamp,
) -> (Vec<NewClaim>, Vec<Occurrence>, Vec<DecisionRow>) {
    let mut claims = Vec::new();
    let mut occurrences = Vec::new();
    let mut decisions = Vec::new();
    for sel in &extraction.selections {
        let kind = match sel.label {
            SelectionLabel::Keep => "keep",
            SelectionLabel::KeepFlagged => "keep_flagged",
            SelectionLabel::Drop => "drop",
        };
        decisions.push(DecisionRow {
            kind: kind.into(),
            passage: Some(sel.passage.clone()),
            reason: sel.reason.map(|r| enum_name(&r)),
            claim_id: None,
            detail: serde_json::json!({
                "text": bundle.passage(&sel.passage).map(|p| p.text.clone()),
            }),
        });
    }
    // Passages cited by a returned claim whose labels all exist ("range-attributable").
    let mut cited: HashSet<&str> = HashSet::new();
    let mut seen_texts: HashSet<String> = HashSet::new();
    for (draft, result) in extraction.claims.iter().zip(grounded) {
        if !draft.passages.is_empty() && draft.passages.iter().all(|l| bundle.passage(l).is_some())
        {
            cited.extend(draft.passages.iter().map(String::as_str));
        }
        match result {
            Ok(grounded) => {
                if !seen_texts.insert(grounded.text.clone()) {
                    decisions.push(DecisionRow {
                        kind: "duplicate".into(),
                        passage: grounded.passages.first().cloned(),
                        reason: None,
                        claim_id: None,
                        detail: serde_json::json!({ "text": grounded.text }),
                    });
                    continue;
                }
                let key = claim_key(&commit.extractor_version, bundle, grounded);
                let known = existing.get(&key).copied();
                let id = known.unwrap_or_default();
                let event_ids: Vec<String> = {
                    let mut ids = Vec::new();
                    for label in &grounded.passages {
                        if let Some(ev) = bundle
                            .passage(label)
                            .and_then(|p| p.turn.as_ref())
                            .and_then(|t| t.event_id.clone())
                            && !ids.contains(&ev)
                        {
                            ids.push(ev);
                        }
                    }
                    ids
                };
                decisions.push(DecisionRow {
                    kind: "accepted".into(),
                    passage: grounded.passages.first().cloned(),
                    reason: None,
                    claim_id: Some(id),
                    detail: serde_json::json!({
                        "text": grounded.text,
                        "passages": grounded.passages,
                        "added_context": grounded.added_context,
                        "existing_claim": known.is_some(),
                    }),
                });
                occurrences.push(Occurrence {
                    claim_id: id,
                    chunk_id: commit.chunk_id,
                    version_id: commit.version_id,
                    document_id: commit.document_id,
                    extractor_version: commit.extractor_version.clone(),
                    extraction_input_hash: commit.extraction_input_hash.clone(),
                    ordinal: occurrences.len() as u32,
                    spans: grounded.spans.clone(),
                    passages: grounded.passages.clone(),
                    event_ids,
                    reused: false,
                });
                if known.is_some() {
                    continue;
                }
                claims.push(NewClaim {
                    id,
                    document_id: commit.document_id,
                    embedding_key: embedding_key(&grounded.text),
                    claim_key: key,
                    text: grounded.text.clone(),
                    added_context: grounded.added_context.clone(),
                    validity: grounded.validity.clone(),
                    asserted_at,
                    extractor_version: commit.extractor_version.clone(),
                    extraction_input_hash: commit.extraction_input_hash.clone(),
                    origin_version_id: commit.version_id,
                    origin_chunk_id: commit.chunk_id,
                });
            }
            Err(failure) => decisions.push(DecisionRow {
                kind: "grounding_rejected".into(),
                passage: draft.passages.first().cloned(),
                reason: Some(enum_name(&failure.gate)),
                claim_id: None,
                detail: serde_json::json!({
                    "text": draft.text,
                    "tokens": failure.tokens,
                    "message": failure.message,
                }),
            }),
        }
    }
    if extraction.selections.is_empty() && extraction.claims.is_empty() {
        // Nothing to read: still a recorded extraction, so the next version reuses it.
        decisions.push(DecisionRow {
            kind: "empty".into(),
            passage: None,
            reason: None,
            claim_id: None,
            detail: serde_json::json!({ "text": bundle.target_text }),
        });
    }
    for sel in &extraction.selections {
        if sel.label != SelectionLabel::Drop && !cited.contains(sel.passage.as_str()) {
            decisions.push(DecisionRow {
                kind: "claimify_omitted".into(),
                passage: Some(sel.passage.clone()),
                reason: None,
                claim_id: None,
                detail: serde_json::json!({
                    "text": bundle.passage(&sel.passage).map(|p| p.text.clone()),
                }),
            });
        }
    }
    (claims, occurrences, decisions)
}

fn enum_name<T: Serialize>(v: &T) -> String {
    match serde_json::to_value(v) {
        Ok(serde_json::Value::String(s)) => s,
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn currency_rule() {
        let (a, b, old) = (ClaimId::new(), ClaimId::new(), ClaimId::new());
        let current = vec![(a, "x1".to_string()), (old, "x0".to_string())];
        // Snapshot: earlier testimony stays, another generation's claims retire.
        let next = next_current_claims(
            VersioningMode::Snapshot,
            Some(2),
            Some(2),
            &[b],
            &current,
            "x1",
        )
        .unwrap();
        assert_eq!(next, [a, b].into_iter().collect());
        // Living: only the current version's claims.
        let next = next_current_claims(
            VersioningMode::Living,
            Some(2),
            Some(2),
            &[b],
            &current,
            "x1",
        )
        .unwrap();
        assert_eq!(next, [b].into_iter().collect());
        // A superseded living version completing late changes nothing.
        assert!(
            next_current_claims(
                VersioningMode::Living,
                Some(1),
                Some(2),
                &[b],
                &current,
                "x1"
            )
            .is_none()
        );
        // Nothing is current before a version is.
        assert!(
            next_current_claims(
                VersioningMode::Snapshot,
                Some(1),
                None,
                &[b],
                &current,
                "x1"
            )
            .is_none()
        );
    }
}
