//! Normalization, the predicate registry and facts (E3): staged assertions,
//! adjudication, fact reads, fact search and label vectors.
//!
//! Ported statement by statement from the SQLite store's `facts.rs` (and its
//! `vectors` / `fact_vector_coverage`). Ids are `text`, times `timestamptz`, JSON
//! `jsonb`; the fact full text lives in `fact_lexical` (ranked with BM25 computed
//! in SQL from the namespace's stored term statistics, migration 0011); label
//! vectors are ranked with pgvector's cosine distance and re-sorted exactly.

use crate::ledger::{fence_many, insert_work};
use crate::rows::{get, id, opt_id};
use crate::search::BM25_SCORE;
use crate::{PgStore, db_err, parse_id};
use rememberstack_core::claims::{Precision, ValidityKind};
use rememberstack_core::facts::{
    AdjudicationRecord, ApplyCommit, Assertion, EvidenceRecord, FactFilter, FactKey, FactKind,
    FactRecord, NewFact, PredicateRow, Stance,
};
use rememberstack_core::ids::{ClaimId, EntityId, FactId, NamespaceId, VersionId};
use rememberstack_core::ledger::NewWork;
use rememberstack_core::store::{Lease, NormalizationCommit};
use rememberstack_core::time::Timestamp;
use rememberstack_core::{Error, Result};
use rememberstack_sql::facts::{ASSERTION_SELECT, fact_select};
use rememberstack_sql::rows::{adjudication_row, assertion_row, fact_row};
use rememberstack_sql::{Arg, Dialect, Params};
use sqlx::postgres::{PgArguments, PgRow};
use sqlx::types::Json;
use sqlx::{AssertSqlSafe, Postgres, Row};
use std::collections::{BTreeMap, HashMap};
use std::sync::LazyLock;

type PgQuery<'q> = sqlx::query::Query<'q, Postgres, PgArguments>;

/// Facts with their entity names and evidence counts (`rememberstack_sql::facts`).
static FACT_SELECT: LazyLock<String> = LazyLock::new(fact_select);

/// `rememberstack_sql::facts::facts_by_id` as this store runs it.
static FACTS_BY_ID: LazyLock<String> =
    LazyLock::new(|| Dialect::Postgres.render(&rememberstack_sql::facts::facts_by_id()));

/// The largest dimension a pgvector `vector` holds.
const MAX_DIM: usize = 16_000;

fn precision_str(p: &Precision) -> Result<String> {
    unit_variant(serde_json::to_value(p))
}

fn validity_str(v: &ValidityKind) -> Result<String> {
    unit_variant(serde_json::to_value(v))
}

/// The serde name of a unit enum variant.
fn unit_variant(v: serde_json::Result<serde_json::Value>) -> Result<String> {
    match v.map_err(|e| Error::internal(e.to_string()))? {
        serde_json::Value::String(s) => Ok(s),
        other => Err(Error::internal(format!("not a unit variant: {other}"))),
    }
}

fn json_err(e: serde_json::Error) -> Error {
    Error::store(format!("corrupt JSON column: {e}"))
}

/// `q` with `args` bound in order.
pub(crate) fn bind_args<'q>(mut q: PgQuery<'q>, args: &[Arg]) -> PgQuery<'q> {
    for a in args {
        q = match a.clone() {
            Arg::Text(s) => q.bind(s),
            Arg::Int(n) => q.bind(n),
            Arg::Time(t) => q.bind(t),
            Arg::Texts(v) => q.bind(v),
        };
    }
    q
}

/// Eligibility of facts (alias `f`) under a filter (`rememberstack_sql::facts`):
/// an SQL condition whose values are bound through `p`.
fn eligibility(filter: &FactFilter, p: &mut Params) -> String {
    rememberstack_sql::facts::eligibility(filter, p)
}

impl PgStore {
    pub(crate) async fn bootstrap_predicates_impl(
        &self,
        ns: NamespaceId,
        core: &[(String, String, Vec<String>)],
    ) -> Result<()> {
        let ns_s = ns.to_string();
        // The registry's rows are taken in key (name) order, as a normalization batch
        // counting its predicates' uses takes them: another process's batch
        // committing while this one seeds would otherwise wait on a row this
        // transaction holds while holding one it waits for (a deadlock seen with
        // three worker processes starting on one namespace).
        let mut ordered: Vec<_> = core.iter().enumerate().collect();
        ordered.sort_by(|a, b| a.1.0.cmp(&b.1.0));
        let mut tx = self.pool().begin().await.map_err(db_err)?;
        for (i, (name, description, synonyms)) in ordered {
            // Idempotent; a name first seen as an uncounted value becomes core, and its
            // use count is kept.
            sqlx::query(crate::shared(
                &rememberstack_sql::facts::UPSERT_CORE_PREDICATE,
            ))
            .bind(&ns_s)
            .bind(name)
            .bind(description)
            .bind(Json(synonyms))
            .bind(i as i32)
            .execute(&mut *tx)
            .await
            .map_err(db_err)?;
        }
        tx.commit().await.map_err(db_err)
    }

    pub(crate) async fn predicates_impl(&self, ns: NamespaceId) -> Result<Vec<PredicateRow>> {
        let rows = sqlx::query(crate::shared(&rememberstack_sql::facts::PREDICATES))
            .bind(ns.to_string())
            .fetch_all(self.pool())
            .await
            .map_err(db_err)?;
        rows.iter()
            .map(|r| {
                Ok(PredicateRow {
                    name: get(r, "name")?,
                    description: get(r, "description")?,
                    synonyms: serde_json::from_value(get(r, "synonyms_json")?).map_err(json_err)?,
                    status: get(r, "status")?,
                    uses: get::<i64>(r, "uses")? as u64,
                })
            })
            .collect()
    }

