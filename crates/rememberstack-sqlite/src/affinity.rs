//! The CPU the embedded store's pipeline runs on.
//!
//! On the SQLite store every statement is a round trip between the task that runs it
//! and the connection's worker thread. When the two threads sit on different CPUs,
//! each wake-up crosses CPUs, which on a virtual machine is several times dearer
//! than a switch on one CPU: pinning the whole ingest process to one CPU of two made
//! processing about 1.7 times faster (3,000 claims, 2 vCPUs). So the pipeline's
//! driver thread and the SQLite writer's worker thread are both pinned to one CPU,
//! and everything else stays free.
//!
//! Both also run under Linux's `SCHED_BATCH` policy (when not started niced). A woken thread of
//! that policy does not preempt the running one: when the worker sends the rows of
//! a result one message at a time, it goes on sending instead of handing the CPU to
//! the woken pipeline thread after every row, which then takes them all at once.
//! That halved the context switches of processing (3,000 claims: 1.1 M → 0.47 M)
//! and made it about 15% faster.

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

/// Pin the calling thread to [`pipeline_cpu`] and, on Linux, give it the
/// `SCHED_BATCH` policy (threads it starts inherit both). Returns whether it is now
/// pinned (false without a pipeline CPU, or where the platform refuses).
pub fn pin_to_pipeline_cpu() -> bool {
    let pinned = pipeline_cpu()
        .is_some_and(|id| core_affinity::set_for_current(core_affinity::CoreId { id }));
    if pinned {
        batch_policy();
    }
    pinned
}

/// Give the calling thread `SCHED_BATCH` at nice 0 (Linux only, and only a thread at
/// nice 0; best effort: a refusal leaves the thread as it was).
fn batch_policy() {
    #[cfg(target_os = "linux")]
    {
        use thread_priority::unix::{
            NormalThreadSchedulePolicy, ThreadSchedulePolicy, set_thread_priority_and_policy,
            thread_native_id,
        };
        // Setting the policy sets the nice value to 0 too: a thread started niced
        // (`nice remember worker`) keeps its own policy and niceness instead.
        let nice = current_nice();
        if nice != Some(0) {
            return;
        }
        let _ = set_thread_priority_and_policy(
            thread_native_id(),
            thread_priority::ThreadPriority::Os(thread_priority::ThreadPriorityOsValue::default()),
            ThreadSchedulePolicy::Normal(NormalThreadSchedulePolicy::Batch),
        );
    }
}

/// The calling thread's nice value (Linux `/proc`; `None` elsewhere).
pub fn current_nice() -> Option<i32> {
    let stat = std::fs::read_to_string("/proc/thread-self/stat").ok()?;
    let after = &stat[stat.rfind(')')? + 1..];
    // After the command come the state (field 3) … the nice value (field 19).
    after.split_whitespace().nth(16)?.parse::<i32>().ok()
}

/// Whether the calling thread runs under `SCHED_BATCH` (always false off Linux).
pub fn runs_batch_policy() -> bool {
    #[cfg(target_os = "linux")]
    {
        use thread_priority::unix::{
            NormalThreadSchedulePolicy, ThreadSchedulePolicy, thread_schedule_policy,
        };
        matches!(
            thread_schedule_policy(),
            Ok(ThreadSchedulePolicy::Normal(
                NormalThreadSchedulePolicy::Batch
            ))
        )
    }
    #[cfg(not(target_os = "linux"))]
    {
        false
    }
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
        let (seen, batch, inherited, nice) = std::thread::spawn(|| {
            assert!(
                !runs_batch_policy(),
                "a new test thread runs the default policy"
            );
            assert!(pin_to_pipeline_cpu());
            let ids = core_affinity::get_core_ids()
                .map(|ids| ids.iter().map(|c| c.id).collect::<Vec<_>>());
            // A thread it starts (as sqlx starts a connection's worker) inherits both.
            let inherited = std::thread::spawn(runs_batch_policy).join().unwrap();
            (ids, runs_batch_policy(), inherited, current_nice())
        })
        .join()
        .unwrap();
        if let Some(ids) = seen {
            assert_eq!(ids, vec![cpu]);
        }
        if cfg!(target_os = "linux") && nice == Some(0) {
            assert!(batch, "the pinned thread runs SCHED_BATCH");
            assert!(inherited, "its child thread inherits SCHED_BATCH");
        } else {
            // A niced thread keeps its policy and niceness.
            assert!(!batch);
        }
    }
}
