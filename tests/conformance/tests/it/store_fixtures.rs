//! Fixtures the store-contract tests (`store_*`) share. Every record is written
//! through the store's own methods (versions, preparations, chunks, extractions,
//! resolutions, normalizations, applied assertions, vectors, leased work), so one
//! setup runs on every store.

use chrono::{TimeZone, Utc};
use rememberstack::EmbedderIdentity;
use rememberstack::store::claims::{EvidenceSpan, Precision, Validity, ValidityKind};
use rememberstack::store::entities::{
    Mention, NewAlias, RESOLVER_VERSION, ResolutionCommit, ResolutionDecision,
};
use rememberstack::store::facts::{
    AdjudicationRecord, ApplyCommit, Assertion, FactKind, NewFact, Stance, Window,
};
use rememberstack::store::hash::sha256_hex;
use rememberstack::store::ledger::{ClaimRequest, NewWork, Stage};
use rememberstack::store::source::{Admission, DocumentMetadata, Field, Origin};
use rememberstack::store::text::{
    Block, BlockKind, ChunkPlan, Representation, Section, SectionRole, SourceFormat,
};
use rememberstack::store::traits::*;
use rememberstack::store::{
    ContentObject, DecisionRow, ExtractionCommit, Lease, NewChunk, NewClaim, NewVersion,
    Occurrence, PreparedVersion, VersionOutcome,
};
use rememberstack::{
    AdjudicationId, AssertionId, ChunkId, ClaimId, DecisionId, DocumentId, EntityId, FactId,
    NamespaceId, Timestamp, VersionId,
};
use rememberstack_conformance::Harness;

fn instant(secs: i64) -> Timestamp {
    Utc.timestamp_opt(secs, 0).unwrap()
}

/// A claim request for one item of `stage`, at an instant after every test's own
/// times, with a lease that outlives them all.
fn one_of(stage: Stage, owner: &str) -> ClaimRequest {
    ClaimRequest {
        owner: owner.to_string(),
        stages: vec![stage],
        limit: 1,
        stage_limits: vec![],
        lease_until: instant(2_000_000_000),
        now: instant(1_900_000_000),
    }
}

/// A new work item of `stage` in `version`, leased to `owner` at once (due before
/// anything else, so it is the one claimed).
pub async fn lease(
    store: &dyn MemoryStore,
    ns: NamespaceId,
    version: VersionId,
    stage: Stage,
    owner: &str,
) -> Lease {
    let target = uuid::Uuid::new_v4();
    let early = instant(1_000_000_000);
    let work = NewWork::now(ns, stage, target, version, "fixture", early);
    store.enqueue(vec![work], early).await.unwrap();
    let got = store.claim(&one_of(stage, owner)).await.unwrap();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].target_id, target, "the fixture's own item");
    Lease::of(&got[0])
}

/// The pending item of `stage` a write enqueued for `version`, leased to `owner`
/// (the test has no other item of that stage due).
pub async fn lease_pending(
    store: &dyn MemoryStore,
    version: VersionId,
    stage: Stage,
    owner: &str,
) -> Lease {
    let got = store.claim(&one_of(stage, owner)).await.unwrap();
    assert_eq!(got.len(), 1, "one pending {stage:?} item");
    assert_eq!(got[0].version_id, version, "the version's own item");
    Lease::of(&got[0])
}