    #[allow(clippy::too_many_arguments)]
    pub(crate) async fn commit_normalization_impl(
        &self,
        lease: &Lease,
        claim: ClaimId,
        normalizer_version: &str,
        output: serde_json::Value,
        assertions: Vec<Assertion>,
        follow_up: Vec<NewWork>,
        now: Timestamp,
    ) -> Result<()> {
        let commit = NormalizationCommit {
            lease: lease.clone(),
            claim,
            normalizer_version: normalizer_version.to_string(),
            output,
            assertions,
            follow_up,
        };
        self.commit_normalizations_impl(vec![commit], now)
            .await?
            .pop()
            .unwrap_or(Ok(()))
    }

    /// Several claims' normalizations in one transaction (one claim's is a batch of
    /// one), each kind of row written by one statement for the whole batch. A commit
    /// whose lease is gone writes nothing of its own (the leases are fenced first)
    /// and is answered `lease_lost`; the others commit. Any other failure rolls the
    /// whole batch back.
    pub(crate) async fn commit_normalizations_impl(
        &self,
        commits: Vec<NormalizationCommit>,
        now: Timestamp,
    ) -> Result<Vec<Result<()>>> {
        if commits.is_empty() {
            return Ok(vec![]);
        }
        let mut tx = self.pool().begin().await.map_err(db_err)?;
        let leases: Vec<Lease> = commits.iter().map(|c| c.lease.clone()).collect();
        let fenced = fence_many(&mut tx, &leases, now).await?;
        let held: Vec<(&NormalizationCommit, String)> = commits
            .iter()
            .zip(&fenced)
            .filter_map(|(c, ns)| ns.clone().map(|ns| (c, ns)))
            .collect();
        normalize_many(&mut tx, &held, now).await?;
        tx.commit().await.map_err(db_err)?;
        Ok(commits
            .iter()
            .zip(fenced)
            .map(|(c, ns)| match ns {
                Some(_) => Ok(()),
                None => Err(c.lease.lost()),
            })
            .collect())
    }
}

