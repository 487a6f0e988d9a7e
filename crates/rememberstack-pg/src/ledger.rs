//! The work ledger (D12, D67): enqueue, claim, complete, fail, park, defer, barriers,
//! dead letters; provider-call accounting.
//!
//! Ported statement by statement from the SQLite store (`rememberstack-sqlite`,
//! `lib.rs` and `claims.rs`). Ledger times are Unix milliseconds (`bigint`), as in
//! SQLite. Several engine processes may share one database, so where SQLite relies
//! on its single writer the port locks rows: `claim` picks due rows with
//! `FOR UPDATE SKIP LOCKED` (two claimers never lease the same item, and neither
//! waits for the other), and every lease-checked write re-checks the lease on the
//! row's latest version (READ COMMITTED re-evaluates an `UPDATE`'s condition after
//! a concurrent writer commits), so a lost lease is `LeaseLost` as in SQLite.
//! Orderings by text columns use `COLLATE "C"` so they are bytewise as in SQLite
//! whatever the database's collation.

use crate::rows::get;
use crate::{PgStore, db_err, parse_id};
use rememberstack_core::ids::{NamespaceId, VersionId, WorkId};
use rememberstack_core::ledger::{
    BarrierStatus, ClaimRequest, DeferReason, FailureOutcome, LeaseHolder, NewWork, Stage,
    WorkCount, WorkItem, WorkStatus,
};
use rememberstack_core::store::{CallRecord, Lease};
use rememberstack_core::text::SourceFormat;
use rememberstack_core::time::Timestamp;
use rememberstack_core::{Error, ErrorCode, Result};
use rememberstack_sql::ledger;
use rememberstack_sql::rows::{work_count_row, work_row};
use sqlx::postgres::PgConnection;

fn ms(t: Timestamp) -> i64 {
    t.timestamp_millis()
}

/// A `u32` count into an `integer` column (saturating; SQLite stores any i64).
fn int(n: u32) -> i32 {
    i32::try_from(n).unwrap_or(i32::MAX)
}

/// PostgreSQL `text` cannot hold NUL; SQLite can. Free text the store records
/// (errors, raw model output) keeps every other character.
fn pg_text(s: &str) -> String {
    if s.contains('\0') {
        s.replace('\0', "\u{FFFD}")
    } else {
        s.to_string()
    }
}

/// The columns of a work item (`SELECT *` in SQLite).
const WORK_COLUMNS: &str = "namespace_id, id, target_kind, target_id, version_id, stage,
    component_version, status, attempts, max_attempts, not_before, defer_reason, lease_owner,
    lease_expires_at, last_error, created_at, updated_at";

/// The typed refusal of a write by a worker whose lease is gone (`fail`, `park`).
fn lease_lost() -> Error {
    Error::new(
        ErrorCode::LeaseLost,
        "work item is no longer leased to this worker",
    )
}

/// Mark a leased item done, or fail `LeaseLost` when the lease is gone (expired and
/// reclaimed, or never held); its namespace when fenced. The `UPDATE` locks the
/// row and re-checks the lease on its latest committed version ([`fence_many`]).
pub(crate) async fn fence(
    conn: &mut PgConnection,
    lease: &Lease,
    now: Timestamp,
) -> Result<String> {
    fence_many(conn, std::slice::from_ref(lease), now)
        .await?
        .pop()
        .flatten()
        .ok_or_else(|| lease.lost())
}

