//! Owner liveness for work leases on PostgreSQL.
//!
//! A store that leases work holds a session-level advisory lock, in a key space of
//! its own (`LIVENESS_CLASS`, random key), on a connection kept for nothing else;
//! every lease it takes names that key (`processing_state.lease_process`). The
//! server ends a session whose client is gone (a killed process's socket closes),
//! and with it the lock, so a claimer that finds running leases whose key no
//! session holds knows their process has ended and takes the work at once instead
//! of waiting out the lease. A process whose liveness session is lost while it
//! runs (a network cut, a restarted server) simply looks dead: its leases are
//! taken and its later writes refused as `LeaseLost`, as for an expired lease.
//!
//! The lock is taken lazily, by the first claim: a store that never processes
//! holds no extra session. Behind a transaction-pooling proxy session locks do not
//! work; there a lease ends by time alone, as before.

use rememberstack_core::Result;
use sqlx::{Connection, PgConnection, PgPool};
use tokio::sync::Mutex;

/// The first half of the two-part advisory lock key: the liveness locks' own key
/// space ("RSLV"), apart from the store's one-part (hashed name) locks.
pub(crate) const LIVENESS_CLASS: i32 = 0x5253_4C56;

/// This store's liveness session, once a claim needed it.
#[derive(Debug, Default)]
pub(crate) struct Owner {
    session: Mutex<Option<(i64, PgConnection)>>,
}

impl Owner {
    /// The key this store's leases carry, holding (or re-taking) its session
    /// lock. `None` when no session can hold one: leases then end by time.
    pub(crate) async fn key(&self, pool: &PgPool) -> Option<i64> {
        let mut session = self.session.lock().await;
        if let Some((key, conn)) = session.as_mut() {
            // A lost session lost its lock: take a new one under a new key (the
            // old key's leases may already be another process's).
            if conn.ping().await.is_ok() {
                return Some(*key);
            }
            tracing::warn!(
                target: "rememberstack::work",
                "the lease liveness session was lost; taking a new one"
            );
            *session = None;
        }
        match take(pool).await {
            Ok(held) => {
                let key = held.0;
                *session = Some(held);
                Some(key)
            }
            Err(e) => {
                tracing::warn!(
                    target: "rememberstack::work",
                    error = %e,
                    "no lease liveness session: a crashed worker's leases end by time"
                );
                None
            }
        }
    }
}

/// A connection of its own (detached from the pool, so it never serves anything
/// else and closes when dropped) holding the lock under a fresh random key.
async fn take(pool: &PgPool) -> Result<(i64, PgConnection)> {
    let mut conn = pool.acquire().await.map_err(crate::db_err)?.detach();
    loop {
        let key = i64::from(random_key());
        let held: bool = sqlx::query_scalar("SELECT pg_try_advisory_lock($1, $2)")
            .bind(LIVENESS_CLASS)
            .bind(key as i32)
            .fetch_one(&mut conn)
            .await
            .map_err(crate::db_err)?;
        if held {
            return Ok((key, conn));
        }
    }
}

/// A positive 31-bit key, so that `objid::bigint` in `pg_locks` reads it back
/// unchanged.
fn random_key() -> i32 {
    let bytes = uuid::Uuid::new_v4().into_bytes();
    let n = u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]) & 0x7fff_ffff;
    n.max(1) as i32
}