/// A Markdown version of lineage (`file`, `source_ref`) with these bytes, its
/// prepare item due at `now`.
pub fn new_version(ns: NamespaceId, source_ref: &str, bytes: &[u8], now: Timestamp) -> NewVersion {
    let version_id = VersionId::new();
    NewVersion {
        namespace_id: ns,
        document_id: DocumentId::new(),
        version_id,
        source_kind: "file".into(),
        source_ref: source_ref.into(),
        mode: None,
        content: ContentObject {
            sha256: sha256_hex(bytes),
            mime: "text/markdown".into(),
            bytes: bytes.to_vec(),
        },
        format: Some(SourceFormat::Markdown),
        source_modified_at: now - chrono::Duration::seconds(100),
        origin: Origin::External,
        metadata: DocumentMetadata {
            file_name: Some(Field::source(format!("{source_ref}.md"))),
            ..DocumentMetadata::default()
        },
        work: NewWork::now(
            ns,
            Stage::Prepare,
            version_id.uuid(),
            version_id,
            "prep-1",
            now,
        ),
        expected_latest: None,
        admission: Admission::Promoted,
        distinct: false,
        note: None,
        principal: None,
        now,
    }
}

/// The lineage and version a `create_version` created (panics on anything else).
pub fn created(o: &VersionOutcome) -> (DocumentId, VersionId, bool) {
    match o {
        VersionOutcome::Created {
            document_id,
            version_id,
            new_lineage,
        } => (*document_id, *version_id, *new_lineage),
        other => panic!("expected Created, got {other:?}"),
    }
}

/// A preparation of `version` titled `title`: one section (and one block) per
/// role, in order.
pub fn prepared_with(version: VersionId, title: &str, roles: &[SectionRole]) -> PreparedVersion {
    let markdown: String = roles
        .iter()
        .enumerate()
        .map(|(i, _)| format!("# Section {i}\n"))
        .collect();
    PreparedVersion {
        version_id: version,
        representation: Representation {
            markdown,
            turns: vec![],
        },
        blocks: (0..roles.len() as u32)
            .map(|i| Block {
                ordinal: i,
                kind: BlockKind::Heading,
                level: Some(1),
                start: 12 * i as usize,
                end: 12 * i as usize + 11,
                hash: format!("h{i}"),
                turn: None,
            })
            .collect(),
        sections: roles
            .iter()
            .enumerate()
            .map(|(i, role)| Section {
                ordinal: i as u32,
                block_start: i as u32,
                block_end: i as u32 + 1,
                level: 1,
                title: format!("Section {i}"),
                path: vec![format!("Section {i}")],
                role: *role,
                parent: None,
            })
            .collect(),
        title: title.into(),
        component_version: "prep-1".into(),
    }
}

/// A chunk of section `section` at position `ordinal` with `text`, its vector
/// under `key-{ordinal}`.
pub fn chunk(ordinal: u32, section: u32, text: &str) -> NewChunk {
    NewChunk {
        id: ChunkId::new(),
        plan: ChunkPlan {
            ordinal,
            section_ordinal: section,
            block_start: ordinal,
            block_end: ordinal + 1,
            start: 10 * ordinal as usize,
            end: 10 * ordinal as usize + text.len(),
            char_start: 10 * ordinal as usize,
            char_end: 10 * ordinal as usize + text.len(),
            text: text.into(),
            content_hash: sha256_hex(text.as_bytes()),
            token_estimate: 5,
        },
        embedding_key: format!("key-{ordinal}"),
        event_ids: vec![format!("ev-{ordinal}")],
    }
}

/// `chunk`, with this id and embedding key.
pub fn chunk_as(id: ChunkId, ordinal: u32, section: u32, text: &str, key: &str) -> NewChunk {
    NewChunk {
        id,
        embedding_key: key.to_string(),
        ..chunk(ordinal, section, text)
    }
}

/// Prepare `version` (titled, one section per role) and commit `chunks`: the
/// lineage's current version unless a newer one is. The store must have no other
/// prepare item due.
#[allow(clippy::too_many_arguments)]
pub async fn prepare_and_chunk(
    store: &dyn MemoryStore,
    ns: NamespaceId,
    version: VersionId,
    title: &str,
    roles: &[SectionRole],
    chunks: Vec<NewChunk>,
    now: Timestamp,
) {
    let l = lease_pending(store, version, Stage::Prepare, "fixture").await;
    store
        .commit_prepared(&l, prepared_with(version, title, roles), vec![], now)
        .await
        .unwrap();
    let l = lease(store, ns, version, Stage::Chunk, "fixture").await;
    store
        .commit_chunks(&l, version, chunks, vec![], now)
        .await
        .unwrap();
}

