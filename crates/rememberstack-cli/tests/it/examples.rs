//! The CLI, HTTP and MCP quick starts the documentation site shows
//! (`examples/cli/quickstart.sh`, `examples/server/quickstart.sh`,
//! `examples/mcp/stdio_client.py`), run with this build's `remember`.

use std::path::PathBuf;
use std::process::Command;

fn example(path: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples")
        .join(path)
}

/// Run an example program with `REMEMBER` naming this build's binary, on the
/// hashing embedder; its standard output.
fn run(program: &str, script: &str, env: &[(&str, String)]) -> String {
    let mut cmd = Command::new(program);
    crate::offline(&mut cmd);
    cmd.arg(example(script))
        .env("REMEMBER", env!("CARGO_BIN_EXE_remember"))
        .envs(env.iter().map(|(k, v)| (k, v)));
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{script} failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn the_cli_quick_start_runs_and_answers_from_its_sources() {
    let out = run("bash", "cli/quickstart.sh", &[]);
    assert!(out.contains("processed:"), "{out}");
    // The search finds the backup turns, cited by message id, first.
    let search = out.split("1. ").nth(1).unwrap_or_default();
    assert!(search.contains("messages: m1, m2"), "{out}");
    // The question is answered by the fact and its evidence.
    assert!(
        out.contains("Alice Moreno —works_for→ Acme; from 2024-03-01"),
        "{out}"
    );
}

#[test]
fn the_http_quick_start_serves_ingests_and_answers() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let out = run(
        "bash",
        "server/quickstart.sh",
        &[("PORT", port.to_string())],
    );
    let mut lines = out.lines().filter(|l| !l.trim().is_empty());
    let receipt: serde_json::Value = serde_json::from_str(lines.next().unwrap()).unwrap();
    assert_eq!(receipt["processing"], "done", "{out}");
    let envelope: serde_json::Value = serde_json::from_str(lines.next().unwrap()).unwrap();
    assert_eq!(envelope["contract"], "rememberstack.envelope/v1");
    assert_eq!(
        envelope["results"][0]["statement"], "Alice Moreno works for Acme.",
        "{out}"
    );
}

#[test]
fn the_mcp_quick_start_lists_tools_ingests_and_asks() {
    let out = run("python3", "mcp/stdio_client.py", &[]);
    assert!(
        out.contains("tools: resolve_entity, claims_and_sources_context"),
        "{out}"
    );
    assert!(out.contains("fact: Alice Moreno works for Acme."), "{out}");
}
