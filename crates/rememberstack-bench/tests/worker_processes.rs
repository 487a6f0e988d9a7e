//! `scale --worker-processes N`: the ledger runs in N processes of the benchmark's
//! `drain` command, and the report adds up what they did.

use serde_json::Value;
use std::path::Path;
use std::process::Command;

/// Build a small store with two worker processes and read its `scale.json`.
fn scale_with_two_processes(dir: &Path, store: &[&str]) -> Value {
    let out = dir.join("out");
    let status = Command::new(env!("CARGO_BIN_EXE_rememberstack-bench"))
        .args(["scale", "--claims", "60", "--queries", "2", "--warmup", "1"])
        .args(["--worker-processes", "2", "--out"])
        .arg(&out)
        .args(store)
        .env("REMEMBERSTACK_EMBEDDER", "hashing")
        .status()
        .expect("running rememberstack-bench");
    assert!(status.success(), "scale exited with {status}");
    let text = std::fs::read_to_string(out.join("scale.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn assert_processed_by_the_workers(result: &Value) {
    let ingest = &result["ingest"];
    assert_eq!(ingest["worker_processes"], 2, "{ingest}");
    assert!(ingest["claims"].as_u64().unwrap() >= 60, "{ingest}");
    // The parent ran no work itself: every completed item is in the workers'
    // reports, stage by stage.
    let completed = ingest["work"]["completed"].as_u64().unwrap();
    let items: u64 = ingest["stages"]
        .as_object()
        .unwrap()
        .values()
        .map(|s| s["items"].as_u64().unwrap())
        .sum();
    assert!(completed > 0 && items >= completed, "{ingest}");
    assert!(ingest["stages"]["e3.normalize"]["items"].as_u64().unwrap() >= 60);
    // Throughput is over the wall time of the processes side by side.
    assert_eq!(ingest["process_secs"], ingest["process_wall_secs"]);
}

#[test]
fn the_embedded_store_refuses_worker_processes_before_writing() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("memory.db");
    let run = Command::new(env!("CARGO_BIN_EXE_rememberstack-bench"))
        .args(["scale", "--claims", "60", "--worker-processes", "2", "--db"])
        .arg(&db)
        .arg("--out")
        .arg(dir.path().join("out"))
        .env("REMEMBERSTACK_EMBEDDER", "hashing")
        .output()
        .unwrap();
    assert!(!run.status.success());
    let err = String::from_utf8_lossy(&run.stderr);
    assert!(
        err.contains("--worker-processes applies to --store postgres"),
        "{err}"
    );
    assert!(!db.exists());
}

#[test]
fn worker_processes_run_the_ledger_of_a_postgres_schema() {
    if std::env::var("DATABASE_URL").is_err() {
        eprintln!("skipped: DATABASE_URL is not set");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let result = scale_with_two_processes(dir.path(), &["--store", "postgres"]);
    assert_processed_by_the_workers(&result);
}