/// Create a version of (`file`, `source_ref`) from `bytes`, then
/// [`prepare_and_chunk`] it.
#[allow(clippy::too_many_arguments)]
pub async fn chunked_version(
    store: &dyn MemoryStore,
    ns: NamespaceId,
    source_ref: &str,
    bytes: &[u8],
    title: &str,
    roles: &[SectionRole],
    chunks: Vec<NewChunk>,
    now: Timestamp,
) -> (DocumentId, VersionId) {
    let (doc, version, _) = created(
        &store
            .create_version(new_version(ns, source_ref, bytes, now))
            .await
            .unwrap(),
    );
    prepare_and_chunk(store, ns, version, title, roles, chunks, now).await;
    (doc, version)
}

/// A current lineage (`file`, `source_ref`) with one body chunk: where claims of
/// the lineage come from.
pub async fn lineage(
    store: &dyn MemoryStore,
    ns: NamespaceId,
    source_ref: &str,
    now: Timestamp,
) -> (DocumentId, VersionId, ChunkId) {
    let c = chunk(0, 0, source_ref);
    let id = c.id;
    let (doc, version) = chunked_version(
        store,
        ns,
        source_ref,
        source_ref.as_bytes(),
        source_ref,
        &[SectionRole::Body],
        vec![c],
        now,
    )
    .await;
    (doc, version, id)
}

/// The extractor generation fixture claims carry.
pub const EXTRACTOR: &str = "extract-v1";

/// A claim of chunk `chunk` of `version`, its vector under `emb-{key}`.
pub fn new_claim(
    doc: DocumentId,
    version: VersionId,
    chunk: ChunkId,
    text: &str,
    key: &str,
    asserted_at: Timestamp,
) -> NewClaim {
    NewClaim {
        id: ClaimId::new(),
        document_id: doc,
        text: text.to_string(),
        added_context: vec![format!("context of {key}")],
        validity: Validity {
            from: Some(asserted_at - chrono::Duration::days(1)),
            until: None,
            precision: Precision::Day,
            kind: ValidityKind::Event,
        },
        asserted_at,
        extractor_version: EXTRACTOR.to_string(),
        extraction_input_hash: format!("hash-{chunk}"),
        origin_version_id: version,
        origin_chunk_id: chunk,
        embedding_key: format!("emb-{key}"),
        claim_key: format!("key-{key}"),
    }
}

/// Where `c` occurs in `chunk` of `version`.
pub fn occurrence(c: &NewClaim, version: VersionId, chunk: ChunkId, ordinal: u32) -> Occurrence {
    Occurrence {
        claim_id: c.id,
        chunk_id: chunk,
        version_id: version,
        document_id: c.document_id,
        extractor_version: EXTRACTOR.to_string(),
        extraction_input_hash: c.extraction_input_hash.clone(),
        ordinal,
        spans: vec![EvidenceSpan {
            start: 3,
            end: 9,
            char_start: 3,
            char_end: 9,
        }],
        passages: vec!["P1".to_string()],
        event_ids: vec!["m1".to_string()],
        reused: false,
    }
}

/// A fresh extraction of `chunk` with these claims (one `keep` decision each).
pub fn fresh(
    doc: DocumentId,
    version: VersionId,
    chunk: ChunkId,
    hash: &str,
    claims: Vec<NewClaim>,
) -> ExtractionCommit {
    let occurrences = claims
        .iter()
        .enumerate()
        .map(|(i, c)| occurrence(c, version, chunk, i as u32))
        .collect();
    let decisions = claims
        .iter()
        .map(|c| DecisionRow {
            kind: "keep".to_string(),
            passage: Some("P1".to_string()),
            reason: None,
            claim_id: Some(c.id),
            detail: serde_json::json!({"text": c.text}),
        })
        .collect();
    ExtractionCommit {
        document_id: doc,
        version_id: version,
        chunk_id: chunk,
        extraction_input_hash: hash.to_string(),
        extractor_version: EXTRACTOR.to_string(),
        claims,
        occurrences,
        decisions,
    }
}