/// Mark several leased items done in one round trip each for the stamps and the
/// rows: the namespaces' stamps first (as [`stamp_first`] takes them, in order),
/// then one `UPDATE` of every item still leased to its owner. Per lease, in order:
/// the item's namespace when it was fenced here, `None` when its lease is gone (an
/// item listed twice is fenced once, by its first listing, as one at a time would).
pub(crate) async fn fence_many(
    conn: &mut PgConnection,
    leases: &[Lease],
    now: Timestamp,
) -> Result<Vec<Option<String>>> {
    if leases.is_empty() {
        return Ok(vec![]);
    }
    let ids: Vec<String> = leases.iter().map(|l| l.work_id.to_string()).collect();
    let owners: Vec<&str> = leases.iter().map(|l| l.owner.as_str()).collect();
    sqlx::query(
        "INSERT INTO change_stamps (namespace_id, n)
             SELECT DISTINCT namespace_id, 1 FROM processing_state WHERE id = ANY($1)
             ORDER BY 1
         ON CONFLICT (namespace_id) DO UPDATE SET n = change_stamps.n + 1",
    )
    .bind(&ids)
    .execute(&mut *conn)
    .await
    .map_err(db_err)?;
    let done: Vec<(String, String)> = sqlx::query_as(
        "UPDATE processing_state s SET status = 'done', lease_owner = NULL,
             lease_expires_at = NULL, defer_reason = NULL, last_error = NULL, updated_at = $1
           FROM unnest($2::text[], $3::text[]) AS l(id, owner)
          WHERE s.id = l.id AND s.status = 'running' AND s.lease_owner = l.owner
          RETURNING s.id, s.namespace_id",
    )
    .bind(ms(now))
    .bind(&ids)
    .bind(&owners)
    .fetch_all(&mut *conn)
    .await
    .map_err(db_err)?;
    let mut done: std::collections::HashMap<String, String> = done.into_iter().collect();
    Ok(ids.iter().map(|id| done.remove(id)).collect())
}

/// Bump the change stamp of the namespace of `lease`'s work item before the
/// transaction locks any ledger row.
///
/// Every write to a stamped table holds the namespace's `change_stamps` row until
/// commit. A transaction that locks a ledger row first (a lease's completion, a
/// failure) and the stamp row second would deadlock with one that holds the stamp
/// row and then waits for that ledger row (enqueueing the same work item). So the
/// ledger's writes take the stamp row first, all in the same order.
async fn stamp_first(conn: &mut PgConnection, lease: &Lease) -> Result<()> {
    sqlx::query(
        "INSERT INTO change_stamps (namespace_id, n)
             SELECT namespace_id, 1 FROM processing_state WHERE id = $1
         ON CONFLICT (namespace_id) DO UPDATE SET n = change_stamps.n + 1",
    )
    .bind(lease.work_id.to_string())
    .execute(&mut *conn)
    .await
    .map_err(db_err)?;
    Ok(())
}

