//! The CPU the embedded store's pipeline runs on.
//!
//! On the SQLite store every statement is a round trip between the task that runs it
//! and the connection's worker thread. When the two threads sit on different CPUs,
//! each wake-up crosses CPUs, which on a virtual machine is several times dearer
//! than a switch on one CPU: pinning the whole ingest process to one CPU of two made
//! processing about 1.7 times faster (3,000 claims, 2 vCPUs). So the pipeline's
//! driver thread and the SQLite writer's worker thread are both pinned to one CPU,
//! and everything else stays free.

use std::sync::OnceLock;

/// The environment variable that turns pinning off when set to `0`.
pub const PIN_ENV: &str = "REMEMBERSTACK_PIN_PIPELINE";

/// The CPU the pipeline and the SQLite writer share: the last CPU this process may
/// run on when it may run on more than one, unless `REMEMBERSTACK_PIN_PIPELINE=0`.
/// Decided once per process, at the first call.
pub fn pipeline_cpu() -> Option<usize> {
    static CPU: OnceLock<Option<usize>> = OnceLock::new();
    *CPU.get_or_init(|| {
        if std::env::var(PIN_ENV).is_ok_and(|v| v.trim() == "0") {
            return None;
        }
        let cpus = core_affinity::get_core_ids()?;
        if cpus.len() < 2 {
            return None;
        }
        cpus.iter().map(|c| c.id).max()
    })
}

/// Pin the calling thread to [`pipeline_cpu`]. Returns whether it is now pinned
/// (false without a pipeline CPU, or where the platform refuses).
pub fn pin_to_pipeline_cpu() -> bool {
    pipeline_cpu().is_some_and(|id| core_affinity::set_for_current(core_affinity::CoreId { id }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pinned_thread_runs_on_the_pipeline_cpu_alone() {
        let Some(cpu) = pipeline_cpu() else {
            // One CPU (or pinning turned off): nothing to pin.
            assert!(!pin_to_pipeline_cpu());
            return;
        };
        let seen = std::thread::spawn(|| {
            assert!(pin_to_pipeline_cpu());
            core_affinity::get_core_ids().map(|ids| ids.iter().map(|c| c.id).collect::<Vec<_>>())
        })
        .join()
        .unwrap();
        if let Some(ids) = seen {
            assert_eq!(ids, vec![cpu]);
        }
    }
}