/// Commit `claims` as one fresh extraction of `chunk` under a new extract lease.
pub async fn extract(
    store: &dyn MemoryStore,
    ns: NamespaceId,
    (doc, version, chunk): (DocumentId, VersionId, ChunkId),
    hash: &str,
    claims: Vec<NewClaim>,
    now: Timestamp,
) {
    let l = lease(store, ns, version, Stage::Extract, "fixture").await;
    let x = fresh(doc, version, chunk, hash, claims);
    let flags = store
        .commit_extractions(ns, vec![(l, x, vec![])], now)
        .await
        .unwrap();
    assert_eq!(flags, vec![true]);
}

/// A claim `text` of the lineage, current or not (its lineage's other claims keep
/// their currency).
pub async fn claim(
    store: &dyn MemoryStore,
    ns: NamespaceId,
    lineage: (DocumentId, VersionId, ChunkId),
    text: &str,
    current: bool,
    now: Timestamp,
) -> ClaimId {
    let c = new_claim(
        lineage.0,
        lineage.1,
        lineage.2,
        text,
        &ClaimId::new().to_string(),
        now,
    );
    let id = c.id;
    extract(store, ns, lineage, &format!("hash-{id}"), vec![c], now).await;
    if current {
        let mut set: Vec<ClaimId> = current_claims(store, ns, lineage.0).await;
        set.push(id);
        set_current(store, ns, lineage.0, &set, now).await;
    }
    id
}

/// The lineage's current claims.
pub async fn current_claims(
    store: &dyn MemoryStore,
    ns: NamespaceId,
    doc: DocumentId,
) -> Vec<ClaimId> {
    store
        .current_claim_refs(ns, doc)
        .await
        .unwrap()
        .into_iter()
        .map(|(c, _)| c)
        .collect()
}

/// Make exactly `current` the lineage's current claims.
pub async fn set_current(
    store: &dyn MemoryStore,
    ns: NamespaceId,
    doc: DocumentId,
    current: &[ClaimId],
    now: Timestamp,
) {
    store
        .apply_currency(ns, doc, current, "fixture", None, now)
        .await
        .unwrap();
}

/// Whether the claim is current testimony.
pub async fn is_current(store: &dyn MemoryStore, ns: NamespaceId, claim: ClaimId) -> bool {
    store.claims(ns, &[claim]).await.unwrap()[0].is_current
}

fn decision(
    ns: NamespaceId,
    claim: ClaimId,
    entity: EntityId,
    name: &str,
    at: Timestamp,
) -> ResolutionDecision {
    ResolutionDecision {
        decision_id: DecisionId::new(),
        namespace_id: ns,
        claim_id: claim,
        document_id: DocumentId::new(),
        ordinal: 0,
        name: name.to_string(),
        lemma: NewAlias::of(name).lemma,
        tier: "mint".into(),
        candidates: vec![],
        complete: true,
        t3_score: None,
        t3_outcome: "no_candidates".into(),
        verdict: "new".into(),
        entity_id: entity,
        rationale: "fixture".into(),
        model: None,
        resolver_version: RESOLVER_VERSION.into(),
        features: serde_json::json!({}),
        created_at: at,
    }
}

