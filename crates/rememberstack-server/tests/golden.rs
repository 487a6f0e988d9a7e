//! The golden scenario (`tests/golden/`) through the Rust facade, HTTP and MCP:
//! each surface, on a fresh embedded store, must give exactly the envelopes in
//! `tests/golden/expected.json` (modulo ids and the run's own timestamps). The
//! CLI, Python and Node check the same file in their own suites. Every store's
//! adjudicate seat calls the scripted fake chat endpoint (`tests/golden/chat.json`).

mod common;

use async_trait::async_trait;
use common::{Server, test_config};
use rememberstack::{KeyScope, Memory};
use rememberstack_conformance::golden::chat::FakeChat;
use rememberstack_conformance::golden::{self, Facade, Surface};
use rememberstack_conformance::{Harness, stores};
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::service::RunningService;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

/// A fresh embedded store (the golden file is the embedded store's answer).
async fn sqlite() -> Harness {
    stores()
        .await
        .into_iter()
        .find(|h| h.kind == "sqlite")
        .expect("the embedded store")
}

/// A memory over `h` whose chat model is `chat`.
async fn open(h: &Harness, chat: &FakeChat) -> Memory {
    Memory::builder()
        .store(h.store.clone())
        .config(rememberstack::Config {
            chat: chat.config(),
            ..rememberstack_conformance::test_config()
        })
        .namespace(golden::namespace())
        .open()
        .await
        .expect("open")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_facade_gives_the_golden_envelopes() {
    let h = sqlite().await;
    let chat = FakeChat::start();
    let out = golden::drive(&Facade(open(&h, &chat).await)).await;
    chat.assert_every_rule_fired();
    golden::assert_golden("facade", &out);
}

/// The HTTP API as a surface (bearer key on the scenario's namespace).
struct Http<'a> {
    server: &'a Server,
    ns: String,
}

impl Http<'_> {
    fn path(&self, rest: &str) -> String {
        format!("/v1/namespaces/{}{rest}", self.ns)
    }

    /// Poll the namespace's status until nothing is pending, running or failed.
    async fn wait_idle(&self) {
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            let status = self.server.ok("GET", &self.path("/status"), None).await;
            let report: rememberstack::StatusReport = serde_json::from_value(status.clone())
                .unwrap_or_else(|e| panic!("GET /status is not a StatusReport ({e}): {status}"));
            if report.open_work() == 0 {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "the pipeline never idled: {status}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

#[async_trait]
impl Surface for Http<'_> {
    async fn ingest_text(&self, doc: &Value) {
        self.server
            .ok(
                "POST",
                &self.path("/documents"),
                Some(golden::text_body(doc)),
            )
            .await;
    }

    async fn ingest_conversation(&self, conv: &Value) {
        self.server
            .ok("POST", &self.path("/conversations"), Some(conv.clone()))
            .await;
    }

    async fn process(&self) {
        self.wait_idle().await;
    }

    async fn operation(&self, name: &str, input: &Value) -> Value {
        self.server
            .ok(
                "POST",
                &self.path(&format!("/operations/{name}")),
                Some(input.clone()),
            )
            .await
    }

    async fn correct(&self, fact_id: &str, statement: &str, reason: &str, request_id: &str) {
        self.server
            .ok(
                "POST",
                &self.path(&format!("/facts/{fact_id}/correct")),
                Some(json!({"statement": statement, "reason": reason, "request_id": request_id})),
            )
            .await;
    }
}

async fn keyed_server(h: &Harness, chat: &FakeChat) -> (Server, String) {
    let server = Server::start_with(open(h, chat).await, test_config()).await;
    let (_, secret) = server
        .memory
        .create_api_key(
            vec![golden::namespace()],
            vec![
                KeyScope::Read,
                KeyScope::Write,
                KeyScope::Ingest,
                KeyScope::Admin,
            ],
            None,
        )
        .await
        .expect("a key");
    (server, secret)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_gives_the_golden_envelopes() {
    let h = sqlite().await;
    let chat = FakeChat::start();
    let (server, secret) = keyed_server(&h, &chat).await;
    let keyed = server.with_key(&secret);
    let out = golden::drive(&Http {
        server: &keyed,
        ns: golden::namespace(),
    })
    .await;
    chat.assert_every_rule_fired();
    golden::assert_golden("http", &out);
    server.stop().await;
}

/// MCP over Streamable HTTP as a surface. MCP has no correction tool (it is an
/// administrative write, D136/D137), so the correction and the wait for the
/// pipeline go through HTTP; every read and every ingest is an MCP tool call.
struct Mcp<'a> {
    client: RunningService<rmcp::RoleClient, ()>,
    http: Http<'a>,
}

impl Mcp<'_> {
    async fn call(&self, name: &str, args: Value) -> Value {
        let Value::Object(args) = args else {
            panic!("arguments must be an object")
        };
        let result = self
            .client
            .call_tool(CallToolRequestParams::new(name.to_string()).with_arguments(args))
            .await
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(!result.is_error.unwrap_or(false), "{name}: {result:?}");
        result.structured_content.expect("structured content")
    }
}

#[async_trait]
impl Surface for Mcp<'_> {
    async fn ingest_text(&self, doc: &Value) {
        self.call("ingest", golden::text_body(doc)).await;
    }

    async fn ingest_conversation(&self, conv: &Value) {
        self.call(
            "append_messages",
            json!({"conversation_ref": conv["source_ref"], "source_time": conv["source_time"],
                   "messages": conv["conversation"]["messages"]}),
        )
        .await;
    }

    async fn process(&self) {
        self.http.wait_idle().await;
    }

    async fn operation(&self, name: &str, input: &Value) -> Value {
        self.call(name, input.clone()).await
    }

    async fn correct(&self, fact_id: &str, statement: &str, reason: &str, request_id: &str) {
        self.http
            .correct(fact_id, statement, reason, request_id)
            .await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_gives_the_golden_envelopes() {
    let h = sqlite().await;
    let chat = FakeChat::start();
    let (server, secret) = keyed_server(&h, &chat).await;
    let keyed = server.with_key(&secret);
    let config = StreamableHttpClientTransportConfig::with_uri(format!("{}/mcp", server.base))
        .auth_header(secret.clone());
    let client =
        ().serve(StreamableHttpClientTransport::from_config(config))
            .await
            .expect("MCP initialize");
    let mcp = Mcp {
        client,
        http: Http {
            server: &keyed,
            ns: golden::namespace(),
        },
    };
    let out = golden::drive(&mcp).await;
    chat.assert_every_rule_fired();
    golden::assert_golden("mcp", &out);
    let _ = mcp.client.cancel().await;
    server.stop().await;
}
