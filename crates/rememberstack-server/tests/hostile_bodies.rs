//! Hostile request bodies through the axum routes themselves (in-process, no
//! socket) and through the MCP tool handler: every route of the route table that
//! takes a body, and every tool, gets generated JSON (wrong types, deep nesting,
//! huge numbers, long strings), broken bytes (invalid UTF-8, NUL, truncation) and
//! the bad-input corpus. Whatever arrives: no 5xx, a refusal carries a typed code
//! and a request id, and a refused request writes nothing (the census of every
//! table of the store is unchanged).

mod common;

use axum::body::Body;
use axum::http::Request;
use proptest::prelude::*;
use proptest::test_runner::{TestCaseError, TestRunner};
use rememberstack::{IngestOptions, Memory};
use rememberstack_conformance::{Harness, stores};
use rememberstack_server::openapi::routes;
use rememberstack_server::{AppState, ServerConfig, app};
use serde_json::{Value, json};
use tower::ServiceExt;

/// Codes a refusal of the caller's input may carry; anything else (`internal`,
/// `store`) is the server failing on input it should have refused.
fn typed_refusal(code: &str) -> bool {
    !code.is_empty() && !matches!(code, "internal" | "store")
}

/// Row counts of every table of the embedded store (virtual tables through their
/// shadow tables), sorted: equal before and after means nothing was written.
async fn census(h: &Harness) -> Vec<String> {
    let tables = h
        .query_texts(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'
               AND sql NOT LIKE 'CREATE VIRTUAL%' ORDER BY name",
        )
        .await;
    let sql = tables
        .iter()
        .map(|t| format!("SELECT '{t}:' || (SELECT COUNT(*) FROM \"{t}\")"))
        .collect::<Vec<_>>()
        .join(" UNION ALL ");
    let mut rows = h.query_texts(&sql).await;
    rows.sort();
    rows
}

/// The embedded store with one processed document and one note, so ids in paths
/// can name something real.
struct Fixture {
    rt: tokio::runtime::Runtime,
    h: Harness,
    memory: Memory,
    ids: Vec<String>,
    operations: Vec<String>,
    /// Each operation's input schema, in the order of `operations`.
    operation_schemas: Vec<Value>,
}

fn fixture() -> Fixture {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let h = rt.block_on(stores()).remove(0);
    let (memory, ids, operations) = rt.block_on(async {
        let memory = h.memory().await;
        let doc = memory
            .ingest_text(
                "# Crew\n\nAda Lovelace worked with Charles Babbage in London.",
                IngestOptions::new("seed"),
            )
            .await
            .unwrap();
        memory.process_until_idle().await.unwrap();
        let note = memory
            .remember_note(
                serde_json::from_value(json!({"request_id": "r1", "source_key": "n1",
                    "source_revision": "1", "text": "Ada prefers tea."}))
                .unwrap(),
            )
            .await
            .unwrap();
        let ids = vec![
            doc.document_id.to_string(),
            note.version_id.to_string(),
            note.note_id.to_string(),
            "01a23acf-cf42-753e-bee9-ed7a73c06d9e".to_string(),
            "not-an-id".to_string(),
        ];
        let operations = memory.operations();
        (memory, ids, operations)
    });
    let operation_schemas = operations.iter().map(|o| o.input_schema.clone()).collect();
    let operations = operations.into_iter().map(|o| o.name).collect();
    Fixture {
        rt,
        h,
        memory,
        ids,
        operations,
        operation_schemas,
    }
}

/// The router in-process: no workers (nothing changes the store behind a
/// request's back) and no rate limit (every case reaches its handler).
fn router(memory: &Memory) -> axum::Router {
    let config = ServerConfig {
        limits: rememberstack_server::auth::Limits {
            rate_per_sec: 1e9,
            burst: 1e9,
            in_flight: 64,
        },
        ..common::test_config()
    };
    app(AppState::new(memory.clone(), config))
}

