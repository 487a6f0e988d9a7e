//! The golden scenario (`tests/golden/`) through the `remember` binary (`--json`):
//! on a fresh embedded store it must give exactly the envelopes in
//! `tests/golden/expected.json`, as the facade, HTTP and MCP do. Its adjudicate
//! seat calls the scripted fake chat endpoint (`tests/golden/chat.json`), configured
//! through the `REMEMBERSTACK_CHAT*` variables.

use crate::Cli;
use async_trait::async_trait;
use rememberstack_conformance::golden::chat::FakeChat;
use rememberstack_conformance::golden::{self, Surface};
use serde_json::Value;
use std::process::Stdio;

struct CliSurface {
    cli: Cli,
    ns: String,
}

impl CliSurface {
    fn json(&self, args: &[&str]) -> Value {
        let mut all = vec!["--namespace", self.ns.as_str(), "--json"];
        all.extend_from_slice(args);
        self.cli.ok_json(&all)
    }

    /// `remember ingest -` with `contents` on standard input.
    fn ingest(&self, contents: &str, source: &Value, kind: &str) {
        use std::io::Write;
        let mut child = self
            .cli
            .command(&["--namespace", self.ns.as_str(), "--json", "ingest", "-"])
            .args(["--kind", kind])
            .args([
                "--source-ref",
                source["source_ref"].as_str().expect("source_ref"),
            ])
            .args([
                "--source-time",
                source["source_time"].as_str().expect("source_time"),
            ])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn remember");
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(contents.as_bytes())
            .expect("write stdin");
        let out = child.wait_with_output().expect("remember ingest");
        assert!(
            out.status.success(),
            "ingest -: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: Value = serde_json::from_slice(&out.stdout).expect("JSON");
        assert_eq!(v["ingested"][0]["outcome"], "created", "{v}");
    }
}

#[async_trait]
impl Surface for CliSurface {
    async fn ingest_text(&self, doc: &Value) {
        self.ingest(doc["text"].as_str().expect("text"), doc, "markdown");
    }

    async fn ingest_conversation(&self, conv: &Value) {
        let text = serde_json::to_string(&conv["conversation"]).expect("JSON");
        self.ingest(&text, conv, "conversation");
    }

    async fn process(&self) {
        self.json(&["process"]);
    }

    async fn operation(&self, name: &str, input: &Value) -> Value {
        self.json(&["operations", "run", name, "--input", &input.to_string()])
    }

    async fn correct(&self, fact_id: &str, statement: &str, reason: &str, request_id: &str) {
        self.json(&[
            "facts",
            "correct",
            fact_id,
            "--statement",
            statement,
            "--reason",
            reason,
            "--request-id",
            request_id,
        ]);
    }
}

#[tokio::test]
async fn the_cli_gives_the_golden_envelopes() {
    let chat = FakeChat::start();
    let surface = CliSurface {
        cli: Cli::new().with_env(chat.env()),
        ns: golden::namespace(),
    };
    let out = golden::drive(&surface).await;
    chat.assert_every_rule_fired();
    golden::assert_golden("cli", &out);
}

#[test]
fn ingest_from_standard_input_refuses_bad_input_and_writes_nothing() {
    let cli = Cli::new();
    let code = |args: &[&str]| {
        let out = cli.run(args);
        assert!(!out.status.success(), "{args:?} succeeded");
        serde_json::from_slice::<Value>(&out.stdout).expect("a JSON error")["code"].clone()
    };
    // (Cli::run gives the child an empty standard input.)
    assert_eq!(code(&["ingest", "-", "--json"]), "invalid_input");
    assert_eq!(
        code(&["ingest", "-", "other.md", "--source-ref", "x", "--json"]),
        "invalid_input"
    );
    assert_eq!(
        code(&["ingest", "-", "--source-ref", "x", "--json"]),
        "empty_input"
    );
    assert_eq!(
        code(&[
            "ingest",
            "-",
            "--source-ref",
            "x",
            "--kind",
            "conversation",
            "--json"
        ]),
        "invalid_conversation"
    );
    let docs = cli.ok_json(&["documents", "list", "--json"]);
    assert_eq!(
        docs["documents"].as_array().map(Vec::len),
        Some(0),
        "{docs}"
    );
}
