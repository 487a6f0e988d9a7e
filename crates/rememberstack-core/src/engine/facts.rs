//! E3 stages: normalize a claim and resolve its entities (D88, D95–D103), apply an
//! entity's staged assertions in order (D90, D43, D118), refresh profiles, and the
//! reads over entities and facts.

use super::*;
use crate::chat::{ChatModel, ChatRequest};
use crate::claims::ValidityKind;
use crate::embed::cosine;
use crate::entities::normalize::{
    Candidate, abbreviates, daitch_mokotoff, lemma, rank_candidates, short_form_of,
    trigram_code_similarity, trigram_codes, trigrams,
};
use crate::entities::t4::{T4Candidate, T4Input, T4Verdict, parse_t4, t4_request};
use crate::entities::*;
use crate::entities::{BlockingKey, alias_keys, query_keys};
use crate::facts::adjudicate::{
    AdjudicationInput, ChatVerdict, Said, adjudication_request, has_change_cue, identical,
    merged_window, offline_verdict, parse_adjudication, reports_past_state, statement_codes,
    supersede_close,
};
use crate::facts::chain::{ChainFact, rechain};
use crate::facts::normalization::{
    NormalizeInput, NormalizedClaim, normalization_request, parse_normalization,
};
use crate::facts::offline::normalize_offline;
use crate::facts::predicates::{CORE_PREDICATES, Predicate, render_for_prompt};
use crate::facts::*;
use std::collections::BTreeSet;
use tokio::sync::Mutex as AsyncMutex;

/// Trigram similarity below which a T1 hit is not a candidate (recall-first floor).
const T1_FLOOR: f32 = 0.3;

/// The chat models that run E3; each seat left empty runs its offline path.
#[derive(Debug, Clone, Default)]
pub struct FactModels {
    /// Normalization (claim → references, relations, observations).
    pub normalizer: Option<Arc<dyn ChatModel>>,
    /// T4: the joint resolution call.
    pub resolver: Option<Arc<dyn ChatModel>>,
    /// Fact adjudication verdicts.
    pub adjudicator: Option<Arc<dyn ChatModel>>,
}

/// Resolver and adjudicator settings (versioned with the resolver).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FactsConfig {
    /// T3: the profile-embedding similarity at or above which exactly one candidate
    /// is accepted without T4.
    pub t3_threshold: f32,
    /// Distinct entities each blocking tier returns at most.
    pub blocking_limit: usize,
    /// Candidates shown to T4 at most.
    pub t4_candidates: usize,
    /// Snapshot → call → revalidate attempts before a contention failure.
    pub resolve_retries: u32,
    /// Candidate facts shown to the adjudicator for a hub entity.
    pub hub_top_k: usize,
    /// The blast-radius guard of automatic merges: a merge proposal moving more
    /// mentions than this waits for a caller's `accept`; 0 merges nothing
    /// automatically.
    pub auto_merge_max_mentions: u64,
}

impl Default for FactsConfig {
    fn default() -> Self {
        FactsConfig {
            t3_threshold: 0.85,
            blocking_limit: 20,
            t4_candidates: 8,
            resolve_retries: 3,
            hub_top_k: 20,
            auto_merge_max_mentions: 50,
        }
    }
}

impl FactsConfig {
    /// The part of the resolver version the thresholds contribute.
    fn fingerprint(&self) -> String {
        format!(
            "t3={:.3},block={},t4={}",
            self.t3_threshold, self.blocking_limit, self.t4_candidates
        )
    }
}

/// In-process locks: per-lemma (identity writes) and per-entity (fact application).
#[derive(Debug, Default)]
pub(super) struct Locks {
    map: std::sync::Mutex<HashMap<String, Arc<AsyncMutex<()>>>>,
}

impl Locks {
    fn get(&self, key: &str) -> Arc<AsyncMutex<()>> {
        let mut map = self.map.lock().unwrap_or_else(|e| e.into_inner());
        if map.len() > 10_000 {
            map.retain(|_, v| Arc::strong_count(v) > 1);
        }
        Arc::clone(map.entry(key.to_string()).or_default())
    }
}

/// A held lock: this process's, then the store's across processes (none on a
/// store one process writes). Both release when it drops.
#[derive(Debug)]
pub(super) struct KeyGuard {
    _store: Option<crate::store::StoreLock>,
    _local: tokio::sync::OwnedMutexGuard<()>,
}

/// Several held locks (see [`Engine::lock_all`]): the store's, then this
/// process's. All release when it drops.
#[derive(Debug)]
pub(super) struct KeysGuard {
    _store: Option<crate::store::StoreLock>,
    _local: Vec<tokio::sync::OwnedMutexGuard<()>>,
}

impl Engine {
    /// Take the lock on `key` in this process and in the store.
    pub(super) async fn lock(&self, key: String) -> Result<KeyGuard> {
        let local = self.locks.get(&key).lock_owned().await;
        let store = self.store.lock_key(&key).await?;
        Ok(KeyGuard {
            _store: store,
            _local: local,
        })
    }

    /// Take the locks on every key of `keys`: this process's in order (no two
    /// holders in this process wait on each other), then the store's together
    /// ([`crate::store::StoreRuntime::lock_keys`]), on one session however many.
    pub(super) async fn lock_all(&self, keys: BTreeSet<String>) -> Result<KeysGuard> {
        let mut local = Vec::with_capacity(keys.len());
        for key in &keys {
            local.push(self.locks.get(key).lock_owned().await);
        }
        let keys: Vec<String> = keys.into_iter().collect();
        let store = self.store.lock_keys(&keys).await?;
        Ok(KeysGuard {
            _store: store,
            _local: local,
        })
    }
}

/// The id of the version-scoped entity unit (D90).
pub fn unit_id(version: VersionId, entity: EntityId) -> uuid::Uuid {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(format!("rememberstack:unit:{version}:{entity}").as_bytes());
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&digest[..16]);
    uuid::Builder::from_random_bytes(bytes).into_uuid()
}

/// A ranked resolution candidate.
#[derive(Clone, Debug)]
struct Cand {
    record: EntityRecord,
    score: f32,
    via: Vec<BlockingTier>,
}

impl Candidate for Cand {
    fn score(&self) -> f32 {
        self.score
    }
    fn canonical_name(&self) -> &str {
        &self.record.canonical_name
    }
    fn created_at(&self) -> Timestamp {
        self.record.created_at
    }
    fn id(&self) -> uuid::Uuid {
        self.record.entity_id.uuid()
    }
}

/// What the resolver saw, and its fingerprint for revalidation (D99).
#[derive(Clone, Debug)]
struct Snapshot {
    candidates: Vec<Cand>,
    complete: bool,
    bindings: Vec<DocumentBinding>,
    excluded: HashSet<(EntityId, EntityId)>,
    fingerprint: String,
    /// The one longer name of the same document a one-word name abbreviates (its
    /// entity's root and the longer name's lemma), if exactly one.
    short_form: Option<(EntityId, String)>,
}

/// The snapshot of `candidates` with the document's `bindings` of the lemma and the
/// cannot-link pairs among `exclusions` that touch a candidate or a bound entity.
fn finish_snapshot(
    candidates: Vec<Cand>,
    complete: bool,
    bindings: Vec<DocumentBinding>,
    exclusions: &[(EntityId, EntityId)],
) -> Snapshot {
    let ids: HashSet<EntityId> = candidates
        .iter()
        .map(|c| c.record.entity_id)
        .chain(bindings.iter().map(|b| b.entity_id))
        .collect();
    let excluded: HashSet<(EntityId, EntityId)> = exclusions
        .iter()
        .filter(|(a, b)| ids.contains(a) || ids.contains(b))
        .copied()
        .collect();
    let mut fp = String::new();
    for c in &candidates {
        fp.push_str(&format!(
            "{}:{:?}:{:?};",
            c.record.entity_id, c.record.merged_into, c.record.profile_key
        ));
    }
    for b in &bindings {
        fp.push_str(&format!("b{}:{:?};", b.entity_id, b.anchor));
    }
    let mut ex: Vec<_> = excluded.iter().collect();
    ex.sort();
    fp.push_str(&format!("x{ex:?}"));
    Snapshot {
        candidates,
        complete,
        bindings,
        excluded,
        fingerprint: crate::hash::sha256_hex(fp.as_bytes()),
        short_form: None,
    }
}

/// How a reference was decided, before commit.
struct Verdict {
    tier: &'static str,
    entity: Option<EntityId>,
    t3_score: Option<f32>,
    t3_outcome: String,
    t3_scores: HashMap<EntityId, f32>,
    rationale: String,
    model: Option<String>,
    exclusions: Vec<EntityId>,
    features: serde_json::Value,
    shown: usize,
}

/// An entity with its facts, evidence and decisions.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EntityDetail {
    /// The entity asked for.
    pub entity: EntityRecord,
    /// Set when the id asked for was merged: the entity it redirects to (shown as `entity`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redirected_from: Option<EntityId>,
    /// Entities merged into it.
    pub merged_members: Vec<EntityId>,
    /// Its current facts.
    pub facts: Vec<FactRecord>,
    /// Its mentions (most recent 50).
    pub mentions: Vec<Mention>,
    /// Merge events touching it.
    pub merges: Vec<MergeEvent>,
}

/// Everything behind one fact (`remember trace`).
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FactTrace {
    /// The fact.
    pub fact: FactRecord,
    /// Its evidence claims, with spans and source text.
    pub evidence: Vec<TracedEvidence>,
    /// Its adjudication transcripts.
    pub adjudications: Vec<AdjudicationRecord>,
    /// The resolution decisions of its entities.
    pub resolutions: Vec<ResolutionDecision>,
    /// Its lifecycle events (closed with a deleted source, support retracted,
    /// invalidated), oldest first, with their reasons.
    #[serde(default)]
    pub events: Vec<FactEvent>,
}

/// One evidence row with its claim.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TracedEvidence {
    /// The evidence row.
    #[serde(flatten)]
    pub evidence: EvidenceRecord,
    /// The claim.
    pub claim: Option<ClaimRecord>,
}

/// Options of a fact listing.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FactQuery {
    /// Only facts of this entity (merges are followed).
    pub entity: Option<EntityId>,
    /// Facts holding at this instant.
    pub at: Option<Timestamp>,
    /// Every fact, closed and superseded ones included.
    pub history: bool,
    /// At most this many (0: the default, 1,000; at most
    /// [`MAX_FACTS_PAGE`](crate::limits::MAX_FACTS_PAGE)).
    pub limit: u32,
}

/// A page of a fact listing.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FactPage {
    /// Facts by subject name, then recorded order.
    pub facts: Vec<FactRecord>,
    /// Pass it back with the same query to continue; absent on the last page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
}

/// Where the next page of a fact listing starts, signed with the store's cursor
/// secret (a cursor holds a subject name, so it is longer than a search's).
#[derive(Serialize, Deserialize)]
struct FactCursor {
    /// Subject name of the last fact served.
    n: String,
    /// Its recorded order.
    s: i64,
    /// Digest of the query it continues.
    q: String,
}

/// Longest fact cursor accepted, in characters: generous, since entity names have
/// no cap of their own and a cursor this store issued must always be accepted back
/// (the signature, not the length, is what refuses a forged one).
const MAX_FACT_CURSOR_CHARS: usize = 256 * 1024;

type StageResult<T> = std::result::Result<T, StageError>;

impl Engine {
    fn fact_models(&self) -> &FactModels {
        &self.fact_models
    }

    pub(super) fn normalizer_version(&self) -> String {
        match &self.fact_models().normalizer {
            Some(m) => format!(
                "{}+{}",
                crate::facts::normalization::NORMALIZE_PROMPT_VERSION,
                m.model()
            ),
            None => OFFLINE_NORMALIZER_VERSION.to_string(),
        }
    }

    /// The resolver generation stamped on decisions.
    pub fn resolver_version(&self) -> String {
        match &self.fact_models().resolver {
            Some(m) => format!(
                "{RESOLVER_VERSION}+{}+{}+{}",
                crate::entities::t4::T4_PROMPT_VERSION,
                m.model(),
                self.config.facts.fingerprint()
            ),
            None => OFFLINE_RESOLVER_VERSION.to_string(),
        }
    }

    pub(super) fn adjudicator_version(&self) -> String {
        match &self.fact_models().adjudicator {
            Some(m) => format!(
                "{ADJUDICATOR_VERSION}+{}+{}",
                crate::facts::adjudicate::ADJUDICATE_PROMPT_VERSION,
                m.model()
            ),
            None => OFFLINE_ADJUDICATOR_VERSION.to_string(),
        }
    }

    /// One model call, recorded in the cost ledger and the transcript whatever its
    /// outcome. `record_key` distinguishes several calls of one work attempt.
    pub(super) async fn call_recorded(
        &self,
        model: &Arc<dyn ChatModel>,
        request: &ChatRequest,
        item: &WorkItem,
        record_key: String,
        prompt_version: &str,
    ) -> Result<(serde_json::Value, String)> {
        let result = model.complete_json(request).await;
        let (verdict, raw, reason, usage, model_name) = match &result {
            Ok(r) => (
                "ok",
                r.value.to_string(),
                None,
                r.usage.clone(),
                r.model.clone(),
            ),
            Err(e) => (
                match e {
                    ProviderError::Malformed { .. } => "malformed",
                    _ => "error",
                },
                String::new(),
                Some(e.to_string()),
                crate::chat::Usage::default(),
                model.model().to_string(),
            ),
        };
        self.store
            .record_call(
                CallRecord {
                    namespace_id: item.namespace_id,
                    processing_id: item.id,
                    attempt: item.attempts,
                    call_key: record_key,
                    stage: item.stage,
                    model: model_name.clone(),
                    prompt_tokens: usage.prompt_tokens,
                    completion_tokens: usage.completion_tokens,
                    request_hash: request.hash(),
                    prompt_version: prompt_version.into(),
                    raw_output: raw,
                    verdict: verdict.into(),
                    reason,
                },
                self.clock.now(),
            )
            .await?;
        Ok((result?.value, model_name))
    }

    async fn ensure_predicates(&self, ns: NamespaceId) -> Result<()> {
        {
            let seen = self.bootstrapped.lock().unwrap_or_else(|e| e.into_inner());
            if seen.contains(&ns) {
                return Ok(());
            }
        }
        let core: Vec<(String, String, Vec<String>)> = CORE_PREDICATES
            .iter()
            .map(|p| {
                (
                    p.name.to_string(),
                    p.description.to_string(),
                    p.synonyms.iter().map(|s| s.to_string()).collect(),
                )
            })
            .collect();
        self.store.bootstrap_predicates(ns, &core).await?;
        self.bootstrapped
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(ns);
        Ok(())
    }

    // ------------------------------------------------------------ e3.normalize

