//! The ledger's change signal for idle workers: one `LISTEN` session per process,
//! started the first time a worker asks for it.
//!
//! Migration 0029's triggers notify the channel [`CHANNEL`] with the store's schema
//! as the payload when work is inserted, an item comes back to pending, or a lease
//! ends. The session counts the notifications of this store's schema into a
//! `watch` channel; idle workers wait on it beside their poll interval (see
//! `LedgerStore::work_signal`). A session that loses its connection counts one
//! (it may have missed some) and connects again; until it does, workers poll.

use sqlx::postgres::{PgConnectOptions, PgListener, PgPoolOptions};
use std::sync::OnceLock;
use std::time::Duration;
use tokio::sync::watch;

/// The channel migration 0029's triggers notify.
pub(crate) const CHANNEL: &str = "rememberstack_work";

/// One process's listening session and the signal it drives.
#[derive(Debug)]
pub(crate) struct WorkSignal {
    sender: watch::Sender<u64>,
    options: PgConnectOptions,
    /// The store's schema; `None`: the connection's `current_schema()`.
    schema: Option<String>,
    session: OnceLock<tokio::task::JoinHandle<()>>,
}

impl WorkSignal {
    pub(crate) fn new(options: PgConnectOptions, schema: Option<String>) -> Self {
        WorkSignal {
            sender: watch::channel(0).0,
            options,
            schema,
            session: OnceLock::new(),
        }
    }

    /// A receiver of the signal, starting the listening session on first use.
    /// `None` outside a Tokio runtime (no session can run there).
    pub(crate) fn subscribe(&self) -> Option<watch::Receiver<u64>> {
        let runtime = tokio::runtime::Handle::try_current().ok()?;
        self.session.get_or_init(|| {
            runtime.spawn(listen(
                self.options.clone(),
                self.schema.clone(),
                self.sender.clone(),
            ))
        });
        Some(self.sender.subscribe())
    }

    /// End the listening session (the store is closing).
    pub(crate) fn stop(&self) {
        if let Some(session) = self.session.get() {
            session.abort();
        }
    }
}

impl Drop for WorkSignal {
    fn drop(&mut self) {
        self.stop();
    }
}

fn bump(sender: &watch::Sender<u64>) {
    sender.send_modify(|n| *n = n.wrapping_add(1));
}

/// Listen until aborted, connecting again a second after any failure.
async fn listen(options: PgConnectOptions, schema: Option<String>, sender: watch::Sender<u64>) {
    loop {
        if let Err(e) = session(&options, schema.as_deref(), &sender).await {
            tracing::debug!(error = %e, "the ledger's LISTEN session ended; idle workers poll until it is back");
        }
        // Notifications may have been missed while no session listened.
        bump(&sender);
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

async fn session(
    options: &PgConnectOptions,
    schema: Option<&str>,
    sender: &watch::Sender<u64>,
) -> Result<(), sqlx::Error> {
    let pool = PgPoolOptions::new()
        .max_connections(1)
        .min_connections(0)
        .connect_lazy_with(options.clone());
    let key = match schema {
        Some(s) => s.to_string(),
        None => {
            sqlx::query_scalar::<_, String>("SELECT current_schema()")
                .fetch_one(&pool)
                .await?
        }
    };
    let mut listener = PgListener::connect_with(&pool).await?;
    listener.listen(CHANNEL).await?;
    bump(sender);
    loop {
        match listener.try_recv().await? {
            Some(n) if n.payload() == key => bump(sender),
            Some(_) => {}
            // The connection was lost and is made again: say so, as above.
            None => bump(sender),
        }
    }
}
