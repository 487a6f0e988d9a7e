//! Facts (E3): normalization commits, the predicate registry, staged assertions,
//! facts with their evidence and adjudication transcripts, and fact search.

use crate::rows::*;
use crate::{
    FTS_TOKENIZER, SqliteStore, db_err, fence, fts_query, insert_work, ns_table, parse_id, ts,
};
use rememberstack_core::facts::{
    AdjudicationRecord, ApplyCommit, Assertion, EvidenceRecord, FactFilter, FactKey, FactKind,
    FactLink, FactRecord, NewFact, PredicateRow, Stance,
};
use rememberstack_core::ids::*;
use rememberstack_core::ledger::NewWork;
use rememberstack_core::store::traits::*;
use rememberstack_core::store::{Lease, NormalizationCommit};
use rememberstack_core::time::{Timestamp, to_rfc3339};
use rememberstack_core::{Error, Result};
use rememberstack_sql::facts::{ASSERTION_SELECT, fact_select};
use rememberstack_sql::rows::{adjudication_row, assertion_row, fact_row};
use rememberstack_sql::{Arg, Dialect, Params};
use sqlx::sqlite::SqliteRow;
use sqlx::{AssertSqlSafe, Row};
use std::collections::{BTreeMap, HashMap};
use std::sync::LazyLock;

/// The namespace's fact FTS5 table (`fact_fts_<uuid>`), rowid = facts.seq.
pub(crate) fn fact_fts_table(ns: &str) -> Result<String> {
    ns_table("fact_fts_", ns)
}

/// Facts with their entity names and evidence counts (`rememberstack_sql::facts`).
static FACT_SELECT: LazyLock<String> = LazyLock::new(fact_select);

/// `rememberstack_sql::facts::facts_by_id` as this store runs it.
static FACTS_BY_ID: LazyLock<String> =
    LazyLock::new(|| Dialect::Sqlite.render(&rememberstack_sql::facts::facts_by_id()));

/// Eligibility of facts (alias `f`) under a filter (`rememberstack_sql::facts`):
/// an SQL condition and its values, in order.
fn eligibility(filter: &FactFilter) -> (String, Vec<Arg>) {
    let mut p = Params::new(Dialect::Sqlite);
    let cond = rememberstack_sql::facts::eligibility(filter, &mut p);
    (cond, p.args().to_vec())
}

/// `q` with `args` bound in order.
pub(crate) fn bind_args<'q>(
    mut q: sqlx::query::Query<'q, sqlx::Sqlite, sqlx::sqlite::SqliteArguments>,
    args: &[Arg],
) -> sqlx::query::Query<'q, sqlx::Sqlite, sqlx::sqlite::SqliteArguments> {
    for a in args {
        q = match a {
            Arg::Text(s) => q.bind(s.clone()),
            Arg::Int(n) => q.bind(*n),
            Arg::Time(t) => q.bind(to_rfc3339(t)),
            Arg::Texts(v) => q.bind(rememberstack_sql::json_list(v)),
        };
    }
    q
}

impl SqliteStore {
    pub(crate) async fn bootstrap_predicates_impl(
        &self,
        ns: NamespaceId,
        core: &[(String, String, Vec<String>)],
    ) -> Result<()> {
        let ns_s = ns.to_string();
        let mut tx = self.write.begin().await.map_err(db_err)?;
        for (i, (name, description, synonyms)) in core.iter().enumerate() {
            // Idempotent; a name first seen as an uncounted value becomes core, and its
            // use count is kept.
            sqlx::query(crate::shared(
                &rememberstack_sql::facts::UPSERT_CORE_PREDICATE,
            ))
            .bind(&ns_s)
            .bind(name)
            .bind(description)
            .bind(json(synonyms)?)
            .bind(i as i64)
            .execute(&mut *tx)
            .await
            .map_err(db_err)?;
        }
        tx.commit().await.map_err(db_err)
    }