    pub(super) async fn run_normalize(&self, item: &WorkItem) -> StageResult<Outcome> {
        let ns = item.namespace_id;
        let now = self.clock.now();
        let version = self.normalizer_version();
        if item.component_version != version {
            // Work of a former normalizer generation; reconcile enqueued the new one.
            self.store.complete(&Lease::of(item), vec![], now).await?;
            return Ok(Outcome::Completed);
        }
        let claim_id = ClaimId(item.target_id);
        let Some(claim) = self.store.claims(ns, &[claim_id]).await?.into_iter().next() else {
            self.store.complete(&Lease::of(item), vec![], now).await?;
            return Ok(Outcome::Completed);
        };
        self.ensure_predicates(ns).await?;
        let input = normalize_input(&claim);
        let normalized: NormalizedClaim = match &self.fact_models().normalizer {
            None => normalize_offline(&input),
            Some(model) => {
                let request = normalization_request(&input, &render_for_prompt());
                let (value, _) = self
                    .call_recorded(
                        model,
                        &request,
                        item,
                        "normalize".into(),
                        crate::facts::normalization::NORMALIZE_PROMPT_VERSION,
                    )
                    .await?;
                parse_normalization(&value, &input).map_err(|message| StageError::Failed {
                    message: format!("unusable normalization: {message}"),
                    retryable: true,
                })?
            }
        };
        let mut ids: Vec<Option<EntityId>> = Vec::with_capacity(normalized.entities.len());
        for (ordinal, reference) in normalized.entities.iter().enumerate() {
            ids.push(
                self.resolve_reference(item, &claim, ordinal as u32, reference)
                    .await?,
            );
        }
        self.commit_normalized(item, &claim, &version, &normalized, &ids)
            .await?;
        Ok(Outcome::Completed)
    }

    /// Whether a batch of `stage` (normalize or adjudicate) is decided together
    /// ([`Self::normalize_together`], [`Self::adjudicate_together`]): its offline
    /// stage (so the batch is one write group) on a store that holds a batch's keys
    /// at once and gives the batch reads ([`crate::store::StoreTuning::decides_batches`]).
    pub(super) fn decides_together(&self, stage: Stage) -> bool {
        matches!(stage, Stage::Normalize | Stage::Adjudicate)
            && self.runs_grouped(stage)
            && self.tuning.decides_batches
    }

    /// Normalize and resolve a batch of one namespace's claims together, offline,
    /// deciding every reference exactly as [`Self::run_normalize`] would one at a
    /// time, with a few store reads and one commit for the whole batch instead of a
    /// dozen statements per reference.
    ///
    /// Every lemma of the batch is locked first; then the blocking results of all
    /// its names, the candidates' roots, the document bindings and the cannot-link
    /// pairs are read at once. References are decided in order against those reads,
    /// overlaid with what the batch itself wrote: the bindings it adds are appended
    /// as the store would list them, and a reference sharing a blocking key with an
    /// alias the batch added (a mint, or a new surface of an entity) is decided on a
    /// fresh snapshot after the pending commits are written, since its block may
    /// have changed. Nothing else a batch writes changes an offline decision: it
    /// merges nothing and adds no cannot-link pair.
    pub(super) async fn normalize_together(
        &self,
        ns: NamespaceId,
        items: &[WorkItem],
    ) -> StageResult<Vec<(WorkItem, StageResult<Outcome>)>> {
        let version = self.normalizer_version();
        let resolver_version = self.resolver_version();
        let mut out = Vec::new();
        let wanted: Vec<ClaimId> = items
            .iter()
            .filter(|i| i.component_version == version)
            .map(|i| ClaimId(i.target_id))
            .collect();
        let mut claims: HashMap<ClaimId, ClaimRecord> = self
            .store
            .claims(ns, &wanted)
            .await?
            .into_iter()
            .map(|c| (c.claim_id, c))
            .collect();
        let mut plans: Vec<Plan> = Vec::new();
        for item in items {
            let claim = (item.component_version == version)
                .then(|| claims.remove(&ClaimId(item.target_id)))
                .flatten();
            let Some(claim) = claim else {
                // A former generation's work or a missing claim: completed as usual.
                out.push((item.clone(), self.run_normalize(item).await));
                continue;
            };
            let normalized = normalize_offline(&normalize_input(&claim));
            let ids = vec![None; normalized.entities.len()];
            plans.push(Plan {
                item: item.clone(),
                claim,
                normalized,
                ids,
            });
        }
        if plans.is_empty() {
            return Ok(out);
        }
        self.ensure_predicates(ns).await?;
        // Decisions an earlier attempt committed stand (as `resolution_for` gives them).
        let keys: Vec<(ClaimId, u32)> = plans
            .iter()
            .flat_map(|p| (0..p.normalized.entities.len() as u32).map(|o| (p.claim.claim_id, o)))
            .collect();
        let decided: HashMap<(ClaimId, u32), EntityId> = self
            .store
            .resolutions_for_many(ns, &keys, &resolver_version)
            .await?
            .into_iter()
            .map(|d| ((d.claim_id, d.ordinal), d.entity_id))
            .collect();
        let mut refs: Vec<BatchRef> = Vec::new();
        let mut queries: Vec<BlockingQuery> = Vec::new();
        let mut query_of: HashMap<(String, String), usize> = HashMap::new();
        for (p, plan) in plans.iter_mut().enumerate() {
            for (o, reference) in plan.normalized.entities.iter().enumerate() {
                let name = reference.name.trim().to_string();
                let name_lemma = lemma(&name);
                if name_lemma.is_empty() {
                    continue;
                }
                if let Some(done) = decided.get(&(plan.claim.claim_id, o as u32)) {
                    plan.ids[o] = Some(self.root_of(ns, *done).await?.entity_id);
                    continue;
                }
                let q = self.blocking_query(ns, &name, &name_lemma);
                let query = *query_of
                    .entry((q.lemma.clone(), q.phonetic.join(" ")))
                    .or_insert_with(|| {
                        queries.push(q);
                        queries.len() - 1
                    });
                refs.push(BatchRef {
                    plan: p,
                    ordinal: o as u32,
                    name,
                    name_lemma,
                    query,
                });
            }
        }
        // Every lemma of the batch.
        let guards = self
            .lock_all(
                refs.iter()
                    .map(|r| format!("lemma:{ns}:{}", r.name_lemma))
                    .collect(),
            )
            .await?;
        // The stored blocking keys of every name, read once; each block is computed
        // from them by the stores' own rule, with the rows the batch adds.
        let keys: Vec<BlockingKey> = queries
            .iter()
            .flat_map(|q| {
                query_keys(q)
                    .into_iter()
                    .flat_map(|(tier, keys)| keys.into_iter().map(move |k| (tier, k)))
            })
            .collect();
        let mut data = self.store.entity_key_data(ns, &keys).await?;
        for q in &queries {
            let unread = data.unread(q);
            if !unread.is_empty() {
                for (key, rows) in self.store.entity_key_rows(ns, &unread).await? {
                    data.load(key, rows);
                }
            }
        }
        // Each query's block, computed once and again only after the batch adds a
        // row under one of its keys.
        let mut blocks: Vec<Option<BlockingResult>> =
            queries.iter().map(|q| Some(data.block(q))).collect();
        let mut queries_of: HashMap<BlockingKey, Vec<usize>> = HashMap::new();
        for (i, q) in queries.iter().enumerate() {
            for (tier, keys) in query_keys(q) {
                for k in keys {
                    queries_of.entry((tier, k)).or_default().push(i);
                }
            }
        }
        let hit_ids: Vec<EntityId> = blocks
            .iter()
            .flatten()
            .flat_map(|b| b.hits.iter().map(|h| h.entity_id))
            .collect();
        let mut roots = self.roots_of(ns, &hit_ids).await?;
        // Each root under its own id too: its aliases are those of the entity a
        // reference resolves to.
        let own: Vec<EntityRecord> = roots.values().cloned().collect();
        for e in own {
            roots.entry(e.entity_id).or_insert(e);
        }
        let mut pairs: Vec<(DocumentId, String)> = refs
            .iter()
            .map(|r| (plans[r.plan].claim.document_id, r.name_lemma.clone()))
            .collect();
        pairs.sort();
        pairs.dedup();
        let mut bindings: HashMap<(DocumentId, String), Vec<DocumentBinding>> = HashMap::new();
        for b in self.store.document_bindings_many(ns, &pairs).await? {
            bindings
                .entry((b.document_id, b.lemma.clone()))
                .or_default()
                .push(b);
        }
        // Every binding of the batch's documents, for the short forms of one-word
        // names (offline), kept current with the bindings the batch adds.
        let mut doc_bindings: HashMap<DocumentId, Vec<DocumentBinding>> = HashMap::new();
        if self.fact_models().resolver.is_none() && refs.iter().any(|r| !r.name_lemma.contains(' '))
        {
            let docs: BTreeSet<DocumentId> = refs
                .iter()
                .map(|r| plans[r.plan].claim.document_id)
                .collect();
            for d in docs {
                let rows = self.store.document_entity_bindings(ns, d).await?;
                let unseen: Vec<EntityId> = rows
                    .iter()
                    .map(|b| b.entity_id)
                    .filter(|e| !roots.contains_key(e))
                    .collect();
                if !unseen.is_empty() {
                    let found = self.roots_of(ns, &unseen).await?;
                    for (id, e) in found {
                        roots.entry(id).or_insert(e);
                    }
                }
                doc_bindings.insert(d, rows);
            }
        }
        let mut covered: HashSet<EntityId> = roots.values().map(|e| e.entity_id).collect();
        covered.extend(bindings.values().flatten().map(|b| b.entity_id));
        let mut exclusions = self
            .store
            .exclusions(ns, &covered.iter().copied().collect::<Vec<_>>())
            .await?;
        // The key rows each entity's aliases are stored under (what a new alias of
        // it adds is the rest).
        let mut stored_rows: HashMap<EntityId, HashSet<(BlockingKey, String)>> = HashMap::new();
        let mut pending: Vec<((usize, u32), ResolutionCommit)> = Vec::new();
        for r in &refs {
            let plan = &plans[r.plan];
            let reference = &plan.normalized.entities[r.ordinal as usize];
            let query = &queries[r.query];
            let pair = (plan.claim.document_id, r.name_lemma.clone());
            if blocks[r.query].is_none() {
                let unread = data.unread(query);
                if !unread.is_empty() {
                    for (key, rows) in self.store.entity_key_rows(ns, &unread).await? {
                        data.load(key, rows);
                    }
                }
                blocks[r.query] = Some(data.block(query));
            }
            let block = blocks[r.query].clone().unwrap_or_default();
            // Entities no earlier read has seen (a key that became the rarest).
            let unseen: Vec<EntityId> = block
                .hits
                .iter()
                .map(|h| h.entity_id)
                .filter(|e| !roots.contains_key(e))
                .collect();
            if !unseen.is_empty() {
                let mut found = self.roots_of(ns, &unseen).await?;
                let own: Vec<EntityRecord> = found.values().cloned().collect();
                for e in own {
                    found.entry(e.entity_id).or_insert(e);
                }
                let fresh: Vec<EntityId> = found
                    .values()
                    .map(|e| e.entity_id)
                    .filter(|e| covered.insert(*e))
                    .collect();
                if !fresh.is_empty() {
                    exclusions.extend(self.store.exclusions(ns, &fresh).await?);
                }
                roots.extend(found);
            }
            let (candidates, complete) = self.candidates(&r.name_lemma, &block, &roots)?;
            let bound = bindings.get(&pair).cloned().unwrap_or_default();
            let mut snap = finish_snapshot(candidates, complete, bound, &exclusions);
            if !r.name_lemma.contains(' ') {
                snap.short_form = short_form_of(
                    &r.name_lemma,
                    doc_bindings
                        .get(&plan.claim.document_id)
                        .into_iter()
                        .flatten(),
                    |e| roots.get(&e).map_or(e, |x| x.entity_id),
                );
            }
            let verdict = self
                .decide(
                    &plan.item,
                    &plan.claim,
                    (r.ordinal, 0),
                    (&r.name, &r.name_lemma),
                    &snap,
                )
                .await?;
            let commit = self.build_commit(
                ns,
                &plan.claim,
                (r.ordinal, 0),
                reference,
                (&r.name, &r.name_lemma),
                &snap,
                verdict,
                &resolver_version,
            );
            // What the commit will add, as the store will write it: a minted entity,
            // the key rows of aliases new to their entity, the binding.
            let entity = commit.decision.entity_id;
            if commit.mint.is_none() && !roots.contains_key(&entity) {
                // A replayed match outside every block: its aliases are read.
                let found = self.roots_of(ns, &[entity]).await?;
                if let Some(e) = found.get(&entity) {
                    roots.insert(e.entity_id, e.clone());
                }
            }
            if let Some((canonical_name, lemma)) = &commit.mint {
                roots.insert(
                    entity,
                    EntityRecord {
                        entity_id: entity,
                        namespace_id: ns,
                        canonical_name: canonical_name.clone(),
                        lemma: lemma.clone(),
                        aliases: vec![],
                        merged_into: None,
                        profile_summary: None,
                        profile_key: None,
                        // As stored: to the millisecond.
                        created_at: crate::time::parse_rfc3339(&crate::time::to_rfc3339(
                            &commit.decision.created_at,
                        ))
                        .unwrap_or(commit.decision.created_at),
                        mention_count: 0,
                    },
                );
            }
            let stored = stored_rows.entry(entity).or_insert_with(|| {
                roots
                    .get(&entity)
                    .filter(|e| e.entity_id == entity)
                    .map(|e| {
                        e.aliases
                            .iter()
                            .flat_map(|surface| {
                                let a = NewAlias::of(surface);
                                alias_keys(&a)
                                    .into_iter()
                                    .map(move |k| (k, a.lemma.clone()))
                            })
                            .collect()
                    })
                    .unwrap_or_default()
            });
            let known = roots.get_mut(&entity).filter(|e| e.entity_id == entity);
            let mut known_surfaces = known.map(|e| &mut e.aliases);
            for a in &commit.aliases {
                if let Some(surfaces) = known_surfaces.as_deref_mut() {
                    if surfaces.contains(&a.surface) {
                        continue; // a known alias: the store writes nothing for it
                    }
                    surfaces.push(a.surface.clone());
                }
                for key in alias_keys(a) {
                    if stored.insert((key.clone(), a.lemma.clone())) {
                        for q in queries_of.get(&key).into_iter().flatten() {
                            blocks[*q] = None;
                        }
                        data.add(key, entity, &a.lemma);
                    }
                }
            }
            if let Some(b) = &commit.binding {
                if let Some(rows) = doc_bindings.get_mut(&b.document_id) {
                    rows.push(b.clone());
                }
                let rows = bindings.entry(pair).or_default();
                match rows.iter_mut().find(|x| x.entity_id == b.entity_id) {
                    Some(x) => x.anchor = x.anchor.or(b.anchor),
                    None => rows.push(b.clone()),
                }
            }
            pending.push(((r.plan, r.ordinal), commit));
        }
        self.flush_resolutions(&mut pending, &mut plans).await?;
        drop(guards);
        tracing::debug!(
            target: "rememberstack::work",
            claims = plans.len(),
            references = refs.len(),
            "normalize batch resolved"
        );
        let commits = plans
            .iter()
            .map(|p| self.normalization_commit(&p.item, &p.claim, &version, &p.normalized, &p.ids))
            .collect();
        let results = self
            .store
            .commit_normalizations(commits, self.clock.now())
            .await?;
        out.extend(completed(plans.into_iter().map(|p| p.item), results));
        Ok(out)
    }