/// Insert new work; an item already in the ledger (same namespace, target, stage
/// and component version) is left as it is, except an adjudication unit, which runs
/// again (`rememberstack_sql::ledger::ENQUEUE_CONFLICT`). Returns how many rows were
/// new or made pending again.
///
/// The namespaces' change stamps are taken first ([`stamp_first`]), then the items
/// go in in key order, so two transactions enqueueing overlapping work wait for
/// each other's uncommitted rows in the same order and never deadlock.
pub(crate) async fn insert_work(
    conn: &mut PgConnection,
    items: &[NewWork],
    now: Timestamp,
) -> Result<u64> {
    let mut ordered: Vec<&NewWork> = items.iter().collect();
    ordered.sort_by_cached_key(|w| {
        (
            w.namespace_id.to_string(),
            w.target_kind.as_str(),
            w.target_id.to_string(),
            w.stage.as_str(),
            w.component_version.clone(),
        )
    });
    // One row per key: an upsert may not touch a row twice in one statement.
    ordered.dedup_by(|a, b| {
        (
            a.namespace_id,
            a.target_kind,
            a.target_id,
            a.stage,
            &a.component_version,
        ) == (
            b.namespace_id,
            b.target_kind,
            b.target_id,
            b.stage,
            &b.component_version,
        )
    });
    let mut namespaces: Vec<String> = ordered.iter().map(|w| w.namespace_id.to_string()).collect();
    namespaces.dedup();
    for ns in &namespaces {
        sqlx::query(
            "INSERT INTO change_stamps (namespace_id, n) VALUES ($1, 1)
             ON CONFLICT (namespace_id) DO UPDATE SET n = change_stamps.n + 1",
        )
        .bind(ns)
        .execute(&mut *conn)
        .await
        .map_err(db_err)?;
    }
    // One statement for every item, inserted in key order (`ORDER BY i`).
    let text = |f: &dyn Fn(&NewWork) -> String| ordered.iter().map(|w| f(w)).collect::<Vec<_>>();
    static INSERT: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
        format!(
            "{}{}",
            "INSERT INTO processing_state (namespace_id, id, target_kind, target_id, version_id, stage,
             component_version, status, attempts, max_attempts, not_before, defer_reason,
             created_at, updated_at)
         SELECT w.ns, w.id, w.target_kind, w.target_id, w.version_id, w.stage, w.component_version,
                'pending', 0, w.max_attempts, w.not_before, w.defer_reason, $11, $11
           FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[],
                       $7::text[], $8::int4[], $9::int8[], $10::text[])
                WITH ORDINALITY AS w(ns, id, target_kind, target_id, version_id, stage,
                                     component_version, max_attempts, not_before, defer_reason, i)
          ORDER BY w.i",
            crate::shared(&rememberstack_sql::ledger::ENQUEUE_CONFLICT)
        )
    });
    let r = sqlx::query(INSERT.as_str())
        .bind(text(&|w| w.namespace_id.to_string()))
        .bind(text(&|_| WorkId::ordered().to_string()))
        .bind(text(&|w| w.target_kind.as_str().to_string()))
        .bind(text(&|w| w.target_id.to_string()))
        .bind(text(&|w| w.version_id.to_string()))
        .bind(text(&|w| w.stage.as_str().to_string()))
        .bind(text(&|w| w.component_version.clone()))
        .bind(
            ordered
                .iter()
                .map(|w| int(w.max_attempts))
                .collect::<Vec<i32>>(),
        )
        .bind(
            ordered
                .iter()
                .map(|w| ms(w.not_before))
                .collect::<Vec<i64>>(),
        )
        .bind(
            ordered
                .iter()
                .map(|w| w.defer_reason.map(|d| d.as_str()))
                .collect::<Vec<Option<&str>>>(),
        )
        .bind(ms(now))
        .execute(&mut *conn)
        .await
        .map_err(db_err)?;
    let n = r.rows_affected();
    Ok(n)
}

/// Turn the change-stamp bump off (or back on) for the rest of the transaction
/// (migration 0004: statements that change no stamped aggregate).
async fn skip_stamp(conn: &mut PgConnection, on: bool) -> Result<()> {
    sqlx::query("SELECT set_config('rememberstack.skip_stamp', $1, true)")
        .bind(if on { "on" } else { "off" })
        .execute(&mut *conn)
        .await
        .map_err(db_err)?;
    Ok(())
}

