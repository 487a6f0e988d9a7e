//! HTTP integration tests: a real server on loopback over every store available
//! (the embedded store always, PostgreSQL when `DATABASE_URL` is set).

mod common;

use common::{Server, test_config};
use rememberstack_conformance::stores;
use rememberstack_server::{openapi::routes, serve_on};
use serde_json::{Value, json};
use std::time::Duration;

const NS: &str = "/v1/namespaces/team";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_route_answers_its_success_path() {
    for h in stores().await {
        let s = Server::start(&h, test_config()).await;
        let kind = h.kind;

        // Sources: JSON text, raw bytes, a conversation, appended messages.
        let a = s
            .ok(
                "POST",
                &format!("{NS}/documents?wait=true"),
                Some(
                    json!({"text": "# HR\n\nAlice has worked for Acme since March 2024.\n",
                             "source_ref": "hr", "source_time": "2024-04-01T00:00:00Z"}),
                ),
            )
            .await;
        assert_eq!(a["outcome"], "created", "{kind}: {a}");
        assert_eq!(a["processing"], "done", "{kind}: {a}");
        assert_eq!(a["status_url"], format!("{NS}/status"));
        let doc_a = a["document_id"].as_str().unwrap().to_string();
        let raw = s
            .client
            .post(format!(
                "{}{NS}/documents?source_ref=travel.md&kind=markdown&source_time=2024-04-01T00:00:00Z&wait=true",
                s.base
            ))
            .header("content-type", "application/octet-stream")
            .body("# Travel\n\nAlicia Keyes lives in Lisbon. Bob lives in Porto.\n")
            .send()
            .await
            .unwrap();
        assert_eq!(raw.status().as_u16(), 200, "{kind}");
        let raw: Value = raw.json().await.unwrap();
        assert_eq!(raw["source_kind"], "file");
        let doc_b = raw["document_id"].as_str().unwrap().to_string();
        let conv = s
            .ok(
                "POST",
                &format!("{NS}/conversations?wait=true"),
                Some(json!({"source_ref": "standup-1", "source_time": "2024-05-01T09:00:00Z",
                    "conversation": {"messages": [
                        {"event_id": "m1", "speaker": "Ana", "text": "I moved to Madrid last week."},
                        {"event_id": "m2", "speaker": "Ben", "text": "Welcome to Spain!"}]}})),
            )
            .await;
        assert_eq!(conv["outcome"], "created", "{kind}: {conv}");
        let appended = s
            .ok(
                "POST",
                &format!("{NS}/messages"),
                Some(json!({"conversation_ref": "standup-1",
                    "messages": [{"event_id": "m3", "speaker": "Ana", "text": "Thanks Ben."}]})),
            )
            .await;
        assert_eq!(appended["appended"], 1, "{kind}: {appended}");
        assert_eq!(appended["document_id"], conv["document_id"]);

        // Listings and detail.
        let docs = s.ok("GET", &format!("{NS}/documents"), None).await;
        assert_eq!(docs["documents"].as_array().unwrap().len(), 3, "{kind}");
        let detail = s.ok("GET", &format!("{NS}/documents/{doc_a}"), None).await;
        assert_eq!(detail["versions"].as_array().unwrap().len(), 1);
        let found = s
            .ok(
                "POST",
                &format!("{NS}/documents/search"),
                Some(json!({"query": "Travel"})),
            )
            .await;
        assert!(found["results"].as_array().is_some(), "{found}");

        // The registry and the operations.
        let ops = s.ok("GET", "/v1/operations", None).await;
        let names: Vec<&str> = ops["operations"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| o["name"].as_str().unwrap())
            .collect();
        for n in [
            "resolve_entity",
            "claims_and_sources_context",
            "facts_context",
            "combined_context",
        ] {
            assert!(names.contains(&n), "{names:?}");
        }
        let resolved = s
            .ok(
                "POST",
                &format!("{NS}/operations/resolve_entity"),
                Some(json!({"name": "Alice"})),
            )
            .await;
        let alice = resolved["results"][0]["entity_id"]
            .as_str()
            .unwrap_or_else(|| panic!("{kind}: {resolved}"))
            .to_string();
        let evidence = s
            .ok(
                "POST",
                &format!("{NS}/operations/claims_and_sources_context"),
                Some(json!({"query": "Alice Acme"})),
            )
            .await;
        assert!(
            evidence["results"][0]["text"]
                .as_str()
                .unwrap()
                .contains("Acme")
        );
        let chunk = evidence["results"][0]["chunk_id"]
            .as_str()
            .unwrap()
            .to_string();
        let facts = s
            .ok(
                "POST",
                &format!("{NS}/operations/facts_context"),
                Some(json!({"query": "Alice employer", "entity_ids": [alice], "record_receipt": true})),
            )
            .await;
        assert_eq!(
            facts["results"][0]["object_name"], "Acme",
            "{kind}: {facts}"
        );
        let fact = facts["results"][0]["fact_id"].as_str().unwrap().to_string();
        let receipt = facts["receipt_id"].as_str().unwrap().to_string();
        let bundle = s
            .ok(
                "POST",
                &format!("{NS}/operations/combined_context"),
                Some(json!({"query": "Where does Ana live?"})),
            )
            .await;
        assert_eq!(bundle["contract"], "ContextBundle/v2");

        // Primitives.
        for grain in ["chunks", "claims", "facts"] {
            let found = s
                .ok(
                    "POST",
                    &format!("{NS}/search"),
                    Some(json!({"query": "Lisbon", "k": 5, "grain": grain, "exact": grain == "chunks"})),
                )
                .await;
            assert!(found["results"].is_array(), "{grain}: {found}");
        }
        let adjacent = s
            .ok(
                "GET",
                &format!("{NS}/chunks/{chunk}/adjacent?window=1"),
                None,
            )
            .await;
        assert!(adjacent["results"].is_array(), "{adjacent}");
        let trace = s.ok("GET", &format!("{NS}/facts/{fact}/trace"), None).await;
        assert!(trace.to_string().contains("Acme"), "{trace}");
        // The fact listing, a page at a time: the pages hold what one listing holds
        // (once the worker has nothing left to change).
        let team = s.memory.with_namespace("team").unwrap();
        team.process_until_idle().await.unwrap();
        let all = s.ok("GET", &format!("{NS}/facts"), None).await;
        let all = all["facts"].as_array().unwrap().clone();
        assert!(all.iter().any(|f| f["fact_id"] == fact), "{kind}: {all:?}");
        let mut paged = Vec::new();
        let mut cursor = String::new();
        loop {
            let page = s
                .ok("GET", &format!("{NS}/facts?limit=1{cursor}"), None)
                .await;
            paged.extend(page["facts"].as_array().unwrap().iter().cloned());
            match page["cursor"].as_str() {
                Some(c) => cursor = format!("&cursor={c}"),
                None => break,
            }
        }
        assert_eq!(paged, all, "{kind}");
        s.err(
            "GET",
            &format!("{NS}/facts?limit=1001"),
            None,
            400,
            "invalid_parameter",
        )
        .await;
        s.err(
            "GET",
            &format!("{NS}/facts?cursor=forged"),
            None,
            400,
            "invalid_parameter",
        )
        .await;
        let r = s.ok("GET", &format!("{NS}/receipts/{receipt}"), None).await;
        assert_eq!(r["status"], "resolved", "{r}");
        let r = s
            .ok("GET", &format!("{NS}/receipts/{receipt}/inspect"), None)
            .await;
        assert_eq!(r["operation"], "facts_context");
        let fb = s
            .ok(
                "POST",
                &format!("{NS}/feedback"),
                Some(json!({"receipt_id": receipt, "item_ref": format!("fact:{fact}"), "rating": "useful"})),
            )
            .await;
        assert_eq!(fb["rating"], "useful", "{fb}");
        let list = s
            .ok("GET", &format!("{NS}/feedback?receipt={receipt}"), None)
            .await;
        assert_eq!(list["feedback"].as_array().unwrap().len(), 1);
        let pack = s
            .ok(
                "POST",
                &format!("{NS}/export"),
                Some(json!({"documents": [doc_a]})),
            )
            .await;
        assert!(pack.to_string().contains("Acme"), "{pack}");
        let ents = s.ok("GET", &format!("{NS}/entities"), None).await;
        let list = ents["entities"].as_array().unwrap();
        let id_of = |name: &str| {
            list.iter()
                .find(|e| e["canonical_name"] == name)
                .unwrap_or_else(|| panic!("{kind}: no {name} in {list:?}"))["entity_id"]
                .as_str()
                .unwrap()
                .to_string()
        };
        let alicia = id_of("Alicia Keyes");
        let shown = s.ok("GET", &format!("{NS}/entities/Alice"), None).await;
        assert!(shown.to_string().contains(&alice));

        // Notes and their lifecycle.
        let policy = s
            .ok(
                "POST",
                &format!("{NS}/notes/policy"),
                Some(json!({"start_as": "candidate"})),
            )
            .await;
        assert_eq!(policy["start_as"], "candidate");
        let note = s
            .ok(
                "POST",
                &format!("{NS}/notes"),
                Some(json!({"request_id": "n-1", "source_key": "prefs/editor",
                            "source_revision": "1", "text": "Ana prefers vim."})),
            )
            .await;
        assert_eq!(note["lifecycle"], "candidate", "{note}");
        let version = note["version_id"].as_str().unwrap().to_string();
        let note_id = note["note_id"].as_str().unwrap().to_string();
        let lv = note["lifecycle_version"].as_u64().unwrap();
        s.err(
            "POST",
            &format!("{NS}/notes/{version}/promote"),
            Some(json!({"expected_version": lv + 5})),
            409,
            "conflict",
        )
        .await;
        let promoted = s
            .ok(
                "POST",
                &format!("{NS}/notes/{version}/promote"),
                Some(json!({"expected_version": lv})),
            )
            .await;
        assert_eq!(promoted["lifecycle"], "promoted", "{promoted}");
        let archived = s
            .ok(
                "POST",
                &format!("{NS}/notes/{version}/archive"),
                Some(json!({"expected_version": lv + 1})),
            )
            .await;
        assert_eq!(archived["lifecycle"], "archived", "{archived}");
        let notes = s.ok("GET", &format!("{NS}/notes?limit=10"), None).await;
        assert_eq!(notes["notes"].as_array().unwrap().len(), 1);
        let note2 = s
            .ok(
                "POST",
                &format!("{NS}/notes"),
                Some(json!({"request_id": "n-2", "source_key": "prefs/shell",
                            "source_revision": "1", "text": "Ana uses zsh."})),
            )
            .await;
        let v2 = note2["version_id"].as_str().unwrap().to_string();
        let revoked = s
            .ok(
                "POST",
                &format!("{NS}/notes/{v2}/revoke"),
                Some(json!({"expected_version": note2["lifecycle_version"]})),
            )
            .await;
        assert_eq!(revoked["lifecycle"], "revoked", "{revoked}");
        let forgot = s
            .ok("POST", &format!("{NS}/notes/{note_id}/forget"), None)
            .await;
        assert!(forgot["manifest_id"].is_string(), "{forgot}");

        // Facts administration.
        let merge = s
            .ok(
                "POST",
                &format!("{NS}/entities/merge"),
                Some(json!({"from": alicia, "into": alice})),
            )
            .await;
        let merge_id = merge["merge_id"].as_str().unwrap().to_string();
        s.ok(
            "POST",
            &format!("{NS}/entities/merges/{merge_id}/unmerge"),
            None,
        )
        .await;
        let claim = evidence["results"][0]["claim_id"]
            .as_str()
            .unwrap()
            .to_string();
        let corrected = s
            .ok(
                "POST",
                &format!("{NS}/facts/{fact}/correct"),
                Some(json!({"statement": "Alice works for Initech.", "reason": "she moved"})),
            )
            .await;
        assert_eq!(corrected["fact_id"], fact.as_str());
        s.err(
            "POST",
            &format!("{NS}/facts/{fact}/invalidate"),
            Some(json!({"reason": "again"})),
            409,
            "conflict",
        )
        .await;
        let retracted = s
            .ok(
                "POST",
                &format!("{NS}/claims/{claim}/retract"),
                Some(json!({"reason": "mistaken"})),
            )
            .await;
        assert_eq!(retracted["claim_id"], claim.as_str(), "{retracted}");
        assert_eq!(retracted["reason"], "mistaken");
        let bob_fact = s
            .ok(
                "POST",
                &format!("{NS}/search"),
                Some(json!({"query": "Bob Porto", "grain": "facts"})),
            )
            .await;
        let bob_fact = bob_fact["results"][0]["fact_id"]
            .as_str()
            .unwrap_or_else(|| panic!("{kind}: {bob_fact}"))
            .to_string();
        let inv = s
            .ok(
                "POST",
                &format!("{NS}/facts/{bob_fact}/invalidate"),
                Some(json!({"reason": "out of date"})),
            )
            .await;
        assert_eq!(inv["fact_id"], bob_fact.as_str(), "{inv}");
        assert!(inv["invalidated_at"].is_string());

        // Delete and forget.
        let deleted = s
            .ok("DELETE", &format!("{NS}/documents/{doc_b}"), None)
            .await;
        assert_eq!(deleted["doc_id"], doc_b.as_str(), "{deleted}");
        assert!(deleted["deleted_at"].is_string());
        let forgot = s
            .ok("POST", &format!("{NS}/documents/{doc_a}/forget"), None)
            .await;
        assert!(forgot["manifest_id"].is_string());
        s.err(
            "GET",
            &format!("{NS}/documents/{doc_a}"),
            None,
            404,
            "document_not_found",
        )
        .await;

        // Ops.
        let status = s.ok("GET", &format!("{NS}/status"), None).await;
        assert_eq!(status["namespace"], "team");
        let spaces = s.ok("GET", "/v1/namespaces", None).await;
        assert!(spaces.to_string().contains("\"team\""));
        assert_eq!(s.ok("GET", "/health", None).await["status"], "ok");
        let ready = s.ok("GET", "/ready", None).await;
        assert_eq!(ready["ready"], true, "{ready}");
        let metrics = s
            .client
            .get(format!("{}/metrics", s.base))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        assert!(metrics.contains(
            "rememberstack_http_requests_total{route=\"/v1/namespaces/{ns}/documents\",method=\"POST\",status=\"200\"}"
        ), "{metrics}");
        assert!(metrics.contains("rememberstack_ledger_items{stage="));
        // The embedder was called (ingest stages and query embeddings) and counted.
        let embed_calls = metrics
            .lines()
            .find(|l| {
                l.starts_with("rememberstack_provider_calls_total{provider=\"embedder\"")
                    && l.contains("outcome=\"ok\"")
            })
            .and_then(|l| l.rsplit(' ').next())
            .and_then(|n| n.parse::<u64>().ok())
            .unwrap_or_else(|| panic!("no embedder calls in {metrics}"));
        assert!(embed_calls > 0, "{metrics}");
        assert!(metrics.contains("rememberstack_provider_texts_total{seat=\"embed\""));
        assert!(!metrics.contains("Alice"), "no source text in metrics");
        s.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_are_typed_and_change_nothing() {
    for h in stores().await {
        let s = Server::start(&h, test_config()).await;
        let docs = format!("{NS}/documents");
        // Malformed and mistyped JSON.
        let resp = s
            .client
            .post(format!("{}{docs}", s.base))
            .header("content-type", "application/json")
            .body("{not json")
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status().as_u16(), 400);
        let body: Value = resp.json().await.unwrap();
        assert_eq!(body["code"], "invalid_input");
        s.err(
            "POST",
            &format!("{NS}/search"),
            Some(json!({"query": 7})),
            400,
            "invalid_input",
        )
        .await;
        s.err(
            "POST",
            &format!("{NS}/notes"),
            Some(json!({"text": "no key"})),
            400,
            "invalid_input",
        )
        .await;
        s.err(
            "POST",
            &format!("{NS}/operations/facts_context"),
            Some(json!({"query": "x", "k": 0})),
            400,
            "invalid_parameter",
        )
        .await;
        s.err(
            "POST",
            &format!("{NS}/operations/no_such_operation"),
            Some(json!({})),
            404,
            "not_found",
        )
        .await;
        // Bad ids, unknown records.
        s.err(
            "GET",
            &format!("{NS}/documents/not-a-uuid"),
            None,
            400,
            "invalid_input",
        )
        .await;
        s.err(
            "GET",
            &format!("{NS}/documents/{}", uuid_like()),
            None,
            404,
            "document_not_found",
        )
        .await;
        s.err(
            "DELETE",
            &format!("{NS}/documents/{}", uuid_like()),
            None,
            404,
            "document_not_found",
        )
        .await;
        // Raw ingest without a lineage; a bad source time; a bad namespace.
        s.err("POST", &docs, None, 400, "invalid_input").await;
        s.err(
            "POST",
            &docs,
            Some(json!({"text": "x", "source_ref": "r", "source_time": "yesterday"})),
            400,
            "invalid_input",
        )
        .await;
        s.err(
            "GET",
            "/v1/namespaces/Bad%20Space/documents",
            None,
            400,
            "invalid_input",
        )
        .await;
        // Oversized body: 413, nothing written.
        let big = "a".repeat(70 * 1024);
        let resp = s
            .client
            .post(format!("{}{docs}?source_ref=big.txt&kind=text", s.base))
            .header("content-type", "application/octet-stream")
            .body(big)
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status().as_u16(), 413);
        let body: Value = resp.json().await.unwrap();
        assert_eq!(body["code"], "too_large", "{body}");
        // Conflicts: a note revision that already holds other text.
        let note =
            json!({"request_id": "a", "source_key": "k", "source_revision": "1", "text": "one"});
        s.ok("POST", &format!("{NS}/notes"), Some(note)).await;
        s.err(
            "POST",
            &format!("{NS}/notes"),
            Some(json!({"request_id": "b", "source_key": "k", "source_revision": "1", "text": "two"})),
            409,
            "revision_conflict",
        )
        .await;
        // Unknown routes and methods.
        s.err("GET", "/v1/nothing", None, 404, "not_found").await;
        s.err("PUT", &docs, None, 405, "method_not_allowed").await;
        // Nothing but the one note was written.
        let listed = s.ok("GET", &docs, None).await;
        assert_eq!(
            listed["documents"].as_array().unwrap().len(),
            1,
            "{}: {listed}",
            h.kind
        );
        // The caller's request id is echoed in the header and the body.
        let resp = s
            .client
            .get(format!("{}{NS}/documents/not-a-uuid", s.base))
            .header("x-request-id", "trace-123")
            .send()
            .await
            .unwrap();
        assert_eq!(resp.headers()["x-request-id"], "trace-123");
        let body: Value = resp.json().await.unwrap();
        assert_eq!(body["request_id"], "trace-123");
        s.stop().await;
    }
}