    /// Write the pending resolution commits (in order) and give each reference the
    /// entity that stands.
    async fn flush_resolutions(
        &self,
        pending: &mut Vec<((usize, u32), ResolutionCommit)>,
        plans: &mut [Plan],
    ) -> Result<()> {
        if pending.is_empty() {
            return Ok(());
        }
        let (slots, commits): (Vec<(usize, u32)>, Vec<ResolutionCommit>) =
            std::mem::take(pending).into_iter().unzip();
        let standing = self.store.commit_resolutions(commits).await?;
        for ((p, o), entity) in slots.into_iter().zip(standing) {
            plans[p].ids[o as usize] = Some(entity);
        }
        Ok(())
    }

    /// Commit a claim's normalization with its resolved entity `ids`: the staged
    /// assertions and one adjudication unit per subject.
    async fn commit_normalized(
        &self,
        item: &WorkItem,
        claim: &ClaimRecord,
        version: &str,
        normalized: &NormalizedClaim,
        ids: &[Option<EntityId>],
    ) -> StageResult<()> {
        let c = self.normalization_commit(item, claim, version, normalized, ids);
        self.store
            .commit_normalization(
                &c.lease,
                c.claim,
                &c.normalizer_version,
                c.output,
                c.assertions,
                c.follow_up,
                self.clock.now(),
            )
            .await?;
        Ok(())
    }

    /// What committing a claim's normalization writes.
    fn normalization_commit(
        &self,
        item: &WorkItem,
        claim: &ClaimRecord,
        version: &str,
        normalized: &NormalizedClaim,
        ids: &[Option<EntityId>],
    ) -> NormalizationCommit {
        let ns = item.namespace_id;
        let now = self.clock.now();
        let assertions = assertions_for(item, claim, normalized, ids);
        let adjudicator = self.adjudicator_version();
        let subjects: BTreeSet<EntityId> = assertions.iter().map(|a| a.subject).collect();
        let follow_up = subjects
            .into_iter()
            .map(|s| {
                NewWork::now(
                    ns,
                    Stage::Adjudicate,
                    unit_id(item.version_id, s),
                    item.version_id,
                    adjudicator.clone(),
                    now,
                )
            })
            .collect();
        NormalizationCommit {
            lease: Lease::of(item),
            claim: claim.claim_id,
            normalizer_version: version.to_string(),
            output: serde_json::json!({
                "normalized": normalized,
                "entity_ids": ids,
            }),
            assertions,
            follow_up,
        }
    }

    /// Follow merge redirects to the active root.
    /// The active roots of many entities at once (one store read per redirect level);
    /// ids that do not exist are absent from the map.
    pub(super) async fn roots_of(
        &self,
        ns: NamespaceId,
        ids: &[EntityId],
    ) -> Result<HashMap<EntityId, EntityRecord>> {
        let mut wanted: Vec<EntityId> = ids.to_vec();
        wanted.sort();
        wanted.dedup();
        // start id -> the id its chain has reached.
        let mut at: HashMap<EntityId, EntityId> = wanted.iter().map(|id| (*id, *id)).collect();
        let mut roots: HashMap<EntityId, EntityRecord> = HashMap::new();
        for _ in 0..32 {
            let mut next: Vec<EntityId> = at.values().copied().collect();
            next.sort();
            next.dedup();
            if next.is_empty() {
                return Ok(roots);
            }
            let found = self.entity_map(ns, &next).await?;
            let mut still: HashMap<EntityId, EntityId> = HashMap::new();
            for (start, current) in at {
                match found.get(&current) {
                    None => {}
                    Some(e) => match e.merged_into {
                        Some(into) => {
                            still.insert(start, into);
                        }
                        None => {
                            roots.insert(start, e.clone());
                        }
                    },
                }
            }
            at = still;
        }
        Err(Error::store("a merge redirect chain is too long"))
    }

    /// The records of `ids` by id (merged ones too); missing ids are absent.
    async fn entity_map(
        &self,
        ns: NamespaceId,
        ids: &[EntityId],
    ) -> Result<HashMap<EntityId, EntityRecord>> {
        Ok(self
            .store
            .entities(ns, ids)
            .await?
            .into_iter()
            .map(|e| (e.entity_id, e))
            .collect())
    }

    pub(super) async fn root_of(&self, ns: NamespaceId, id: EntityId) -> Result<EntityRecord> {
        self.roots_of(ns, &[id]).await?.remove(&id).ok_or_else(|| {
            Error::new(
                ErrorCode::InvalidInput,
                format!("entity {id} does not exist in this namespace"),
            )
        })
    }

    async fn snapshot(
        &self,
        ns: NamespaceId,
        doc: DocumentId,
        name: &str,
        name_lemma: &str,
    ) -> Result<Snapshot> {
        let blocking = self
            .store
            .block_entities(&self.blocking_query(ns, name, name_lemma))
            .await?;
        // Every candidate's active root, in one batched read.
        let ids: Vec<EntityId> = blocking.hits.iter().map(|hit| hit.entity_id).collect();
        let roots = self.roots_of(ns, &ids).await?;
        let (candidates, complete) = self.candidates(name_lemma, &blocking, &roots)?;
        let bindings = self.store.document_bindings(ns, doc, name_lemma).await?;
        let ids: Vec<EntityId> = candidates
            .iter()
            .map(|c| c.record.entity_id)
            .chain(bindings.iter().map(|b| b.entity_id))
            .collect();
        let exclusions = self.store.exclusions(ns, &ids).await?;
        let mut snap = finish_snapshot(candidates, complete, bindings, &exclusions);
        snap.short_form = self.short_form(ns, doc, name_lemma).await?;
        Ok(snap)
    }

    /// The one longer name of document `doc` that the one-word `name_lemma`
    /// abbreviates ([`short_form_of`]), for the offline resolver.
    async fn short_form(
        &self,
        ns: NamespaceId,
        doc: DocumentId,
        name_lemma: &str,
    ) -> Result<Option<(EntityId, String)>> {
        if self.fact_models().resolver.is_some() || name_lemma.contains(' ') {
            return Ok(None);
        }
        let bound: Vec<DocumentBinding> = self
            .store
            .document_entity_bindings(ns, doc)
            .await?
            .into_iter()
            .filter(|b| abbreviates(name_lemma, &b.lemma))
            .collect();
        if bound.is_empty() {
            return Ok(None);
        }
        let ids: Vec<EntityId> = bound.iter().map(|b| b.entity_id).collect();
        let roots = self.roots_of(ns, &ids).await?;
        Ok(short_form_of(name_lemma, &bound, |e| {
            roots.get(&e).map_or(e, |r| r.entity_id)
        }))
    }

    /// The blocking query of a name (its lemma, trigrams and phonetic codes).
    fn blocking_query(&self, ns: NamespaceId, name: &str, name_lemma: &str) -> BlockingQuery {
        let mut grams = trigrams(name_lemma);
        grams.sort();
        grams.dedup();
        BlockingQuery {
            namespace_id: ns,
            lemma: name_lemma.to_string(),
            trigrams: grams,
            phonetic: daitch_mokotoff(name),
            limit: self.config.facts.blocking_limit,
        }
    }

    /// The ranked candidates of a block (each hit's active root from `roots`, scored
    /// by tier, in D103 order, at most `t4_candidates`) and whether the block is
    /// complete.
    fn candidates(
        &self,
        name_lemma: &str,
        blocking: &BlockingResult,
        roots: &HashMap<EntityId, EntityRecord>,
    ) -> Result<(Vec<Cand>, bool)> {
        let cfg = &self.config.facts;
        let mut by_root: BTreeMap<EntityId, Cand> = BTreeMap::new();
        // The name's trigrams once, not once per hit (`trigram_similarity`).
        let name_codes = trigram_codes(name_lemma);
        let similarity = |alias: &str| trigram_code_similarity(&name_codes, &trigram_codes(alias));
        let scored: Vec<(&crate::entities::AliasHit, f32)> = blocking
            .hits
            .iter()
            .map(|hit| {
                let score = match hit.via {
                    BlockingTier::T0 => 1.0,
                    BlockingTier::T1 => similarity(&hit.alias_lemma),
                    BlockingTier::T2 => 0.5_f32.max(similarity(&hit.alias_lemma)),
                };
                (hit, score)
            })
            .filter(|(hit, score)| hit.via != BlockingTier::T1 || *score >= T1_FLOOR)
            .collect();
        for (hit, score) in scored {
            let Some(root) = roots.get(&hit.entity_id) else {
                return Err(Error::new(
                    ErrorCode::InvalidInput,
                    format!("entity {} does not exist in this namespace", hit.entity_id),
                ));
            };
            // The record is copied once per candidate, not once per hit.
            let entry = by_root.entry(root.entity_id).or_insert_with(|| Cand {
                record: root.clone(),
                score: 0.0,
                via: vec![],
            });
            entry.score = entry.score.max(score);
            if !entry.via.contains(&hit.via) {
                entry.via.push(hit.via);
                entry.via.sort();
            }
        }
        let mut candidates: Vec<Cand> = by_root.into_values().collect();
        rank_candidates(name_lemma, &mut candidates);
        let mut complete = !blocking.truncated;
        if candidates.len() > cfg.t4_candidates {
            candidates.truncate(cfg.t4_candidates);
            complete = false;
        }
        Ok((candidates, complete))
    }

    /// D102: replay a same-document T4 match, if exactly one anchored binding exists
    /// and its anchor decision is still a T4 match to an active entity.
    async fn replay(
        &self,
        ns: NamespaceId,
        snap: &Snapshot,
    ) -> Result<Option<(EntityId, DecisionId)>> {
        let [binding] = snap.bindings.as_slice() else {
            return Ok(None);
        };
        let Some(anchor) = binding.anchor else {
            return Ok(None);
        };
        let Some(decision) = self.store.resolution_decision(ns, anchor).await? else {
            return Ok(None);
        };
        if decision.tier != "T4" || decision.verdict != "match" {
            return Ok(None);
        }
        let root = self.root_of(ns, binding.entity_id).await?;
        Ok(Some((root.entity_id, anchor)))
    }

    async fn decide(
        &self,
        item: &WorkItem,
        claim: &ClaimRecord,
        (ordinal, attempt): (u32, u32),
        (name, name_lemma): (&str, &str),
        snap: &Snapshot,
    ) -> StageResult<Verdict> {
        let ns = item.namespace_id;
        let mut verdict = Verdict {
            tier: "mint",
            entity: None,
            t3_score: None,
            t3_outcome: "no_candidates".into(),
            t3_scores: HashMap::new(),
            rationale: String::new(),
            model: None,
            exclusions: vec![],
            features: serde_json::json!({}),
            shown: snap.candidates.len(),
        };
        if let Some((entity, anchor)) = self.replay(ns, snap).await? {
            verdict.tier = "T0";
            verdict.entity = Some(entity);
            verdict.t3_outcome = "not_run".into();
            verdict.rationale = "document-local replay of an earlier T4 match (D102)".into();
            verdict.features = serde_json::json!({
                "contract": "document-t0-v1",
                "document_id": claim.document_id,
                "lemma": name_lemma,
                "anchor_decision": anchor,
            });
            return Ok(verdict);
        }
        if self.fact_models().resolver.is_none()
            && snap.bindings.is_empty()
            && let Some((entity, long)) = &snap.short_form
        {
            // Within one document a one-word name is the longer name it abbreviates
            // (`Alice` after `Alice Moreno`, `Mel` after `Melanie`), when that longer
            // name is the only one it abbreviates.
            verdict.tier = "offline_short_form";
            verdict.entity = Some(*entity);
            verdict.t3_outcome = "not_run".into();
            verdict.rationale = format!(
                "offline resolver: the short form of `{long}`, the one longer name of this document it abbreviates"
            );
            verdict.features = serde_json::json!({
                "policy": "document-short-form",
                "long_lemma": long,
            });
            return Ok(verdict);
        }
        if snap.candidates.is_empty() {
            verdict.rationale = if snap.complete {
                "no candidate in a complete block: minted".into()
            } else {
                "no candidate surfaced: minted".into()
            };
            return Ok(verdict);
        }
        let Some(resolver) = self.fact_models().resolver.clone() else {
            // The labelled offline policy: first exact-lemma candidate in D103 order,
            // never across a cannot-link with an entity this document already bound
            // to the same name.
            verdict.t3_outcome = "not_run".into();
            verdict.features = serde_json::json!({
                "policy": "offline-exact",
                // The design decision this policy departs from (an exact name
                // never decides alone), as the site's decision log numbers it.
                "departs_from": "D95",
            });
            let bound: Vec<EntityId> = snap.bindings.iter().map(|b| b.entity_id).collect();
            let pick = snap.candidates.iter().find(|c| {
                c.via.contains(&BlockingTier::T0)
                    && !bound.iter().any(|b| {
                        let id = c.record.entity_id;
                        snap.excluded.contains(&(id.min(*b), id.max(*b)))
                    })
            });
            match pick {
                Some(c) => {
                    verdict.tier = "offline_exact";
                    verdict.entity = Some(c.record.entity_id);
                    verdict.rationale =
                        "offline resolver: first exact-lemma candidate in D103 order".into();
                }
                None => {
                    verdict.tier = "mint";
                    verdict.rationale = "offline resolver: no exact-lemma candidate; minted".into();
                }
            }
            return Ok(verdict);
        };
        // T3: profile-embedding similarity may accept exactly one strong candidate.
        let with_profile: Vec<&Cand> = snap
            .candidates
            .iter()
            .filter(|c| c.record.profile_key.is_some())
            .collect();
        if with_profile.is_empty() {
            verdict.t3_outcome = "profile_missing".into();
        } else {
            let generation = self.embedder.identity().generation();
            let keys: Vec<String> = with_profile
                .iter()
                .filter_map(|c| c.record.profile_key.clone())
                .collect();
            let vectors: HashMap<String, Vec<f32>> = self
                .store
                .vectors(ns, &generation, &keys)
                .await?
                .into_iter()
                .collect();
            if vectors.is_empty() {
                verdict.t3_outcome = "embedding_missing_or_wrong_generation".into();
            } else {
                let query = format!("{name}: {}", claim.text);
                let q = self
                    .embedder
                    .embed(&[query], EmbedPurpose::Query)
                    .await
                    .map_err(Error::from)?
                    .into_iter()
                    .next()
                    .unwrap_or_default();
                let mut strong = Vec::new();
                for c in &with_profile {
                    let Some(v) = c.record.profile_key.as_ref().and_then(|k| vectors.get(k)) else {
                        continue;
                    };
                    let s = cosine(&q, v);
                    verdict.t3_scores.insert(c.record.entity_id, s);
                    verdict.t3_score = Some(verdict.t3_score.map_or(s, |b: f32| b.max(s)));
                    if s >= self.config.facts.t3_threshold {
                        strong.push(c.record.entity_id);
                    }
                }
                match strong.as_slice() {
                    [one] => {
                        verdict.tier = "T3";
                        verdict.t3_outcome = "accepted".into();
                        verdict.entity = Some(*one);
                        verdict.rationale =
                            "exactly one candidate profile above the T3 threshold".into();
                        return Ok(verdict);
                    }
                    [] => verdict.t3_outcome = "below_threshold".into(),
                    _ => verdict.t3_outcome = "multiple_candidates".into(),
                }
            }
        }
        // T4: one joint, match-biased call over the bounded candidate set.
        let mut shown = Vec::with_capacity(snap.candidates.len());
        for c in &snap.candidates {
            let facts = self
                .store
                .list_facts(
                    &FactFilter {
                        namespace_id: ns,
                        entities: vec![c.record.entity_id],
                        at: None,
                        history: false,
                        overlap: None,
                        documents: None,
                        group: None,
                        unsupported: false,
                    },
                    8,
                )
                .await?;
            shown.push(T4Candidate {
                entity_id: c.record.entity_id,
                canonical_name: c.record.canonical_name.clone(),
                aliases: c.record.aliases.clone(),
                profile: c.record.profile_summary.clone(),
                facts: facts.into_iter().map(|f| f.statement).collect(),
                t3_score: verdict.t3_scores.get(&c.record.entity_id).copied(),
            });
        }
        let input = T4Input {
            name: name.to_string(),
            claim_text: claim.text.clone(),
            document_title: claim.document_title.clone(),
            candidates: shown,
        };
        let request = t4_request(&input);
        let (value, model) = self
            .call_recorded(
                &resolver,
                &request,
                item,
                format!("resolve_t4#{ordinal}.{attempt}"),
                crate::entities::t4::T4_PROMPT_VERSION,
            )
            .await?;
        let (choice, rationale) = parse_t4(&value, &input).map_err(|m| StageError::Failed {
            message: format!("unusable T4 answer: {m}"),
            retryable: true,
        })?;
        verdict.tier = "T4";
        verdict.model = Some(model);
        verdict.rationale = rationale;
        match choice {
            T4Verdict::Match(id) => verdict.entity = Some(id),
            T4Verdict::New => {
                verdict.exclusions = snap.candidates.iter().map(|c| c.record.entity_id).collect();
            }
        }
        Ok(verdict)
    }