/// Lease one stage's due work (binds: owner, lease end, now, stage, limit, owner
/// process): pending or failed rows whose time has come (not parked for want of a
/// route) and running rows whose lease expired, never in a namespace whose forget
/// is incomplete. Oldest `not_before` first, then creation, then id. Rows locked by
/// a concurrent claimer are skipped, so no item is leased twice.
///
/// The status and route conjuncts repeat `processing_state_due`'s condition
/// (running rows never carry a defer reason), so the claim walks that index in
/// this order and stops at its batch instead of sorting every due row of the
/// stage (migration 0033). `not_before <= now` bounds the walk for both kinds of
/// due row: a running row was leased at or after its `not_before`, and its lease
/// ended after that.
pub fn claim_statement() -> &'static str {
    static SQL: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
        format!(
            "WITH picked AS (
                 SELECT p.namespace_id, p.id FROM processing_state p
                 WHERE p.stage = $4 AND p.not_before <= $3
                   AND (p.status IN ('pending', 'failed')
                        OR (p.status = 'running' AND p.lease_expires_at <= $3))
                   AND p.status IN ('pending', 'failed', 'running')
                   AND (p.defer_reason IS NULL OR p.defer_reason <> 'no_route')
                   AND NOT EXISTS (SELECT 1 FROM forget_episodes e
                                   WHERE e.namespace_id = p.namespace_id AND e.completed_at IS NULL)
                 ORDER BY p.not_before, p.created_at, p.id COLLATE \"C\"
                 LIMIT $5
                 FOR UPDATE OF p SKIP LOCKED)
             UPDATE processing_state s
             SET status = 'running', attempts = s.attempts + 1, lease_owner = $1, lease_expires_at = $2,
                 lease_process = $6, defer_reason = NULL, updated_at = $3
             FROM picked
             WHERE s.namespace_id = picked.namespace_id AND s.id = picked.id
             RETURNING {}",
            WORK_COLUMNS
                .split(',')
                .map(|c| format!("s.{}", c.trim()))
                .collect::<Vec<_>>()
                .join(", ")
        )
    });
    SQL.as_str()
}

/// Release the leases of processes that no longer run (no session holds their
/// liveness lock, see `liveness`): they fall due now, as if their lease had
/// expired, so this claim takes them (counting the attempt, as an expired lease
/// does) instead of waiting out the lease time. Rows a concurrent claimer holds
/// are skipped: that one decides them.
async fn release_ended_owners(conn: &mut PgConnection, me: i64, now: i64) -> Result<()> {
    let released: Vec<(i64, i64)> = sqlx::query_as(
        "WITH ended AS (
             UPDATE processing_state s SET lease_expires_at = $1
             FROM (SELECT namespace_id, id FROM processing_state
                   WHERE status = 'running' AND lease_expires_at > $1
                     AND lease_process IS NOT NULL AND lease_process <> $2
                     AND lease_process NOT IN (
                         SELECT l.objid::bigint FROM pg_locks l
                         WHERE l.locktype = 'advisory' AND l.objsubid = 2 AND l.granted
                           AND l.classid = $3::bigint::oid
                           AND l.database = (SELECT oid FROM pg_database
                                             WHERE datname = current_database()))
                   FOR UPDATE SKIP LOCKED) d
             WHERE s.namespace_id = d.namespace_id AND s.id = d.id
             RETURNING s.lease_process)
         SELECT lease_process, COUNT(*) FROM ended GROUP BY lease_process ORDER BY 1",
    )
    .bind(now)
    .bind(me)
    .bind(i64::from(crate::liveness::LIVENESS_CLASS))
    .fetch_all(&mut *conn)
    .await
    .map_err(db_err)?;
    for (process, items) in released {
        tracing::warn!(
            target: "rememberstack::work",
            process,
            items,
            "released the leases of a process that is no longer running"
        );
    }
    Ok(())
}

impl PgStore {
    pub(crate) async fn enqueue_impl(&self, items: Vec<NewWork>, now: Timestamp) -> Result<u64> {
        if items.is_empty() {
            return Ok(0);
        }
        let mut tx = self.pool().begin().await.map_err(db_err)?;
        let n = insert_work(&mut tx, &items, now).await?;
        tx.commit().await.map_err(db_err)?;
        Ok(n)
    }