/// Send one request through the router; the status and the body as JSON
/// (`Value::Null` when it is not JSON).
async fn send(
    router: &axum::Router,
    method: &str,
    path: &str,
    content_type: &str,
    body: Vec<u8>,
) -> (u16, Value) {
    let request = Request::builder()
        .method(method)
        .uri(path)
        .header("host", "localhost")
        .header("content-type", content_type)
        .body(Body::from(body))
        .unwrap();
    let response = router.clone().oneshot(request).await.unwrap();
    let status = response.status().as_u16();
    let bytes = axum::body::to_bytes(response.into_body(), 64 << 20)
        .await
        .unwrap();
    (
        status,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

/// One request and what it must come to: not a 5xx; a refusal typed, with a
/// request id, and with the store's census unchanged.
async fn check(
    f: &Fixture,
    router: &axum::Router,
    method: &str,
    path: &str,
    content_type: &str,
    body: Vec<u8>,
) -> Result<(), TestCaseError> {
    let shown = String::from_utf8_lossy(&body[..body.len().min(300)]).into_owned();
    let before = census(&f.h).await;
    let (status, value) = send(router, method, path, content_type, body).await;
    prop_assert!(
        status < 500,
        "{method} {path} {shown:?} -> {status}: {value}"
    );
    if status >= 400 {
        let code = value["code"].as_str().unwrap_or("");
        prop_assert!(
            typed_refusal(code),
            "{method} {path} {shown:?} -> {status}: {value}"
        );
        prop_assert!(
            value["request_id"].as_str().is_some_and(|r| !r.is_empty()),
            "{method} {path}: {value}"
        );
        prop_assert_eq!(
            census(&f.h).await,
            before,
            "{} {} {:?} was refused ({}) but wrote",
            method,
            path,
            shown,
            code
        );
    } else if status != 204 {
        prop_assert!(!value.is_null(), "{method} {path} -> {status}: not JSON");
    }
    Ok(())
}

/// Field names the bodies use, so generated objects reach past the first field.
const KEYS: &[&str] = &[
    "text",
    "source_ref",
    "kind",
    "source_time",
    "mode",
    "file_name",
    "thread_ref",
    "conversation",
    "messages",
    "event_id",
    "speaker",
    "session_time",
    "conversation_ref",
    "start_as",
    "expected_version",
    "query",
    "k",
    "grain",
    "roles",
    "cursor",
    "include_retired",
    "entities",
    "exact",
    "from",
    "into",
    "reason",
    "request_id",
    "statement",
    "receipt_id",
    "item_ref",
    "rating",
    "comment",
    "documents",
    "history",
    "limit",
    "input",
    "chunk_id",
    "fact_id",
    "document_id",
    "window",
    "budget",
    "temporal_scope",
    "source_key",
    "source_revision",
    "metadata",
    "bogus",
];

fn json_value(keys: Vec<&'static str>) -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        prop_oneof![
            Just(0u64),
            Just(1),
            Just(1001),
            Just(u32::MAX as u64 + 1),
            Just(u64::MAX)
        ]
        .prop_map(|n| json!(n)),
        any::<f64>().prop_map(|f| json!(f)),
        "[a-z _\\-:.0-9é東\u{0}]{0,12}".prop_map(Value::String),
        prop::sample::select(vec![
            "promoted",
            "candidate",
            "useful",
            "chunks",
            "facts",
            "markdown",
            "conversation",
            "json",
            "current",
            "Ana",
            "m1",
            "2024-05-01T00:00:00Z",
            "01a23acf-cf42-753e-bee9-ed7a73c06d9e",
        ])
        .prop_map(|s| Value::String(s.to_string())),
        (0usize..5000).prop_map(|n| Value::String("q".repeat(n))),
    ];
    let keys = prop::sample::select(keys);
    leaf.prop_recursive(4, 48, 8, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..8).prop_map(Value::Array),
            (0usize..150).prop_map(|n| Value::Array(vec![json!("body"); n])),
            prop::collection::btree_map(keys.clone(), inner, 0..8).prop_map(|m| Value::Object(
                m.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
            )),
        ]
    })
}