/// Resolve `name` in `claim` to `entity`, minting it when it is new.
async fn resolve(
    store: &dyn MemoryStore,
    ns: NamespaceId,
    claim: ClaimId,
    entity: Option<EntityId>,
    name: &str,
    at: Timestamp,
) -> EntityId {
    // A default id is a fresh one.
    let id = entity.unwrap_or_default();
    let alias = NewAlias::of(name);
    let commit = ResolutionCommit {
        mint: entity
            .is_none()
            .then(|| (name.to_string(), alias.lemma.clone())),
        mention: Mention {
            claim_id: claim,
            start: Some(0),
            end: Some(name.len()),
            surface: name.to_string(),
        },
        aliases: if entity.is_none() {
            vec![alias]
        } else {
            vec![]
        },
        exclusions: vec![],
        binding: None,
        decision: decision(ns, claim, id, name, at),
    };
    store.commit_resolution(commit, at).await.unwrap()
}

/// A new entity named `name` (minted by a resolution of a claim nobody stored).
pub async fn mint(store: &dyn MemoryStore, ns: NamespaceId, name: &str, at: Timestamp) -> EntityId {
    resolve(store, ns, ClaimId::new(), None, name, at).await
}

/// `claim` mentions `entity` (a new one named `name` when `None`); the entity.
pub async fn mention(
    store: &dyn MemoryStore,
    ns: NamespaceId,
    claim: ClaimId,
    entity: Option<EntityId>,
    name: &str,
    at: Timestamp,
) -> EntityId {
    resolve(store, ns, claim, entity, name, at).await
}

/// An observation of `subject` staged from `claim`.
pub fn observation(
    ns: NamespaceId,
    claim: ClaimId,
    version: VersionId,
    subject: EntityId,
    statement: &str,
    ordinal: u32,
    asserted_at: Timestamp,
) -> Assertion {
    Assertion {
        assertion_id: AssertionId::new(),
        namespace_id: ns,
        claim_id: claim,
        document_id: DocumentId::new(),
        version_id: version,
        kind: FactKind::Observation,
        subject,
        predicate: None,
        object: None,
        statement: statement.to_string(),
        window: Window::unknown(),
        validity_kind: ValidityKind::State,
        asserted_at,
        ordinal,
    }
}

/// Stage `assertions` of `claim` through a new normalize lease.
pub async fn stage(
    store: &dyn MemoryStore,
    ns: NamespaceId,
    claim: ClaimId,
    assertions: Vec<Assertion>,
    now: Timestamp,
) {
    let l = lease(store, ns, VersionId::new(), Stage::Normalize, "worker").await;
    store
        .commit_normalization(
            &l,
            claim,
            "normalizer-test",
            serde_json::json!({"entities": []}),
            assertions,
            vec![],
            now,
        )
        .await
        .unwrap();
}

/// The commit creating a new fact from `a` (window `w`, label vector under
/// `key-{fact}`), with `evidence` claims.
pub fn new_fact_commit(
    ns: NamespaceId,
    a: &Assertion,
    w: Window,
    evidence: &[(ClaimId, Stance)],
    at: Timestamp,
) -> (FactId, ApplyCommit) {
    let fact = FactId::new();
    let commit = ApplyCommit {
        follow_up: vec![],
        assertion_id: a.assertion_id,
        new_fact: Some(NewFact {
            fact_id: fact,
            kind: a.kind,
            subject: a.subject,
            predicate: a.predicate.clone(),
            object: a.object,
            statement: a.statement.clone(),
            window: w,
            validity_kind: a.validity_kind,
            embedding_key: format!("key-{fact}"),
        }),
        evidence: evidence.iter().map(|(c, s)| (fact, *c, *s)).collect(),
        windows: vec![],
        contradiction: None,
        superseded: None,
        links: vec![],
        transcript: AdjudicationRecord {
            adjudication_id: AdjudicationId::new(),
            namespace_id: ns,
            assertion_id: a.assertion_id,
            claim_id: a.claim_id,
            verdict: "new".into(),
            target_fact: None,
            result_fact: fact,
            candidates: vec![],
            reason: "no candidate".into(),
            input: serde_json::json!({"rule": "new"}),
            model: None,
            adjudicator_version: "adjudicator-test".into(),
            created_at: at,
        },
    };
    (fact, commit)
}