/// Write fenced claims' normalizations in `tx` (see `MemoryStore::commit_normalization`):
/// each commit with its work item's namespace, in order. What one commit at a time
/// would leave, one statement per kind of row: a claim normalized twice keeps the
/// later output, an assertion staged again counts nothing, and every staged
/// relation counts one use of its predicate.
async fn normalize_many(
    tx: &mut sqlx::PgConnection,
    commits: &[(&NormalizationCommit, String)],
    now: Timestamp,
) -> Result<()> {
    if commits.is_empty() {
        return Ok(());
    }
    // The later normalization of a (namespace, claim, version) wins, as a second
    // upsert would; one row per key, as an upsert may touch a row only once.
    let mut outputs: BTreeMap<(&str, String, &str), String> = BTreeMap::new();
    for (c, ns) in commits {
        let json = serde_json::to_string(&c.output).map_err(|e| Error::internal(e.to_string()))?;
        outputs.insert(
            (ns.as_str(), c.claim.to_string(), &c.normalizer_version),
            json,
        );
    }
    let (mut n_ns, mut n_claim, mut n_version, mut n_output) = (vec![], vec![], vec![], vec![]);
    for ((ns, claim, version), json) in outputs {
        n_ns.push(ns);
        n_claim.push(claim);
        n_version.push(version);
        n_output.push(json);
    }
    sqlx::query(
        "INSERT INTO normalizations (namespace_id, claim_id, normalizer_version, output_json, created_at)
         SELECT n.ns, n.claim, n.version, n.output::jsonb, $5
           FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]) AS n(ns, claim, version, output)
         ON CONFLICT (namespace_id, claim_id, normalizer_version) DO UPDATE SET
             output_json = excluded.output_json, created_at = excluded.created_at",
    )
    .bind(&n_ns)
    .bind(&n_claim)
    .bind(&n_version)
    .bind(&n_output)
    .bind(now)
    .execute(&mut *tx)
    .await
    .map_err(db_err)?;
    // Staged in order (their `seq` is the staging order); a row already staged is
    // left as it is and counts no use.
    let assertions: Vec<(&Assertion, &str)> = commits
        .iter()
        .flat_map(|(c, _)| {
            c.assertions
                .iter()
                .map(|a| (a, c.normalizer_version.as_str()))
        })
        .collect();
    if !assertions.is_empty() {
        let text = |f: &dyn Fn(&Assertion) -> String| {
            assertions
                .iter()
                .map(|(a, _)| f(a))
                .collect::<Vec<String>>()
        };
        let opt = |f: &dyn Fn(&Assertion) -> Option<String>| {
            assertions
                .iter()
                .map(|(a, _)| f(a))
                .collect::<Vec<Option<String>>>()
        };
        let time = |f: &dyn Fn(&Assertion) -> Option<Timestamp>| {
            assertions
                .iter()
                .map(|(a, _)| f(a))
                .collect::<Vec<Option<Timestamp>>>()
        };
        let mut precisions = Vec::with_capacity(assertions.len());
        let mut validities = Vec::with_capacity(assertions.len());
        let mut ordinals = Vec::with_capacity(assertions.len());
        for (a, _) in &assertions {
            precisions.push(precision_str(&a.window.precision)?);
            validities.push(validity_str(&a.validity_kind)?);
            ordinals.push(
                i32::try_from(a.ordinal)
                    .map_err(|_| Error::invalid_input("assertion ordinal out of range"))?,
            );
        }
        let inserted: Vec<(String, String)> = sqlx::query_as(
            "INSERT INTO staged_assertions (namespace_id, id, claim_id, document_id, version_id,
                 normalizer_version, kind, subject_id, predicate, object_id, statement, valid_from,
                 valid_until, valid_precision, validity_kind, asserted_at, ordinal, created_at)
             SELECT a.ns, a.id, a.claim, a.document, a.version, a.normalizer, a.kind, a.subject,
                    a.predicate, a.object, a.statement, a.valid_from, a.valid_until, a.precision,
                    a.validity, a.asserted_at, a.ordinal, $18
               FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[],
                           $7::text[], $8::text[], $9::text[], $10::text[], $11::text[],
                           $12::timestamptz[], $13::timestamptz[], $14::text[], $15::text[],
                           $16::timestamptz[], $17::int4[])
                    WITH ORDINALITY AS a(ns, id, claim, document, version, normalizer, kind, subject,
                                         predicate, object, statement, valid_from, valid_until,
                                         precision, validity, asserted_at, ordinal, i)
              ORDER BY a.i
             ON CONFLICT DO NOTHING
             RETURNING namespace_id, id",
        )
        .bind(text(&|a| a.namespace_id.to_string()))
        .bind(text(&|a| a.assertion_id.to_string()))
        .bind(text(&|a| a.claim_id.to_string()))
        .bind(text(&|a| a.document_id.to_string()))
        .bind(text(&|a| a.version_id.to_string()))
        .bind(
            assertions
                .iter()
                .map(|(_, v)| *v)
                .collect::<Vec<&str>>(),
        )
        .bind(text(&|a| a.kind.as_str().to_string()))
        .bind(text(&|a| a.subject.to_string()))
        .bind(opt(&|a| a.predicate.clone()))
        .bind(opt(&|a| a.object.map(|o| o.to_string())))
        .bind(text(&|a| a.statement.clone()))
        .bind(time(&|a| a.window.valid_from))
        .bind(time(&|a| a.window.valid_until))
        .bind(&precisions)
        .bind(&validities)
        .bind(
            assertions
                .iter()
                .map(|(a, _)| a.asserted_at)
                .collect::<Vec<Timestamp>>(),
        )
        .bind(&ordinals)
        .bind(now)
        .fetch_all(&mut *tx)
        .await
        .map_err(db_err)?;
        // Uses are counted once per staged relation; the registry rows are taken in
        // key order.
        let inserted: std::collections::HashSet<(String, String)> = inserted.into_iter().collect();
        let mut uses: BTreeMap<(String, String), i64> = BTreeMap::new();
        for (a, _) in &assertions {
            let (FactKind::Relation, Some(predicate)) = (a.kind, &a.predicate) else {
                continue;
            };
            let ns = a.namespace_id.to_string();
            if inserted.contains(&(ns.clone(), a.assertion_id.to_string())) {
                *uses.entry((ns, predicate.clone())).or_default() += 1;
            }
        }
        if !uses.is_empty() {
            let (mut u_ns, mut u_name, mut u_n) = (vec![], vec![], vec![]);
            for ((ns, name), n) in uses {
                u_ns.push(ns);
                u_name.push(name);
                u_n.push(n);
            }
            sqlx::query(
                "INSERT INTO predicates (namespace_id, name, description, synonyms_json, status, uses)
                 SELECT u.ns, u.name, '', '[]'::jsonb, 'other', u.n
                   FROM unnest($1::text[], $2::text[], $3::int8[]) WITH ORDINALITY AS u(ns, name, n, i)
                  ORDER BY u.i
                 ON CONFLICT (namespace_id, name) DO UPDATE SET uses = predicates.uses + excluded.uses",
            )
            .bind(&u_ns)
            .bind(&u_name)
            .bind(&u_n)
            .execute(&mut *tx)
            .await
            .map_err(db_err)?;
        }
    }
    let follow_up: Vec<NewWork> = commits
        .iter()
        .flat_map(|(c, _)| c.follow_up.iter().cloned())
        .collect();
    insert_work(tx, &follow_up, now).await?;
    Ok(())
}

impl PgStore {
    pub(crate) async fn normalization_impl(
        &self,
        ns: NamespaceId,
        claim: ClaimId,
        normalizer_version: &str,
    ) -> Result<Option<serde_json::Value>> {
        sqlx::query_scalar(crate::shared(&rememberstack_sql::facts::NORMALIZATION))
            .bind(ns.to_string())
            .bind(claim.to_string())
            .bind(normalizer_version)
            .fetch_optional(self.pool())
            .await
            .map_err(db_err)
    }

    pub(crate) async fn unapplied_assertions_impl(
        &self,
        ns: NamespaceId,
        subjects: &[EntityId],
    ) -> Result<Vec<Assertion>> {
        if subjects.is_empty() {
            return Ok(vec![]);
        }
        // Apply order (asserted_at, claim_id, statement, ordinal), ids and statements
        // bytewise (`COLLATE "C"` columns); staging order breaks any tie.
        let sql = format!(
            "{ASSERTION_SELECT} WHERE namespace_id = $1 AND applied_at IS NULL
               AND subject_id = ANY($2)
             ORDER BY asserted_at, claim_id, statement, ordinal, seq"
        );
        let rows = sqlx::query(AssertSqlSafe(sql))
            .bind(ns.to_string())
            .bind(subjects.iter().map(|s| s.to_string()).collect::<Vec<_>>())
            .fetch_all(self.pool())
            .await
            .map_err(db_err)?;
        rows.iter().map(assertion_row).collect()
    }

    pub(crate) async fn pending_subjects_impl(
        &self,
        ns: NamespaceId,
        version: VersionId,
    ) -> Result<Vec<EntityId>> {
        let rows = sqlx::query(
            "SELECT subject_id, MIN(seq) AS first FROM staged_assertions
             WHERE namespace_id = $1 AND version_id = $2 AND applied_at IS NULL
             GROUP BY subject_id ORDER BY first",
        )
        .bind(ns.to_string())
        .bind(version.to_string())
        .fetch_all(self.pool())
        .await
        .map_err(db_err)?;
        rows.iter().map(|r| id(r, "subject_id")).collect()
    }