    pub(crate) async fn predicates_impl(&self, ns: NamespaceId) -> Result<Vec<PredicateRow>> {
        let rows = sqlx::query(crate::shared(&rememberstack_sql::facts::PREDICATES))
            .bind(ns.to_string())
            .fetch_all(&self.read)
            .await
            .map_err(db_err)?;
        rows.iter()
            .map(|r| {
                Ok(PredicateRow {
                    name: r.get("name"),
                    description: r.get("description"),
                    synonyms: from_json(&r.get::<String, _>("synonyms_json"))?,
                    status: r.get("status"),
                    uses: r.get::<i64, _>("uses") as u64,
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
        let at = to_rfc3339(&now);
        let mut tx = self.write.begin().await.map_err(db_err)?;
        fence(&mut tx, lease, now).await?;
        let (ns,): (String,) =
            sqlx::query_as(crate::shared(&rememberstack_sql::ledger::NAMESPACE_OF_ITEM))
                .bind(lease.work_id.to_string())
                .fetch_one(&mut *tx)
                .await
                .map_err(db_err)?;
        sqlx::query(crate::shared(
            &rememberstack_sql::facts::UPSERT_NORMALIZATION,
        ))
        .bind(&ns)
        .bind(claim.to_string())
        .bind(normalizer_version)
        .bind(json(&output)?)
        .bind(&at)
        .execute(&mut *tx)
        .await
        .map_err(db_err)?;
        for a in &assertions {
            let a_ns = a.namespace_id.to_string();
            let inserted = sqlx::query(crate::shared(
                &rememberstack_sql::facts::INSERT_STAGED_ASSERTION,
            ))
            .bind(&a_ns)
            .bind(a.assertion_id.to_string())
            .bind(a.claim_id.to_string())
            .bind(a.document_id.to_string())
            .bind(a.version_id.to_string())
            .bind(normalizer_version)
            .bind(a.kind.as_str())
            .bind(a.subject.to_string())
            .bind(&a.predicate)
            .bind(a.object.map(|o| o.to_string()))
            .bind(&a.statement)
            .bind(a.window.valid_from.as_ref().map(to_rfc3339))
            .bind(a.window.valid_until.as_ref().map(to_rfc3339))
            .bind(enum_str(&a.window.precision)?)
            .bind(enum_str(&a.validity_kind)?)
            .bind(to_rfc3339(&a.asserted_at))
            .bind(a.ordinal as i64)
            .bind(&at)
            .execute(&mut *tx)
            .await
            .map_err(db_err)?
            .rows_affected();
            // Uses are counted once per staged assertion: a replayed row counts nothing.
            if inserted == 0 || a.kind != FactKind::Relation {
                continue;
            }
            let Some(predicate) = &a.predicate else {
                continue;
            };
            sqlx::query(
                "INSERT INTO predicates (namespace_id, name, description, synonyms_json, status, uses)
                 VALUES (?, ?, '', '[]', 'other', 1)
                 ON CONFLICT (namespace_id, name) DO UPDATE SET uses = uses + 1",
            )
            .bind(&a_ns)
            .bind(predicate)
            .execute(&mut *tx)
            .await
            .map_err(db_err)?;
        }
        insert_work(&mut tx, &follow_up, now).await?;
        tx.commit().await.map_err(db_err)
    }

    /// [`MemoryStore::complete_many`]: every lease fenced in one transaction.
    pub(crate) async fn complete_many_impl(
        &self,
        leases: &[Lease],
        now: Timestamp,
    ) -> Result<Vec<Result<()>>> {
        if leases.is_empty() {
            return Ok(vec![]);
        }
        let mut tx = self.write.begin().await.map_err(db_err)?;
        let mut held = fence_many(&mut tx, &leases.iter().collect::<Vec<_>>(), now).await?;
        tx.commit().await.map_err(db_err)?;
        // An item listed twice completes once, as one at a time would.
        Ok(leases
            .iter()
            .map(|l| {
                if held.remove(&l.work_id.to_string()).is_some() {
                    Ok(())
                } else {
                    Err(l.lost())
                }
            })
            .collect())
    }

    /// [`Self::commit_normalization_impl`] for several claims in one transaction: one
    /// fence for every lease, then multi-row statements for the outputs, the staged
    /// assertions, the predicate use counts and the follow-up work of the commits
    /// whose lease held. A commit whose lease is gone writes nothing and gets
    /// `lease_lost`.
    pub(crate) async fn commit_normalizations_impl(
        &self,
        commits: Vec<NormalizationCommit>,
        now: Timestamp,
    ) -> Result<Vec<Result<()>>> {
        if commits.is_empty() {
            return Ok(vec![]);
        }
        let at = to_rfc3339(&now);
        let mut tx = self.write.begin().await.map_err(db_err)?;
        let leases: Vec<&Lease> = commits.iter().map(|c| &c.lease).collect();
        let held = fence_many(&mut tx, &leases, now).await?;
        let mut results = Vec::with_capacity(commits.len());
        let mut kept: Vec<(&NormalizationCommit, &String)> = Vec::new();
        for c in &commits {
            match held.get(&c.lease.work_id.to_string()) {
                Some(ns) => {
                    results.push(Ok(()));
                    kept.push((c, ns));
                }
                None => results.push(Err(c.lease.lost())),
            }
        }
        let mut outputs: Vec<(&String, String, &str, String)> = Vec::with_capacity(kept.len());
        for (c, ns) in &kept {
            outputs.push((
                ns,
                c.claim.to_string(),
                &c.normalizer_version,
                json(&c.output)?,
            ));
        }
        insert_rows(
            &mut tx,
            "INSERT INTO normalizations (namespace_id, claim_id, normalizer_version, output_json, created_at) ",
            " ON CONFLICT (namespace_id, claim_id, normalizer_version) DO UPDATE SET
                 output_json = excluded.output_json, created_at = excluded.created_at",
            &outputs,
            |mut row, (ns, claim, version, output)| {
                row.push_bind(*ns)
                    .push_bind(claim.clone())
                    .push_bind(*version)
                    .push_bind(output.clone())
                    .push_bind(&at);
            },
        )
        .await?;
        let mut assertions: Vec<(&Assertion, &str, String, String)> = Vec::new();
        for (c, _) in &kept {
            for a in &c.assertions {
                assertions.push((
                    a,
                    c.normalizer_version.as_str(),
                    enum_str(&a.window.precision)?,
                    enum_str(&a.validity_kind)?,
                ));
            }
        }
        // Uses are counted once per staged assertion: a replayed row counts nothing.
        let mut uses: BTreeMap<(String, String), i64> = BTreeMap::new();
        for batch in assertions.chunks(48) {
            let mut q = sqlx::QueryBuilder::<sqlx::Sqlite>::new(
                "INSERT INTO staged_assertions (namespace_id, id, claim_id, document_id, version_id,
                     normalizer_version, kind, subject_id, predicate, object_id, statement, valid_from,
                     valid_until, valid_precision, validity_kind, asserted_at, ordinal, created_at) ",
            );
            q.push_values(batch, |mut row, (a, version, precision, validity)| {
                row.push_bind(a.namespace_id.to_string())
                    .push_bind(a.assertion_id.to_string())
                    .push_bind(a.claim_id.to_string())
                    .push_bind(a.document_id.to_string())
                    .push_bind(a.version_id.to_string())
                    .push_bind(*version)
                    .push_bind(a.kind.as_str())
                    .push_bind(a.subject.to_string())
                    .push_bind(&a.predicate)
                    .push_bind(a.object.map(|o| o.to_string()))
                    .push_bind(&a.statement)
                    .push_bind(a.window.valid_from.as_ref().map(to_rfc3339))
                    .push_bind(a.window.valid_until.as_ref().map(to_rfc3339))
                    .push_bind(precision.as_str())
                    .push_bind(validity.as_str())
                    .push_bind(to_rfc3339(&a.asserted_at))
                    .push_bind(a.ordinal as i64)
                    .push_bind(&at);
            });
            q.push(" ON CONFLICT DO NOTHING RETURNING namespace_id, kind, predicate");
            for r in q.build().fetch_all(&mut *tx).await.map_err(db_err)? {
                let kind: String = r.get("kind");
                let Some(predicate) = r.get::<Option<String>, _>("predicate") else {
                    continue;
                };
                if kind == FactKind::Relation.as_str() {
                    *uses.entry((r.get("namespace_id"), predicate)).or_default() += 1;
                }
            }
        }
        let uses: Vec<((String, String), i64)> = uses.into_iter().collect();
        insert_rows(
            &mut tx,
            "INSERT INTO predicates (namespace_id, name, description, synonyms_json, status, uses) ",
            " ON CONFLICT (namespace_id, name) DO UPDATE SET uses = uses + excluded.uses",
            &uses,
            |mut row, ((ns, name), n)| {
                row.push_bind(ns.clone())
                    .push_bind(name.clone())
                    .push_bind("")
                    .push_bind("[]")
                    .push_bind("other")
                    .push_bind(*n);
            },
        )
        .await?;
        let follow_up: Vec<NewWork> = kept
            .iter()
            .flat_map(|(c, _)| c.follow_up.iter().cloned())
            .collect();
        insert_work(&mut tx, &follow_up, now).await?;
        tx.commit().await.map_err(db_err)?;
        Ok(results)
    }

    pub(crate) async fn normalization_impl(
        &self,
        ns: NamespaceId,
        claim: ClaimId,
        normalizer_version: &str,
    ) -> Result<Option<serde_json::Value>> {
        let row = sqlx::query(crate::shared(&rememberstack_sql::facts::NORMALIZATION))
            .bind(ns.to_string())
            .bind(claim.to_string())
            .bind(normalizer_version)
            .fetch_optional(&self.read)
            .await
            .map_err(db_err)?;
        row.map(|r| from_json(&r.get::<String, _>("output_json")))
            .transpose()
    }

    pub(crate) async fn unapplied_assertions_impl(
        &self,
        ns: NamespaceId,
        subjects: &[EntityId],
    ) -> Result<Vec<Assertion>> {
        let ns_s = ns.to_string();
        let mut found: Vec<(String, String, String, u32, i64, Assertion)> = Vec::new();
        let sql = format!(
            "{ASSERTION_SELECT} WHERE namespace_id = ? AND applied_at IS NULL
               AND subject_id IN ({{list}})"
        );
        for r in fetch_in_batches(&self.read, &sql, &[&ns_s], &id_strings(subjects)).await? {
            let a = assertion_row(&r)?;
            found.push((
                r.get("asserted_at"),
                r.get("claim_id"),
                a.statement.clone(),
                a.ordinal,
                r.get("seq"),
                a,
            ));
        }
        // Apply order (asserted_at, claim_id, statement, ordinal) over the stored text,
        // as SQLite's binary collation orders it; staging order breaks any tie.
        found.sort_by(|x, y| (&x.0, &x.1, &x.2, x.3, x.4).cmp(&(&y.0, &y.1, &y.2, y.3, y.4)));
        let mut seen = std::collections::HashSet::new();
        Ok(found
            .into_iter()
            .filter(|f| seen.insert(f.4))
            .map(|f| f.5)
            .collect())
    }

    pub(crate) async fn pending_subjects_impl(
        &self,
        ns: NamespaceId,
        version: VersionId,
    ) -> Result<Vec<EntityId>> {
        // Both indexes hold only waiting rows (migration 0030), and the planner may
        // take the subject index for its grouping: that reads every waiting row of
        // the namespace, where the version's are asked for.
        let rows = sqlx::query(
            "SELECT subject_id, MIN(seq) AS first FROM staged_assertions INDEXED BY staged_by_version
             WHERE namespace_id = ? AND version_id = ? AND applied_at IS NULL
             GROUP BY subject_id ORDER BY first",
        )
        .bind(ns.to_string())
        .bind(version.to_string())
        .fetch_all(&self.read)
        .await
        .map_err(db_err)?;
        rows.iter()
            .map(|r| parse_id(&r.get::<String, _>("subject_id")))
            .collect()
    }

    /// [`Self::apply_assertion_impl`] for several assertions in one transaction and a
    /// few multi-row statements, each commit stamped with its transcript's time.
    pub(crate) async fn apply_assertions_impl(
        &self,
        ns: NamespaceId,
        commits: Vec<ApplyCommit>,
    ) -> Result<Vec<bool>> {
        if commits.is_empty() {
            return Ok(vec![]);
        }
        let ns_s = ns.to_string();
        let fts = fact_fts_table(&ns_s)?;
        let mut tx = self.write.begin().await.map_err(db_err)?;
        let ids: Vec<String> = commits.iter().map(|c| c.assertion_id.to_string()).collect();
        let mut applied: HashMap<String, bool> = HashMap::new();
        for batch in ids.chunks(400) {
            let sql = format!(
                "SELECT id, applied_at FROM staged_assertions WHERE namespace_id = ? AND id IN ({})",
                in_list(batch.len())
            );
            let mut q = sqlx::query(AssertSqlSafe(sql)).bind(&ns_s);
            for id in batch {
                q = q.bind(id);
            }
            for r in q.fetch_all(&mut *tx).await.map_err(db_err)? {
                applied.insert(
                    r.get("id"),
                    r.get::<Option<String>, _>("applied_at").is_some(),
                );
            }
        }
        let mut out = Vec::with_capacity(commits.len());
        let mut fresh: Vec<&ApplyCommit> = Vec::new();
        for (c, id) in commits.iter().zip(&ids) {
            match applied.get_mut(id) {
                None => {
                    return Err(Error::not_found(format!(
                        "assertion {} is not staged in this namespace",
                        c.assertion_id
                    )));
                }
                Some(done) if *done => out.push(false),
                Some(done) => {
                    *done = true;
                    out.push(true);
                    fresh.push(c);
                }
            }
        }
        let at = |c: &ApplyCommit| to_rfc3339(&c.transcript.created_at);
        let follow_up: Vec<NewWork> = fresh
            .iter()
            .flat_map(|c| c.follow_up.iter().cloned())
            .collect();
        insert_work(&mut tx, &follow_up, commits[0].transcript.created_at).await?;
        let new_facts: Vec<(&ApplyCommit, &NewFact, String, String)> = fresh
            .iter()
            .filter_map(|c| c.new_fact.as_ref().map(|f| (*c, f)))
            .map(|(c, f)| {
                Ok((
                    c,
                    f,
                    enum_str(&f.window.precision)?,
                    enum_str(&f.validity_kind)?,
                ))
            })
            .collect::<Result<_>>()?;
        if !new_facts.is_empty() {
            sqlx::query(AssertSqlSafe(format!(
                "CREATE VIRTUAL TABLE IF NOT EXISTS {fts} USING fts5 (text, tokenize = {FTS_TOKENIZER})"
            )))
            .execute(&mut *tx)
            .await
            .map_err(db_err)?;
        }
        let mut labels: Vec<(i64, &str)> = Vec::with_capacity(new_facts.len());
        for batch in new_facts.chunks(48) {
            let mut q = sqlx::QueryBuilder::<sqlx::Sqlite>::new(
                "INSERT INTO facts (namespace_id, id, kind, subject_id, predicate, object_id, statement,
                     valid_from, valid_until, valid_precision, validity_kind, recorded_at, embedding_key,
                     updated_at) ",
            );
            q.push_values(batch, |mut row, (c, f, precision, validity)| {
                row.push_bind(&ns_s)
                    .push_bind(f.fact_id.to_string())
                    .push_bind(f.kind.as_str())
                    .push_bind(f.subject.to_string())
                    .push_bind(&f.predicate)
                    .push_bind(f.object.map(|o| o.to_string()))
                    .push_bind(&f.statement)
                    .push_bind(f.window.valid_from.as_ref().map(to_rfc3339))
                    .push_bind(f.window.valid_until.as_ref().map(to_rfc3339))
                    .push_bind(precision.as_str())
                    .push_bind(validity.as_str())
                    .push_bind(at(c))
                    .push_bind(&f.embedding_key)
                    .push_bind(at(c));
            });
            q.push(" RETURNING seq, id");
            let rows = q.build().fetch_all(&mut *tx).await.map_err(db_err)?;
            let seq_of: HashMap<String, i64> = rows
                .iter()
                .map(|r| (r.get::<String, _>("id"), r.get::<i64, _>("seq")))
                .collect();
            for (_, f, _, _) in batch {
                let seq = seq_of
                    .get(&f.fact_id.to_string())
                    .copied()
                    .ok_or_else(|| Error::store(format!("fact {} was not inserted", f.fact_id)))?;
                labels.push((seq, f.statement.as_str()));
            }
        }
        insert_rows(
            &mut tx,
            &format!("INSERT INTO {fts} (rowid, text) "),
            "",
            &labels,
            |mut row, (seq, text)| {
                row.push_bind(*seq).push_bind(*text);
            },
        )
        .await?;
        let evidence: Vec<(&ApplyCommit, &(FactId, ClaimId, Stance))> = fresh
            .iter()
            .flat_map(|c| c.evidence.iter().map(move |e| (*c, e)))
            .collect();
        insert_rows(
            &mut tx,
            "INSERT INTO fact_evidence (namespace_id, fact_id, claim_id, stance, added_at) ",
            " ON CONFLICT DO NOTHING",
            &evidence,
            |mut row, (c, (fact, claim, stance))| {
                row.push_bind(&ns_s)
                    .push_bind(fact.to_string())
                    .push_bind(claim.to_string())
                    .push_bind(stance.as_str())
                    .push_bind(at(c));
            },
        )
        .await?;
        for c in &fresh {
            for (fact, w) in &c.windows {
                sqlx::query(crate::shared(&rememberstack_sql::facts::SET_WINDOW))
                    .bind(w.valid_from.as_ref().map(to_rfc3339))
                    .bind(w.valid_until.as_ref().map(to_rfc3339))
                    .bind(enum_str(&w.precision)?)
                    .bind(at(c))
                    .bind(&ns_s)
                    .bind(fact.to_string())
                    .execute(&mut *tx)
                    .await
                    .map_err(db_err)?;
            }
            if let Some((group, members)) = &c.contradiction {
                for fact in members {
                    sqlx::query(crate::shared(&rememberstack_sql::facts::SET_GROUP))
                        .bind(group.to_string())
                        .bind(at(c))
                        .bind(&ns_s)
                        .bind(fact.to_string())
                        .execute(&mut *tx)
                        .await
                        .map_err(db_err)?;
                }
            }
            if let Some((predecessor, successor)) = &c.superseded {
                sqlx::query(crate::shared(&rememberstack_sql::facts::SET_SUCCESSOR))
                    .bind(successor.to_string())
                    .bind(at(c))
                    .bind(&ns_s)
                    .bind(predecessor.to_string())
                    .execute(&mut *tx)
                    .await
                    .map_err(db_err)?;
            }
            apply_links(&mut tx, &ns_s, &c.links, &at(c)).await?;
        }
        let mut transcripts: Vec<(&AdjudicationRecord, String, String)> = Vec::new();
        for c in &fresh {
            let t = &c.transcript;
            transcripts.push((t, json(&t.candidates)?, json(&t.input)?));
        }
        insert_rows(
            &mut tx,
            "INSERT INTO adjudications (namespace_id, id, assertion_id, claim_id, verdict, target_fact,
                 result_fact, candidates_json, reason, input_json, model, adjudicator_version, created_at) ",
            "",
            &transcripts,
            |mut row, (t, candidates, input)| {
                row.push_bind(&ns_s)
                    .push_bind(t.adjudication_id.to_string())
                    .push_bind(t.assertion_id.to_string())
                    .push_bind(t.claim_id.to_string())
                    .push_bind(&t.verdict)
                    .push_bind(t.target_fact.map(|f| f.to_string()))
                    .push_bind(t.result_fact.to_string())
                    .push_bind(candidates.clone())
                    .push_bind(&t.reason)
                    .push_bind(input.clone())
                    .push_bind(&t.model)
                    .push_bind(&t.adjudicator_version)
                    .push_bind(to_rfc3339(&t.created_at));
            },
        )
        .await?;
        for batch in fresh.chunks(100) {
            let values = vec!["(?, ?, ?, ?)"; batch.len()].join(", ");
            let sql = format!(
                "WITH v(id, at, fact, verdict) AS (VALUES {values})
                 UPDATE staged_assertions SET applied_at = v.at, fact_id = v.fact, verdict = v.verdict
                 FROM v WHERE staged_assertions.namespace_id = ? AND staged_assertions.id = v.id"
            );
            let mut q = sqlx::query(AssertSqlSafe(sql));
            for c in batch {
                q = q
                    .bind(c.assertion_id.to_string())
                    .bind(at(c))
                    .bind(c.transcript.result_fact.to_string())
                    .bind(&c.transcript.verdict);
            }
            q.bind(&ns_s).execute(&mut *tx).await.map_err(db_err)?;
        }
        tx.commit().await.map_err(db_err)?;
        Ok(out)
    }

    pub(crate) async fn apply_assertion_impl(
        &self,
        ns: NamespaceId,
        commit: ApplyCommit,
        now: Timestamp,
    ) -> Result<bool> {
        let ns_s = ns.to_string();
        let at = to_rfc3339(&now);
        let fts = fact_fts_table(&ns_s)?;
        let mut tx = self.write.begin().await.map_err(db_err)?;
        let staged = sqlx::query(crate::shared(&rememberstack_sql::facts::APPLIED_AT))
            .bind(&ns_s)
            .bind(commit.assertion_id.to_string())
            .fetch_optional(&mut *tx)
            .await
            .map_err(db_err)?;
        let Some(staged) = staged else {
            return Err(Error::not_found(format!(
                "assertion {} is not staged in this namespace",
                commit.assertion_id
            )));
        };
        if staged.get::<Option<String>, _>("applied_at").is_some() {
            return Ok(false);
        }
        crate::insert_work(&mut tx, &commit.follow_up, now).await?;
        if let Some(f) = &commit.new_fact {
            sqlx::query(AssertSqlSafe(format!(
                "CREATE VIRTUAL TABLE IF NOT EXISTS {fts} USING fts5 (text, tokenize = {FTS_TOKENIZER})"
            )))
            .execute(&mut *tx)
            .await
            .map_err(db_err)?;
            let r = sqlx::query(
                "INSERT INTO facts (namespace_id, id, kind, subject_id, predicate, object_id, statement,
                     valid_from, valid_until, valid_precision, validity_kind, recorded_at, embedding_key,
                     updated_at)
                 VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            )
            .bind(&ns_s)
            .bind(f.fact_id.to_string())
            .bind(f.kind.as_str())
            .bind(f.subject.to_string())
            .bind(&f.predicate)
            .bind(f.object.map(|o| o.to_string()))
            .bind(&f.statement)
            .bind(f.window.valid_from.as_ref().map(to_rfc3339))
            .bind(f.window.valid_until.as_ref().map(to_rfc3339))
            .bind(enum_str(&f.window.precision)?)
            .bind(enum_str(&f.validity_kind)?)
            .bind(&at)
            .bind(&f.embedding_key)
            .bind(&at)
            .execute(&mut *tx)
            .await
            .map_err(db_err)?;
            sqlx::query(AssertSqlSafe(format!(
                "INSERT INTO {fts} (rowid, text) VALUES (?, ?)"
            )))
            .bind(r.last_insert_rowid())
            .bind(&f.statement)
            .execute(&mut *tx)
            .await
            .map_err(db_err)?;
        }
        for (fact, claim, stance) in &commit.evidence {
            sqlx::query(crate::shared(&rememberstack_sql::facts::INSERT_EVIDENCE))
                .bind(&ns_s)
                .bind(fact.to_string())
                .bind(claim.to_string())
                .bind(stance.as_str())
                .bind(&at)
                .execute(&mut *tx)
                .await
                .map_err(db_err)?;
        }
        for (fact, w) in &commit.windows {
            sqlx::query(crate::shared(&rememberstack_sql::facts::SET_WINDOW))
                .bind(w.valid_from.as_ref().map(to_rfc3339))
                .bind(w.valid_until.as_ref().map(to_rfc3339))
                .bind(enum_str(&w.precision)?)
                .bind(&at)
                .bind(&ns_s)
                .bind(fact.to_string())
                .execute(&mut *tx)
                .await
                .map_err(db_err)?;
        }
        if let Some((group, members)) = &commit.contradiction {
            for fact in members {
                sqlx::query(crate::shared(&rememberstack_sql::facts::SET_GROUP))
                    .bind(group.to_string())
                    .bind(&at)
                    .bind(&ns_s)
                    .bind(fact.to_string())
                    .execute(&mut *tx)
                    .await
                    .map_err(db_err)?;
            }
        }
        if let Some((predecessor, successor)) = &commit.superseded {
            sqlx::query(crate::shared(&rememberstack_sql::facts::SET_SUCCESSOR))
                .bind(successor.to_string())
                .bind(&at)
                .bind(&ns_s)
                .bind(predecessor.to_string())
                .execute(&mut *tx)
                .await
                .map_err(db_err)?;
        }
        apply_links(&mut tx, &ns_s, &commit.links, &at).await?;
        let t = &commit.transcript;
        sqlx::query(crate::shared(
            &rememberstack_sql::facts::INSERT_ADJUDICATION,
        ))
        .bind(&ns_s)
        .bind(t.adjudication_id.to_string())
        .bind(t.assertion_id.to_string())
        .bind(t.claim_id.to_string())
        .bind(&t.verdict)
        .bind(t.target_fact.map(|f| f.to_string()))
        .bind(t.result_fact.to_string())
        .bind(json(&t.candidates)?)
        .bind(&t.reason)
        .bind(json(&t.input)?)
        .bind(&t.model)
        .bind(&t.adjudicator_version)
        .bind(to_rfc3339(&t.created_at))
        .execute(&mut *tx)
        .await
        .map_err(db_err)?;
        sqlx::query(crate::shared(&rememberstack_sql::facts::MARK_APPLIED))
            .bind(&at)
            .bind(t.result_fact.to_string())
            .bind(&t.verdict)
            .bind(&ns_s)
            .bind(commit.assertion_id.to_string())
            .execute(&mut *tx)
            .await
            .map_err(db_err)?;
        tx.commit().await.map_err(db_err)?;
        Ok(true)
    }