/// Stage and apply `a` as a new fact (window `w`) with `evidence`; its id.
pub async fn apply_new(
    store: &dyn MemoryStore,
    ns: NamespaceId,
    a: Assertion,
    w: Window,
    evidence: &[(ClaimId, Stance)],
    at: Timestamp,
) -> FactId {
    stage(store, ns, a.claim_id, vec![a.clone()], at).await;
    let (id, commit) = new_fact_commit(ns, &a, w, evidence, at);
    assert!(store.apply_assertion(ns, commit, at).await.unwrap());
    id
}

/// A new fact about `subject` (a relation towards `object` when given) stating
/// `statement`, staged from a claim of its own (none stored) and evidenced by
/// `evidence`.
#[allow(clippy::too_many_arguments)]
pub async fn fact(
    store: &dyn MemoryStore,
    ns: NamespaceId,
    subject: EntityId,
    object: Option<EntityId>,
    statement: &str,
    w: Window,
    evidence: &[(ClaimId, Stance)],
    at: Timestamp,
) -> FactId {
    let mut a = observation(
        ns,
        ClaimId::new(),
        VersionId::new(),
        subject,
        statement,
        0,
        at,
    );
    if let Some(o) = object {
        a.kind = FactKind::Relation;
        a.predicate = Some("knows".into());
        a.object = Some(o);
    }
    apply_new(store, ns, a, w, evidence, at).await
}

/// An embedder identity of `dimension` named `model`: its vectors form one
/// generation.
pub fn identity(model: &str, dimension: usize) -> EmbedderIdentity {
    EmbedderIdentity {
        provider: "test".into(),
        model: model.into(),
        dimension,
        version: "1".into(),
    }
}

/// Store vectors of `generation` (no work item to complete).
pub async fn put_vectors(
    store: &dyn MemoryStore,
    ns: NamespaceId,
    generation: &EmbedderIdentity,
    vectors: Vec<(String, Vec<f32>)>,
    at: Timestamp,
) {
    store
        .commit_vectors(&[], ns, generation, vectors, at)
        .await
        .unwrap();
}

/// The count `sql` selects (`CAST(COUNT(*) AS TEXT)`), read with plain SQL that
/// means the same on every store: for bookkeeping no store method reads back.
pub async fn rows(h: &Harness, sql: &str) -> u64 {
    h.query_texts(sql).await[0].parse().expect("a count")
}

/// Every work item of `version` (any status), oldest first.
pub async fn work_of(
    store: &dyn MemoryStore,
    ns: NamespaceId,
    version: VersionId,
) -> Vec<rememberstack::store::ledger::WorkItem> {
    use rememberstack::store::ledger::WorkStatus;
    let mut out = Vec::new();
    for status in [
        WorkStatus::Pending,
        WorkStatus::Running,
        WorkStatus::Done,
        WorkStatus::Failed,
        WorkStatus::DeadLetter,
    ] {
        out.extend(
            store
                .work_items(Some(ns), status, 10_000)
                .await
                .unwrap()
                .into_iter()
                .filter(|w| w.version_id == version),
        );
    }
    out.sort_by(|a, b| a.created_at.cmp(&b.created_at).then(a.id.cmp(&b.id)));
    out
}

/// A forget manifest for lineage `doc` of namespace `slug` (every version of it).
pub async fn forget_manifest(
    store: &dyn MemoryStore,
    slug: &str,
    doc: DocumentId,
    source: (&str, &str),
    at: Timestamp,
) -> rememberstack::ForgetManifest {
    let ns = store.namespace(slug).await.unwrap().unwrap();
    let versions = store.versions(ns.id, doc).await.unwrap();
    rememberstack::ForgetManifest::new(
        &ns,
        rememberstack::ForgetTarget::Document,
        doc,
        &versions,
        source,
        at,
    )
}

/// How far a stored vector's cosine may be from the full-precision one: both
/// stores keep vectors at half precision (11 significant bits a component).
pub const HALF_PRECISION: f64 = 1e-3;