    pub(crate) async fn apply_assertion_impl(
        &self,
        ns: NamespaceId,
        commit: ApplyCommit,
        now: Timestamp,
    ) -> Result<bool> {
        let mut tx = self.pool().begin().await.map_err(db_err)?;
        let applied = apply_many(&mut tx, &ns.to_string(), &[(&commit, now)]).await?[0];
        tx.commit().await.map_err(db_err)?;
        Ok(applied)
    }

    /// Several assertions of one namespace in order, in one transaction: each as
    /// [`Self::apply_assertion_impl`] applies it at its transcript's time. The
    /// engine holds the batch's entity locks across processes while it decides and
    /// applies, so the subjects' transaction locks taken here, held to the one
    /// commit, are not waited for by another batch's.
    pub(crate) async fn apply_assertions_impl(
        &self,
        ns: NamespaceId,
        commits: Vec<ApplyCommit>,
    ) -> Result<Vec<bool>> {
        if commits.is_empty() {
            return Ok(vec![]);
        }
        let ns_s = ns.to_string();
        let timed: Vec<(&ApplyCommit, Timestamp)> = commits
            .iter()
            .map(|c| (c, c.transcript.created_at))
            .collect();
        let mut tx = self.pool().begin().await.map_err(db_err)?;
        let out = apply_many(&mut tx, &ns_s, &timed).await?;
        tx.commit().await.map_err(db_err)?;
        Ok(out)
    }
}

