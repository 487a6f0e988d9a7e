//! MCP over Streamable HTTP at `/mcp`, through an rmcp client, behind the perimeter.

mod common;

use common::{Server, test_config};
use rememberstack::KeyScope;
use rememberstack_conformance::stores;
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Value, json};

async fn client(
    base: &str,
    key: Option<&str>,
) -> rmcp::service::RunningService<rmcp::RoleClient, ()> {
    let mut config = StreamableHttpClientTransportConfig::with_uri(format!("{base}/mcp"));
    if let Some(k) = key {
        config = config.auth_header(k);
    }
    let transport = StreamableHttpClientTransport::from_config(config);
    ().serve(transport).await.expect("MCP initialize")
}

async fn call(
    c: &rmcp::service::RunningService<rmcp::RoleClient, ()>,
    name: &str,
    args: Value,
) -> (bool, Value) {
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_over_http_lists_the_catalogue_and_answers_behind_keys() {
    for h in stores().await {
        let kind = h.kind;
        let memory = h.memory().await;
        let (_, writer) = memory
            .create_api_key(
                vec!["crew".into()],
                vec![KeyScope::Read, KeyScope::Write],
                None,
            )
            .await
            .unwrap();
        let (_, reader) = memory
            .create_api_key(vec!["crew".into()], vec![KeyScope::Read], None)
            .await
            .unwrap();
        let s = Server::start(&h, test_config()).await;

        // Without a key the endpoint is refused by the perimeter.
        let resp = s
            .client
            .post(format!("{}/mcp", s.base))
            .header("accept", "application/json, text/event-stream")
            .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                           "clientInfo": {"name": "t", "version": "1"}}}))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status().as_u16(), 401, "{kind}");

        // The catalogue: the registry's operations with their schemas, then the
        // primitives and the writes, read tools marked read-only.
        let w = client(&s.base, Some(&writer)).await;
        let info = w.peer_info().expect("server info");
        assert_eq!(info.server_info.as_ref().unwrap().name, "rememberstack");
        let tools = w.list_all_tools().await.unwrap();
        let names: Vec<String> = tools.iter().map(|t| t.name.to_string()).collect();
        for op in memory.operations() {
            let tool = tools
                .iter()
                .find(|t| t.name == op.name)
                .unwrap_or_else(|| panic!("{} missing from {names:?}", op.name));
            assert_eq!(Value::Object((*tool.input_schema).clone()), op.input_schema);
            assert_eq!(tool.description.as_deref(), Some(op.description.as_str()));
            assert_eq!(
                tool.annotations.as_ref().unwrap().read_only_hint,
                Some(true)
            );
        }
        for name in [
            "ingest",
            "remember_note",
            "append_messages",
            "delete_document",
            "adjacent_chunks",
            "search_documents",
            "trace",
            "pipeline_readiness",
            "merge_proposals",
        ] {
            assert!(names.iter().any(|n| n == name), "{name} in {names:?}");
        }
        let ingest = tools.iter().find(|t| t.name == "ingest").unwrap();
        assert_eq!(
            ingest.annotations.as_ref().unwrap().read_only_hint,
            Some(false)
        );

        // Ingest, then ask.
        let (err, receipt) = call(
            &w,
            "ingest",
            json!({"text": "# Crew\n\nMarta is the ship's navigator since 2021.", "source_ref": "crew.md", "wait": true}),
        )
        .await;
        assert!(!err, "{kind}: {receipt}");
        assert_eq!(receipt["processing"], "done", "{receipt}");
        assert_eq!(receipt["namespace"], "crew", "the key's namespace");
        let (err, bundle) = call(
            &w,
            "combined_context",
            json!({"query": "Who is the navigator?"}),
        )
        .await;
        assert!(!err, "{bundle}");
        assert_eq!(bundle["contract"], "ContextBundle/v2");
        let (err, proposals) = call(&w, "merge_proposals", json!({})).await;
        assert!(!err, "{proposals}");
        assert!(proposals["proposals"].is_array(), "{proposals}");
        // Deciding a proposal merges entities: an admin tool, not a writer's.
        for admin in ["accept_merge_proposal", "reject_merge_proposal"] {
            assert!(!names.iter().any(|n| n == admin), "{admin} in {names:?}");
        }
        assert!(bundle.to_string().contains("Marta"), "{kind}: {bundle}");
        let (err, ready) = call(&w, "pipeline_readiness", json!({})).await;
        assert!(!err);
        assert_eq!(ready["namespace"], "crew");
        // Bad arguments are a typed tool error, not a crash.
        let (err, body) = call(&w, "trace", json!({"fact_id": "nope"})).await;
        assert!(err);
        assert_eq!(body["code"], "invalid_input", "{body}");
        // Arguments that do not parse are `invalid_input`, as over HTTP and the
        // bindings; what an operation refuses of its own input is `invalid_parameter`.
        let (err, body) = call(&w, "ingest", json!({"text": "x"})).await;
        assert!(err);
        assert_eq!(body["code"], "invalid_input", "{body}");
        let (err, body) = call(
            &w,
            "adjacent_chunks",
            json!({"chunk_id": "x", "window": "wide"}),
        )
        .await;
        assert!(err);
        assert_eq!(body["code"], "invalid_input", "{body}");
        let (err, body) = call(&w, "combined_context", json!({"query": "x", "k": 3})).await;
        assert!(err);
        assert_eq!(body["code"], "invalid_parameter", "{body}");
        w.cancel().await.unwrap();

        // A read key sees only the read tools and cannot write.
        let r = client(&s.base, Some(&reader)).await;
        let tools = r.list_all_tools().await.unwrap();
        assert!(
            tools
                .iter()
                .all(|t| t.annotations.as_ref().unwrap().read_only_hint == Some(true)),
            "{:?}",
            tools.iter().map(|t| &t.name).collect::<Vec<_>>()
        );
        let (err, body) = call(
            &r,
            "ingest",
            json!({"text": "# No\n\nShould not land.", "source_ref": "no.md"}),
        )
        .await;
        assert!(err);
        assert_eq!(body["code"], "forbidden", "{body}");
        r.cancel().await.unwrap();
        let docs = memory
            .with_namespace("crew")
            .unwrap()
            .documents()
            .await
            .unwrap();
        assert_eq!(docs.len(), 1, "{kind}: the refused ingest wrote nothing");
        s.stop().await;
    }
}