    pub(crate) async fn claim_impl(&self, req: &ClaimRequest) -> Result<Vec<WorkItem>> {
        let now = ms(req.now);
        let me = self.owner.key(&self.locks).await;
        let mut tx = self.pool().begin().await.map_err(db_err)?;
        if let Some(me) = me {
            // Releasing only moves lease times: no stamped aggregate changes, and
            // the stamp row must not be taken after the ledger rows (see below).
            skip_stamp(&mut tx, true).await?;
            release_ended_owners(&mut tx, me, now).await?;
            skip_stamp(&mut tx, false).await?;
        }
        // A lease that expired on the final attempt ends in the dead-letter queue.
        // Rows another transaction holds (a concurrent claimer's sweep or lease
        // write) are skipped rather than waited for: that one decides them.
        sqlx::query(
            "UPDATE processing_state SET status = 'dead_letter', lease_owner = NULL, lease_expires_at = NULL,
                 last_error = 'lease expired during the final attempt (worker crashed or timed out)', updated_at = $1
             WHERE (namespace_id, id) IN (
                 SELECT namespace_id, id FROM processing_state
                 WHERE status = 'running' AND lease_expires_at <= $1 AND attempts >= max_attempts
                 FOR UPDATE SKIP LOCKED)",
        )
        .bind(now)
        .execute(&mut *tx)
        .await
        .map_err(db_err)?;
        // Leasing changes no stamped aggregate and must not take the stamp row
        // after the rows it leases (migration 0004): the sweep above, which does
        // change the dead-letter count, still bumps it.
        skip_stamp(&mut tx, true).await?;
        let stages: Vec<Stage> = if req.stages.is_empty() {
            Stage::ALL.to_vec()
        } else {
            req.stages.clone()
        };
        let mut claimed = Vec::new();
        for stage in stages {
            // The first stage (in the requested order) with due work wins.
            let rows = sqlx::query(claim_statement())
                .bind(&req.owner)
                .bind(ms(req.lease_until))
                .bind(now)
                .bind(stage.as_str())
                .bind(i64::from(req.limit_for(stage)))
                .bind(me)
                .fetch_all(&mut *tx)
                .await
                .map_err(db_err)?;
            if !rows.is_empty() {
                claimed = rows.iter().map(work_row).collect::<Result<Vec<_>>>()?;
                break;
            }
        }
        tx.commit().await.map_err(db_err)?;
        claimed.sort_by(|a, b| a.created_at.cmp(&b.created_at).then(a.id.cmp(&b.id)));
        Ok(claimed)
    }

    pub(crate) async fn complete_impl(
        &self,
        lease: &Lease,
        follow_up: Vec<NewWork>,
        now: Timestamp,
    ) -> Result<()> {
        let mut tx = self.pool().begin().await.map_err(db_err)?;
        fence(&mut tx, lease, now).await?;
        insert_work(&mut tx, &follow_up, now).await?;
        tx.commit().await.map_err(db_err)
    }

    /// Complete several leased items in one transaction: the namespaces' stamps
    /// first (as [`fence`] takes them), then one `UPDATE` of every item still leased
    /// to its owner; the others are `lease_lost`.
    pub(crate) async fn complete_many_impl(
        &self,
        leases: &[Lease],
        now: Timestamp,
    ) -> Result<Vec<Result<()>>> {
        if leases.is_empty() {
            return Ok(vec![]);
        }
        let mut tx = self.pool().begin().await.map_err(db_err)?;
        let fenced = fence_many(&mut tx, leases, now).await?;
        tx.commit().await.map_err(db_err)?;
        Ok(leases
            .iter()
            .zip(fenced)
            .map(|(lease, ns)| match ns {
                Some(_) => Ok(()),
                None => Err(lease.lost()),
            })
            .collect())
    }

    pub(crate) async fn fail_impl(
        &self,
        lease: &Lease,
        error: &str,
        outcome: FailureOutcome,
        now: Timestamp,
    ) -> Result<()> {
        let (status, not_before, defer) = match outcome {
            FailureOutcome::Retry { retry_at } => {
                ("failed", Some(ms(retry_at)), Some("retry_backoff"))
            }
            FailureOutcome::DeadLetter => ("dead_letter", None, None),
        };
        let error: String = pg_text(&error.chars().take(2000).collect::<String>());
        let mut tx = self.pool().begin().await.map_err(db_err)?;
        stamp_first(&mut tx, lease).await?;
        let r = sqlx::query(crate::shared(&ledger::FAIL))
            .bind(status)
            .bind(not_before)
            .bind(defer)
            .bind(error)
            .bind(ms(now))
            .bind(lease.work_id.to_string())
            .bind(&lease.owner)
            .execute(&mut *tx)
            .await
            .map_err(db_err)?;
        if r.rows_affected() == 0 {
            return Err(lease_lost());
        }
        tx.commit().await.map_err(db_err)
    }

