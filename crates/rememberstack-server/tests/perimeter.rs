//! The perimeter: bearer keys, scopes, namespace isolation (a key never learns that
//! another namespace exists), rate and in-flight limits; on every store.

mod common;

use common::{Server, test_config};
use rememberstack::KeyScope;
use rememberstack_conformance::stores;
use rememberstack_server::auth::Limits;
use rememberstack_server::{ServerConfig, serve_on};
use serde_json::{Value, json};
use std::time::Duration;

async fn key(memory: &rememberstack::Memory, ns: &str, scopes: &[KeyScope]) -> String {
    memory
        .create_api_key(vec![ns.to_string()], scopes.to_vec(), None)
        .await
        .unwrap()
        .1
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_grant_their_scopes_on_their_namespaces_only() {
    for h in stores().await {
        let kind = h.kind;
        let memory = h.memory().await;
        let alpha_rw = key(&memory, "alpha", &[KeyScope::Read, KeyScope::Write]).await;
        let alpha_read = key(&memory, "alpha", &[KeyScope::Read]).await;
        let alpha_ingest = key(&memory, "alpha", &[KeyScope::Ingest]).await;
        let beta_admin = key(&memory, "beta", &[KeyScope::Admin]).await;
        let (revoked_key, revoked) = memory
            .create_api_key(vec!["alpha".into()], vec![KeyScope::Admin], None)
            .await
            .unwrap();
        memory.revoke_api_key(&revoked_key.id).await.unwrap();
        let s = Server::start(&h, test_config()).await;

        // Missing, malformed, unknown and revoked credentials: 401.
        let docs = "/v1/namespaces/alpha/documents";
        let e = s.err("GET", docs, None, 401, "unauthorized").await;
        assert!(e["message"].as_str().unwrap().contains("Bearer"), "{e}");
        s.with_key("rsk_not-a-real-key")
            .err("GET", docs, None, 401, "unauthorized")
            .await;
        s.with_key(&revoked)
            .err("GET", docs, None, 401, "unauthorized")
            .await;
        let resp = s
            .client
            .get(format!("{}{docs}", s.base))
            .header("authorization", format!("Basic {alpha_rw}"))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status().as_u16(), 401);
        // The operational endpoints stay open.
        s.ok("GET", "/health", None).await;

        // Write in each namespace with its own key.
        let a = s.with_key(&alpha_rw);
        let b = s.with_key(&beta_admin);
        let doc_a = a
            .ok(
                "POST",
                "/v1/namespaces/alpha/documents?wait=true",
                Some(json!({"text": "# A\n\nAlpha secret: the vault code is 1234.", "source_ref": "a"})),
            )
            .await["document_id"]
            .as_str()
            .unwrap()
            .to_string();
        let doc_b = b
            .ok(
                "POST",
                "/v1/namespaces/beta/documents?wait=true",
                Some(json!({"text": "# B\n\nBeta secret: the boat is called Nimbus.", "source_ref": "b"})),
            )
            .await["document_id"]
            .as_str()
            .unwrap()
            .to_string();

        // Another namespace is 404, exactly like one that does not exist.
        let missing = a
            .err(
                "GET",
                "/v1/namespaces/beta/documents",
                None,
                404,
                "not_found",
            )
            .await;
        let nonexistent = a
            .err(
                "GET",
                "/v1/namespaces/gamma/documents",
                None,
                404,
                "not_found",
            )
            .await;
        assert_eq!(missing["message"], nonexistent["message"]);
        a.err(
            "GET",
            &format!("/v1/namespaces/beta/documents/{doc_b}"),
            None,
            404,
            "not_found",
        )
        .await;
        // B's document id under A's namespace: not found there.
        a.err(
            "GET",
            &format!("/v1/namespaces/alpha/documents/{doc_b}"),
            None,
            404,
            "document_not_found",
        )
        .await;
        // Listings never show the other namespace.
        let spaces = a.ok("GET", "/v1/namespaces", None).await;
        assert_eq!(
            spaces["namespaces"].as_array().unwrap().len(),
            1,
            "{kind}: {spaces}"
        );
        assert_eq!(spaces["namespaces"][0]["namespace"], "alpha");
        assert!(!spaces.to_string().contains("beta"));
        let found = a
            .ok(
                "POST",
                "/v1/namespaces/alpha/operations/claims_and_sources_context",
                Some(json!({"query": "secret boat vault"})),
            )
            .await;
        assert!(found.to_string().contains("1234"), "{kind}: {found}");
        assert!(!found.to_string().contains("Nimbus"));

        // Scopes: 403 when the namespace is visible but the scope is missing.
        let r = s.with_key(&alpha_read);
        r.ok("GET", docs, None).await;
        r.err(
            "POST",
            docs,
            Some(json!({"text": "x", "source_ref": "x"})),
            403,
            "forbidden",
        )
        .await;
        let i = s.with_key(&alpha_ingest);
        i.ok(
            "POST",
            docs,
            Some(json!({"text": "# I\n\nIngested by the ingest key.", "source_ref": "i"})),
        )
        .await;
        i.err("GET", docs, None, 403, "forbidden").await;
        i.err(
            "POST",
            "/v1/namespaces/alpha/notes",
            Some(
                json!({"request_id": "r", "source_key": "k", "source_revision": "1", "text": "t"}),
            ),
            403,
            "forbidden",
        )
        .await;
        // Forget needs admin: write is not enough.
        a.err(
            "POST",
            &format!("/v1/namespaces/alpha/documents/{doc_a}/forget"),
            None,
            403,
            "forbidden",
        )
        .await;
        let forgot = b
            .ok(
                "POST",
                &format!("/v1/namespaces/beta/documents/{doc_b}/forget"),
                None,
            )
            .await;
        assert!(forgot["manifest_id"].is_string());
        // Nothing the refused calls asked for happened.
        let listed = a.ok("GET", docs, None).await;
        assert_eq!(listed["documents"].as_array().unwrap().len(), 2, "{listed}");

        // A key revoked while the server runs stops working at once.
        let (k, secret) = memory
            .create_api_key(vec!["alpha".into()], vec![KeyScope::Read], None)
            .await
            .unwrap();
        s.with_key(&secret).ok("GET", docs, None).await;
        memory.revoke_api_key(&k.id).await.unwrap();
        s.with_key(&secret)
            .err("GET", docs, None, 401, "unauthorized")
            .await;
        s.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_keys_any_address_may_be_served() {
    let h = stores().await.remove(0);
    let memory = h.memory().await;
    key(&memory, "alpha", &[KeyScope::Read]).await;
    let listener = tokio::net::TcpListener::bind("0.0.0.0:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let handle = tokio::spawn(serve_on(listener, memory, test_config(), async move {
        let _ = rx.await;
    }));
    let resp = reqwest::get(format!("http://127.0.0.1:{port}/v1/namespaces"))
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 401);
    let _ = tx.send(());
    handle.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rate_and_in_flight_limits_answer_429_with_retry_after() {
    let h = stores().await.remove(0);
    let memory = h.memory().await;
    let slow = key(&memory, "alpha", &[KeyScope::Read]).await;
    let other = key(&memory, "alpha", &[KeyScope::Read]).await;
    let config = ServerConfig {
        limits: Limits {
            rate_per_sec: 0.5,
            burst: 2.0,
            in_flight: 8,
        },
        ..test_config()
    };
    let s = Server::start(&h, config).await;
    let k = s.with_key(&slow);
    k.ok("GET", "/v1/namespaces", None).await;
    k.ok("GET", "/v1/namespaces", None).await;
    let resp = k
        .client
        .get(format!("{}/v1/namespaces", s.base))
        .bearer_auth(&slow)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 429);
    let retry: u64 = resp.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=3).contains(&retry), "{retry}");
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["code"], "rate_limited");
    assert!(body["request_id"].is_string());
    // Limits are per key: another key is still served.
    s.with_key(&other).ok("GET", "/v1/namespaces", None).await;
    // And the bucket refills.
    tokio::time::sleep(Duration::from_millis(2200)).await;
    k.ok("GET", "/v1/namespaces", None).await;
    s.stop().await;
}