    /// The commit of a decided reference: the decision row with its candidate audit,
    /// the entity to mint (when none was chosen), the reference's aliases (its name,
    /// and its surface when that differs), the mention, exclusions and the D102
    /// binding.
    #[allow(clippy::too_many_arguments)]
    fn build_commit(
        &self,
        ns: NamespaceId,
        claim: &ClaimRecord,
        (ordinal, attempt): (u32, u32),
        reference: &crate::facts::normalization::EntityRef,
        (name, name_lemma): (&str, &str),
        snap: &Snapshot,
        verdict: Verdict,
        resolver_version: &str,
    ) -> ResolutionCommit {
        let doc = claim.document_id;
        let (entity_id, mint) = match verdict.entity {
            Some(id) => (id, None),
            None => (
                EntityId::new(),
                Some((name.to_string(), name_lemma.to_string())),
            ),
        };
        let decision_id = DecisionId::new();
        let candidates = snap
            .candidates
            .iter()
            .map(|c| CandidateAudit {
                entity_id: c.record.entity_id,
                canonical_name: c.record.canonical_name.clone(),
                score: c.score,
                via: c.via.clone(),
                t3_score: verdict.t3_scores.get(&c.record.entity_id).copied(),
            })
            .collect();
        let mut features = verdict.features.clone();
        if let Some(obj) = features.as_object_mut() {
            obj.insert("candidates_shown".into(), verdict.shown.into());
            obj.insert("attempt".into(), attempt.into());
        }
        let decision = ResolutionDecision {
            decision_id,
            namespace_id: ns,
            claim_id: claim.claim_id,
            document_id: doc,
            ordinal,
            name: name.to_string(),
            lemma: name_lemma.to_string(),
            tier: verdict.tier.to_string(),
            candidates,
            complete: snap.complete,
            t3_score: verdict.t3_score,
            t3_outcome: verdict.t3_outcome.clone(),
            verdict: if mint.is_some() { "new" } else { "match" }.to_string(),
            entity_id,
            rationale: verdict.rationale.clone(),
            model: verdict.model.clone(),
            resolver_version: resolver_version.to_string(),
            features,
            created_at: self.clock.now(),
        };
        let mut aliases = vec![NewAlias::of(name)];
        let surface = reference.surface.trim();
        if !surface.is_empty() && surface != name {
            aliases.push(NewAlias::of(surface));
        }
        aliases.retain(|a| !a.lemma.is_empty());
        let anchor = (verdict.tier == "T4" && mint.is_none()).then_some(decision_id);
        let anchor = if verdict.tier == "T0" {
            snap.bindings.first().and_then(|b| b.anchor)
        } else {
            anchor
        };
        ResolutionCommit {
            decision,
            mint,
            aliases,
            mention: Mention {
                claim_id: claim.claim_id,
                start: reference.start,
                end: reference.end,
                surface: if surface.is_empty() { name } else { surface }.to_string(),
            },
            exclusions: verdict.exclusions.clone(),
            binding: Some(DocumentBinding {
                document_id: doc,
                lemma: name_lemma.to_string(),
                entity_id,
                anchor,
            }),
        }
    }

    /// Resolve one entity reference of a claim (snapshot → decide → revalidate under
    /// the lemma lock → commit; bounded retries on a changed snapshot).
    async fn resolve_reference(
        &self,
        item: &WorkItem,
        claim: &ClaimRecord,
        ordinal: u32,
        reference: &crate::facts::normalization::EntityRef,
    ) -> StageResult<Option<EntityId>> {
        let ns = item.namespace_id;
        let resolver_version = self.resolver_version();
        if let Some(done) = self
            .store
            .resolution_for(ns, claim.claim_id, ordinal, &resolver_version)
            .await?
        {
            return Ok(Some(self.root_of(ns, done.entity_id).await?.entity_id));
        }
        let name = reference.name.trim();
        let name_lemma = lemma(name);
        if name_lemma.is_empty() {
            return Ok(None);
        }
        let doc = claim.document_id;
        let lock_key = format!("lemma:{ns}:{name_lemma}");
        for attempt in 0..self.config.facts.resolve_retries.max(1) {
            // The lemma's lock is taken first: a decision that needs no provider call
            // (the offline resolver, or nothing to compare with) is made under it on
            // one snapshot. A decision that calls a model releases it for the call,
            // then re-takes it and commits only if the snapshot is unchanged.
            let early = self.lock(lock_key.clone()).await?;
            let snap = self.snapshot(ns, doc, name, &name_lemma).await?;
            let offline = self.fact_models().resolver.is_none() || snap.candidates.is_empty();
            let (verdict, _guard) = if offline {
                let verdict = self
                    .decide(item, claim, (ordinal, attempt), (name, &name_lemma), &snap)
                    .await?;
                (verdict, early)
            } else {
                drop(early);
                let verdict = self
                    .decide(item, claim, (ordinal, attempt), (name, &name_lemma), &snap)
                    .await?;
                let guard = self.lock(lock_key.clone()).await?;
                let fresh = self.snapshot(ns, doc, name, &name_lemma).await?;
                if fresh.fingerprint != snap.fingerprint {
                    tracing::info!(claim = %claim.claim_id, ordinal, attempt, "resolution snapshot changed during the decision: discarded and retried");
                    continue;
                }
                (verdict, guard)
            };
            let commit = self.build_commit(
                ns,
                claim,
                (ordinal, attempt),
                reference,
                (name, &name_lemma),
                &snap,
                verdict,
                &resolver_version,
            );
            // A concurrent run of the same work may have committed first: its decision stands.
            let committed = self
                .store
                .commit_resolution(commit, self.clock.now())
                .await?;
            return Ok(Some(committed));
        }
        Err(StageError::Failed {
            message: format!(
                "entity resolution of `{name}` kept changing under concurrent writers ({} attempts); retried later",
                self.config.facts.resolve_retries.max(1)
            ),
            retryable: true,
        })
    }

    // ---------------------------------------------------------- e3.adjudicate

    async fn barrier_done(&self, ns: NamespaceId, version: VersionId) -> Result<bool> {
        for stage in [Stage::Extract, Stage::Normalize] {
            let b = self.store.barrier(ns, version, stage).await?;
            if b.done + b.dead_letter < b.total {
                return Ok(false);
            }
        }
        Ok(true)
    }

    pub(super) async fn run_adjudicate(&self, item: &WorkItem) -> StageResult<Outcome> {
        let ns = item.namespace_id;
        let now = self.clock.now();
        // A unit enqueued under a former adjudicator generation still names pending
        // assertions: the current adjudicator applies them.
        if !self.barrier_done(ns, item.version_id).await? {
            let later = now + chrono::Duration::milliseconds(500);
            self.store
                .defer(&Lease::of(item), DeferReason::Barrier, later, now)
                .await?;
            return Ok(Outcome::Deferred);
        }
        let subjects = self.store.pending_subjects(ns, item.version_id).await?;
        let Some(entity) = subjects
            .into_iter()
            .find(|s| unit_id(item.version_id, *s) == item.target_id)
        else {
            // Another unit of the same entity already drained its assertions.
            self.store.complete(&Lease::of(item), vec![], now).await?;
            return Ok(Outcome::Completed);
        };
        let root = self.root_of(ns, entity).await?;
        let guard = self.lock(format!("entity:{ns}:{}", root.entity_id)).await?;
        let assertions = self.store.unapplied_assertions(ns, &[entity]).await?;
        let mut touched: BTreeSet<EntityId> = BTreeSet::new();
        touched.insert(root.entity_id);
        // The entity's live facts are read once per unit and kept current as each
        // assertion lands (the unit holds the entity's lock): a hub's list is not
        // re-read and re-decoded for every assertion.
        let mut block: Vec<(FactRecord, Vec<u64>)> = self
            .entity_facts(ns, root.entity_id, true)
            .await?
            .into_iter()
            .map(|f| {
                let codes = statement_codes(&f.statement);
                (f, codes)
            })
            .collect();
        if self.fact_models().adjudicator.is_none() {
            // Offline, every verdict is decided against the block kept in memory and
            // the unit commits once; the block is then read again as stored.
            self.apply_offline(item, &root, &assertions, &mut block, &mut touched)
                .await?;
            block = self
                .entity_facts(ns, root.entity_id, true)
                .await?
                .into_iter()
                .map(|f| (f, vec![]))
                .collect();
        }
        for (i, a) in assertions
            .iter()
            .enumerate()
            .filter(|_| self.fact_models().adjudicator.is_some())
        {
            let mut a = a.clone();
            a.subject = root.entity_id;
            if let Some(o) = a.object {
                let o = self.root_of(ns, o).await?.entity_id;
                touched.insert(o);
                a.object = Some(o);
            }
            let changed = self.apply_one(item, &a, i, &block).await?;
            if !changed.is_empty() {
                let fresh = self.store.facts(ns, &changed).await?;
                block.retain(|(f, _)| !changed.contains(&f.fact_id));
                block.extend(
                    fresh
                        .into_iter()
                        .filter(|f| {
                            f.invalidated_at.is_none()
                                && f.superseded_by.is_none()
                                && (f.subject == root.entity_id || f.object == Some(root.entity_id))
                        })
                        .map(|f| {
                            let codes = statement_codes(&f.statement);
                            (f, codes)
                        }),
                );
            }
        }
        // Profiles refresh when an entity's facts change: the unit's entity always;
        // an object only until it has a profile (a hub object's profile would otherwise
        // be rebuilt by every unit that names it; it refreshes with its own assertions).
        for e in &touched {
            if *e == root.entity_id {
                let facts = block.iter().map(|(f, _)| f.clone()).collect();
                self.refresh_profile_from(ns, *e, facts).await?;
                continue;
            }
            let needs = self
                .store
                .entities(ns, &[*e])
                .await?
                .first()
                .is_some_and(|r| r.profile_key.is_none());
            if needs {
                self.refresh_profile(ns, *e).await?;
            }
        }
        drop(guard);
        // Fact work that lands after its document was deleted is retired through
        // the deletion cascade (D135): facts its testimony alone supports close.
        // (After the entity's lock is released: the cascade refreshes profiles under
        // their own locks.)
        self.retire_if_deleted(ns, item.version_id).await?;
        self.store
            .complete(&Lease::of(item), vec![], self.clock.now())
            .await?;
        Ok(Outcome::Completed)
    }

