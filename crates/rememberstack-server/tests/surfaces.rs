//! The surfaces against the operation table (`rememberstack::ops`): each HTTP
//! route asks for the table's scope, and the same bad input is refused with the
//! same code over HTTP, MCP and the JSON calls the bindings make.

mod common;

use common::{Server, test_config};
use rememberstack::KeyScope;
use rememberstack::ops::{OPERATIONS, Operation};
use rememberstack_conformance::stores;
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use serde_json::{Value, json};

const ID: &str = "123e4567-e89b-12d3-a456-426614174000";

/// A body the route's handler reads without complaint, so what it answers is
/// about the caller, not the body.
fn body(op: &Operation) -> Option<Value> {
    let messages = json!([{"speaker": "Ana", "text": "I moved to Madrid."}]);
    Some(match op.name {
        "ingest_text" => json!({"text": "Ana lives in Madrid.", "source_ref": "t"}),
        "ingest_conversation" => {
            json!({"source_ref": "c", "conversation": {"messages": messages}})
        }
        "append_messages" => json!({"conversation_ref": "c", "messages": messages}),
        "remember_note" => json!({"request_id": "r", "source_key": "k",
                                  "source_revision": "1", "text": "Ana prefers tea."}),
        "set_note_policy" => json!({"start_as": "candidate"}),
        "promote_note" | "archive_note" | "revoke_note" => json!({"expected_version": 1}),
        "invalidate_fact" | "retract_claim" => json!({"reason": "wrong"}),
        "correct_fact" => json!({"statement": "Ana lives in Oslo.", "reason": "moved"}),
        "merge_entities" | "accept_merge_proposal" | "reject_merge_proposal" => {
            json!({"from": ID, "into": ID})
        }
        "feedback" => json!({"receipt_id": ID, "item_ref": "claim:x", "rating": "useful"}),
        "search" | "search_documents" | "run_operation" => json!({"query": "Ana"}),
        "export" => json!({}),
        _ => return None,
    })
}

fn path(template: &str) -> String {
    template
        .replace("{ns}", "crew")
        .replace("{name}", "facts_context")
        .replace("{name_or_id}", "Ana")
        .replace("{id}", ID)
        .replace("{version}", ID)
}