/// Two keys on two namespaces hammer ingest and queries in parallel; neither ever
/// sees the other's data.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn namespaces_stay_isolated_under_concurrency() {
    for h in stores().await {
        let kind = h.kind;
        let memory = h.memory().await;
        let keys = [
            (
                "north",
                key(&memory, "north", &[KeyScope::Read, KeyScope::Write]).await,
            ),
            (
                "south",
                key(&memory, "south", &[KeyScope::Read, KeyScope::Write]).await,
            ),
        ];
        let s = Server::start(&h, test_config()).await;
        let mut tasks = tokio::task::JoinSet::new();
        for (ns, secret) in &keys {
            let marker = format!("{ns}marker");
            let other = if *ns == "north" {
                "southmarker"
            } else {
                "northmarker"
            };
            for worker in 0..3 {
                let c = s.with_key(secret);
                let (ns, marker, other) = (ns.to_string(), marker.clone(), other.to_string());
                tasks.spawn(async move {
                    for i in 0..6 {
                        let text = format!(
                            "# Log {worker}-{i}\n\nThe {marker} team shipped release {worker}{i} on time."
                        );
                        c.ok(
                            "POST",
                            &format!("/v1/namespaces/{ns}/documents"),
                            Some(json!({"text": text, "source_ref": format!("{worker}-{i}")})),
                        )
                        .await;
                        for path in ["search", "operations/claims_and_sources_context"] {
                            let found = c
                                .ok(
                                    "POST",
                                    &format!("/v1/namespaces/{ns}/{path}"),
                                    Some(json!({"query": "team shipped release marker"})),
                                )
                                .await
                                .to_string();
                            assert!(!found.contains(&other), "{ns} saw {other}: {found}");
                        }
                        let listed = c
                            .ok("GET", &format!("/v1/namespaces/{ns}/documents"), None)
                            .await
                            .to_string();
                        assert!(!listed.contains(&other));
                        let spaces = c.ok("GET", "/v1/namespaces", None).await.to_string();
                        assert!(!spaces.contains(if ns == "north" { "south" } else { "north" }));
                    }
                });
            }
        }
        while let Some(done) = tasks.join_next().await {
            done.unwrap();
        }
        // After processing, each namespace holds exactly its own 18 documents.
        for (ns, secret) in &keys {
            let c = s.with_key(secret);
            let listed = c
                .ok("GET", &format!("/v1/namespaces/{ns}/documents"), None)
                .await;
            assert_eq!(
                listed["documents"].as_array().unwrap().len(),
                18,
                "{kind} {ns}"
            );
        }
        s.stop().await;
    }
}