    /// Adjudicate a batch of one namespace's entity units together, offline: each
    /// unit decided exactly as [`Self::run_adjudicate`] decides it, in batch order,
    /// with a few store reads and one commit for the whole batch instead of a dozen
    /// statements per unit.
    ///
    /// The barriers and pending subjects of the batch's versions, the roots of its
    /// entities, their unapplied assertions and the roots' live facts are read at
    /// once; every root is locked (in order). Units are decided against blocks kept
    /// in memory, so that units of one root see each other's verdicts; a unit of an
    /// entity an earlier unit drained has nothing left to do, as it would find one
    /// at a time. All verdicts commit in one [`MemoryStore::apply_assertions`], the
    /// profiles are refreshed from the facts as stored, and every unit completes in
    /// one [`MemoryStore::complete_many`]. An entity without a profile that is only
    /// named as an object gets its profile from the facts as the batch leaves them.
    pub(super) async fn adjudicate_together(
        &self,
        ns: NamespaceId,
        items: &[WorkItem],
    ) -> StageResult<Vec<(WorkItem, StageResult<Outcome>)>> {
        let mut out = Vec::new();
        // Per version: its pending subjects, or None while its barrier stands.
        let mut versions: HashMap<VersionId, Option<Vec<EntityId>>> = HashMap::new();
        for item in items {
            if versions.contains_key(&item.version_id) {
                continue;
            }
            let pending = if self.barrier_done(ns, item.version_id).await? {
                Some(self.store.pending_subjects(ns, item.version_id).await?)
            } else {
                None
            };
            versions.insert(item.version_id, pending);
        }
        let mut units: Vec<(&WorkItem, EntityId)> = Vec::new();
        // Items that complete without a verdict.
        let mut finished: Vec<&WorkItem> = Vec::new();
        for item in items {
            match versions.get(&item.version_id) {
                Some(Some(subjects)) => {
                    match subjects
                        .iter()
                        .find(|s| unit_id(item.version_id, **s) == item.target_id)
                    {
                        Some(entity) => units.push((item, *entity)),
                        None => finished.push(item),
                    }
                }
                // The barrier stands: deferred as one at a time.
                _ => out.push((item.clone(), self.run_adjudicate(item).await)),
            }
        }
        let entities: Vec<EntityId> = units.iter().map(|(_, e)| *e).collect();
        let roots = if entities.is_empty() {
            HashMap::new()
        } else {
            self.roots_of(ns, &entities).await?
        };
        let root_ids: BTreeSet<EntityId> = roots.values().map(|r| r.entity_id).collect();
        let guards = self
            .lock_all(
                root_ids
                    .iter()
                    .map(|r| format!("entity:{ns}:{r}"))
                    .collect(),
            )
            .await?;
        let mut pending: HashMap<EntityId, Vec<Assertion>> = HashMap::new();
        let subjects: Vec<EntityId> = entities
            .iter()
            .copied()
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        if !subjects.is_empty() {
            for a in self.store.unapplied_assertions(ns, &subjects).await? {
                pending.entry(a.subject).or_default().push(a);
            }
        }
        let mut blocks: HashMap<EntityId, Vec<(FactRecord, Vec<u64>)>> = self
            .facts_of_entities(ns, &root_ids.iter().copied().collect::<Vec<_>>(), true)
            .await?
            .into_iter()
            .map(|(e, facts)| {
                let block = facts
                    .into_iter()
                    .map(|f| {
                        let codes = statement_codes(&f.statement);
                        (f, codes)
                    })
                    .collect();
                (e, block)
            })
            .collect();
        let inputs = self.offline_inputs(ns, pending.values().flatten()).await?;
        // The chains of the roots whose pending assertions belong to one (the rest
        // never read one).
        let chain_roots: Vec<EntityId> = pending
            .iter()
            .filter_map(|(e, list)| {
                let root = roots.get(e)?;
                list.iter()
                    .any(|a| assertion_chain(a, &root.canonical_name).is_some())
                    .then_some(root.entity_id)
            })
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        let mut chains = self.offline_chains(ns, &chain_roots).await?;
        let mut commits = Vec::new();
        let mut drained: HashSet<EntityId> = HashSet::new();
        let mut decided: Vec<&WorkItem> = Vec::new();
        let mut unit_roots: BTreeSet<EntityId> = BTreeSet::new();
        let mut objects: BTreeSet<EntityId> = BTreeSet::new();
        for (item, entity) in units {
            let Some(root) = roots.get(&entity) else {
                out.push((
                    item.clone(),
                    Err(Error::new(
                        ErrorCode::InvalidInput,
                        format!("entity {entity} does not exist in this namespace"),
                    )
                    .into()),
                ));
                continue;
            };
            if !drained.insert(entity) {
                // Another unit of the same entity already drained its assertions.
                finished.push(item);
                continue;
            }
            let assertions = pending.remove(&entity).unwrap_or_default();
            let block = blocks.entry(root.entity_id).or_default();
            let mut touched = BTreeSet::new();
            match self.offline_commits(
                item,
                root,
                &assertions,
                block,
                &inputs,
                &mut chains,
                &mut touched,
            ) {
                Ok(c) => {
                    commits.extend(c);
                    unit_roots.insert(root.entity_id);
                    objects.extend(touched);
                    decided.push(item);
                }
                Err(e) => out.push((item.clone(), Err(e))),
            }
        }
        let changed: BTreeSet<FactId> = commits.iter().flat_map(|c| c.changed_facts()).collect();
        self.store.apply_assertions(ns, commits).await?;
        // Profiles from the facts as stored: each unit's root, and an object only
        // until it has a profile. A root's facts are its block as read before the
        // verdicts, but for the facts a verdict of the batch changed (of any root),
        // which are read again: nothing else the batch writes changes a fact.
        let changed_ids: Vec<FactId> = changed.iter().copied().collect();
        let restated: Vec<FactRecord> = self
            .store
            .facts(ns, &changed_ids)
            .await?
            .into_iter()
            .filter(|f| f.invalidated_at.is_none() && f.superseded_by.is_none())
            .collect();
        let mut refresh: Vec<(EntityId, Vec<FactRecord>)> = Vec::with_capacity(unit_roots.len());
        for root in &unit_roots {
            let mut facts: Vec<FactRecord> = blocks
                .remove(root)
                .unwrap_or_default()
                .into_iter()
                .map(|(f, _)| f)
                .filter(|f| !changed.contains(&f.fact_id))
                .collect();
            facts.extend(
                restated
                    .iter()
                    .filter(|f| f.subject == *root || f.object == Some(*root))
                    .cloned(),
            );
            refresh.push((*root, facts));
        }
        let objects: Vec<EntityId> = objects.difference(&unit_roots).copied().collect();
        if !objects.is_empty() {
            let bare: Vec<EntityId> = self
                .store
                .entities(ns, &objects)
                .await?
                .into_iter()
                .filter(|r| r.profile_key.is_none())
                .map(|r| r.entity_id)
                .collect();
            refresh.extend(self.facts_of_entities(ns, &bare, false).await?);
        }
        self.refresh_profiles_from(ns, refresh).await?;
        drop(guards);
        // Fact work that lands after its document was deleted is retired (D135).
        let decided_versions: BTreeSet<VersionId> = decided.iter().map(|i| i.version_id).collect();
        for version in decided_versions {
            self.retire_if_deleted(ns, version).await?;
        }
        let done: Vec<&WorkItem> = decided.into_iter().chain(finished).collect();
        let leases: Vec<Lease> = done.iter().map(|i| Lease::of(i)).collect();
        let results = self.store.complete_many(&leases, self.clock.now()).await?;
        out.extend(completed(done.into_iter().cloned(), results));
        Ok(out)
    }

    /// The live facts of several entities (as [`Self::entity_facts`] gives them, at
    /// most 10,000 each), read a few entities at a time.
    async fn facts_of_entities(
        &self,
        ns: NamespaceId,
        entities: &[EntityId],
        unsupported: bool,
    ) -> Result<HashMap<EntityId, Vec<FactRecord>>> {
        const PER_ENTITY: usize = 10_000;
        let mut out: HashMap<EntityId, Vec<FactRecord>> = HashMap::new();
        for part in entities.chunks(16) {
            let facts = self
                .store
                .list_facts(
                    &FactFilter {
                        namespace_id: ns,
                        entities: part.to_vec(),
                        at: None,
                        history: false,
                        overlap: None,
                        documents: None,
                        group: None,
                        unsupported,
                    },
                    (PER_ENTITY * part.len()) as u32,
                )
                .await?;
            // A listing of several entities is in the order of each one's own: the
            // facts of one are its listing, as long as none is cut.
            let mut lists: Vec<(EntityId, Vec<FactRecord>)> =
                part.iter().map(|e| (*e, Vec::new())).collect();
            for f in facts {
                // A fact between two of the entities is in both lists: cloned for
                // all but the last.
                let mut owners: Vec<&mut Vec<FactRecord>> = lists
                    .iter_mut()
                    .filter(|(e, list)| {
                        (f.subject == *e || f.object == Some(*e)) && list.len() < PER_ENTITY
                    })
                    .map(|(_, list)| list)
                    .collect();
                if let Some(last) = owners.pop() {
                    for list in owners {
                        list.push(f.clone());
                    }
                    last.push(f);
                }
            }
            out.extend(lists);
        }
        Ok(out)
    }

    /// Adjudicate a unit's assertions offline: each verdict against `block` (the
    /// root's live facts) as the earlier verdicts left it, all committed at once.
    async fn apply_offline(
        &self,
        item: &WorkItem,
        root: &EntityRecord,
        assertions: &[Assertion],
        block: &mut Vec<(FactRecord, Vec<u64>)>,
        touched: &mut BTreeSet<EntityId>,
    ) -> StageResult<()> {
        let ns = item.namespace_id;
        let inputs = self.offline_inputs(ns, assertions).await?;
        let chain_roots: Vec<EntityId> = if assertions
            .iter()
            .any(|a| assertion_chain(a, &root.canonical_name).is_some())
        {
            vec![root.entity_id]
        } else {
            vec![]
        };
        let mut chains = self.offline_chains(ns, &chain_roots).await?;
        let commits =
            self.offline_commits(item, root, assertions, block, &inputs, &mut chains, touched)?;
        self.store.apply_assertions(ns, commits).await?;
        Ok(())
    }

    /// The single-valued chains of `roots` ([`crate::facts::chain`]): per root and
    /// predicate, every fact of which the root is the subject that is not
    /// invalidated (superseded ones included), with its supporting testimony and
    /// the claims recorded as contradicting it. At most [`MAX_CHAIN_FACTS`] per
    /// root, the most recently recorded.
    async fn offline_chains(
        &self,
        ns: NamespaceId,
        roots: &[EntityId],
    ) -> Result<HashMap<(EntityId, String), Vec<ChainEntry>>> {
        let mut out: HashMap<(EntityId, String), Vec<ChainEntry>> = HashMap::new();
        for root in roots {
            let mut facts: Vec<(String, FactRecord)> = self
                .store
                .list_facts(
                    &FactFilter {
                        namespace_id: ns,
                        entities: vec![*root],
                        at: None,
                        history: true,
                        overlap: None,
                        documents: None,
                        group: None,
                        unsupported: true,
                    },
                    10_000,
                )
                .await?
                .into_iter()
                .filter(|f| f.subject == *root && f.invalidated_at.is_none())
                .filter_map(|f| {
                    let key = chain_key(
                        f.kind,
                        f.predicate.as_deref(),
                        &f.statement,
                        &f.subject_name,
                    )?;
                    Some((key, f))
                })
                .collect();
            facts.sort_by_key(|(_, f)| std::cmp::Reverse((f.recorded_at, f.fact_id)));
            facts.truncate(MAX_CHAIN_FACTS);
            for (key, fact) in facts {
                let evidence = self.store.fact_evidence(ns, fact.fact_id).await?;
                let support: Vec<ClaimId> = evidence
                    .iter()
                    .filter(|e| e.stance == Stance::Support)
                    .map(|e| e.claim_id)
                    .collect();
                let contradicted_by: BTreeSet<ClaimId> = evidence
                    .iter()
                    .filter(|e| e.stance == Stance::Contradict)
                    .map(|e| e.claim_id)
                    .collect();
                let support = self
                    .store
                    .claims(ns, &support)
                    .await?
                    .into_iter()
                    .map(|c| Support {
                        said: Said {
                            claim: c.claim_id,
                            document: c.document_id,
                            at: c.asserted_at,
                            from: c.validity.from,
                            turn: turn_position(&c),
                        },
                        window: relation_window(&c.validity),
                        current: c.is_current,
                        past: reports_past_state(&c.text),
                        cue: has_change_cue(&c.text),
                    })
                    .collect();
                out.entry((*root, key)).or_default().push(ChainEntry {
                    fact,
                    support,
                    contradicted_by,
                    rule: None,
                });
            }
        }
        Ok(out)
    }