/// Bytes of a body: generated JSON, as it is or broken (an invalid UTF-8 byte or
/// a NUL inserted, cut short), or one of the fixed hostile bodies.
fn body_bytes() -> impl Strategy<Value = Vec<u8>> {
    let fixed: Vec<Vec<u8>> = vec![
        "[".repeat(100_000).into_bytes(),
        format!("{}{}", "[".repeat(3_000), "]".repeat(3_000)).into_bytes(),
        format!("{}1{}", "{\"a\":".repeat(500), "}".repeat(500)).into_bytes(),
        br#"{"text": "x", "source_ref": "x", "k": 1e999999}"#.to_vec(),
        format!(
            r#"{{"k": {}, "limit": {}}}"#,
            "9".repeat(400),
            "9".repeat(40)
        )
        .into_bytes(),
        b"{\"text\": \"\xff\xfe\", \"source_ref\": \"x\"}".to_vec(),
        br#"{"text": "\ud800", "source_ref": "x"}"#.to_vec(),
        b"{\"text\": \"a\0b\", \"source_ref\": \"\0\"}".to_vec(),
        format!(
            r#"{{"text": "{}", "source_ref": "long"}}"#,
            "x".repeat(70_000)
        )
        .into_bytes(),
        format!(r#"{{"query": "{}"}}"#, "q".repeat(60_000)).into_bytes(),
        b"".to_vec(),
        b"null".to_vec(),
        b"{} trailing".to_vec(),
    ];
    prop_oneof![
        4 => json_value(KEYS.to_vec()).prop_map(|v| v.to_string().into_bytes()),
        2 => (json_value(KEYS.to_vec()), any::<prop::sample::Index>(), prop_oneof![Just(0xffu8), Just(0u8), Just(0xc0u8)])
            .prop_map(|(v, at, byte)| {
                let mut b = v.to_string().into_bytes();
                let i = at.index(b.len() + 1);
                b.insert(i, byte);
                b
            }),
        1 => (json_value(KEYS.to_vec()), any::<prop::sample::Index>()).prop_map(|(v, at)| {
            let mut b = v.to_string().into_bytes();
            let keep = at.index(b.len() + 1);
            b.truncate(keep);
            b
        }),
        1 => prop::sample::select(fixed),
    ]
}

/// A body each route accepts, to mutate one field at a time: generated objects
/// alone rarely get past the first missing field.
fn template(path: &str) -> Value {
    let id = "01a23acf-cf42-753e-bee9-ed7a73c06d9e";
    let messages = json!([{"event_id": "m1", "speaker": "Ana", "text": "I moved to Madrid."}]);
    let tail = path.rsplit_once("{ns}").map(|(_, t)| t).unwrap_or(path);
    match tail {
        "/documents" => json!({"text": "# Crew\n\nAna lives in Madrid.", "source_ref": "t"}),
        "/documents/search" => json!({"query": "crew"}),
        "/conversations" => json!({"source_ref": "c", "conversation": {"messages": messages}}),
        "/messages" => json!({"conversation_ref": "c", "messages": messages}),
        "/notes" => json!({"request_id": "r", "source_key": "k", "source_revision": "1",
                           "text": "Ana prefers tea."}),
        "/notes/policy" => json!({"start_as": "candidate"}),
        "/search" => json!({"query": "Ada", "k": 5}),
        "/facts/{id}/correct" => json!({"statement": "Ada lives in Paris.", "reason": "moved"}),
        "/entities/merge" => json!({"from": id, "into": id}),
        "/feedback" => json!({"receipt_id": id, "item_ref": "claim:x", "rating": "useful"}),
        "/export" => json!({"limit": 10}),
        "/operations/{name}" => json!({"query": "Ada", "budget": 500}),
        t if t.starts_with("/notes/") => json!({"expected_version": 1}),
        _ => json!({"reason": "wrong"}),
    }
}

/// A minimal object an input schema admits (each property with a plain value of
/// its type), to mutate like a template.
fn from_schema(schema: &Value) -> Value {
    let mut out = serde_json::Map::new();
    for (name, p) in schema["properties"].as_object().into_iter().flatten() {
        let value = if let Some(first) = p["enum"].as_array().and_then(|e| e.first()) {
            first.clone()
        } else {
            match (p["type"].as_str(), p["format"].as_str()) {
                (Some("string"), Some("uuid")) => json!("01a23acf-cf42-753e-bee9-ed7a73c06d9e"),
                (Some("string"), Some("date-time")) => json!("2024-05-01T00:00:00Z"),
                (Some("string"), _) => json!("Ada"),
                (Some("integer" | "number"), _) if p["minimum"].is_number() => p["minimum"].clone(),
                (Some("integer" | "number"), _) => json!(1),
                (Some("boolean"), _) => json!(false),
                (Some("array"), _) => json!([]),
                _ => continue,
            }
        };
        out.insert(name.clone(), value);
    }
    Value::Object(out)
}

/// A hostile value of the same JSON type as `like`: empty, NUL, very long,
/// out-of-range or long lists, which get past parsing to validation.
fn same_type_hostile(like: &Value) -> BoxedStrategy<Value> {
    match like {
        Value::String(_) => prop_oneof![
            Just(json!("")),
            Just(json!("\u{0}")),
            Just(json!(" \t\n")),
            Just(json!("é東\u{200b}\u{feff}")),
            Just(json!("2024-13-45T99:00:00Z")),
            Just(json!("01a23acf-cf42-753e-bee9-ed7a73c06d9e")),
            Just(json!("claim:01a23acf-cf42-753e-bee9-ed7a73c06d9e")),
            (0usize..20_000).prop_map(|n| json!("a".repeat(n))),
            "[a-z _\\-:.0-9é東\u{0}]{0,40}".prop_map(Value::String),
        ]
        .boxed(),
        Value::Number(_) => prop_oneof![
            Just(json!(0)),
            Just(json!(-1)),
            Just(json!(i64::MIN)),
            Just(json!(u32::MAX as u64 + 1)),
            Just(json!(u64::MAX)),
            Just(json!(1e300)),
            Just(json!(1.5)),
            any::<u32>().prop_map(|n| json!(n)),
        ]
        .boxed(),
        Value::Bool(b) => Just(json!(!b)).boxed(),
        Value::Array(items) => {
            let item = items.first().cloned().unwrap_or(json!("x"));
            (0usize..300, same_type_hostile(&item))
                .prop_map(move |(n, v)| {
                    let mut list = vec![item.clone(); n];
                    if let Some(last) = list.last_mut() {
                        *last = v;
                    }
                    Value::Array(list)
                })
                .boxed()
        }
        Value::Object(fields) if !fields.is_empty() => mutated(like.clone()).boxed(),
        _ => json_value(KEYS.to_vec()).boxed(),
    }
}

/// `base` with one field changed: mostly its own fields, to a hostile value of
/// their own type; sometimes to anything, another body's field added, or the
/// field removed.
fn mutated(base: Value) -> impl Strategy<Value = Value> {
    let own: Vec<String> = base
        .as_object()
        .map(|o| o.keys().cloned().collect())
        .unwrap_or_default();
    let own = if own.is_empty() {
        vec!["bogus".to_string()]
    } else {
        own
    };
    let other: Vec<String> = KEYS.iter().map(|k| k.to_string()).collect();
    let name = prop_oneof![4 => prop::sample::select(own), 1 => prop::sample::select(other)];
    let base2 = base.clone();
    (name, any::<u8>()).prop_flat_map(move |(name, how)| {
        let current = base2.get(&name).cloned().unwrap_or(Value::Null);
        let value = match how % 8 {
            0 => json_value(KEYS.to_vec()).boxed(),
            _ => same_type_hostile(&current),
        };
        let base = base2.clone();
        (Just((name, how)), value).prop_map(move |((name, how), value)| {
            let mut body = base.clone();
            if let Some(o) = body.as_object_mut() {
                if how % 16 == 1 {
                    o.remove(&name);
                } else {
                    o.insert(name, value);
                }
            }
            body
        })
    })
}

/// Every `(method, path template)` of the route table that takes a JSON body (an
/// operation's body is its input, documented per operation).
fn body_routes() -> Vec<(&'static str, &'static str)> {
    let mut routes: Vec<_> = routes()
        .into_iter()
        .filter(|r| r.body.is_some() || r.path.ends_with("/operations/{name}"))
        .map(|r| (r.method, r.path))
        .collect();
    routes.sort();
    assert!(routes.len() >= 15, "{routes:?}");
    routes
}

/// A template's parameters filled: the namespace, then an id or operation name
/// chosen by `pick`.
fn fill(template: &str, pick: usize, f: &Fixture) -> String {
    template
        .replace("{ns}", "default")
        .replace("{id}", &f.ids[pick % f.ids.len()])
        .replace("{version}", &f.ids[pick % f.ids.len()])
        .replace("{name}", &f.operations[pick % f.operations.len()])
}

fn corpus() -> Vec<(String, Vec<u8>)> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/conformance/corpus/bad-inputs");
    let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().is_some_and(|n| n != "expected.tsv"))
        .map(|p| {
            (
                p.file_name().unwrap().to_string_lossy().into_owned(),
                std::fs::read(&p).unwrap(),
            )
        })
        .collect();
    files.sort();
    assert!(files.len() >= 20, "the corpus is where it was");
    files
}