    /// Rows of `select` (over `facts f`) for the facts `filter` admits, in `order`.
    async fn eligible_facts(
        &self,
        select: &str,
        filter: &FactFilter,
        order: &str,
        limit: u32,
    ) -> Result<Vec<SqliteRow>> {
        let (cond, binds) = eligibility(filter);
        let sql = format!("{select} WHERE {cond} ORDER BY {order} LIMIT ?");
        bind_args(sqlx::query(AssertSqlSafe(sql)), &binds)
            .bind(limit as i64)
            .fetch_all(&self.read)
            .await
            .map_err(db_err)
    }

    pub(crate) async fn list_facts_impl(
        &self,
        filter: &FactFilter,
        limit: u32,
    ) -> Result<Vec<FactRecord>> {
        self.eligible_facts(&FACT_SELECT, filter, "subject_name, f.seq", limit)
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
        let (mut cond, mut binds) = eligibility(filter);
        if let Some((name, seq)) = after {
            // The listing's own order as a row value: rows strictly after the last one
            // served, whatever was added or removed since.
            cond.push_str(" AND (COALESCE(s.canonical_name, ''), f.seq) > (?, ?)");
            binds.push(Arg::Text(name.to_string()));
            binds.push(Arg::Int(seq));
        }
        let sql = format!(
            "{} WHERE {cond} ORDER BY subject_name, f.seq LIMIT ?",
            *FACT_SELECT
        );
        bind_args(sqlx::query(AssertSqlSafe(sql)), &binds)
            .bind(limit as i64)
            .fetch_all(&self.read)
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
                    fact_id: parse_id(&r.get::<String, _>("id"))?,
                    subject: parse_id(&r.get::<String, _>("subject_id"))?,
                    object: opt_id(r, "object_id")?,
                    statement: r.get("statement"),
                })
            })
            .collect()
    }

    pub(crate) async fn facts_impl(
        &self,
        ns: NamespaceId,
        ids: &[FactId],
    ) -> Result<Vec<FactRecord>> {
        let ns_s = ns.to_string();
        let mut by_id: HashMap<FactId, FactRecord> = HashMap::new();
        let rows = sqlx::query(AssertSqlSafe(FACTS_BY_ID.as_str()))
            .bind(&ns_s)
            .bind(crate::any_list(ids))
            .fetch_all(&self.read)
            .await
            .map_err(db_err)?;
        for r in rows {
            let f = fact_row(&r)?;
            by_id.insert(f.fact_id, f);
        }
        Ok(ids.iter().filter_map(|id| by_id.remove(id)).collect())
    }

    pub(crate) async fn fact_evidence_impl(
        &self,
        ns: NamespaceId,
        fact: FactId,
    ) -> Result<Vec<EvidenceRecord>> {
        let rows = sqlx::query(crate::shared(&rememberstack_sql::facts::EVIDENCE))
            .bind(ns.to_string())
            .bind(fact.to_string())
            .fetch_all(&self.read)
            .await
            .map_err(db_err)?;
        rows.iter()
            .map(|r| {
                Ok(EvidenceRecord {
                    fact_id: parse_id(&r.get::<String, _>("fact_id"))?,
                    claim_id: parse_id(&r.get::<String, _>("claim_id"))?,
                    stance: Stance::parse(&r.get::<String, _>("stance"))?,
                    document_id: parse_id(&r.get::<String, _>("document_id"))?,
                    is_current: r.get::<i64, _>("is_current") != 0,
                    added_at: ts(&r.get::<String, _>("added_at"))?,
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
        .fetch_all(&self.read)
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
        let fts = fact_fts_table(&filter.namespace_id.to_string())?;
        if !self.table_exists(&fts).await? {
            return Ok(vec![]);
        }
        // Eligibility is part of the statement, so it applies before ORDER BY … LIMIT.
        let (cond, binds) = eligibility(filter);
        if filter.entities.is_empty() && filter.documents.is_none() && filter.group.is_none() {
            let sql = format!(
                "SELECT f.seq AS seq, f.id AS id FROM facts f
                 WHERE f.seq IN (SELECT value FROM json_each(?)) AND {cond}"
            );
            return self
                .two_phase_lexical(filter.namespace_id, &fts, terms, limit, |list| {
                    bind_args(sqlx::query(AssertSqlSafe(sql.clone())).bind(list), &binds)
                })
                .await?
                .into_iter()
                .map(|(id, score)| Ok((parse_id(&id)?, score)))
                .collect();
        }
        let sql = format!(
            "SELECT f.id, bm25({fts}) AS rank FROM {fts}
             JOIN facts f ON f.seq = {fts}.rowid
             WHERE {fts} MATCH ? AND {cond}
             ORDER BY rank, f.id LIMIT ?"
        );
        let rows = bind_args(
            sqlx::query(AssertSqlSafe(sql)).bind(fts_query(terms)),
            &binds,
        )
        .bind(limit as i64)
        .fetch_all(&self.read)
        .await
        .map_err(db_err)?;
        bm25_hits(&rows)
    }

    pub(crate) async fn search_facts_semantic_impl(
        &self,
        filter: &FactFilter,
        generation: &str,
        query: &[f32],
        limit: usize,
    ) -> Result<Vec<(FactId, f64)>> {
        if limit == 0 {
            return Ok(vec![]);
        }
        let (cond, binds) = eligibility(filter);
        let sql = |vectors: &str| {
            format!("SELECT f.id, f.embedding_key FROM facts f {vectors} WHERE {cond}")
        };
        let ns_s = filter.namespace_id.to_string();
        let stamp = self.change_stamp(filter.namespace_id).await?;
        let statement = crate::vector_cache::Eligibility {
            table: "facts",
            id_column: "f.id",
            key: format!("facts|{cond}|{binds:?}"),
            scoped: !filter.entities.is_empty()
                || filter.documents.is_some()
                || filter.group.is_some(),
            exact: false,
            sql: sql(&crate::vector_cache::vectors_join("f")),
            check: sql(crate::vector_cache::VECTOR_IMPLIED),
            bind: crate::vector_cache::binder(|q| bind_args(q.bind(generation), &binds)),
        };
        self.vector_cache
            .search(
                &self.read, &ns_s, generation, stamp, statement, query, limit,
            )
            .await
    }

    pub(crate) async fn vectors_impl(
        &self,
        ns: NamespaceId,
        generation: &str,
        keys: &[String],
    ) -> Result<Vec<(String, Vec<f32>)>> {
        let mut by_key: BTreeMap<String, Vec<f32>> = BTreeMap::new();
        let rows = fetch_in_batches(
            &self.read,
            "SELECT embedding_key, dimension, vector FROM vectors
             WHERE namespace_id = ? AND generation = ? AND embedding_key IN ({list})",
            &[&ns.to_string(), generation],
            keys,
        )
        .await?;
        for r in rows {
            by_key.insert(
                r.get("embedding_key"),
                decode_vector(&r.get::<Vec<u8>, _>("vector"), r.get("dimension"))?,
            );
        }
        // In the order asked (each key once); missing keys are skipped.
        Ok(keys.iter().filter_map(|k| by_key.remove_entry(k)).collect())
    }
}

/// The error of a commit whose lease is gone.
/// Write chain decisions ([`FactLink`]): each fact's window, successor and
/// contradiction group as given, and its contradict-stance evidence exactly the
/// given claims (the fact counts follow through the evidence triggers).
async fn apply_links(
    conn: &mut sqlx::SqliteConnection,
    ns_s: &str,
    links: &[FactLink],
    at: &str,
) -> Result<()> {
    for l in links {
        sqlx::query(crate::shared(&rememberstack_sql::facts::SET_CHAIN_LINK))
            .bind(l.window.valid_from.as_ref().map(to_rfc3339))
            .bind(l.window.valid_until.as_ref().map(to_rfc3339))
            .bind(enum_str(&l.window.precision)?)
            .bind(l.superseded_by.map(|f| f.to_string()))
            .bind(l.contradiction_group.map(|g| g.to_string()))
            .bind(at)
            .bind(ns_s)
            .bind(l.fact.to_string())
            .execute(&mut *conn)
            .await
            .map_err(db_err)?;
        let keep: Vec<String> = l.contradicted_by.iter().map(|c| c.to_string()).collect();
        sqlx::query(crate::shared(
            &rememberstack_sql::facts::CONTRADICTIONS_NOT_KEPT,
        ))
        .bind(ns_s)
        .bind(l.fact.to_string())
        .bind(crate::any_list(&keep))
        .execute(&mut *conn)
        .await
        .map_err(db_err)?;
        for c in &keep {
            sqlx::query(crate::shared(
                &rememberstack_sql::facts::INSERT_CONTRADICTING_EVIDENCE,
            ))
            .bind(ns_s)
            .bind(l.fact.to_string())
            .bind(c)
            .bind(at)
            .execute(&mut *conn)
            .await
            .map_err(db_err)?;
        }
    }
    Ok(())
}

/// Mark every leased item done whose lease still holds, a statement per owner and
/// 400 items: the work ids that held, with their namespaces.
pub(crate) async fn fence_many(
    tx: &mut sqlx::SqliteConnection,
    leases: &[&Lease],
    now: Timestamp,
) -> Result<HashMap<String, String>> {
    let mut held: HashMap<String, String> = HashMap::new();
    let mut by_owner: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for lease in leases {
        by_owner
            .entry(lease.owner.as_str())
            .or_default()
            .push(lease.work_id.to_string());
    }
    for (owner, ids) in &by_owner {
        for batch in ids.chunks(400) {
            let sql = format!(
                "UPDATE processing_state SET status = 'done', lease_owner = NULL,
                     lease_expires_at = NULL, defer_reason = NULL, last_error = NULL,
                     updated_at = ?
                 WHERE id IN ({}) AND status = 'running' AND lease_owner = ?
                 RETURNING id, namespace_id",
                in_list(batch.len())
            );
            let mut q = sqlx::query(AssertSqlSafe(sql)).bind(now.timestamp_millis());
            for id in batch {
                q = q.bind(id);
            }
            for r in q.bind(*owner).fetch_all(&mut *tx).await.map_err(db_err)? {
                held.insert(r.get("id"), r.get("namespace_id"));
            }
        }
    }
    Ok(held)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::entities::tests::{mint, open, t};
    use rememberstack_core::ErrorCode;
    use rememberstack_core::claims::ValidityKind;
    use rememberstack_core::facts::{NewFact, Window};
    use rememberstack_core::ledger::{ClaimRequest, DeferReason, Stage, WorkStatus};

    /// Enqueue and claim one work item of `stage`; its lease.
    async fn lease(store: &SqliteStore, ns: NamespaceId, stage: Stage) -> Lease {
        let now = t("2024-03-01T00:00:00Z");
        let work = NewWork::now(ns, stage, uuid::Uuid::new_v4(), VersionId::new(), "v1", now);
        store.enqueue(vec![work], now).await.unwrap();
        let items = store
            .claim(&ClaimRequest {
                owner: "worker".into(),
                stages: vec![stage],
                limit: 1,
                stage_limits: vec![],
                lease_until: t("2024-03-01T00:10:00Z"),
                now,
            })
            .await
            .unwrap();
        assert_eq!(items.len(), 1);
        Lease::of(&items[0])
    }

    /// A minimal claim row of lineage `doc`.
    async fn insert_claim(
        store: &SqliteStore,
        ns: NamespaceId,
        doc: DocumentId,
        current: bool,
    ) -> ClaimId {
        let id = ClaimId::new();
        sqlx::query(
            "INSERT INTO claims (namespace_id, id, document_id, text, added_context_json,
                 valid_precision, valid_kind, asserted_at, extractor_version, extraction_input_hash,
                 origin_version_id, origin_chunk_id, embedding_key, claim_key, is_current, created_at)
             VALUES (?, ?, ?, 'a claim', '[]', 'unknown', 'state', '2024-01-01T00:00:00.000Z', 'x', 'h',
                     ?, ?, 'k', ?, ?, '2024-01-01T00:00:00.000Z')",
        )
        .bind(ns.to_string())
        .bind(id.to_string())
        .bind(doc.to_string())
        .bind(VersionId::new().to_string())
        .bind(ChunkId::new().to_string())
        .bind(id.to_string())
        .bind(current as i64)
        .execute(&store.write)
        .await
        .unwrap();
        id
    }

    async fn set_current(store: &SqliteStore, claim: ClaimId, current: bool) {
        sqlx::query("UPDATE claims SET is_current = ? WHERE id = ?")
            .bind(current as i64)
            .bind(claim.to_string())
            .execute(&store.write)
            .await
            .unwrap();
    }

    fn observation(
        ns: NamespaceId,
        claim: ClaimId,
        version: VersionId,
        subject: EntityId,
        statement: &str,
        ordinal: u32,
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
            asserted_at: t("2024-01-01T00:00:00Z"),
            ordinal,
        }
    }

    /// Stage `assertions` through a fresh normalize lease.
    async fn stage(
        store: &SqliteStore,
        ns: NamespaceId,
        claim: ClaimId,
        assertions: Vec<Assertion>,
    ) {
        let l = lease(store, ns, Stage::Normalize).await;
        store
            .commit_normalization(
                &l,
                claim,
                "normalizer-test",
                serde_json::json!({"entities": []}),
                assertions,
                vec![],
                t("2024-03-01T00:01:00Z"),
            )
            .await
            .unwrap();
    }

    /// The commit creating a new fact from `a`, with `evidence` claims supporting it.
    fn new_fact_commit(
        ns: NamespaceId,
        a: &Assertion,
        w: Window,
        evidence: &[(ClaimId, Stance)],
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
                created_at: t("2024-03-02T00:00:00Z"),
            },
        };
        (fact, commit)
    }

    /// Stage and apply one observation as a new fact.
    async fn fact(
        store: &SqliteStore,
        ns: NamespaceId,
        subject: EntityId,
        statement: &str,
        w: Window,
        evidence: &[(ClaimId, Stance)],
    ) -> FactId {
        let claim = evidence.first().map(|e| e.0).unwrap_or_default();
        let a = observation(ns, claim, VersionId::new(), subject, statement, 0);
        stage(store, ns, claim, vec![a.clone()]).await;
        let (id, commit) = new_fact_commit(ns, &a, w, evidence);
        assert!(
            store
                .apply_assertion(ns, commit, t("2024-03-02T00:00:00Z"))
                .await
                .unwrap()
        );
        id
    }

    #[tokio::test]
    async fn evidence_counts_distinct_current_lineages() {
        let (_dir, store, ns) = open().await;
        let ada = mint(&store, ns, "Ada Lovelace").await;
        let (doc1, doc2, doc3) = (DocumentId::new(), DocumentId::new(), DocumentId::new());
        let c1 = insert_claim(&store, ns, doc1, true).await;
        let c2 = insert_claim(&store, ns, doc1, true).await;
        let c3 = insert_claim(&store, ns, doc2, false).await;
        let c4 = insert_claim(&store, ns, doc3, true).await;
        let id = fact(
            &store,
            ns,
            ada,
            "Ada Lovelace was a mathematician.",
            Window::unknown(),
            &[
                (c1, Stance::Support),
                (c2, Stance::Support),
                (c3, Stance::Support),
                (c4, Stance::Contradict),
            ],
        )
        .await;
        let f = &store.facts(ns, &[id]).await.unwrap()[0];
        assert_eq!(
            (f.evidence_count, f.contradict_count),
            (1, 1),
            "two claims of one lineage count once; retired testimony not at all"
        );
        set_current(&store, c3, true).await;
        set_current(&store, c4, false).await;
        let f = &store.facts(ns, &[id]).await.unwrap()[0];
        assert_eq!((f.evidence_count, f.contradict_count), (2, 0));
        assert_eq!(store.fact_evidence(ns, id).await.unwrap().len(), 4);
        // The counts kept on the row follow every input: testimony coming back,
        // evidence removed, and a claim removed.
        set_current(&store, c4, true).await;
        let f = &store.facts(ns, &[id]).await.unwrap()[0];
        assert_eq!((f.evidence_count, f.contradict_count), (2, 1));
        sqlx::query("DELETE FROM fact_evidence WHERE claim_id = ?")
            .bind(c3.to_string())
            .execute(&store.write)
            .await
            .unwrap();
        let f = &store.facts(ns, &[id]).await.unwrap()[0];
        assert_eq!((f.evidence_count, f.contradict_count), (1, 1));
        sqlx::query("DELETE FROM claims WHERE id IN (?, ?)")
            .bind(c1.to_string())
            .bind(c4.to_string())
            .execute(&store.write)
            .await
            .unwrap();
        let f = &store.facts(ns, &[id]).await.unwrap()[0];
        assert_eq!((f.evidence_count, f.contradict_count), (1, 0));
        sqlx::query("DELETE FROM claims WHERE id = ?")
            .bind(c2.to_string())
            .execute(&store.write)
            .await
            .unwrap();
        let f = &store.facts(ns, &[id]).await.unwrap()[0];
        assert_eq!((f.evidence_count, f.contradict_count), (0, 0));
        // Only served facts are listed by default.
        let listed = store
            .list_facts(
                &FactFilter {
                    namespace_id: ns,
                    entities: vec![ada],
                    at: None,
                    history: false,
                    overlap: None,
                    documents: None,
                    group: None,
                    unsupported: false,
                },
                10,
            )
            .await
            .unwrap();
        assert!(listed.is_empty(), "{listed:?}");
        // A fact written after evidence that names it counts that evidence.
        let early = FactId::new();
        let c5 = insert_claim(&store, ns, doc3, true).await;
        sqlx::query(
            "INSERT INTO fact_evidence (namespace_id, fact_id, claim_id, stance, added_at)
             VALUES (?, ?, ?, 'support', '2024-01-01T00:00:00.000Z')",
        )
        .bind(ns.to_string())
        .bind(early.to_string())
        .bind(c5.to_string())
        .execute(&store.write)
        .await
        .unwrap();
        sqlx::query(
            "INSERT INTO facts (namespace_id, id, kind, subject_id, statement, valid_precision,
                 validity_kind, recorded_at, embedding_key, updated_at)
             VALUES (?, ?, 'observation', ?, 'Ada Lovelace wrote notes.', 'unknown', 'state',
                     '2024-01-01T00:00:00.000Z', 'k', '2024-01-01T00:00:00.000Z')",
        )
        .bind(ns.to_string())
        .bind(early.to_string())
        .bind(ada.to_string())
        .execute(&store.write)
        .await
        .unwrap();
        let f = &store.facts(ns, &[early]).await.unwrap()[0];
        assert_eq!((f.evidence_count, f.contradict_count), (1, 0));
        // Evidence whose stance changes, and a claim whose lineage changes.
        let counts = |sql: &'static str, a: String, b: String| {
            let store = &store;
            async move {
                sqlx::query(sql)
                    .bind(a)
                    .bind(b)
                    .execute(&store.write)
                    .await
                    .unwrap();
                let f = &store.facts(ns, &[early]).await.unwrap()[0];
                (f.evidence_count, f.contradict_count)
            }
        };
        let stance = "UPDATE fact_evidence SET stance = ? WHERE claim_id = ?";
        assert_eq!(
            counts(stance, "contradict".into(), c5.to_string()).await,
            (0, 1)
        );
        assert_eq!(
            counts(stance, "support".into(), c5.to_string()).await,
            (1, 0)
        );
        let c6 = insert_claim(&store, ns, doc1, true).await;
        let evidence = "INSERT INTO fact_evidence (namespace_id, fact_id, claim_id, stance, added_at)
             SELECT namespace_id, fact_id, ?, stance, added_at FROM fact_evidence WHERE claim_id = ?";
        assert_eq!(
            counts(evidence, c6.to_string(), c5.to_string()).await,
            (2, 0)
        );
        let lineage = "UPDATE claims SET document_id = ? WHERE id = ?";
        assert_eq!(
            counts(lineage, doc3.to_string(), c6.to_string()).await,
            (1, 0)
        );
    }

    #[tokio::test]
    async fn defer_puts_an_item_back_without_consuming_an_attempt() {
        let (_dir, store, ns) = open().await;
        let l = lease(&store, ns, Stage::Adjudicate).await;
        assert_eq!(
            store.work_item(l.work_id).await.unwrap().unwrap().attempts,
            1
        );
        let later = t("2024-03-01T00:05:00Z");
        store
            .defer(&l, DeferReason::Barrier, later, t("2024-03-01T00:00:30Z"))
            .await
            .unwrap();
        let item = store.work_item(l.work_id).await.unwrap().unwrap();
        assert_eq!(item.status, WorkStatus::Pending);
        assert_eq!(item.attempts, 0);
        assert_eq!(item.defer_reason, Some(DeferReason::Barrier));
        assert_eq!(item.not_before, later);
        assert_eq!(item.lease_owner, None);
        assert_eq!(store.next_wakeup().await.unwrap(), Some(later));
        // The lease is gone.
        let lost = store
            .defer(&l, DeferReason::Barrier, later, later)
            .await
            .unwrap_err();
        assert_eq!(lost.code(), ErrorCode::LeaseLost);

        let request = |now: Timestamp| ClaimRequest {
            owner: "worker-2".into(),
            stages: vec![Stage::Adjudicate],
            limit: 1,
            stage_limits: vec![],
            lease_until: t("2024-03-01T01:00:00Z"),
            now,
        };
        assert!(
            store
                .claim(&request(t("2024-03-01T00:01:00Z")))
                .await
                .unwrap()
                .is_empty()
        );
        let again = store.claim(&request(later)).await.unwrap();
        assert_eq!(again.len(), 1);
        assert_eq!(again[0].attempts, 1);
        assert_eq!(again[0].defer_reason, None);
    }

    /// A batch of vectors commits only while every one of its leases is held: one
    /// lost lease loses the batch, and nothing of it is written.
    #[tokio::test]
    async fn a_vector_batch_with_a_lost_lease_writes_nothing() {
        let (_dir, store, ns) = open().await;
        let held = lease(&store, ns, Stage::Embed).await;
        let lost = lease(&store, ns, Stage::Embed).await;
        let now = t("2024-03-01T00:01:00Z");
        store.complete(&lost, vec![], now).await.unwrap();
        let identity = rememberstack_core::embed::EmbedderIdentity {
            provider: "test".into(),
            model: "m".into(),
            dimension: 2,
            version: "1".into(),
        };
        let vectors = vec![("k1".to_string(), vec![1.0, 0.0])];
        let err = store
            .commit_vectors(&[held.clone(), lost], ns, &identity, vectors.clone(), now)
            .await
            .unwrap_err();
        assert_eq!(err.code(), ErrorCode::LeaseLost);
        let keys = ["k1".to_string()];
        let generation = identity.generation();
        assert!(
            store
                .existing_vectors(ns, &generation, &keys)
                .await
                .unwrap()
                .is_empty()
        );
        let item = store.work_item(held.work_id).await.unwrap().unwrap();
        assert_eq!(item.status, WorkStatus::Running);
        // With its lease held alone, the same batch lands and completes it.
        store
            .commit_vectors(std::slice::from_ref(&held), ns, &identity, vectors, now)
            .await
            .unwrap();
        assert_eq!(
            store
                .existing_vectors(ns, &generation, &keys)
                .await
                .unwrap(),
            keys
        );
        let item = store.work_item(held.work_id).await.unwrap().unwrap();
        assert_eq!(item.status, WorkStatus::Done);
    }
}
