//! Whether the disks have room to rewrite the database file (VACUUM).
//!
//! VACUUM copies the live database into a temporary database (a file in SQLite's
//! temporary directory), then writes every page back through the write-ahead log
//! beside the database: at its peak it needs about the file's size free in each
//! place, twice that when both are on one disk.

use rememberstack_core::{Error, Result};
use std::path::{Path, PathBuf};

/// The default free space a rewrite must leave on each disk.
pub(crate) const DEFAULT_RESERVE: u64 = 64 * 1024 * 1024;

/// The directory SQLite puts temporary files in on Unix: the first of
/// `SQLITE_TMPDIR`, `TMPDIR`, `/var/tmp`, `/usr/tmp` and `/tmp` that is a directory.
fn sqlite_temp_dir() -> PathBuf {
    let env = ["SQLITE_TMPDIR", "TMPDIR"]
        .into_iter()
        .filter_map(|v| std::env::var_os(v).map(PathBuf::from));
    env.chain(["/var/tmp", "/usr/tmp", "/tmp"].map(PathBuf::from))
        .find(|p| p.is_dir())
        .unwrap_or_else(|| PathBuf::from("."))
}

/// One disk a rewrite writes to: its identity, free bytes, and what it must take.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct DiskNeed {
    pub(crate) device: u64,
    pub(crate) free: u64,
    pub(crate) need: u64,
}

/// Why the disks cannot take the rewrite, if they cannot: what each disk must
/// take (summed per device) plus `reserve` must fit in what it has free.
pub(crate) fn shortfall(needs: &[DiskNeed], reserve: u64) -> Option<String> {
    let mut by_device: Vec<DiskNeed> = Vec::new();
    for n in needs {
        match by_device.iter_mut().find(|d| d.device == n.device) {
            Some(d) => d.need = d.need.saturating_add(n.need),
            None => by_device.push(*n),
        }
    }
    by_device
        .iter()
        .find(|d| d.need.saturating_add(reserve) > d.free)
        .map(|d| {
            format!(
                "not enough free disk to rewrite the database file: it needs {} MiB \
                 (plus a reserve of {} MiB) where {} MiB are free",
                d.need.div_ceil(1 << 20),
                reserve.div_ceil(1 << 20),
                d.free / (1 << 20)
            )
        })
}

#[cfg(unix)]
fn disk_of(dir: &Path) -> Result<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    let device = std::fs::metadata(dir)
        .map_err(|e| Error::store(format!("cannot inspect {}: {e}", dir.display())))?
        .dev();
    let stat = rustix::fs::statvfs(dir)
        .map_err(|e| Error::store(format!("cannot read free space of {}: {e}", dir.display())))?;
    Ok((device, stat.f_bavail.saturating_mul(stat.f_frsize)))
}

/// Why the database at `db` cannot be rewritten now for want of disk, if so.
#[cfg(unix)]
pub(crate) fn rewrite_shortfall(db: &Path, reserve: u64) -> Result<Option<String>> {
    let size = std::fs::metadata(db)
        .map_err(|e| Error::store(format!("cannot inspect {}: {e}", db.display())))?
        .len();
    let dir = db
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let (db_dev, db_free) = disk_of(dir)?;
    let (tmp_dev, tmp_free) = disk_of(&sqlite_temp_dir())?;
    Ok(shortfall(
        &[
            DiskNeed {
                device: db_dev,
                free: db_free,
                need: size,
            },
            DiskNeed {
                device: tmp_dev,
                free: tmp_free,
                need: size,
            },
        ],
        reserve,
    ))
}

/// Elsewhere the free space is not checked; a VACUUM that runs out of disk fails
/// without changing the file, and the rewrite is reported pending.
#[cfg(not(unix))]
pub(crate) fn rewrite_shortfall(_db: &Path, _reserve: u64) -> Result<Option<String>> {
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;

    #[test]
    fn one_disk_must_hold_both_copies() {
        let db = DiskNeed {
            device: 1,
            free: 250 * MIB,
            need: 100 * MIB,
        };
        // Apart, each disk holds one copy; together they need 200 MiB + reserve.
        let apart = DiskNeed { device: 2, ..db };
        assert_eq!(shortfall(&[db, apart], 64 * MIB), None);
        let reason = shortfall(&[db, db], 64 * MIB).expect("one disk cannot hold both");
        assert!(reason.contains("needs 200 MiB"), "{reason}");
        assert_eq!(shortfall(&[db, db], 0), None);
    }

    #[test]
    fn the_temporary_directory_exists() {
        assert!(sqlite_temp_dir().is_dir());
    }
}