    /// What offline verdicts on `assertions` read besides the block: the roots of
    /// their objects, which of their labels have a vector of this generation, and
    /// which claims of single-valued relations carry a change cue.
    async fn offline_inputs<'a>(
        &self,
        ns: NamespaceId,
        assertions: impl IntoIterator<Item = &'a Assertion>,
    ) -> Result<OfflineInputs> {
        let assertions: Vec<&Assertion> = assertions.into_iter().collect();
        let objects: Vec<EntityId> = assertions.iter().filter_map(|a| a.object).collect();
        let object_roots = if objects.is_empty() {
            HashMap::new()
        } else {
            self.roots_of(ns, &objects).await?
        };
        let generation = self.component_version(Stage::EmbedFacts);
        let keys: Vec<String> = assertions
            .iter()
            .map(|a| embedding_key(&a.statement))
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        let labels: HashSet<String> = self
            .store
            .existing_vectors(ns, &generation, &keys)
            .await?
            .into_iter()
            .collect();
        let single: Vec<ClaimId> = assertions
            .iter()
            .filter(|a| match a.kind {
                FactKind::Relation => single_valued(a.predicate.as_deref()),
                FactKind::Observation => crate::facts::state::mentions_state(&a.statement),
            })
            .map(|a| a.claim_id)
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        let (mut cues, mut past, mut turns) = (HashSet::new(), HashSet::new(), HashMap::new());
        if !single.is_empty() {
            for c in self.store.claims(ns, &single).await? {
                if let Some(at) = turn_position(&c) {
                    turns.insert(c.claim_id, at);
                }
                if reports_past_state(&c.text) {
                    past.insert(c.claim_id);
                } else if has_change_cue(&c.text) {
                    cues.insert(c.claim_id);
                }
            }
        }
        Ok(OfflineInputs {
            object_roots,
            labels,
            cues,
            past,
            turns,
        })
    }

    /// The offline commits of a unit's `assertions`, each verdict decided against
    /// `block` as the earlier ones left it (the block is updated in memory as each
    /// commit will land). A relation of a single-valued predicate is decided
    /// against its whole chain in `chains` instead ([`Self::chain_apply`]). Fails,
    /// changing nothing, when an object does not exist.
    #[allow(clippy::too_many_arguments)]
    fn offline_commits(
        &self,
        item: &WorkItem,
        root: &EntityRecord,
        assertions: &[Assertion],
        block: &mut Vec<(FactRecord, Vec<u64>)>,
        inputs: &OfflineInputs,
        chains: &mut HashMap<(EntityId, String), Vec<ChainEntry>>,
        touched: &mut BTreeSet<EntityId>,
    ) -> StageResult<Vec<ApplyCommit>> {
        let (object_roots, labels) = (&inputs.object_roots, &inputs.labels);
        let ns = item.namespace_id;
        if let Some(o) = assertions
            .iter()
            .filter_map(|a| a.object)
            .find(|o| !object_roots.contains_key(o))
        {
            return Err(Error::new(
                ErrorCode::InvalidInput,
                format!("entity {o} does not exist in this namespace"),
            )
            .into());
        }
        let mut commits = Vec::with_capacity(assertions.len());
        for a in assertions {
            let mut a = a.clone();
            a.subject = root.entity_id;
            let mut object_name = None;
            if let Some(o) = a.object {
                let Some(object) = object_roots.get(&o) else {
                    continue; // checked above
                };
                touched.insert(object.entity_id);
                a.object = Some(object.entity_id);
                object_name = Some(object.canonical_name.clone());
            }
            let at = self.clock.now();
            // As stored: to the millisecond.
            let stored_at = crate::time::parse_rfc3339(&crate::time::to_rfc3339(&at)).unwrap_or(at);
            let record = |nf: &NewFact| FactRecord {
                fact_id: nf.fact_id,
                namespace_id: ns,
                kind: nf.kind,
                subject: nf.subject,
                subject_name: root.canonical_name.clone(),
                predicate: nf.predicate.clone(),
                object: nf.object,
                object_name: object_name.clone(),
                statement: nf.statement.clone(),
                window: nf.window.clone(),
                validity_kind: nf.validity_kind,
                recorded_at: stored_at,
                invalidated_at: None,
                closed_reason: None,
                contradiction_group: None,
                superseded_by: None,
                evidence_count: 1,
                contradict_count: 0,
                embedding_key: nf.embedding_key.clone(),
                updated_at: stored_at,
            };
            if let Some(key) = assertion_chain(&a, &root.canonical_name) {
                let chain = chains.entry((root.entity_id, key)).or_default();
                let tense = (
                    inputs.cues.contains(&a.claim_id),
                    inputs.past.contains(&a.claim_id),
                    inputs.turns.get(&a.claim_id).copied(),
                );
                let commit = self.chain_apply(item, &a, chain, labels, tense, at, &record);
                // The block holds the root's live facts: the new fact, and every fact
                // of the chain as the decision leaves it (a fact that is live again
                // rejoins it).
                for l in &commit.links {
                    let Some(e) = chain.iter().find(|e| e.fact.fact_id == l.fact) else {
                        continue;
                    };
                    match block.iter_mut().find(|(f, _)| f.fact_id == l.fact) {
                        Some((f, _)) => *f = e.fact.clone(),
                        None if e.fact.superseded_by.is_none() => {
                            block.push((e.fact.clone(), statement_codes(&e.fact.statement)));
                        }
                        None => {}
                    }
                }
                if let Some(nf) = &commit.new_fact
                    && !block.iter().any(|(f, _)| f.fact_id == nf.fact_id)
                {
                    block.push((record(nf), statement_codes(&nf.statement)));
                }
                commits.push(commit);
                continue;
            }
            let candidates = self.nominate(&a, block);
            let commit = self.offline_apply(item, &a, &candidates, labels, at);
            // What later verdicts read of the block once this commit lands: revised
            // windows and the new fact.
            for (fact, w) in &commit.windows {
                if let Some((f, _)) = block.iter_mut().find(|(f, _)| f.fact_id == *fact) {
                    f.window = w.clone();
                }
            }
            if let Some(nf) = &commit.new_fact {
                block.push((record(nf), statement_codes(&nf.statement)));
            }
            commits.push(commit);
        }
        Ok(commits)
    }

    /// The offline commit of a single-valued relation `a` against its whole
    /// `chain` (every value of the subject's predicate, superseded ones included):
    /// evidence for an identical statement whose own window is compatible, else a
    /// new fact; then the chain is decided again ([`rechain`]) and the commit
    /// carries the links of every fact the decision changes. The transcript's
    /// verdict names what became of the assertion's fact — `superseded` (a later
    /// value replaces it), `supersede` (it replaced a value), `contradict` — with
    /// the rule, else `evidence` or `new`; its input lists every link changed.
    /// `chain` is left as the commit will store it.
    #[allow(clippy::too_many_arguments)]
    fn chain_apply(
        &self,
        item: &WorkItem,
        a: &Assertion,
        chain: &mut Vec<ChainEntry>,
        labels_with_vectors: &HashSet<String>,
        (cue, past, turn): (bool, bool, Option<u64>),
        at: Timestamp,
        record: &dyn Fn(&NewFact) -> FactRecord,
    ) -> ApplyCommit {
        let candidate_ids: Vec<FactId> = chain.iter().map(|e| e.fact.fact_id).collect();
        let same = chain
            .iter()
            .filter(|e| identical(a, &e.fact))
            .map(|e| (e.own_window(), e))
            .filter(|(w, _)| a.window.compatible(w))
            .min_by_key(|(w, e)| (w.valid_from, e.fact.statement.clone(), e.fact.fact_id))
            .map(|(_, e)| e.fact.fact_id);
        let (verdict, reason) = match same {
            Some(_) => ("evidence", "identical statement with a compatible window"),
            None if chain.is_empty() => ("new", "no live fact of the entity to compare with"),
            None => (
                "new",
                "offline adjudicator: no identical statement with a compatible window",
            ),
        };
        let mut c = self.assemble_apply(
            item,
            a,
            &candidate_ids,
            labels_with_vectors,
            (verdict, same, same),
            (
                reason.into(),
                serde_json::Value::Null,
                None,
                OFFLINE_ADJUDICATOR_VERSION.into(),
            ),
            at,
        );
        let support = Support {
            said: Said {
                claim: a.claim_id,
                document: a.document_id,
                at: a.asserted_at,
                from: a.window.valid_from,
                turn,
            },
            window: a.window.clone(),
            current: true,
            past,
            cue,
        };
        match same {
            Some(fact) => {
                if let Some(e) = chain.iter_mut().find(|e| e.fact.fact_id == fact) {
                    e.support.push(support);
                }
            }
            None => {
                if let Some(nf) = &c.new_fact {
                    chain.push(ChainEntry {
                        fact: record(nf),
                        support: vec![support],
                        contradicted_by: BTreeSet::new(),
                        rule: None,
                    });
                }
            }
        }
        let links = relink(chain);
        let result = c.transcript.result_fact;
        let mine = chain.iter().find(|e| e.fact.fact_id == result);
        let rule_of = |fact: FactId| {
            chain
                .iter()
                .find(|e| e.fact.fact_id == fact)
                .and_then(|e| e.rule)
        };
        let replaced = links
            .iter()
            .find(|(l, _)| l.fact != result && l.superseded_by == Some(result))
            .map(|(l, r)| (l.fact, *r));
        let rival = mine.and_then(|m| m.fact.contradiction_group).and_then(|g| {
            chain
                .iter()
                .find(|e| e.fact.fact_id != result && e.fact.contradiction_group == Some(g))
                .map(|e| e.fact.fact_id)
        });
        let decided = match (mine.and_then(|m| m.fact.superseded_by), replaced, rival) {
            (Some(successor), _, _) => Some(("superseded", successor, rule_of(result))),
            (None, Some((predecessor, rule)), _) => Some(("supersede", predecessor, rule)),
            (None, None, Some(other)) => Some(("contradict", other, rule_of(result))),
            _ => None,
        };
        if let Some((verdict, target, rule)) = decided {
            c.transcript.verdict = verdict.into();
            c.transcript.target_fact = Some(target);
            // Every supersession and contradiction the chain rule decides names its
            // rule (a contradiction the rival opened names it on the rival).
            if let Some(rule) = rule.or_else(|| rule_of(target)) {
                c.transcript.reason = rule.into();
            }
        }
        if c.transcript.verdict == "new" {
            // A new fact is stamped with the configured adjudicator's generation.
            c.transcript.adjudicator_version = self.adjudicator_version();
        }
        let changed: Vec<serde_json::Value> = links
            .iter()
            .map(|(l, rule)| {
                serde_json::json!({
                    "fact": l.fact,
                    "superseded_by": l.superseded_by,
                    "valid_until": l.window.valid_until.as_ref().map(crate::time::to_rfc3339),
                    "contradiction_group": l.contradiction_group,
                    "rule": rule,
                })
            })
            .collect();
        // The rule's own inputs only: the judged assertion is the record's
        // `assertion_id` (staged, immutable, forgotten with it) and the candidates
        // its `candidates`, so neither is copied into every transcript.
        c.transcript.input = serde_json::json!({
            "rule": {"identical": same.is_some(), "chain": changed},
        });
        c.links = links.into_iter().map(|(l, _)| l).collect();
        c
    }

    /// The live facts an entity takes part in (as subject or object), current view;
    /// with `unsupported`, also those no current testimony supports (adjudication
    /// compares new testimony against them, so returning support revives a fact
    /// instead of duplicating it).
    async fn entity_facts(
        &self,
        ns: NamespaceId,
        entity: EntityId,
        unsupported: bool,
    ) -> Result<Vec<FactRecord>> {
        Ok(self
            .facts_of_entities(ns, &[entity], unsupported)
            .await?
            .remove(&entity)
            .unwrap_or_default())
    }

    /// Live facts nominated for an assertion from the subject's `block` (its live
    /// facts): the entity block (every live fact the subject is the subject of, and
    /// the reverse of a symmetric relation), ranked by similarity only to cut a hub's
    /// list. D123's shared-context nomination is not built yet.
    fn nominate(&self, a: &Assertion, block: &[(FactRecord, Vec<u64>)]) -> Vec<FactRecord> {
        // The entity block: the subject's own facts (its observations and the relations
        // it is the subject of), plus the reverse of a symmetric relation. A hub's
        // incoming relations (everyone who works for Acme) are not the subject's facts.
        let facts: Vec<(&FactRecord, &[u64])> = block
            .iter()
            .filter(|(f, _)| {
                f.subject == a.subject
                    || (f.kind == FactKind::Relation
                        && a.object == Some(f.subject)
                        && f.object == Some(a.subject))
            })
            .map(|(f, codes)| (f, codes.as_slice()))
            .collect();
        crate::facts::adjudicate::rank_candidate_refs(a, &facts, self.config.facts.hub_top_k)
            .into_iter()
            .cloned()
            .collect()
    }

    /// The commit of a verdict on `a`: either evidence for `evidence_for`, or a new
    /// fact (the assertion's own window) with the claim's support, and the
    /// transcript; the verdict-specific parts are added by the caller. A new label
    /// without a vector of this generation gets its embedding work in the same
    /// commit.
    #[allow(clippy::too_many_arguments)]
    fn assemble_apply(
        &self,
        item: &WorkItem,
        a: &Assertion,
        candidate_ids: &[FactId],
        labels_with_vectors: &HashSet<String>,
        (verdict, target, evidence_for): (&str, Option<FactId>, Option<FactId>),
        (reason, input, model, version): (String, serde_json::Value, Option<String>, String),
        at: Timestamp,
    ) -> ApplyCommit {
        let ns = item.namespace_id;
        let generation = self.component_version(Stage::EmbedFacts);
        let new_fact = match evidence_for {
            Some(_) => None,
            None => Some(NewFact {
                fact_id: FactId::new(),
                kind: a.kind,
                subject: a.subject,
                predicate: a.predicate.clone(),
                object: a.object,
                statement: a.statement.clone(),
                window: a.window.clone(),
                validity_kind: a.validity_kind,
                embedding_key: embedding_key(&a.statement),
            }),
        };
        let result = evidence_for
            .or(new_fact.as_ref().map(|f| f.fact_id))
            .unwrap_or_default();
        // A new label without a vector of this generation is embedded by e3.embed,
        // enqueued in the same transaction as the fact.
        let follow_up = match &new_fact {
            Some(f) if !labels_with_vectors.contains(&f.embedding_key) => vec![NewWork::now(
                ns,
                Stage::EmbedFacts,
                f.fact_id.uuid(),
                item.version_id,
                generation.clone(),
                at,
            )],
            _ => vec![],
        };
        ApplyCommit {
            follow_up,
            assertion_id: a.assertion_id,
            new_fact,
            evidence: vec![(result, a.claim_id, Stance::Support)],
            windows: vec![],
            contradiction: None,
            superseded: None,
            links: vec![],
            transcript: AdjudicationRecord {
                adjudication_id: AdjudicationId::new(),
                namespace_id: ns,
                assertion_id: a.assertion_id,
                claim_id: a.claim_id,
                verdict: verdict.to_string(),
                target_fact: target,
                result_fact: result,
                candidates: candidate_ids.to_vec(),
                reason,
                input,
                model,
                adjudicator_version: version,
                created_at: at,
            },
        }
    }

    /// The offline commit of `a` against its `candidates`: evidence for an
    /// identical statement with a compatible window (revising its window), else a
    /// new fact. (A single-valued relation is decided as a chain instead:
    /// [`Self::chain_apply`].)
    fn offline_apply(
        &self,
        item: &WorkItem,
        a: &Assertion,
        candidates: &[FactRecord],
        labels_with_vectors: &HashSet<String>,
        at: Timestamp,
    ) -> ApplyCommit {
        let candidate_ids: Vec<FactId> = candidates.iter().map(|f| f.fact_id).collect();
        // As in a chain's transcript: the rule's inputs, not copies of the
        // assertion and the candidates the record names.
        let input = |identical: bool, revision: Option<&Window>| {
            serde_json::json!({
                "rule": {"identical": identical, "window_revision": revision},
            })
        };
        if let Some(fact) = offline_verdict(a, candidates) {
            let revised = candidates
                .iter()
                .find(|f| f.fact_id == fact)
                .and_then(|f| merged_window(&f.window, &a.window));
            let mut c = self.assemble_apply(
                item,
                a,
                &candidate_ids,
                labels_with_vectors,
                ("evidence", Some(fact), Some(fact)),
                (
                    "identical statement with a compatible window".into(),
                    input(true, revised.as_ref()),
                    None,
                    OFFLINE_ADJUDICATOR_VERSION.to_string(),
                ),
                at,
            );
            c.windows = revised.map(|w| vec![(fact, w)]).unwrap_or_default();
            return c;
        }
        let reason = if candidates.is_empty() {
            "no live fact of the entity to compare with"
        } else {
            "offline adjudicator: no identical statement with a compatible window"
        };
        // A new fact is stamped with the configured adjudicator's generation
        // (offline or not): a chat adjudicator sends here what it need not judge.
        self.assemble_apply(
            item,
            a,
            &candidate_ids,
            labels_with_vectors,
            ("new", None, None),
            (
                reason.into(),
                input(false, None),
                None,
                self.adjudicator_version(),
            ),
            at,
        )
    }

    /// Adjudicate one assertion against candidates from `block` and commit it.
    /// Returns the facts the commit created or changed.
    async fn apply_one(
        &self,
        item: &WorkItem,
        a: &Assertion,
        index: usize,
        block: &[(FactRecord, Vec<u64>)],
    ) -> StageResult<Vec<FactId>> {
        let ns = item.namespace_id;
        let candidates = self.nominate(a, block);
        let candidate_ids: Vec<FactId> = candidates.iter().map(|f| f.fact_id).collect();
        let generation = self.component_version(Stage::EmbedFacts);
        let labels_with_vectors: HashSet<String> = self
            .store
            .existing_vectors(ns, &generation, &[embedding_key(&a.statement)])
            .await?
            .into_iter()
            .collect();
        // One commit: either evidence for `target`, or a new fact (the assertion's own
        // window) with the claim's support; the verdict-specific parts are added after.
        let commit = |verdict: &str,
                      target: Option<FactId>,
                      evidence_for: Option<FactId>,
                      reason: String,
                      input: serde_json::Value,
                      model: Option<String>,
                      version: String| {
            self.assemble_apply(
                item,
                a,
                &candidate_ids,
                &labels_with_vectors,
                (verdict, target, evidence_for),
                (reason, input, model, version),
                self.clock.now(),
            )
        };
        // A chat verdict only where the cheap rung does not decide and there is
        // something to compare with.
        let model = self
            .fact_models()
            .adjudicator
            .clone()
            .filter(|_| !candidates.is_empty() && offline_verdict(a, &candidates).is_none());
        let commit = if let Some(model) = model {
            let claim_text = self
                .store
                .claims(ns, &[a.claim_id])
                .await?
                .into_iter()
                .next()
                .map(|c| c.text)
                .unwrap_or_else(|| a.statement.clone());
            let subject_name = self.root_of(ns, a.subject).await?.canonical_name;
            let object_name = match a.object {
                Some(o) => Some(self.root_of(ns, o).await?.canonical_name),
                None => None,
            };
            let input = AdjudicationInput {
                assertion: a.clone(),
                claim_text,
                subject_name,
                object_name,
                candidates: candidates.clone(),
            };
            let request = adjudication_request(&input);
            let (value, model_name) = self
                .call_recorded(
                    &model,
                    &request,
                    item,
                    format!("adjudicate#{index}"),
                    crate::facts::adjudicate::ADJUDICATE_PROMPT_VERSION,
                )
                .await?;
            let recorded = serde_json::json!({
                "system": request.system,
                "user": request.user,
                "answer": value,
            });
            let version = self.adjudicator_version();
            let judged = |verdict: &str, target, evidence_for, reason| {
                commit(
                    verdict,
                    target,
                    evidence_for,
                    reason,
                    recorded.clone(),
                    Some(model_name.clone()),
                    version.clone(),
                )
            };
            match parse_adjudication(&value, &input) {
                Err(message) => judged(
                    "new",
                    None,
                    None,
                    format!("fail-safe to new: unusable verdict ({message})"),
                ),
                Ok((ChatVerdict::Evidence { fact, revised }, reason)) => {
                    let mut c = judged("evidence", Some(fact), Some(fact), reason);
                    c.windows = revised.map(|w| vec![(fact, w)]).unwrap_or_default();
                    c
                }
                Ok((ChatVerdict::Supersede { fact }, reason)) => {
                    let capped = candidates.iter().find(|c| c.fact_id == fact).and_then(|p| {
                        supersede_close(&p.window, p.validity_kind, a.window.valid_from)
                    });
                    let reason = match &capped {
                        Some(_) => reason,
                        None => format!(
                            "{reason} (the successor's start does not lie inside the predecessor's window: nothing capped, both stand)"
                        ),
                    };
                    let mut c = judged("supersede", Some(fact), None, reason);
                    let id = c.transcript.result_fact;
                    c.superseded = capped.as_ref().map(|_| (fact, id));
                    c.windows = capped.map(|w| vec![(fact, w)]).unwrap_or_default();
                    c
                }
                Ok((ChatVerdict::Contradict { fact }, reason)) => {
                    let mut c = judged("contradict", Some(fact), None, reason);
                    let id = c.transcript.result_fact;
                    let group = candidates
                        .iter()
                        .find(|f| f.fact_id == fact)
                        .and_then(|f| f.contradiction_group)
                        .unwrap_or_else(uuid::Uuid::new_v4);
                    // Symmetric stances: the new claim contradicts the old fact, the old
                    // fact's support contradicts the new one.
                    c.evidence.push((fact, a.claim_id, Stance::Contradict));
                    for e in self.store.fact_evidence(ns, fact).await? {
                        if e.stance == Stance::Support {
                            c.evidence.push((id, e.claim_id, Stance::Contradict));
                        }
                    }
                    c.contradiction = Some((group, vec![fact, id]));
                    c
                }
                Ok((ChatVerdict::New, reason)) => judged("new", None, None, reason),
            }
        } else {
            // Only evidence or new reach here (no candidates, or an identical one).
            self.offline_apply(item, a, &candidates, &labels_with_vectors, self.clock.now())
        };
        let changed = commit.changed_facts();
        self.store
            .apply_assertion(ns, commit, self.clock.now())
            .await?;
        Ok(changed)
    }

    /// Rebuild an entity's profile (summary prose from its salient facts) and embed it.
    pub(super) async fn refresh_profile(&self, ns: NamespaceId, entity: EntityId) -> Result<()> {
        let facts = self.entity_facts(ns, entity, false).await?;
        self.refresh_profile_from(ns, entity, facts).await
    }

    /// [`Self::refresh_profile`] from the entity's live facts, already read.
    async fn refresh_profile_from(
        &self,
        ns: NamespaceId,
        entity: EntityId,
        facts: Vec<FactRecord>,
    ) -> Result<()> {
        self.refresh_profiles_from(ns, vec![(entity, facts)]).await
    }

    /// Refresh the profiles of several entities from their live facts, already read
    /// (each entity once): the summaries whose key changed are written, and those
    /// without a vector of this generation embedded in one call.
    async fn refresh_profiles_from(
        &self,
        ns: NamespaceId,
        wanted: Vec<(EntityId, Vec<FactRecord>)>,
    ) -> Result<()> {
        if wanted.is_empty() {
            return Ok(());
        }
        let ids: Vec<EntityId> = wanted.iter().map(|(e, _)| *e).collect();
        let records = self.entity_map(ns, &ids).await?;
        // (entity, summary, key) of the profiles that change.
        let mut changes: Vec<(EntityId, String, String)> = Vec::new();
        for (entity, mut facts) in wanted {
            let Some(e) = records.get(&entity) else {
                continue;
            };
            // A profile speaks only of served facts.
            facts.retain(|f| f.evidence_count > 0);
            // Best supported first, then the latest in world time (a known start
            // before an unknown one), then by statement: never by when a worker
            // happened to record a fact, so the same sources give the same profile.
            facts.sort_by(|a, b| {
                b.evidence_count
                    .cmp(&a.evidence_count)
                    .then(b.window.valid_from.cmp(&a.window.valid_from))
                    .then(a.statement.cmp(&b.statement))
                    .then(a.fact_id.cmp(&b.fact_id))
            });
            let summary = profile_summary(e, &facts);
            let key = embedding_key(&summary);
            if e.profile_key.as_deref() != Some(key.as_str()) {
                changes.push((entity, summary, key));
            }
        }
        if changes.is_empty() {
            return Ok(());
        }
        let identity = self.embedder.identity().clone();
        let generation = identity.generation();
        let keys: Vec<String> = changes
            .iter()
            .map(|(_, _, k)| k.clone())
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        let have: HashSet<String> = self
            .store
            .existing_vectors(ns, &generation, &keys)
            .await?
            .into_iter()
            .collect();
        let mut seen: HashSet<&str> = HashSet::new();
        let missing: Vec<(&String, &String)> = changes
            .iter()
            .filter(|(_, _, k)| !have.contains(k) && seen.insert(k.as_str()))
            .map(|(_, summary, k)| (k, summary))
            .collect();
        for part in missing.chunks(self.embedder.max_batch().max(1)) {
            let texts: Vec<String> = part.iter().map(|(_, s)| (*s).clone()).collect();
            let vectors = self
                .embedder
                .embed(&texts, EmbedPurpose::Document)
                .await
                .map_err(Error::from)?;
            if vectors.len() != texts.len() {
                return Err(Error::from(ProviderError::Malformed {
                    message: format!(
                        "the embedder returned {} vectors for {} profiles",
                        vectors.len(),
                        texts.len()
                    ),
                }));
            }
            let rows = part
                .iter()
                .map(|(k, _)| (*k).clone())
                .zip(vectors)
                .collect();
            self.store
                .commit_vectors(&[], ns, &identity, rows, self.clock.now())
                .await?;
        }
        for (entity, summary, key) in changes {
            self.store
                .set_profile(ns, entity, &summary, &key, self.clock.now())
                .await?;
        }
        Ok(())
    }

    // ------------------------------------------------------------------ reads

    /// Entities of a namespace (active ones unless `include_merged`), oldest first.
    pub async fn entities(
        &self,
        namespace: &str,
        include_merged: bool,
        limit: u32,
    ) -> Result<Vec<EntityRecord>> {
        let Some(ns) = self.store.namespace(namespace).await? else {
            return Ok(vec![]);
        };
        self.store
            .list_entities(
                &EntityFilter {
                    namespace_id: ns.id,
                    include_merged,
                    lemma: None,
                },
                limit,
            )
            .await
    }

    /// Look an entity up by id or name (exact lemma; ambiguity is an error listing
    /// the candidates). Redirects are followed and disclosed.
    pub async fn entity(&self, namespace: &str, name_or_id: &str) -> Result<EntityDetail> {
        let ns = self.namespace_or_not_found(namespace).await?;
        let asked = match name_or_id.parse::<EntityId>() {
            Ok(id) => id,
            Err(_) => {
                let l = lemma(name_or_id);
                let found = self
                    .store
                    .list_entities(
                        &EntityFilter {
                            namespace_id: ns,
                            include_merged: false,
                            lemma: Some(l),
                        },
                        50,
                    )
                    .await?;
                match found.as_slice() {
                    [] => {
                        return Err(Error::new(
                            ErrorCode::NotFound,
                            format!("no entity named `{name_or_id}`"),
                        ));
                    }
                    [one] => one.entity_id,
                    many => {
                        let ids: Vec<String> = many
                            .iter()
                            .map(|e| format!("{} ({})", e.entity_id, e.canonical_name))
                            .collect();
                        return Err(Error::new(
                            ErrorCode::InvalidInput,
                            format!(
                                "`{name_or_id}` names {} entities; use an id: {}",
                                many.len(),
                                ids.join(", ")
                            ),
                        ));
                    }
                }
            }
        };
        let entity = self.root_of(ns, asked).await.map_err(|_| {
            Error::new(
                ErrorCode::NotFound,
                format!("no entity {asked} in `{namespace}`"),
            )
        })?;
        let redirected_from = (entity.entity_id != asked).then_some(asked);
        let members = self.members(ns, entity.entity_id).await?;
        let facts = self
            .store
            .list_facts(
                &FactFilter {
                    namespace_id: ns,
                    entities: members.clone(),
                    at: None,
                    history: false,
                    overlap: None,
                    documents: None,
                    group: None,
                    unsupported: false,
                },
                1_000,
            )
            .await?;
        let mut mentions = Vec::new();
        for m in &members {
            mentions.extend(self.store.mentions(ns, *m, 50).await?);
        }
        let merges = self.store.merge_events(ns, &members).await?;
        Ok(EntityDetail {
            merged_members: members
                .iter()
                .copied()
                .filter(|m| *m != entity.entity_id)
                .collect(),
            entity,
            redirected_from,
            facts: self.present_facts(ns, facts).await?,
            mentions,
            merges,
        })
    }

    /// The entity and every entity whose redirect chain ends at it.
    pub(super) async fn members(&self, ns: NamespaceId, root: EntityId) -> Result<Vec<EntityId>> {
        let mut out = vec![root];
        let mut frontier = vec![root];
        let events = self.store.merge_events(ns, &[]).await?;
        while let Some(next) = frontier.pop() {
            for e in &events {
                if e.into == next && e.reverted_at.is_none() && !out.contains(&e.from) {
                    out.push(e.from);
                    frontier.push(e.from);
                }
            }
        }
        Ok(out)
    }

    /// Facts shown through redirects: subject and object names are the active roots'.
    pub(super) async fn present_facts(
        &self,
        ns: NamespaceId,
        facts: Vec<FactRecord>,
    ) -> Result<Vec<FactRecord>> {
        let ends: Vec<EntityId> = facts
            .iter()
            .flat_map(|f| std::iter::once(f.subject).chain(f.object))
            .collect();
        let cache = self.roots_of(ns, &ends).await?;
        let mut out = Vec::with_capacity(facts.len());
        for mut f in facts {
            for (id, name) in [
                (Some(f.subject), &mut f.subject_name),
                (f.object, f.object_name.get_or_insert_with(String::new)),
            ] {
                let Some(id) = id else { continue };
                if let Some(r) = cache.get(&id) {
                    *name = r.canonical_name.clone();
                }
            }
            if f.object.is_none() {
                f.object_name = None;
            }
            if let Some(r) = cache.get(&f.subject) {
                f.subject = r.entity_id;
            }
            if let Some(o) = f.object
                && let Some(r) = cache.get(&o)
            {
                f.object = Some(r.entity_id);
            }
            out.push(f);
        }
        Ok(out)
    }

    pub(super) async fn namespace_or_not_found(&self, namespace: &str) -> Result<NamespaceId> {
        self.store
            .namespace(namespace)
            .await?
            .map(|n| n.id)
            .ok_or_else(|| {
                Error::new(
                    ErrorCode::NotFound,
                    format!("namespace `{namespace}` does not exist"),
                )
            })
    }

    /// Merge entity `from` into `into` (a reversible redirect, D21).
    pub async fn merge_entities(
        &self,
        namespace: &str,
        from: EntityId,
        into: EntityId,
    ) -> Result<MergeEvent> {
        self.merge_because(namespace, from, into, None).await
    }

    /// [`Self::merge_entities`], its event recording `reason` (a rule name and who
    /// decided: never a name, which would outlive a forget).
    pub(super) async fn merge_because(
        &self,
        namespace: &str,
        from: EntityId,
        into: EntityId,
        reason: Option<serde_json::Value>,
    ) -> Result<MergeEvent> {
        let ns = self.namespace_or_not_found(namespace).await?;
        if from == into {
            return Err(Error::invalid_input(
                "an entity cannot be merged into itself",
            ));
        }
        let a = self.store.entities(ns, &[from]).await?;
        let b = self.store.entities(ns, &[into]).await?;
        let (Some(a), Some(b)) = (a.first(), b.first()) else {
            return Err(Error::new(
                ErrorCode::NotFound,
                "both entities must exist in this namespace",
            ));
        };
        let from_members = self.members(ns, a.entity_id).await?;
        let into_members = self.members(ns, b.entity_id).await?;
        // Both entities' locks, in id order, so two merges never wait on each other.
        let (first, second) = if from < into {
            (from, into)
        } else {
            (into, from)
        };
        let _g1 = self.lock(format!("entity:{ns}:{first}")).await?;
        let _g2 = self.lock(format!("entity:{ns}:{second}")).await?;
        let event = MergeEvent {
            merge_id: MergeId::new(),
            namespace_id: ns,
            from,
            into,
            // Ids only: a name in an audit row would outlive a forget of the
            // document it came from.
            snapshot: {
                let mut snapshot = serde_json::json!({
                    "from": {"entity": from, "members": from_members},
                    "into": {"entity": into, "members": into_members},
                });
                if let Some(reason) = reason {
                    snapshot["reason"] = reason;
                }
                snapshot
            },
            created_at: self.clock.now(),
            reverted_at: None,
        };
        self.store.merge_entities(event.clone()).await?;
        Ok(event)
    }

    /// Undo a merge: the exact prior membership comes back.
    pub async fn unmerge_entities(&self, namespace: &str, merge: MergeId) -> Result<MergeEvent> {
        let ns = self.namespace_or_not_found(namespace).await?;
        self.store
            .unmerge_entities(ns, merge, self.clock.now())
            .await
    }

    /// Facts of a namespace: the first page of [`Engine::facts_page`].
    pub async fn facts(&self, namespace: &str, query: &FactQuery) -> Result<Vec<FactRecord>> {
        Ok(self.facts_page(namespace, query, None).await?.facts)
    }

    /// One page of the facts of a namespace, by subject name then recorded order;
    /// `cursor` (from the previous page of the same query) continues after it.
    /// A `limit` past [`MAX_FACTS_PAGE`](crate::limits::MAX_FACTS_PAGE), or a cursor
    /// this store did not issue for this query, is `invalid_parameter`.
    pub async fn facts_page(
        &self,
        namespace: &str,
        query: &FactQuery,
        cursor: Option<&str>,
    ) -> Result<FactPage> {
        validate_namespace(namespace)?;
        crate::limits::check_facts_limit(query.limit)?;
        let limit = if query.limit == 0 {
            crate::limits::MAX_FACTS_PAGE
        } else {
            query.limit
        };
        // The cursor binds to the namespace and the query it continues.
        let digest = sha256_hex(
            format!(
                "{namespace}|{:?}|{:?}|{}",
                query.entity, query.at, query.history
            )
            .as_bytes(),
        )[..16]
            .to_string();
        let after = match cursor {
            None => None,
            Some(c) => {
                let c: FactCursor = decode_signed(&self.cursor_key, c, MAX_FACT_CURSOR_CHARS)
                    .ok_or_else(foreign_cursor)?;
                if c.q != digest {
                    return Err(Error::new(
                        ErrorCode::InvalidParameter,
                        "the cursor belongs to another fact listing: repeat the listing that produced it",
                    ));
                }
                Some((c.n, c.s))
            }
        };
        let Some(ns) = self.store.namespace(namespace).await? else {
            return Ok(FactPage {
                facts: vec![],
                cursor: None,
            });
        };
        let entities = match query.entity {
            Some(e) => {
                let root = self.root_of(ns.id, e).await.map_err(|_| {
                    Error::new(
                        ErrorCode::NotFound,
                        format!("no entity {e} in `{namespace}`"),
                    )
                })?;
                self.members(ns.id, root.entity_id).await?
            }
            None => vec![],
        };
        // One more than asked says whether another page follows.
        let mut rows = self
            .store
            .list_facts_after(
                &FactFilter {
                    namespace_id: ns.id,
                    entities,
                    at: query.at,
                    history: query.history,
                    overlap: None,
                    documents: None,
                    group: None,
                    unsupported: false,
                },
                after.as_ref().map(|(n, s)| (n.as_str(), *s)),
                limit + 1,
            )
            .await?;
        let cursor = if rows.len() > limit as usize {
            rows.truncate(limit as usize);
            rows.last().map(|(seq, f)| {
                encode_signed(
                    &self.cursor_key,
                    &FactCursor {
                        n: f.subject_name.clone(),
                        s: *seq,
                        q: digest.clone(),
                    },
                )
            })
        } else {
            None
        };
        let facts = self
            .present_facts(ns.id, rows.into_iter().map(|(_, f)| f).collect())
            .await?;
        Ok(FactPage { facts, cursor })
    }

    /// The fact, its evidence claims with spans and source text, its adjudication
    /// transcripts and the resolution decisions of its entities.
    pub async fn trace(&self, namespace: &str, fact: FactId) -> Result<FactTrace> {
        let ns = self.namespace_or_not_found(namespace).await?;
        let Some(record) = self.store.facts(ns, &[fact]).await?.into_iter().next() else {
            return Err(Error::new(
                ErrorCode::NotFound,
                format!("no fact {fact} in `{namespace}`"),
            ));
        };
        let mut evidence = Vec::new();
        for e in self.store.fact_evidence(ns, fact).await? {
            let claim = self
                .store
                .claims(ns, &[e.claim_id])
                .await?
                .into_iter()
                .next();
            evidence.push(TracedEvidence { evidence: e, claim });
        }
        let adjudications = self.store.adjudications(ns, fact).await?;
        let events = self.store.fact_events(ns, fact).await?;
        let mut ids = vec![record.subject];
        ids.extend(record.object);
        let resolutions = self.store.resolution_decisions(ns, &ids).await?;
        let fact = self
            .present_facts(ns, vec![record])
            .await?
            .into_iter()
            .next()
            .ok_or_else(|| Error::store("fact vanished"))?;
        Ok(FactTrace {
            fact,
            evidence,
            adjudications,
            resolutions,
            events,
        })
    }

    /// The namespace's predicate registry.
    pub async fn predicates(&self, namespace: &str) -> Result<Vec<PredicateRow>> {
        let Some(ns) = self.store.namespace(namespace).await? else {
            return Ok(vec![]);
        };
        self.ensure_predicates(ns.id).await?;
        self.store.predicates(ns.id).await
    }
}

