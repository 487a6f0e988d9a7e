//! Lease-owner liveness: which processes leasing work from this database are
//! still running.
//!
//! Each store holds an exclusive `flock` on a file of its own in `<db>.owners/`
//! for as long as it is open, and stamps every lease it takes with that file's
//! name (its token). The operating system releases the lock when the process
//! ends, however it ends, so a lock file that can be locked (or is gone) proves
//! that its process no longer runs: its leases are released at once instead of
//! after the lease time. A process id alone would not prove it (ids are reused).
//!
//! A file is created under a temporary name, locked, then renamed into place, so
//! no other process ever sees a final name unlocked while its owner lives.

use std::path::{Path, PathBuf};

/// This process's lock on its owner file, released when dropped.
#[derive(Debug)]
pub(crate) struct OwnerLock {
    token: String,
    dir: PathBuf,
    #[cfg(unix)]
    _file: std::fs::File,
}

/// The directory of owner files of the database at `db`.
pub(crate) fn owners_dir(db: &Path) -> PathBuf {
    let mut dir = db.to_path_buf().into_os_string();
    dir.push(".owners");
    PathBuf::from(dir)
}

/// Whether `token` can name an owner file (tokens are read back from the
/// database: nothing else may become a path).
fn valid_token(token: &str) -> bool {
    !token.is_empty()
        && token.len() <= 64
        && token
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-')
}

/// What is known of the process behind a token.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Liveness {
    /// Its lock is held: it runs.
    Running,
    /// Its lock is free or its file gone: it ended.
    Ended,
    /// Cannot tell (not a token, no lock support, an I/O error): wait for the lease.
    Unknown,
}

impl OwnerLock {
    /// Take an owner file beside the database at `db`. `None` where none can be
    /// made (a read-only directory, no file locks): leases then end only by time.
    pub(crate) fn acquire(db: &Path) -> Option<OwnerLock> {
        #[cfg(unix)]
        {
            match Self::try_acquire(db) {
                Ok(lock) => Some(lock),
                Err(e) => {
                    tracing::debug!(error = %e, "no owner lock file: leases end only by time");
                    None
                }
            }
        }
        #[cfg(not(unix))]
        {
            let _ = db;
            None
        }
    }

    #[cfg(unix)]
    fn try_acquire(db: &Path) -> std::io::Result<OwnerLock> {
        use rustix::fs::{FlockOperation, flock};
        let dir = owners_dir(db);
        std::fs::create_dir_all(&dir)?;
        let token = format!(
            "{}-{}",
            std::process::id(),
            &uuid::Uuid::new_v4().simple().to_string()[..12]
        );
        let staging = dir.join(format!(".{token}.new"));
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&staging)?;
        if let Err(e) = flock(&file, FlockOperation::NonBlockingLockExclusive) {
            let _ = std::fs::remove_file(&staging);
            return Err(e.into());
        }
        std::fs::rename(&staging, dir.join(format!("{token}.lock")))?;
        let lock = OwnerLock {
            token,
            dir,
            _file: file,
        };
        lock.sweep_ended();
        Ok(lock)
    }

    /// The token leases taken by this process carry.
    pub(crate) fn token(&self) -> &str {
        &self.token
    }

    /// Whether the process behind `token` still runs. An ended process's file is
    /// removed.
    pub(crate) fn liveness(&self, token: &str) -> Liveness {
        if !valid_token(token) {
            return Liveness::Unknown;
        }
        if token == self.token {
            return Liveness::Running;
        }
        #[cfg(unix)]
        {
            use rustix::fs::{FlockOperation, flock};
            let path = self.dir.join(format!("{token}.lock"));
            let file = match std::fs::File::open(&path) {
                Ok(f) => f,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Liveness::Ended,
                Err(_) => return Liveness::Unknown,
            };
            match flock(&file, FlockOperation::NonBlockingLockExclusive) {
                Ok(()) => {
                    // Removed while locked: a process starting now never takes it.
                    let _ = std::fs::remove_file(&path);
                    Liveness::Ended
                }
                Err(e) if e == rustix::io::Errno::WOULDBLOCK => Liveness::Running,
                Err(_) => Liveness::Unknown,
            }
        }
        #[cfg(not(unix))]
        {
            Liveness::Unknown
        }
    }

    /// Remove the files of processes that ended (those that never leased work
    /// are otherwise never looked at).
    fn sweep_ended(&self) {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return;
        };
        for entry in entries.flatten() {
            let name = entry.file_name();
            if let Some(token) = name.to_str().and_then(|n| n.strip_suffix(".lock")) {
                let _ = self.liveness(token);
            }
        }
    }
}

impl Drop for OwnerLock {
    fn drop(&mut self) {
        // Removed before the lock is released (the file closes after this).
        let _ = std::fs::remove_file(self.dir.join(format!("{}.lock", self.token)));
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn a_live_owner_runs_and_a_dropped_one_has_ended() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("memory.db");
        let a = OwnerLock::acquire(&db).unwrap();
        let b = OwnerLock::acquire(&db).unwrap();
        assert_ne!(a.token(), b.token());
        assert_eq!(a.liveness(b.token()), Liveness::Running);
        assert_eq!(b.liveness(a.token()), Liveness::Running);
        let gone = b.token().to_string();
        drop(b);
        assert_eq!(a.liveness(&gone), Liveness::Ended);
        // A token that is not one never becomes a path.
        assert_eq!(a.liveness("../../etc/passwd"), Liveness::Unknown);
    }

    #[test]
    fn a_lock_file_left_by_a_killed_process_is_free() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("memory.db");
        let a = OwnerLock::acquire(&db).unwrap();
        // What a killed process leaves: its file, with no lock on it.
        let left = owners_dir(&db).join("4242-abcdef012345.lock");
        std::fs::write(&left, b"").unwrap();
        assert_eq!(a.liveness("4242-abcdef012345"), Liveness::Ended);
        assert!(!left.exists(), "an ended owner's file is removed");
    }
}
