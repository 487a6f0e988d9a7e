//! `remember mcp` over stdio, driven by an rmcp client that starts it as a child
//! process: initialize, the catalogue against the registry, ingest then
//! `combined_context`, and `--read-only` refusing writes.

use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::TokioChildProcess;
use serde_json::{Value, json};
use std::process::Command;

type Client = rmcp::service::RunningService<rmcp::RoleClient, ()>;

async fn start(db: &std::path::Path, read_only: bool) -> Client {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_remember"));
    cmd.env("REMEMBERSTACK_EMBEDDER", "hashing");
    cmd.arg("--db").arg(db).arg("mcp");
    if read_only {
        cmd.arg("--read-only");
    }
    cmd.env_remove("REMEMBERSTACK_DB")
        .env_remove("REMEMBERSTACK_CONFIG")
        .env("REMEMBERSTACK_LOG", "info");
    let transport = TokioChildProcess::new(cmd).expect("spawn remember mcp");
    ().serve(transport)
        .await
        .expect("MCP initialize over stdio")
}

async fn call(c: &Client, name: &str, args: Value) -> (bool, Value) {
    let Value::Object(args) = args else {
        panic!("arguments must be an object")
    };
    let result = c
        .call_tool(CallToolRequestParams::new(name.to_string()).with_arguments(args))
        .await
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    (
        result.is_error.unwrap_or(false),
        result.structured_content.unwrap_or(Value::Null),
    )
}

#[test]
fn mcp_over_stdio_serves_the_catalogue_and_answers() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("memory.db");
    // The registry, as the CLI prints it.
    let out = Command::new(env!("CARGO_BIN_EXE_remember"))
        .env("REMEMBERSTACK_EMBEDDER", "hashing")
        .args(["--db"])
        .arg(&db)
        .args(["operations", "list", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let registry: Value = serde_json::from_slice(&out.stdout).unwrap();
    let registry = registry["operations"]
        .as_array()
        .or_else(|| registry.as_array())
        .cloned()
        .unwrap_or_else(|| panic!("{registry}"));

    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let c = start(&db, false).await;
        let info = c.peer_info().expect("server info");
        assert_eq!(info.server_info.as_ref().unwrap().name, "rememberstack");
        let tools = c.list_all_tools().await.unwrap();
        for op in &registry {
            let name = op["name"].as_str().unwrap();
            let tool = tools
                .iter()
                .find(|t| t.name == name)
                .unwrap_or_else(|| panic!("{name} is not a tool"));
            assert_eq!(Value::Object((*tool.input_schema).clone()), op["input_schema"]);
            assert_eq!(
                tool.annotations.as_ref().unwrap().read_only_hint,
                Some(true)
            );
        }
        // The registry's operations, then the operation table's own tools.
        let own = || {
            rememberstack::ops::OPERATIONS
                .iter()
                .filter(|o| matches!(o.mcp, Some(rememberstack::ops::Tool::Own { .. })))
        };
        assert_eq!(tools.len(), registry.len() + own().count(), "{tools:?}");
        assert!(own().count() >= 10);

        let (err, receipt) = call(
            &c,
            "ingest",
            json!({"text": "# Fleet\n\nThe ship Aurora is captained by Ines Duarte.", "source_ref": "fleet.md", "wait": true}),
        )
        .await;
        assert!(!err, "{receipt}");
        assert_eq!(receipt["outcome"], "created");
        assert_eq!(receipt["processing"], "done");
        let (err, note) = call(
            &c,
            "remember_note",
            json!({"request_id": "r1", "source_key": "prefs", "source_revision": "1", "text": "The user prefers short answers."}),
        )
        .await;
        assert!(!err, "{note}");
        let (err, bundle) = call(
            &c,
            "combined_context",
            json!({"query": "Who captains the Aurora?"}),
        )
        .await;
        assert!(!err, "{bundle}");
        assert_eq!(bundle["contract"], "ContextBundle/v2");
        assert!(bundle.to_string().contains("Ines Duarte"), "{bundle}");
        let unknown = c
            .call_tool(CallToolRequestParams::new("no_such_tool"))
            .await;
        assert!(unknown.is_err(), "an unknown tool is a protocol error");
        c.cancel().await.unwrap();

        // Read-only: the write tools are neither listed nor callable.
        let r = start(&db, true).await;
        let tools = r.list_all_tools().await.unwrap();
        let reads = own().filter(|o| o.read_only()).count();
        assert_eq!(tools.len(), registry.len() + reads);
        assert!(reads >= 5 && reads < own().count());
        assert!(tools.iter().all(|t| t.name != "ingest"));
        let (err, body) = call(
            &r,
            "ingest",
            json!({"text": "# No\n\nRefused.", "source_ref": "no.md"}),
        )
        .await;
        assert!(err);
        assert_eq!(body["code"], "forbidden", "{body}");
        r.cancel().await.unwrap();
    });
    // The refused write changed nothing: one document (and the note).
    let out = Command::new(env!("CARGO_BIN_EXE_remember"))
        .env("REMEMBERSTACK_EMBEDDER", "hashing")
        .args(["--db"])
        .arg(&db)
        .args(["documents", "list", "--json"])
        .output()
        .unwrap();
    let listed: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(!listed.to_string().contains("no.md"), "{listed}");
    assert!(listed.to_string().contains("fleet.md"), "{listed}");
}