/// D101: `X-Ingest-Principal-*` is recorded only from a full-write key; from a
/// narrower key it is ignored (not refused); a malformed one from a write key is
/// 422 and writes nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ingest_attribution_comes_from_headers_of_write_keys_only() {
    for h in stores().await {
        let kind = h.kind;
        let memory = h.memory().await;
        let writer = key(&memory, "alpha", &[KeyScope::Read, KeyScope::Write]).await;
        let ingester = key(&memory, "alpha", &[KeyScope::Read, KeyScope::Ingest]).await;
        let s = Server::start(&h, test_config()).await;
        let post = |secret: &str, source_ref: &str, kind_h: &str, ref_h: &str| {
            s.client
                .post(format!("{}/v1/namespaces/alpha/documents", s.base))
                .bearer_auth(secret)
                .header("x-ingest-principal-kind", kind_h)
                .header("x-ingest-principal-ref", ref_h)
                .json(&json!({"text": format!("# {source_ref}\n\nSome text."), "source_ref": source_ref}))
                .send()
        };
        let a = post(&writer, "a", "user", "alice@example.com")
            .await
            .unwrap();
        assert_eq!(a.status().as_u16(), 202, "{kind}");
        let a: Value = a.json().await.unwrap();
        let b = post(&ingester, "b", "user", "mallory").await.unwrap();
        assert_eq!(b.status().as_u16(), 202);
        let b: Value = b.json().await.unwrap();
        let bad = post(&writer, "c", "robot", "x").await.unwrap();
        assert_eq!(bad.status().as_u16(), 422);
        let body: Value = bad.json().await.unwrap();
        assert_eq!(body["code"], "invalid_input", "{body}");
        let w = s.with_key(&writer);
        let show = |doc: &Value| {
            format!(
                "/v1/namespaces/alpha/documents/{}",
                doc["document_id"].as_str().unwrap()
            )
        };
        let a = w.ok("GET", &show(&a), None).await;
        assert_eq!(
            a["versions"][0]["ingested_by"],
            json!({"kind": "user", "external_ref": "alice@example.com"}),
            "{kind}: {a}"
        );
        let b = w.ok("GET", &show(&b), None).await;
        assert!(b["versions"][0].get("ingested_by").is_none(), "{kind}: {b}");
        let listed = w.ok("GET", "/v1/namespaces/alpha/documents", None).await;
        assert_eq!(
            listed["documents"].as_array().unwrap().len(),
            2,
            "the 422 wrote nothing"
        );
        s.stop().await;
    }
}