fn runner(cases: u32) -> TestRunner {
    TestRunner::new(ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    })
}

#[test]
fn generated_bodies_through_every_body_route_are_refused_typed_or_served() {
    let f = fixture();
    let router = router(&f.memory);
    let routes = body_routes();
    runner(300)
        .run(
            &(prop::sample::select(routes), any::<usize>(), body_bytes()),
            |((method, template), pick, body)| {
                let path = fill(template, pick, &f);
                f.rt.block_on(check(&f, &router, method, &path, "application/json", body))
            },
        )
        .unwrap();
}

#[test]
fn each_route_s_own_body_with_one_field_made_hostile_is_refused_typed_or_served() {
    let f = fixture();
    let router = router(&f.memory);
    let schemas = f.operation_schemas.clone();
    let strategy = (prop::sample::select(body_routes()), any::<usize>()).prop_flat_map(
        move |((method, path), pick)| {
            // An operation's body is its own input, per operation.
            let base = if path.ends_with("/operations/{name}") {
                from_schema(&schemas[pick % schemas.len()])
            } else {
                template(path)
            };
            (Just((method, path, pick)), mutated(base))
        },
    );
    runner(300)
        .run(&strategy, |((method, path, pick), body)| {
            let path = fill(path, pick, &f);
            f.rt.block_on(check(
                &f,
                &router,
                method,
                &path,
                "application/json",
                body.to_string().into_bytes(),
            ))
        })
        .unwrap();
}