/// The scopes below `scope`: a key holding them lacks it.
fn below(scope: KeyScope) -> Vec<KeyScope> {
    KeyScope::ALL
        .into_iter()
        .take_while(|s| *s != scope)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_route_asks_for_the_scope_the_table_gives_its_call() {
    let h = stores().await.remove(0);
    let memory = h.memory().await;
    let s = Server::start_with(memory.clone(), test_config()).await;
    let mut checked = 0;
    for op in OPERATIONS {
        let Some(route) = op.http else { continue };
        if !route.path.contains("{ns}") {
            continue;
        }
        let url = path(route.path);
        // A key with exactly the scope (and those below it) is not refused for
        // want of a scope.
        let mut holding = below(op.scope);
        holding.push(op.scope);
        let (_, key) = memory
            .create_api_key(vec!["crew".into()], holding, None)
            .await
            .unwrap();
        let (status, answer) = s.with_key(&key).call(route.method, &url, body(op)).await;
        assert_ne!(
            status,
            403,
            "{} {url} ({}) with `{}`: {answer}",
            route.method,
            op.name,
            op.scope.as_str()
        );
        // A key with every scope below it is refused.
        let lower = below(op.scope);
        if lower.is_empty() {
            continue;
        }
        let (_, key) = memory
            .create_api_key(vec!["crew".into()], lower, None)
            .await
            .unwrap();
        let (status, answer) = s.with_key(&key).call(route.method, &url, body(op)).await;
        assert_eq!(
            (status, answer["code"].as_str()),
            (403, Some("forbidden")),
            "{} {url} ({}) without `{}`: {answer}",
            route.method,
            op.name,
            op.scope.as_str()
        );
        checked += 1;
    }
    assert!(checked >= 15, "only {checked} routes need more than `read`");
    s.stop().await;
}

/// One bad input, as each surface takes it: the JSON call's (and MCP tool's)
/// arguments, and the HTTP request that carries the same fields.
struct Case {
    call: &'static str,
    args: Value,
    method: &'static str,
    path: String,
    body: Option<Value>,
}

fn case(call: &'static str, args: Value, method: &'static str, path: &str) -> Case {
    let body = (method == "POST").then(|| args.clone());
    Case {
        call,
        args,
        method,
        path: format!("/v1/namespaces/default{path}"),
        body,
    }
}

fn cases() -> Vec<Case> {
    let messages = json!([{"speaker": "Ana", "text": "Hello."}]);
    vec![
        case(
            "trace",
            json!({"fact_id": "nope"}),
            "GET",
            "/facts/nope/trace",
        ),
        case(
            "adjacent_chunks",
            json!({"chunk_id": "nope"}),
            "GET",
            "/chunks/nope/adjacent",
        ),
        case(
            "adjacent_chunks",
            json!({"chunk_id": ID, "window": 3}),
            "GET",
            &format!("/chunks/{ID}/adjacent?window=3"),
        ),
        case(
            "delete_document",
            json!({"document_id": "nope"}),
            "DELETE",
            "/documents/nope",
        ),
        case(
            "accept_merge_proposal",
            json!({"from": "nope", "into": ID}),
            "POST",
            "/entities/proposals/accept",
        ),
        case(
            "reject_merge_proposal",
            json!({"from": ID}),
            "POST",
            "/entities/proposals/reject",
        ),
        case(
            "search_documents",
            json!({"query": "x", "k": 0}),
            "POST",
            "/documents/search",
        ),
        case(
            "search_documents",
            json!({"query": "x", "k": "ten"}),
            "POST",
            "/documents/search",
        ),
        case(
            "search_documents",
            json!({"query": "x", "from": "yesterday"}),
            "POST",
            "/documents/search",
        ),
        case(
            "remember_note",
            json!({"request_id": "r", "source_key": "k", "source_revision": "1"}),
            "POST",
            "/notes",
        ),
        case(
            "remember_note",
            json!({"request_id": "r", "source_key": "k", "source_revision": "1",
                   "text": "x", "colour": "red"}),
            "POST",
            "/notes",
        ),
        case(
            "remember_note",
            json!({"request_id": "r", "source_key": "k", "source_revision": "1", "text": ""}),
            "POST",
            "/notes",
        ),
        case(
            "conversation_messages",
            json!({"conversation_ref": ""}),
            "GET",
            "/messages?conversation_ref=",
        ),
        case(
            "append_messages",
            json!({"conversation_ref": "c", "messages": "not a list"}),
            "POST",
            "/messages",
        ),
        case(
            "append_messages",
            json!({"conversation_ref": "c", "messages": [{"speaker": "Ana"}]}),
            "POST",
            "/messages",
        ),
        case(
            "append_messages",
            json!({"conversation_ref": "", "messages": messages}),
            "POST",
            "/messages",
        ),
        case(
            "append_messages",
            json!({"conversation_ref": "c", "messages": messages, "source_time": "soon"}),
            "POST",
            "/messages",
        ),
        case(
            "ingest_conversation",
            json!({"source_ref": "c", "conversation": {"messages": "nope"}}),
            "POST",
            "/conversations",
        ),
        case(
            "ingest_conversation",
            json!({"source_ref": "c", "conversation": {"turns": []}}),
            "POST",
            "/conversations",
        ),
        case(
            "ingest_text",
            json!({"text": "x", "source_ref": "a", "kind": "pdf"}),
            "POST",
            "/documents",
        ),
        case(
            "ingest_text",
            json!({"text": "x", "source_ref": "a", "source_time": "yesterday"}),
            "POST",
            "/documents",
        ),
        case(
            "ingest_text",
            json!({"text": "x", "source_ref": "a", "mode": "forever"}),
            "POST",
            "/documents",
        ),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_same_bad_input_gets_the_same_code_on_every_surface() {
    use rememberstack_server::mcp::{McpServer, catalogue};
    let h = stores().await.remove(0);
    let memory = h.memory().await;
    let s = Server::start_with(memory.clone(), test_config()).await;
    let (server_io, client_io) = tokio::io::duplex(1 << 20);
    let mcp = McpServer::new(memory.clone(), false);
    tokio::spawn(async move {
        if let Ok(running) = mcp.serve(server_io).await {
            let _ = running.waiting().await;
        }
    });
    let client = ().serve(client_io).await.expect("MCP initialize");
    let tools = catalogue(&memory);
    let cases = cases();
    // Every tool of the table is tried at least once.
    for op in OPERATIONS
        .iter()
        .filter(|o| o.mcp.is_some() && o.http.is_some())
    {
        if matches!(op.name, "status" | "merge_proposals") {
            continue; // no input to get wrong but an unknown field
        }
        assert!(
            cases.iter().any(|c| c.call == op.name),
            "no bad input for `{}`",
            op.name
        );
    }
    for c in cases {
        let shown = format!("{} {}", c.call, c.args);
        let called = rememberstack::calls::call(&memory, c.call, c.args.clone())
            .await
            .expect_err(&shown);
        // A call without a tool of its own is compared over HTTP alone.
        let over_mcp = match tools.iter().find(|t| t.call == Some(c.call)) {
            None => json!({"code": called.code().as_str()}),
            Some(tool) => {
                let Value::Object(args) = c.args.clone() else {
                    unreachable!()
                };
                let result = client
                    .call_tool(CallToolRequestParams::new(tool.name.clone()).with_arguments(args))
                    .await
                    .unwrap_or_else(|e| panic!("{shown}: {e}"));
                assert_eq!(result.is_error, Some(true), "{shown}: {result:?}");
                result.structured_content.unwrap_or(Value::Null)
            }
        };
        let (status, over_http) = s.call(c.method, &c.path, c.body.clone()).await;
        assert!(
            (400..500).contains(&status),
            "{shown}: {status} {over_http}"
        );
        let codes = (
            called.code().as_str(),
            over_mcp["code"].as_str().unwrap_or(""),
            over_http["code"].as_str().unwrap_or(""),
        );
        assert!(
            codes.0 == codes.1 && codes.1 == codes.2,
            "{shown}: calls `{}`, MCP `{}`, HTTP `{}` ({over_http})",
            codes.0,
            codes.1,
            codes.2
        );
    }
    assert!(memory.documents().await.unwrap().is_empty());
    let _ = client.cancel().await;
    s.stop().await;
}