/// Apply one namespace's assertions in `tx`, in order, each at its time (see
/// `MemoryStore::apply_assertion`); per assertion, `false` when it was applied
/// before (or earlier in the batch).
///
/// It leaves what applying them one at a time would, in fewer round trips: the
/// assertions are read, their subjects locked (sorted) and their applied state
/// read once for the batch; the follow-up work, the new facts, the transcripts and
/// the applied marks are one statement each, in order. A fact's window, group,
/// successor and chain links are written per assertion in order, and evidence goes
/// in before any later chain link runs (a link rewrites its fact's contradicting
/// evidence).
async fn apply_many(
    tx: &mut sqlx::PgConnection,
    ns_s: &str,
    commits: &[(&ApplyCommit, Timestamp)],
) -> Result<Vec<bool>> {
    if commits.is_empty() {
        return Ok(vec![]);
    }
    let ids: Vec<String> = commits
        .iter()
        .map(|(c, _)| c.assertion_id.to_string())
        .collect();
    let subjects: HashMap<String, String> = sqlx::query_as(
        "SELECT id, subject_id FROM staged_assertions WHERE namespace_id = $1 AND id = ANY($2)",
    )
    .bind(ns_s)
    .bind(&ids)
    .fetch_all(&mut *tx)
    .await
    .map_err(db_err)?
    .into_iter()
    .collect();
    if let Some((c, _)) = commits
        .iter()
        .find(|(c, _)| !subjects.contains_key(&c.assertion_id.to_string()))
    {
        return Err(Error::not_found(format!(
            "assertion {} is not staged in this namespace",
            c.assertion_id
        )));
    }
    // One subject's assertions apply one at a time across processes (SQLite's single
    // writer): adjudication read the subject's facts, and this writes them. The
    // batch's subjects are locked in sorted order.
    let locks: std::collections::BTreeSet<String> = subjects
        .values()
        .map(|subject| format!("entity:{ns_s}:{subject}"))
        .collect();
    crate::lock_keys(&mut *tx, locks).await?;
    let mut applied: std::collections::HashSet<String> = sqlx::query_scalar(
        "SELECT id FROM staged_assertions
          WHERE namespace_id = $1 AND id = ANY($2) AND applied_at IS NOT NULL
          ORDER BY id COLLATE \"C\" FOR UPDATE",
    )
    .bind(ns_s)
    .bind(&ids)
    .fetch_all(&mut *tx)
    .await
    .map_err(db_err)?
    .into_iter()
    .collect();
    let mut out = Vec::with_capacity(commits.len());
    let mut apply: Vec<(&ApplyCommit, Timestamp)> = Vec::new();
    for ((c, at), id) in commits.iter().zip(&ids) {
        let fresh = applied.insert(id.clone());
        out.push(fresh);
        if fresh {
            apply.push((c, *at));
        }
    }
    if apply.is_empty() {
        return Ok(out);
    }
    let follow_up: Vec<NewWork> = apply
        .iter()
        .flat_map(|(c, _)| c.follow_up.iter().cloned())
        .collect();
    // The follow-ups are enqueued first, as each assertion's were, at the batch's
    // first time (a new row's `created_at`; each keeps its own `not_before`).
    insert_work(tx, &follow_up, apply[0].1).await?;
    // The new facts, in order (their `seq` is the one-at-a-time order), then their
    // lexical rows.
    let new: Vec<(&NewFact, Timestamp)> = apply
        .iter()
        .filter_map(|(c, at)| c.new_fact.as_ref().map(|f| (f, *at)))
        .collect();
    if !new.is_empty() {
        let text =
            |f: &dyn Fn(&NewFact) -> String| new.iter().map(|(n, _)| f(n)).collect::<Vec<_>>();
        let mut precisions = Vec::with_capacity(new.len());
        let mut validities = Vec::with_capacity(new.len());
        for (f, _) in &new {
            precisions.push(precision_str(&f.window.precision)?);
            validities.push(validity_str(&f.validity_kind)?);
        }
        let seqs: Vec<(i64, String)> = sqlx::query_as(
            "INSERT INTO facts (namespace_id, id, kind, subject_id, predicate, object_id, statement,
                 valid_from, valid_until, valid_precision, validity_kind, recorded_at, embedding_key,
                 updated_at)
             SELECT $1, f.id, f.kind, f.subject, f.predicate, f.object, f.statement, f.valid_from,
                    f.valid_until, f.precision, f.validity, f.at, f.embedding_key, f.at
               FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[],
                           $8::timestamptz[], $9::timestamptz[], $10::text[], $11::text[],
                           $12::timestamptz[], $13::text[])
                    WITH ORDINALITY AS f(id, kind, subject, predicate, object, statement, valid_from,
                                         valid_until, precision, validity, at, embedding_key, i)
              ORDER BY f.i
             RETURNING seq, statement",
        )
        .bind(ns_s)
        .bind(text(&|f| f.fact_id.to_string()))
        .bind(text(&|f| f.kind.as_str().to_string()))
        .bind(text(&|f| f.subject.to_string()))
        .bind(new.iter().map(|(f, _)| f.predicate.clone()).collect::<Vec<Option<String>>>())
        .bind(
            new.iter()
                .map(|(f, _)| f.object.map(|o| o.to_string()))
                .collect::<Vec<Option<String>>>(),
        )
        .bind(text(&|f| f.statement.clone()))
        .bind(new.iter().map(|(f, _)| f.window.valid_from).collect::<Vec<_>>())
        .bind(new.iter().map(|(f, _)| f.window.valid_until).collect::<Vec<_>>())
        .bind(&precisions)
        .bind(&validities)
        .bind(new.iter().map(|(_, at)| *at).collect::<Vec<Timestamp>>())
        .bind(text(&|f| f.embedding_key.clone()))
        .fetch_all(&mut *tx)
        .await
        .map_err(db_err)?;
        let (seq, statement): (Vec<i64>, Vec<String>) = seqs.into_iter().unzip();
        crate::insert_lexical(
            &mut *tx,
            rememberstack_sql::LexicalIndex::Facts,
            ns_s,
            &seq,
            &statement,
        )
        .await?;
    }
    // Evidence waits to be written until a chain link (which rewrites its fact's
    // contradicting evidence) or the end of the batch.
    let mut evidence: Vec<(String, String, &'static str, Timestamp)> = Vec::new();
    for (commit, now) in &apply {
        let now = *now;
        for (fact, claim, stance) in &commit.evidence {
            evidence.push((fact.to_string(), claim.to_string(), stance.as_str(), now));
        }
        if !commit.links.is_empty() {
            insert_evidence(tx, ns_s, &mut evidence).await?;
        }
        for (fact, w) in &commit.windows {
            sqlx::query(crate::shared(&rememberstack_sql::facts::SET_WINDOW))
                .bind(w.valid_from)
                .bind(w.valid_until)
                .bind(precision_str(&w.precision)?)
                .bind(now)
                .bind(ns_s)
                .bind(fact.to_string())
                .execute(&mut *tx)
                .await
                .map_err(db_err)?;
        }
        if let Some((group, members)) = &commit.contradiction {
            for fact in members {
                sqlx::query(crate::shared(&rememberstack_sql::facts::SET_GROUP))
                    .bind(group.to_string())
                    .bind(now)
                    .bind(ns_s)
                    .bind(fact.to_string())
                    .execute(&mut *tx)
                    .await
                    .map_err(db_err)?;
            }
        }
        if let Some((predecessor, successor)) = &commit.superseded {
            sqlx::query(crate::shared(&rememberstack_sql::facts::SET_SUCCESSOR))
                .bind(successor.to_string())
                .bind(now)
                .bind(ns_s)
                .bind(predecessor.to_string())
                .execute(&mut *tx)
                .await
                .map_err(db_err)?;
        }
        // Chain decisions: each fact's window, successor and group as given, and its
        // contradict-stance evidence exactly the given claims.
        for l in &commit.links {
            sqlx::query(crate::shared(&rememberstack_sql::facts::SET_CHAIN_LINK))
                .bind(l.window.valid_from)
                .bind(l.window.valid_until)
                .bind(precision_str(&l.window.precision)?)
                .bind(l.superseded_by.map(|f| f.to_string()))
                .bind(l.contradiction_group.map(|g| g.to_string()))
                .bind(now)
                .bind(ns_s)
                .bind(l.fact.to_string())
                .execute(&mut *tx)
                .await
                .map_err(db_err)?;
            let keep: Vec<String> = l.contradicted_by.iter().map(|c| c.to_string()).collect();
            sqlx::query(crate::shared(
                &rememberstack_sql::facts::CONTRADICTIONS_NOT_KEPT,
            ))
            .bind(ns_s)
            .bind(l.fact.to_string())
            .bind(&keep)
            .execute(&mut *tx)
            .await
            .map_err(db_err)?;
            for c in &keep {
                sqlx::query(crate::shared(
                    &rememberstack_sql::facts::INSERT_CONTRADICTING_EVIDENCE,
                ))
                .bind(ns_s)
                .bind(l.fact.to_string())
                .bind(c)
                .bind(now)
                .execute(&mut *tx)
                .await
                .map_err(db_err)?;
            }
        }
    }
    insert_evidence(tx, ns_s, &mut evidence).await?;
    // The transcripts and the applied marks, in order.
    let records: Vec<&AdjudicationRecord> = apply.iter().map(|(c, _)| &c.transcript).collect();
    let text = |f: &dyn Fn(&AdjudicationRecord) -> String| {
        records.iter().map(|t| f(t)).collect::<Vec<String>>()
    };
    let mut candidates = Vec::with_capacity(records.len());
    let mut inputs = Vec::with_capacity(records.len());
    for t in &records {
        candidates.push(serde_json::to_string(&t.candidates).map_err(json_err)?);
        inputs.push(serde_json::to_string(&t.input).map_err(json_err)?);
    }
    sqlx::query(
        "INSERT INTO adjudications (namespace_id, id, assertion_id, claim_id, verdict, target_fact,
             result_fact, candidates_json, reason, input_json, model, adjudicator_version, created_at)
         SELECT $1, a.id, a.assertion, a.claim, a.verdict, a.target, a.result, a.candidates::jsonb,
                a.reason, a.input::jsonb, a.model, a.adjudicator, a.at
           FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[],
                       $8::text[], $9::text[], $10::text[], $11::text[], $12::text[],
                       $13::timestamptz[])
                WITH ORDINALITY AS a(id, assertion, claim, verdict, target, result, candidates,
                                     reason, input, model, adjudicator, at, i)
          ORDER BY a.i",
    )
    .bind(ns_s)
    .bind(text(&|t| t.adjudication_id.to_string()))
    .bind(text(&|t| t.assertion_id.to_string()))
    .bind(text(&|t| t.claim_id.to_string()))
    .bind(text(&|t| t.verdict.clone()))
    .bind(
        records
            .iter()
            .map(|t| t.target_fact.map(|f| f.to_string()))
            .collect::<Vec<Option<String>>>(),
    )
    .bind(text(&|t| t.result_fact.to_string()))
    .bind(&candidates)
    .bind(text(&|t| t.reason.clone()))
    .bind(&inputs)
    .bind(records.iter().map(|t| t.model.clone()).collect::<Vec<Option<String>>>())
    .bind(text(&|t| t.adjudicator_version.clone()))
    .bind(records.iter().map(|t| t.created_at).collect::<Vec<Timestamp>>())
    .execute(&mut *tx)
    .await
    .map_err(db_err)?;
    sqlx::query(
        "UPDATE staged_assertions s SET applied_at = m.at, fact_id = m.fact, verdict = m.verdict
           FROM unnest($2::text[], $3::text[], $4::text[], $5::timestamptz[]) AS m(id, fact, verdict, at)
          WHERE s.namespace_id = $1 AND s.id = m.id",
    )
    .bind(ns_s)
    .bind(
        apply
            .iter()
            .map(|(c, _)| c.assertion_id.to_string())
            .collect::<Vec<_>>(),
    )
    .bind(text(&|t| t.result_fact.to_string()))
    .bind(text(&|t| t.verdict.clone()))
    .bind(apply.iter().map(|(_, at)| *at).collect::<Vec<Timestamp>>())
    .execute(&mut *tx)
    .await
    .map_err(db_err)?;
    Ok(out)
}