fn uuid_like() -> String {
    "123e4567-e89b-12d3-a456-426614174000".to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_openapi_document_matches_the_routes() {
    let h = stores().await.remove(0);
    let s = Server::start(&h, test_config()).await;
    let doc = s.ok("GET", "/openapi.json", None).await;
    assert_eq!(doc["openapi"], "3.1.0");
    for route in routes() {
        let method = route.method.to_ascii_lowercase();
        assert!(
            doc["paths"][route.path][&method].is_object(),
            "{} {} is not documented",
            route.method,
            route.path
        );
        // Every documented route is served: no "no such route", no 405.
        let path = route
            .path
            .replace("{ns}", "team")
            .replace("{name}", "facts_context")
            .replace("{name_or_id}", "Alice")
            .replace("{id}", &uuid_like())
            .replace("{version}", &uuid_like());
        let (status, body) = s.call(route.method, &path, None).await;
        assert_ne!(status, 405, "{} {path}: {body}", route.method);
        assert!(
            !(status == 404 && body["message"] == "no such route"),
            "{} {path} is documented but not served",
            route.method
        );
    }
    // Bodies and query strings are the handlers' own types' schemas.
    let schema_of = |path: &str, method: &str| -> Value {
        let schema =
            &doc["paths"][path][method]["requestBody"]["content"]["application/json"]["schema"];
        match schema["$ref"].as_str() {
            Some(r) => doc["components"]["schemas"][r.rsplit('/').next().unwrap()].clone(),
            None => schema.clone(),
        }
    };
    let ingest = schema_of("/v1/namespaces/{ns}/documents", "post");
    assert_eq!(
        ingest["required"],
        json!(["text", "source_ref"]),
        "{ingest}"
    );
    assert!(ingest["properties"]["source_time"].is_object(), "{ingest}");
    let search = schema_of("/v1/namespaces/{ns}/search", "post");
    assert!(search["properties"]["exact"].is_object(), "{search}");
    let note = schema_of("/v1/namespaces/{ns}/notes", "post");
    for field in ["request_id", "source_key", "source_revision", "text"] {
        assert!(
            note["required"].as_array().unwrap().contains(&json!(field)),
            "{note}"
        );
    }
    let conversation = schema_of("/v1/namespaces/{ns}/conversations", "post");
    assert!(
        conversation["properties"]["conversation"].is_object(),
        "{conversation}"
    );
    assert!(doc["components"]["schemas"]["Message"]["properties"]["event_id"].is_object());
    let operations = schema_of("/v1/namespaces/{ns}/operations/{name}", "post");
    let titles: Vec<&str> = operations["oneOf"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["title"].as_str().unwrap())
        .collect();
    let registry: Vec<String> = s.memory.operations().into_iter().map(|o| o.name).collect();
    assert_eq!(titles, registry);
    let list_notes: Vec<&str> = doc["paths"]["/v1/namespaces/{ns}/notes"]["get"]["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["in"] == "query")
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(list_notes, ["cursor", "limit"]);
    // And the router serves nothing the table leaves out: a method the table
    // does not list for a path is 405.
    let (status, _) = s.call("PATCH", &format!("{NS}/notes"), None).await;
    assert_eq!(status, 405);
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_keys_only_loopback_is_served() {
    let h = stores().await.remove(0);
    let memory = h.memory().await;
    let listener = tokio::net::TcpListener::bind("0.0.0.0:0").await.unwrap();
    let err = serve_on(listener, memory, test_config(), async {})
        .await
        .expect_err("an open server on a non-loopback address is refused");
    assert_eq!(err.code().as_str(), "config");
    assert!(err.to_string().contains("loopback"), "{err}");
}

/// Shutdown stops accepting, but a request in flight finishes and is answered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_finishes_the_requests_in_flight() {
    let h = stores().await.remove(0);
    let memory = h.memory().await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let config = rememberstack_server::ServerConfig {
        workers: 0,
        ..test_config()
    };
    let server = tokio::spawn(serve_on(listener, memory.clone(), config, async move {
        let _ = rx.await;
    }));
    // No workers: `wait` waits its whole bound (2 s) for processing that never comes.
    let client = reqwest::Client::new();
    let in_flight = tokio::spawn({
        let (client, base) = (client.clone(), base.clone());
        async move {
            client
                .post(format!("{base}{NS}/documents?wait=true&wait_secs=2"))
                .json(&json!({"text": "# Late\n\nA slow request.", "source_ref": "late"}))
                .send()
                .await
        }
    });
    tokio::time::sleep(Duration::from_millis(500)).await;
    let _ = tx.send(());
    let resp = in_flight
        .await
        .unwrap()
        .expect("the in-flight request is answered");
    assert_eq!(resp.status().as_u16(), 202);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["processing"], "pending");
    server.await.unwrap().expect("the server stops cleanly");
    // It is gone, and what it accepted was kept.
    assert!(client.get(format!("{base}/health")).send().await.is_err());
    let docs = memory
        .with_namespace("team")
        .unwrap()
        .documents()
        .await
        .unwrap();
    assert_eq!(docs.len(), 1);
}