#[test]
fn the_bad_input_corpus_through_every_body_route_is_refused_typed_or_served() {
    let f = fixture();
    let router = router(&f.memory);
    for (name, bytes) in corpus() {
        for (i, (method, template)) in body_routes().into_iter().enumerate() {
            let path = fill(template, i, &f);
            f.rt.block_on(check(
                &f,
                &router,
                method,
                &path,
                "application/json",
                bytes.clone(),
            ))
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        }
        // And as the raw bytes of a file, with each declared kind.
        for kind in ["auto", "json", "ndjson", "conversation", "markdown", "html"] {
            let path = format!(
                "/v1/namespaces/default/documents?source_ref=corpus-{name}&file_name={name}&kind={kind}"
            );
            f.rt.block_on(check(
                &f,
                &router,
                "POST",
                &path,
                "application/octet-stream",
                bytes.clone(),
            ))
            .unwrap_or_else(|e| panic!("{name} as {kind}: {e}"));
        }
    }
}

#[test]
fn generated_raw_file_bodies_and_query_strings_are_refused_typed_or_served() {
    let f = fixture();
    let router = router(&f.memory);
    let query = prop::collection::vec(
        (
            prop::sample::select(vec![
                "source_ref",
                "kind",
                "source_time",
                "mode",
                "file_name",
                "thread_ref",
                "wait_secs",
                "bogus",
            ]),
            prop::sample::select(vec![
                "x",
                "json",
                "conversation",
                "ndjson",
                "%00",
                "%FF%FE",
                "2024-05-01T00:00:00Z",
                "99999999999999999999",
                "-1",
                "",
            ]),
        ),
        0..5,
    );
    runner(120)
        .run(&(query, body_bytes()), |(params, body)| {
            let q: Vec<String> = params.iter().map(|(k, v)| format!("{k}={v}")).collect();
            let path = format!("/v1/namespaces/default/documents?{}", q.join("&"));
            f.rt.block_on(check(
                &f,
                &router,
                "POST",
                &path,
                "application/octet-stream",
                body,
            ))
        })
        .unwrap();
}