/// Write the evidence rows waiting (each idempotent on fact, claim and stance), in
/// order, and empty the list.
async fn insert_evidence(
    tx: &mut sqlx::PgConnection,
    ns_s: &str,
    rows: &mut Vec<(String, String, &'static str, Timestamp)>,
) -> Result<()> {
    if rows.is_empty() {
        return Ok(());
    }
    let (mut facts, mut claims, mut stances, mut times) = (vec![], vec![], vec![], vec![]);
    for (fact, claim, stance, at) in rows.drain(..) {
        facts.push(fact);
        claims.push(claim);
        stances.push(stance);
        times.push(at);
    }
    sqlx::query(
        "INSERT INTO fact_evidence (namespace_id, fact_id, claim_id, stance, added_at)
         SELECT $1, e.fact, e.claim, e.stance, e.at
           FROM unnest($2::text[], $3::text[], $4::text[], $5::timestamptz[])
                WITH ORDINALITY AS e(fact, claim, stance, at, i)
          ORDER BY e.i
         ON CONFLICT DO NOTHING",
    )
    .bind(ns_s)
    .bind(&facts)
    .bind(&claims)
    .bind(&stances)
    .bind(&times)
    .execute(&mut *tx)
    .await
    .map_err(db_err)?;
    Ok(())
}

impl PgStore {
    /// Rows of `select` (over `facts f`) for the facts `filter` admits, in `order`.
    async fn eligible_facts(
        &self,
        select: &str,
        filter: &FactFilter,
        order: &str,
        limit: u32,
    ) -> Result<Vec<PgRow>> {
        let mut p = Params::new(Dialect::Postgres);
        let cond = eligibility(filter, &mut p);
        let sql = format!("{select} WHERE {cond} ORDER BY {order} LIMIT {limit}");
        bind_args(sqlx::query(AssertSqlSafe(sql)), p.args())
            .fetch_all(self.pool())
            .await
            .map_err(db_err)
    }

    pub(crate) async fn list_facts_impl(
        &self,
        filter: &FactFilter,
        limit: u32,
    ) -> Result<Vec<FactRecord>> {
        // Subject name bytewise (as SQLite's binary collation), then recorded order.
        self.eligible_facts(
            &FACT_SELECT,
            filter,
            "COALESCE(s.canonical_name, '') COLLATE \"C\", f.seq",
            limit,
        )
        .await?
        .iter()
        .map(fact_row)
        .collect()
    }

    pub(crate) async fn list_facts_after_impl(
        &self,
        filter: &FactFilter,
        after: Option<(&str, i64)>,
        limit: u32,
    ) -> Result<Vec<(i64, FactRecord)>> {
        let mut p = Params::new(Dialect::Postgres);
        let mut cond = eligibility(filter, &mut p);
        if let Some((name, seq)) = after {
            // The listing's own order as a row value: rows strictly after the last one
            // served, whatever was added or removed since.
            let name = p.push(Arg::Text(name.to_string()));
            let seq = p.push(Arg::Text(seq.to_string()));
            cond.push_str(&format!(
                " AND (COALESCE(s.canonical_name, '') COLLATE \"C\", f.seq) > ({name}::text COLLATE \"C\", {seq}::bigint)"
            ));
        }
        let sql = format!(
            "{} WHERE {cond} ORDER BY COALESCE(s.canonical_name, '') COLLATE \"C\", f.seq LIMIT {limit}",
            *FACT_SELECT
        );
        bind_args(sqlx::query(AssertSqlSafe(sql)), p.args())
            .fetch_all(self.pool())
            .await
            .map_err(db_err)?
            .iter()
            .map(|r| Ok((r.get::<i64, _>("seq"), fact_row(r)?)))
            .collect()
    }

    pub(crate) async fn list_fact_keys_impl(
        &self,
        filter: &FactFilter,
        limit: u32,
    ) -> Result<Vec<FactKey>> {
        let rows = self
            .eligible_facts(
                "SELECT f.id, f.subject_id, f.object_id, f.statement FROM facts f",
                filter,
                "f.statement, f.id",
                limit,
            )
            .await?;
        rows.iter()
            .map(|r| {
                Ok(FactKey {
                    fact_id: id(r, "id")?,
                    subject: id(r, "subject_id")?,
                    object: opt_id(r, "object_id")?,
                    statement: get(r, "statement")?,
                })
            })
            .collect()
    }

    pub(crate) async fn facts_impl(
        &self,
        ns: NamespaceId,
        ids: &[FactId],
    ) -> Result<Vec<FactRecord>> {
        if ids.is_empty() {
            return Ok(vec![]);
        }
        let rows = sqlx::query(AssertSqlSafe(FACTS_BY_ID.as_str()))
            .bind(ns.to_string())
            .bind(crate::any_list(ids))
            .fetch_all(self.pool())
            .await
            .map_err(db_err)?;
        let mut by_id: HashMap<FactId, FactRecord> = HashMap::new();
        for r in &rows {
            let f = fact_row(r)?;
            by_id.insert(f.fact_id, f);
        }
        // In the order asked; missing ids are skipped (a repeated id once).
        Ok(ids.iter().filter_map(|id| by_id.remove(id)).collect())
    }

    pub(crate) async fn fact_evidence_impl(
        &self,
        ns: NamespaceId,
        fact: FactId,
    ) -> Result<Vec<EvidenceRecord>> {
        // Ties of `added_at` in insertion order (`seq`, as SQLite's rowid).
        let rows = sqlx::query(crate::shared(&rememberstack_sql::facts::EVIDENCE))
            .bind(ns.to_string())
            .bind(fact.to_string())
            .fetch_all(self.pool())
            .await
            .map_err(db_err)?;
        rows.iter()
            .map(|r| {
                Ok(EvidenceRecord {
                    fact_id: id(r, "fact_id")?,
                    claim_id: id(r, "claim_id")?,
                    stance: Stance::parse(&get::<String>(r, "stance")?)?,
                    document_id: id(r, "document_id")?,
                    is_current: get(r, "is_current")?,
                    added_at: get(r, "added_at")?,
                })
            })
            .collect()
    }

    pub(crate) async fn adjudications_impl(
        &self,
        ns: NamespaceId,
        fact: FactId,
    ) -> Result<Vec<AdjudicationRecord>> {
        let rows = sqlx::query(crate::shared(
            &rememberstack_sql::facts::ADJUDICATIONS_OF_FACT,
        ))
        .bind(ns.to_string())
        .bind(fact.to_string())
        .bind(fact.to_string())
        .fetch_all(self.pool())
        .await
        .map_err(db_err)?;
        rows.iter().map(adjudication_row).collect()
    }

    pub(crate) async fn search_facts_lexical_impl(
        &self,
        filter: &FactFilter,
        terms: &[String],
        limit: usize,
    ) -> Result<Vec<(FactId, f64)>> {
        if terms.is_empty() || limit == 0 {
            return Ok(vec![]);
        }
        // Eligibility is part of the statement, so it applies before ORDER BY … LIMIT.
        // Each term is a phrase of its tokens, the phrases OR-ed (`rs_lexical_query`,
        // as SQLite's FTS5 query). The score is BM25 from the namespace's stored
        // statistics (higher is better, as SQLite's negated `bm25()`); ties in
        // insertion order (`seq`).
        let mut p = Params::new(Dialect::Postgres);
        let cond = eligibility(filter, &mut p);
        let q = p.push(Arg::Texts(terms.to_vec()));
        let ns = p.push(Arg::Text(filter.namespace_id.to_string()));
        let sql = format!(
            "SELECT f.id, {BM25_SCORE} AS bm25
             FROM rs_bm25_weights({ns}, 'fact', {q}) AS w
             JOIN fact_lexical l ON l.tsv @@ (SELECT rs_lexical_query({q}))
             JOIN facts f ON f.seq = l.seq AND f.namespace_id = l.namespace_id
             WHERE l.namespace_id = {ns} AND {cond}
             ORDER BY bm25 DESC, f.seq
             LIMIT {limit}"
        );
        let rows = bind_args(sqlx::query(AssertSqlSafe(sql)), p.args())
            .fetch_all(self.reads())
            .await
            .map_err(db_err)?;
        rows.iter()
            .map(|r| Ok((id(r, "id")?, get::<f64>(r, "bm25")?)))
            .collect()
    }

    pub(crate) async fn search_facts_semantic_impl(
        &self,
        filter: &FactFilter,
        generation: &str,
        query: &[f32],
        limit: usize,
    ) -> Result<Vec<(FactId, f64)>> {
        rememberstack_core::store::check_query_vector(query)?;
        let dim = query.len();
        // No stored vector has another dimension than 1..=16000 (SQLite skips vectors
        // of other dimensions, so such a query finds nothing).
        if limit == 0 || dim == 0 || dim > MAX_DIM {
            return Ok(vec![]);
        }
        // A zero query has no direction: SQLite scores every candidate 0 (ties by id).
        let zero = query.iter().all(|x| *x == 0.0);
        // `$1` is the query vector.
        let mut p = Params::after(Dialect::Postgres, 1);
        let cond = eligibility(filter, &mut p);
        // The generation is written as a literal so the planner can match the partial
        // index's `WHERE generation = '<generation>'` even under a generic plan (a bound
        // `$n` cannot prove it). Quotes are doubled; text the literal could misread
        // (a backslash when `standard_conforming_strings` is off, NUL) is bound instead.
        let g = if generation.contains(['\\', '\0']) {
            p.push(Arg::Text(generation.to_string()))
        } else {
            format!("'{}'", generation.replace('\'', "''"))
        };
        let ns = p.push(Arg::Text(filter.namespace_id.to_string()));
        let base = |distance: &str| {
            format!(
                "SELECT f.id, ({distance})::float8 AS distance
                 FROM vectors vv
                 JOIN facts f ON f.namespace_id = vv.namespace_id AND f.embedding_key = vv.embedding_key
                 WHERE vv.generation = {g} AND vv.namespace_id = {ns} AND vv.dimension = {dim}
                   AND {cond}"
            )
        };
        let vector = pgvector::Vector::from(query.to_vec());
        let decode = |rows: Vec<PgRow>| -> Result<Vec<(String, f64)>> {
            rows.iter()
                .map(|r| Ok((get::<String>(r, "id")?, get::<f64>(r, "distance")?)))
                .collect()
        };
        // One statement (and a second for ties) in a vector search transaction.
        let fetch = |sql: String, walk_index: bool, tie: Option<f64>| {
            let vector = vector.clone();
            let p = &p;
            async move {
                let q = bind_args(sqlx::query(AssertSqlSafe(sql)).bind(vector), p.args());
                let q = match tie {
                    Some(d) => q.bind(d),
                    None => q,
                };
                // Sorting (the default of every connection) needs no transaction
                // of settings.
                let rows = if walk_index {
                    let mut tx = self.vector_search_tx().await?;
                    let rows = q.fetch_all(&mut *tx).await.map_err(db_err)?;
                    tx.commit().await.map_err(db_err)?;
                    rows
                } else {
                    q.fetch_all(self.reads()).await.map_err(db_err)?
                };
                decode(rows)
            }
        };
        // The exact ranking: an expression no index serves, ties by id as SQLite's
        // scan (a stored zero vector has no direction: distance 1, similarity 0).
        let exact = || {
            let distance = if zero {
                "0::float8"
            } else {
                "COALESCE(NULLIF(vv.embedding::vector <=> $1::vector, 'NaN'::float8), 1.0)"
            };
            fetch(
                format!("{} ORDER BY distance, f.id LIMIT {limit}", base(distance)),
                false,
                None,
            )
        };
        // A namespace with few vectors ranks them exactly, without an index pass.
        let small = !zero
            && self
                .exact_scan_is_cheaper(&filter.namespace_id.to_string(), generation)
                .await?;
        let hits = if zero || small {
            // A zero query has no direction: SQLite scores every candidate 0, ties by id.
            exact().await?
        } else {
            // The index pass: the HNSW index of the generation serves this expression
            // (see the migration). One row more than asked shows whether the last
            // place is tied.
            let indexed = format!("(vv.embedding::vector({dim})) <=> $1::vector({dim})");
            let sql = format!("{} ORDER BY {indexed} LIMIT {}", base(&indexed), limit + 1);
            match crate::search::index_pass("fact", fetch(sql, true, None).await, limit + 1)? {
                None => exact().await?,
                Some(mut hits) => {
                    if hits[limit - 1].1 == hits[limit].1 {
                        // Ties at the last place go by id (as SQLite's exact scan): read
                        // every candidate at that distance.
                        let sql = format!(
                            "{} AND ({indexed})::float8 = {}::float8",
                            base(&indexed),
                            p.next()
                        );
                        let tied = fetch(sql, false, Some(hits[limit].1)).await?;
                        let seen: std::collections::HashSet<String> =
                            hits.iter().map(|h| h.0.clone()).collect();
                        hits.extend(tied.into_iter().filter(|t| !seen.contains(&t.0)));
                    }
                    hits
                }
            }
        };
        let mut hits: Vec<(String, f64)> = hits
            .into_iter()
            .map(|(id, d)| {
                // Similarity = 1 − cosine distance. A stored zero vector has no
                // distance (NaN); SQLite scores it 0.
                let s = if zero || d.is_nan() { 0.0 } else { 1.0 - d };
                (id, s)
            })
            .collect();
        // Exact similarity, best first; ties by id (bytewise, as the UUID text orders).
        hits.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        hits.truncate(limit);
        hits.into_iter()
            .map(|(i, s)| Ok((parse_id(&i)?, s)))
            .collect()
    }

    pub(crate) async fn vectors_impl(
        &self,
        ns: NamespaceId,
        generation: &str,
        keys: &[String],
    ) -> Result<Vec<(String, Vec<f32>)>> {
        if keys.is_empty() {
            return Ok(vec![]);
        }
        let rows = sqlx::query(
            "SELECT embedding_key, embedding::vector AS embedding FROM vectors
             WHERE namespace_id = $1 AND generation = $2 AND embedding_key = ANY($3)",
        )
        .bind(ns.to_string())
        .bind(generation)
        .bind(keys.to_vec())
        .fetch_all(self.pool())
        .await
        .map_err(db_err)?;
        let mut by_key: BTreeMap<String, Vec<f32>> = BTreeMap::new();
        for r in &rows {
            let v: pgvector::Vector = get(r, "embedding")?;
            by_key.insert(get(r, "embedding_key")?, v.to_vec());
        }
        // In the order asked (each key once); missing keys are skipped.
        Ok(keys.iter().filter_map(|k| by_key.remove_entry(k)).collect())
    }
}