    pub(crate) async fn park_impl(
        &self,
        lease: &Lease,
        reason: DeferReason,
        not_before: Timestamp,
        now: Timestamp,
    ) -> Result<()> {
        let mut tx = self.pool().begin().await.map_err(db_err)?;
        stamp_first(&mut tx, lease).await?;
        let r = sqlx::query(crate::shared(&ledger::PARK))
            .bind(reason.as_str())
            .bind(ms(not_before))
            .bind(ms(now))
            .bind(lease.work_id.to_string())
            .bind(&lease.owner)
            .execute(&mut *tx)
            .await
            .map_err(db_err)?;
        if r.rows_affected() == 0 {
            return Err(lease_lost());
        }
        tx.commit().await.map_err(db_err)
    }

    pub(crate) async fn work_item_impl(&self, id: WorkId) -> Result<Option<WorkItem>> {
        let row = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT {WORK_COLUMNS} FROM processing_state WHERE id = $1"
        )))
        .bind(id.to_string())
        .fetch_optional(self.pool())
        .await
        .map_err(db_err)?;
        row.map(|r| work_row(&r)).transpose()
    }

    pub(crate) async fn barrier_impl(
        &self,
        ns: NamespaceId,
        version: VersionId,
        stage: Stage,
    ) -> Result<BarrierStatus> {
        let row = sqlx::query(
            "SELECT COUNT(*) AS total,
                    COUNT(*) FILTER (WHERE status = 'done') AS done,
                    COUNT(*) FILTER (WHERE status = 'dead_letter') AS dead
             FROM processing_state WHERE namespace_id = $1 AND version_id = $2 AND stage = $3",
        )
        .bind(ns.to_string())
        .bind(version.to_string())
        .bind(stage.as_str())
        .fetch_one(self.pool())
        .await
        .map_err(db_err)?;
        Ok(BarrierStatus {
            total: get::<i64>(&row, "total")? as u64,
            done: get::<i64>(&row, "done")? as u64,
            dead_letter: get::<i64>(&row, "dead")? as u64,
        })
    }

    pub(crate) async fn work_counts_impl(&self, ns: Option<NamespaceId>) -> Result<Vec<WorkCount>> {
        let rows = sqlx::query(crate::shared(&ledger::WORK_COUNTS))
            .bind(ns.map(|n| n.to_string()))
            .bind(ns.map(|n| n.to_string()))
            .fetch_all(self.pool())
            .await
            .map_err(db_err)?;
        rows.iter().map(work_count_row).collect()
    }

    pub(crate) async fn unfinished_work_counts_impl(
        &self,
        ns: NamespaceId,
    ) -> Result<Vec<WorkCount>> {
        let rows = sqlx::query(crate::shared(&ledger::UNFINISHED_WORK_COUNTS))
            .bind(ns.to_string())
            .fetch_all(self.pool())
            .await
            .map_err(db_err)?;
        rows.iter().map(work_count_row).collect()
    }

    pub(crate) async fn work_items_impl(
        &self,
        ns: Option<NamespaceId>,
        status: WorkStatus,
        limit: u32,
    ) -> Result<Vec<WorkItem>> {
        let sql = if status == WorkStatus::Done {
            &ledger::FINISHED_WORK
        } else {
            &ledger::UNFINISHED_WORK
        };
        let rows = sqlx::query(crate::shared(sql))
            .bind(ns.map(|n| n.to_string()))
            .bind(ns.map(|n| n.to_string()))
            .bind(status.as_str())
            .bind(i64::from(limit))
            .fetch_all(self.pool())
            .await
            .map_err(db_err)?;
        rows.iter().map(work_row).collect()
    }

    pub(crate) async fn replay_dead_letters_impl(
        &self,
        ns: Option<NamespaceId>,
        stage: Option<Stage>,
        allowance: u32,
        now: Timestamp,
    ) -> Result<u64> {
        let (ns, stage) = (ns.map(|n| n.to_string()), stage.map(|s| s.as_str()));
        let r = sqlx::query(crate::shared(&ledger::REPLAY_DEAD_LETTERS))
            .bind(i64::from(allowance.max(1)))
            .bind(ms(now))
            .bind(ms(now))
            .bind(ns.clone())
            .bind(ns)
            .bind(stage)
            .bind(stage)
            .execute(self.pool())
            .await
            .map_err(db_err)?;
        Ok(r.rows_affected())
    }

    pub(crate) async fn expedite_failed_impl(
        &self,
        ns: Option<NamespaceId>,
        stage: Option<Stage>,
        now: Timestamp,
    ) -> Result<u64> {
        let (ns, stage) = (ns.map(|n| n.to_string()), stage.map(|s| s.as_str()));
        let r = sqlx::query(crate::shared(&ledger::EXPEDITE_FAILED))
            .bind(ms(now))
            .bind(ms(now))
            .bind(ms(now))
            .bind(ns.clone())
            .bind(ns)
            .bind(stage)
            .bind(stage)
            .execute(self.pool())
            .await
            .map_err(db_err)?;
        Ok(r.rows_affected())
    }

    pub(crate) async fn rearm_stranded_units_impl(&self, now: Timestamp) -> Result<u64> {
        let r = sqlx::query(crate::shared(&ledger::REARM_STRANDED_UNITS))
            .bind(ms(now))
            .bind(ms(now))
            .execute(self.pool())
            .await
            .map_err(db_err)?;
        Ok(r.rows_affected())
    }

    pub(crate) async fn lease_holders_impl(&self, now: Timestamp) -> Result<Vec<LeaseHolder>> {
        let rows = sqlx::query(
            "SELECT lease_owner, COUNT(*) AS items, MAX(lease_expires_at) AS until
             FROM processing_state WHERE status = 'running' AND lease_expires_at > $1
             GROUP BY lease_owner ORDER BY lease_owner",
        )
        .bind(now.timestamp_millis())
        .fetch_all(self.pool())
        .await
        .map_err(db_err)?;
        rows.iter()
            .map(|r| {
                Ok(LeaseHolder {
                    holder: get::<Option<String>>(r, "lease_owner")?.unwrap_or_default(),
                    items: get::<i64>(r, "items")?.max(0) as u64,
                    until: get::<Option<i64>>(r, "until")?
                        .and_then(chrono::DateTime::from_timestamp_millis)
                        .unwrap_or(now),
                })
            })
            .collect()
    }

    pub(crate) async fn currency_due_impl(&self) -> Result<Vec<(NamespaceId, VersionId)>> {
        let rows = sqlx::query(crate::shared(&rememberstack_sql::claims::CURRENCY_DUE))
            .fetch_all(self.pool())
            .await
            .map_err(db_err)?;
        rows.iter()
            .map(|r| {
                Ok((
                    parse_id(&get::<String>(r, "namespace_id")?)?,
                    parse_id(&get::<String>(r, "version_id")?)?,
                ))
            })
            .collect()
    }

    pub(crate) async fn clear_currency_due_impl(
        &self,
        ns: NamespaceId,
        version: VersionId,
    ) -> Result<()> {
        sqlx::query(crate::shared(&rememberstack_sql::claims::CURRENCY_DONE))
            .bind(ns.to_string())
            .bind(version.to_string())
            .execute(self.pool())
            .await
            .map_err(db_err)?;
        Ok(())
    }

    pub(crate) async fn next_wakeup_impl(&self) -> Result<Option<Timestamp>> {
        let row = sqlx::query(crate::shared(&ledger::NEXT_WAKEUP))
            .fetch_one(self.pool())
            .await
            .map_err(db_err)?;
        Ok(get::<Option<i64>>(&row, "t")?.and_then(chrono::DateTime::from_timestamp_millis))
    }

    pub(crate) async fn latest_versions_impl(
        &self,
    ) -> Result<Vec<(NamespaceId, VersionId, Option<SourceFormat>)>> {
        let rows = sqlx::query(crate::shared(
            &rememberstack_sql::documents::LATEST_VERSIONS,
        ))
        .fetch_all(self.pool())
        .await
        .map_err(db_err)?;
        rows.iter()
            .map(|r| {
                Ok((
                    parse_id(&get::<String>(r, "namespace_id")?)?,
                    parse_id(&get::<String>(r, "latest_version_id")?)?,
                    get::<Option<String>>(r, "format")?.and_then(|f| SourceFormat::parse(&f)),
                ))
            })
            .collect()
    }

    pub(crate) async fn record_call_impl(&self, call: CallRecord, now: Timestamp) -> Result<()> {
        let ns = call.namespace_id.to_string();
        let mut tx = self.pool().begin().await.map_err(db_err)?;
        sqlx::query(crate::shared(&rememberstack_sql::ledger::INSERT_COST))
            .bind(&ns)
            .bind(call.processing_id.to_string())
            .bind(int(call.attempt))
            .bind(&call.call_key)
            .bind(call.stage.as_str())
            .bind(&call.model)
            .bind(i64::try_from(call.prompt_tokens).unwrap_or(i64::MAX))
            .bind(i64::try_from(call.completion_tokens).unwrap_or(i64::MAX))
            .bind(now)
            .execute(&mut *tx)
            .await
            .map_err(db_err)?;
        sqlx::query(crate::shared(&rememberstack_sql::ledger::INSERT_TRANSCRIPT))
            .bind(&ns)
            .bind(call.processing_id.to_string())
            .bind(int(call.attempt))
            .bind(&call.call_key)
            .bind(&call.request_hash)
            .bind(&call.model)
            .bind(&call.prompt_version)
            .bind(pg_text(&call.raw_output))
            .bind(&call.verdict)
            .bind(call.reason.as_deref().map(pg_text))
            .bind(now)
            .execute(&mut *tx)
            .await
            .map_err(db_err)?;
        tx.commit().await.map_err(db_err)
    }

    pub(crate) async fn call_costs_impl(
        &self,
        ns: NamespaceId,
    ) -> Result<Vec<(String, String, u64, u64)>> {
        let rows = sqlx::query(crate::shared(&rememberstack_sql::ledger::COSTS))
            .bind(ns.to_string())
            .fetch_all(self.pool())
            .await
            .map_err(db_err)?;
        rows.iter()
            .map(|r| {
                Ok((
                    get(r, "call_key")?,
                    get(r, "model")?,
                    get::<i64>(r, "prompt_tokens")?.max(0) as u64,
                    get::<i64>(r, "completion_tokens")?.max(0) as u64,
                ))
            })
            .collect()
    }

    pub(crate) async fn defer_impl(
        &self,
        lease: &Lease,
        reason: DeferReason,
        not_before: Timestamp,
        now: Timestamp,
    ) -> Result<()> {
        // Fenced like a completion, then back to pending: the attempt the claim
        // counted is given back (never below zero), and the row waits like any other
        // pending row with a future `not_before` (`claim` and `next_wakeup` see it).
        let mut tx = self.pool().begin().await.map_err(db_err)?;
        fence(&mut tx, lease, now).await?;
        sqlx::query(crate::shared(&ledger::DEFER))
            .bind(ms(not_before))
            .bind(reason.as_str())
            .bind(ms(now))
            .bind(lease.work_id.to_string())
            .execute(&mut *tx)
            .await
            .map_err(db_err)?;
        tx.commit().await.map_err(db_err)
    }
}