/// The deterministic profile text: canonical name, aliases, salient facts.
pub fn profile_summary(e: &EntityRecord, salient: &[FactRecord]) -> String {
    let mut out = e.canonical_name.clone();
    let aliases: Vec<&String> = e
        .aliases
        .iter()
        .filter(|a| lemma(a) != e.lemma)
        .take(8)
        .collect();
    if !aliases.is_empty() {
        out.push_str(&format!(
            " (also: {})",
            aliases
                .iter()
                .map(|a| a.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    out.push('.');
    for f in salient.iter().take(8) {
        out.push(' ');
        out.push_str(f.statement.trim());
        if !f.statement.trim_end().ends_with(['.', '!', '?']) {
            out.push('.');
        }
    }
    out
}

/// What offline verdicts read besides an entity's block (see
/// [`Engine::offline_inputs`]).
struct OfflineInputs {
    object_roots: HashMap<EntityId, EntityRecord>,
    labels: HashSet<String>,
    cues: HashSet<ClaimId>,
    /// Claims of single-valued relations that report the state as over.
    past: HashSet<ClaimId>,
    /// Where claims of single-valued relations said in a turn were said.
    turns: HashMap<ClaimId, u64>,
}

/// Where a claim was said in a conversation turn: the byte offset of its first
/// span in its first version, when that span falls in a turn.
fn turn_position(c: &ClaimRecord) -> Option<u64> {
    let o = c.occurrences.first().filter(|o| !o.event_ids.is_empty())?;
    o.spans.first().map(|s| s.start as u64)
}

/// The window a claim gives a relation: its own, but a relation is a state, so an
/// event claim ("joined in February 2026") starts it and the event's own end is
/// not the state's end.
fn relation_window(validity: &crate::claims::Validity) -> Window {
    Window {
        valid_from: validity.from,
        valid_until: if validity.kind == ValidityKind::Event && validity.from.is_some() {
            None
        } else {
            validity.until
        },
        precision: validity.precision,
    }
}

/// The chain a fact or assertion belongs to, if any: a single-valued relation's
/// predicate, or `state:<property>` for an observation that names a state of its
/// entity (called `name`).
fn chain_key(
    kind: FactKind,
    predicate: Option<&str>,
    statement: &str,
    name: &str,
) -> Option<String> {
    match kind {
        FactKind::Relation => {
            single_valued(predicate).then(|| predicate.unwrap_or_default().to_string())
        }
        FactKind::Observation => crate::facts::state::state_of(statement, name)
            .map(|(property, _)| format!("state:{property}")),
    }
}

/// The chain an assertion about the entity called `name` belongs to.
fn assertion_chain(a: &Assertion, name: &str) -> Option<String> {
    chain_key(a.kind, a.predicate.as_deref(), &a.statement, name)
}

/// Whether `predicate` names a single-valued predicate (one value at a time).
fn single_valued(predicate: Option<&str>) -> bool {
    predicate
        .and_then(|p| Predicate::parse(p).ok())
        .is_some_and(|p| p.is_single_valued())
}

/// Facts of one root read into its single-valued chains, at most (the most
/// recently recorded): a bound on what one unit reads, far above any real chain.
const MAX_CHAIN_FACTS: usize = 500;

/// A fact of a single-valued chain as the offline adjudicator keeps it while a
/// batch is decided: the fact as stored (or as the batch will store it), its
/// supporting testimony and the claims recorded as contradicting it.
struct ChainEntry {
    fact: FactRecord,
    support: Vec<Support>,
    contradicted_by: BTreeSet<ClaimId>,
    /// The rule behind its link as last decided (transcripts record it).
    rule: Option<&'static str>,
}

impl ChainEntry {
    /// The window its testimony gives, before any supersession capped it: the
    /// windows of its supporting claims merged in the order they were said (a
    /// known bound never moves), as evidence verdicts merge them.
    fn own_window(&self) -> Window {
        let mut support: Vec<&Support> = self.support.iter().collect();
        support.sort_by_key(|s| (s.said.at, s.window.valid_from, s.window.valid_until));
        let mut it = support.into_iter();
        let Some(first) = it.next() else {
            return self.fact.window.clone();
        };
        let mut w = first.window.clone();
        for s in it {
            if let Some(m) = merged_window(&w, &s.window) {
                w = m;
            }
        }
        w
    }

    /// The fact as the chain rule reads it.
    fn chain_fact(&self) -> ChainFact {
        let value = match self.fact.object {
            Some(o) => o.to_string(),
            None => crate::facts::state::state_of(&self.fact.statement, &self.fact.subject_name)
                .map(|(_, v)| v)
                .unwrap_or_else(|| self.fact.statement.clone()),
        };
        ChainFact {
            fact_id: self.fact.fact_id,
            value,
            statement: self.fact.statement.clone(),
            validity_kind: self.fact.validity_kind,
            window: self.own_window(),
            said: self
                .support
                .iter()
                .filter(|s| s.current && !s.past)
                .map(|s| s.said)
                .collect(),
            past: self
                .support
                .iter()
                .filter(|s| s.current && s.past)
                .map(|s| s.said)
                .collect(),
            cue: self.support.iter().any(|s| s.current && s.cue && !s.past),
        }
    }
}

/// One supporting claim of a chain fact.
#[derive(Clone)]
struct Support {
    said: Said,
    /// The window the claim gives the relation.
    window: Window,
    /// Whether the claim is current testimony.
    current: bool,
    /// Whether the claim reports the state as over.
    past: bool,
    /// Whether the claim carries a change cue.
    cue: bool,
}

/// Decide `chain` again ([`rechain`]) and bring it to the decision: the links of
/// every fact whose window, successor, group or contradicting claims change, as
/// the entries now hold them, with the rule behind each.
fn relink(chain: &mut [ChainEntry]) -> Vec<(FactLink, Option<&'static str>)> {
    let facts: Vec<ChainFact> = chain.iter().map(ChainEntry::chain_fact).collect();
    let states = rechain(&facts);
    // A group keeps the smallest id its members already carry, else gets one.
    let mut groups: HashMap<usize, uuid::Uuid> = HashMap::new();
    for (i, st) in states.iter().enumerate() {
        if let Some(g) = st.group
            && let Some(id) = chain[i].fact.contradiction_group
        {
            let slot = groups.entry(g).or_insert(id);
            *slot = (*slot).min(id);
        }
    }
    let mut out = Vec::new();
    for i in 0..chain.len() {
        let st = &states[i];
        let group = st
            .group
            .map(|g| *groups.entry(g).or_insert_with(uuid::Uuid::new_v4));
        let contradicted_by: BTreeSet<ClaimId> = match st.group {
            None => BTreeSet::new(),
            Some(g) => states
                .iter()
                .zip(&facts)
                .enumerate()
                .filter(|(j, (other, _))| *j != i && other.group == Some(g))
                .flat_map(|(_, (_, f))| f.said.iter().map(|s| s.claim))
                .collect(),
        };
        let e = &mut chain[i];
        e.rule = st.rule;
        if e.fact.window == st.window
            && e.fact.superseded_by == st.superseded_by
            && e.fact.contradiction_group == group
            && e.contradicted_by == contradicted_by
        {
            continue;
        }
        e.fact.window = st.window.clone();
        e.fact.superseded_by = st.superseded_by;
        e.fact.contradiction_group = group;
        e.contradicted_by = contradicted_by.clone();
        out.push((
            FactLink {
                fact: e.fact.fact_id,
                window: st.window.clone(),
                superseded_by: st.superseded_by,
                contradiction_group: group,
                contradicted_by: contradicted_by.into_iter().collect(),
            },
            st.rule,
        ));
    }
    out
}

/// The staged assertions of one normalized claim. A relation whose ends resolved to
/// the same entity, or whose ends were not resolved, is skipped.
fn assertions_for(
    item: &WorkItem,
    claim: &ClaimRecord,
    n: &NormalizedClaim,
    ids: &[Option<EntityId>],
) -> Vec<Assertion> {
    let validity = &claim.validity;
    let claim_window = Window {
        valid_from: validity.from,
        valid_until: validity.until,
        precision: validity.precision,
    };
    let mut out = Vec::new();
    let mut ordinal = 0u32;
    let mut push = |kind, subject, predicate: Option<String>, object, statement: String, window| {
        out.push(Assertion {
            assertion_id: AssertionId::new(),
            namespace_id: item.namespace_id,
            claim_id: claim.claim_id,
            document_id: claim.document_id,
            version_id: item.version_id,
            kind,
            subject,
            predicate,
            object,
            statement,
            window,
            validity_kind: validity.kind,
            asserted_at: claim.asserted_at,
            ordinal,
        });
        ordinal += 1;
    };
    for r in &n.relations {
        let (Some(Some(s)), Some(Some(o))) = (ids.get(r.subject), ids.get(r.object)) else {
            continue;
        };
        if s == o {
            continue;
        }
        let window = relation_window(validity);
        push(
            FactKind::Relation,
            *s,
            Some(r.predicate.as_str().into_owned()),
            Some(*o),
            r.label.clone(),
            window,
        );
    }
    for obs in &n.observations {
        let Some(Some(e)) = ids.get(obs.entity) else {
            continue;
        };
        push(
            FactKind::Observation,
            *e,
            None,
            None,
            obs.statement.clone(),
            claim_window.clone(),
        );
    }
    out
}

/// One claim of a normalize batch: its work item, the claim, its offline
/// normalization and the entity each reference resolved to.
struct Plan {
    item: WorkItem,
    claim: ClaimRecord,
    normalized: NormalizedClaim,
    ids: Vec<Option<EntityId>>,
}

/// One reference a normalize batch resolves: its claim (index into the plans), its
/// ordinal, name and lemma, and its blocking query (index into the batch's queries).
struct BatchRef {
    plan: usize,
    ordinal: u32,
    name: String,
    name_lemma: String,
    query: usize,
}

/// What the normalizer reads of a claim.
/// Each item with the outcome of its own commit in a batch's commit.
fn completed(
    items: impl IntoIterator<Item = WorkItem>,
    results: Vec<Result<()>>,
) -> impl Iterator<Item = (WorkItem, StageResult<Outcome>)> {
    items.into_iter().zip(results).map(|(item, result)| {
        (
            item,
            result
                .map(|()| Outcome::Completed)
                .map_err(StageError::from),
        )
    })
}

fn normalize_input(claim: &ClaimRecord) -> NormalizeInput {
    NormalizeInput {
        claim_text: claim.text.clone(),
        added_context: claim.added_context.clone(),
        document_title: claim.document_title.clone(),
        validity: claim.validity.clone(),
    }
}