#[test]
fn generated_mcp_tool_arguments_are_refused_typed_or_served() {
    use rememberstack_server::mcp::{McpServer, catalogue};
    use rmcp::ServiceExt;
    use rmcp::model::CallToolRequestParams;
    let f = fixture();
    let tools: Vec<String> = catalogue(&f.memory).into_iter().map(|t| t.name).collect();
    assert!(tools.iter().any(|t| t == "ingest"), "{tools:?}");
    assert!(tools.len() >= 10, "{tools:?}");
    let client = f.rt.block_on(async {
        let (server_io, client_io) = tokio::io::duplex(1 << 20);
        let server = McpServer::new(f.memory.clone(), false);
        tokio::spawn(async move {
            if let Ok(running) = server.serve(server_io).await {
                let _ = running.waiting().await;
            }
        });
        ().serve(client_io)
            .await
            .expect("MCP initialize in-process")
    });
    // `wait` is left out: with no workers an ingest would wait out max_wait.
    let keys: Vec<&'static str> = KEYS.iter().copied().filter(|k| *k != "wait").collect();
    let random =
        prop::collection::btree_map(prop::sample::select(keys.clone()), json_value(keys), 0..6)
            .prop_map(|m| Value::Object(m.into_iter().map(|(k, v)| (k.to_string(), v)).collect()))
            .boxed();
    let tools_and_schemas: Vec<(String, Value)> = catalogue(&f.memory)
        .into_iter()
        .map(|t| (t.name, t.input_schema))
        .collect();
    let strategy = (prop::sample::select(tools_and_schemas), any::<bool>()).prop_flat_map(
        move |((tool, schema), near)| {
            // Half the cases: the tool's own arguments with one field made hostile.
            let args = if near {
                mutated(from_schema(&schema)).boxed()
            } else {
                random.clone()
            };
            (Just(tool), args)
        },
    );
    runner(200)
        .run(&strategy, |(tool, args)| {
            f.rt.block_on(async {
                let mut args = args;
                if let Some(o) = args.as_object_mut() {
                    o.remove("wait");
                }
                let shown = args.to_string();
                let before = census(&f.h).await;
                let map: serde_json::Map<String, Value> = match args {
                    Value::Object(m) => m,
                    _ => serde_json::Map::new(),
                };
                let result = client
                    .call_tool(CallToolRequestParams::new(tool.clone()).with_arguments(map))
                    .await;
                let result = match result {
                    Ok(r) => r,
                    Err(e) => return Err(TestCaseError::fail(format!("{tool} {shown}: {e}"))),
                };
                if result.is_error == Some(true) {
                    let err = result.structured_content.clone().unwrap_or(Value::Null);
                    let code = err["code"].as_str().unwrap_or("");
                    prop_assert!(typed_refusal(code), "{tool} {shown}: {err}");
                    prop_assert_eq!(
                        census(&f.h).await,
                        before,
                        "{} {} was refused ({}) but wrote",
                        tool,
                        shown,
                        code
                    );
                }
                Ok(())
            })
        })
        .unwrap();
    f.rt.block_on(async {
        let _ = client.cancel().await;
    });
}
