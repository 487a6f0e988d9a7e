//! The 503s: a namespace whose forget was interrupted fails closed
//! (`forget_in_progress`) and the server says it is not ready; a request that runs
//! past the timeout is answered `timeout`. Both carry `Retry-After`.

mod common;

use common::{Server, test_config};
use rememberstack::{ForgetManifest, ForgetTarget};
use rememberstack_conformance::stores;
use serde_json::json;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupted_forget_answers_503_until_it_is_finished() {
    for h in stores().await {
        let s = Server::start(&h, test_config()).await;
        let kind = h.kind;
        let doc = s
            .ok(
                "POST",
                "/v1/namespaces/team/documents?wait=true",
                Some(json!({"text": "# HR\n\nAlice works for Acme.\n", "source_ref": "hr"})),
            )
            .await["document_id"]
            .as_str()
            .unwrap()
            .parse()
            .unwrap();
        s.ok(
            "POST",
            "/v1/namespaces/other/documents?wait=true",
            Some(json!({"text": "# Ops\n\nBob runs the backups.\n", "source_ref": "ops"})),
        )
        .await;
        let ready = s.ok("GET", "/ready", None).await;
        assert_eq!(ready["ready"], true, "{kind}: {ready}");

        // The process died right after writing the manifest and closing the gate.
        let ns = h.store.namespace("team").await.unwrap().unwrap();
        let versions = h.store.versions(ns.id, doc).await.unwrap();
        let manifest = ForgetManifest::new(
            &ns,
            ForgetTarget::Document,
            doc,
            &versions,
            ("text", "hr"),
            chrono::Utc::now(),
        );
        h.store
            .begin_forget(&manifest, chrono::Utc::now())
            .await
            .unwrap();

        for (method, path, body) in [
            ("GET", "/v1/namespaces/team/documents", None),
            (
                "POST",
                "/v1/namespaces/team/search",
                Some(json!({"query": "Alice"})),
            ),
            (
                "POST",
                "/v1/namespaces/team/operations/combined_context",
                Some(json!({"query": "Alice"})),
            ),
        ] {
            let mut req = s
                .client
                .request(method.parse().unwrap(), format!("{}{path}", s.base));
            if let Some(b) = body {
                req = req.json(&b);
            }
            let resp = req.send().await.unwrap();
            assert_eq!(resp.status().as_u16(), 503, "{kind}: {method} {path}");
            assert!(
                resp.headers().get("retry-after").is_some(),
                "{kind}: {path}"
            );
            let body: serde_json::Value = resp.json().await.unwrap();
            assert_eq!(body["code"], "forget_in_progress", "{kind}: {body}");
            assert!(body["request_id"].as_str().is_some_and(|r| !r.is_empty()));
        }
        // Another namespace is served; the server as a whole is not ready.
        let other = s.ok("GET", "/v1/namespaces/other/documents", None).await;
        assert_eq!(other["documents"].as_array().unwrap().len(), 1, "{kind}");
        let (status, ready) = s.call("GET", "/ready", None).await;
        assert_eq!(status, 503, "{kind}: {ready}");
        assert_eq!(ready["ready"], false);
        assert_eq!(ready["code"], "not_ready", "{ready}");
        assert!(ready["request_id"].as_str().is_some_and(|r| !r.is_empty()));
        assert_eq!(ready["checks"]["forget_manifests"]["ok"], false, "{ready}");
        assert_eq!(
            ready["checks"]["forget_manifests"]["incomplete_namespaces"], 1,
            "{ready}"
        );
        // The process itself is up.
        s.ok("GET", "/health", None).await;
        s.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_past_the_timeout_is_answered_503_timeout() {
    for h in stores().await {
        // No workers: an ingest that waits for processing can never finish in time.
        let config = rememberstack_server::ServerConfig {
            workers: 0,
            request_timeout: Duration::from_millis(400),
            ..test_config()
        };
        let s = Server::start(&h, config).await;
        let started = std::time::Instant::now();
        let resp = s
            .client
            .post(format!("{}/v1/namespaces/team/documents?wait=true", s.base))
            .json(&json!({"text": "# HR\n\nAlice works for Acme.\n", "source_ref": "hr"}))
            .send()
            .await
            .unwrap();
        assert!(started.elapsed() < Duration::from_secs(20), "{}", h.kind);
        assert_eq!(resp.status().as_u16(), 503, "{}", h.kind);
        assert_eq!(
            resp.headers()
                .get("retry-after")
                .and_then(|v| v.to_str().ok()),
            Some("1")
        );
        let id = resp
            .headers()
            .get("x-request-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let body: serde_json::Value = resp.json().await.unwrap();
        assert_eq!(body["code"], "timeout", "{}: {body}", h.kind);
        assert_eq!(body["request_id"].as_str(), id.as_deref());
        // Quick requests on the same server are still answered.
        let status = s.ok("GET", "/v1/namespaces/team/status", None).await;
        assert!(status.is_object(), "{status}");
        s.stop().await;
    }
}

/// Behind keys, `/ready` tells a caller without a key only the status and how
/// many namespaces are closed; a key learns which of its own namespaces are, and
/// the command that resumes each.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ready_details_need_a_key_and_name_only_the_keys_namespaces() {
    for h in stores().await {
        let kind = h.kind;
        let memory = h.memory().await;
        let (_, team) = memory
            .create_api_key(
                vec!["team".into()],
                vec![rememberstack::KeyScope::Write],
                None,
            )
            .await
            .unwrap();
        let (_, other) = memory
            .create_api_key(
                vec!["other".into()],
                vec![rememberstack::KeyScope::Read],
                None,
            )
            .await
            .unwrap();
        let s = Server::start(&h, test_config()).await;
        let (status, open) = s.call("GET", "/ready", None).await;
        assert_eq!(status, 200, "{kind}: {open}");
        assert_eq!(open, json!({"ready": true, "incomplete_forgets": 0}));
        let keyed = s.with_key(&team).ok("GET", "/ready", None).await;
        assert_eq!(keyed["checks"]["store"]["ok"], true, "{keyed}");

        let doc: rememberstack::DocumentId = s
            .with_key(&team)
            .ok(
                "POST",
                "/v1/namespaces/team/documents",
                Some(json!({"text": "# HR\n\nAlice works for Acme.\n", "source_ref": "hr"})),
            )
            .await["document_id"]
            .as_str()
            .unwrap()
            .parse()
            .unwrap();
        let ns = h.store.namespace("team").await.unwrap().unwrap();
        let versions = h.store.versions(ns.id, doc).await.unwrap();
        let manifest = ForgetManifest::new(
            &ns,
            ForgetTarget::Document,
            doc,
            &versions,
            ("text", "hr"),
            chrono::Utc::now(),
        );
        h.store
            .begin_forget(&manifest, chrono::Utc::now())
            .await
            .unwrap();

        let (status, anonymous) = s.call("GET", "/ready", None).await;
        assert_eq!(status, 503, "{kind}: {anonymous}");
        assert_eq!(anonymous["code"], "not_ready");
        assert_eq!(anonymous["incomplete_forgets"], 1);
        assert!(anonymous.get("checks").is_none(), "{anonymous}");
        assert!(!anonymous.to_string().contains("team"), "{anonymous}");
        let (status, mine) = s.with_key(&team).call("GET", "/ready", None).await;
        assert_eq!(status, 503);
        let pending = &mine["checks"]["forget_manifests"]["pending"];
        assert_eq!(pending.as_array().unwrap().len(), 1, "{kind}: {mine}");
        assert_eq!(pending[0]["namespace"], "team");
        assert_eq!(pending[0]["document_id"], doc.to_string());
        assert!(
            pending[0]["resume_with"]
                .as_str()
                .unwrap()
                .contains("forget"),
            "{mine}"
        );
        let (_, theirs) = s.with_key(&other).call("GET", "/ready", None).await;
        assert_eq!(
            theirs["checks"]["forget_manifests"]["incomplete_namespaces"],
            1
        );
        assert_eq!(
            theirs["checks"]["forget_manifests"]["pending"],
            json!([]),
            "{kind}: another key's namespace is not named: {theirs}"
        );
        s.stop().await;
    }
}

/// A store failure reaches the client as a generic sentence naming the request
/// id; the detail (SQL, paths) stays in the server's log.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn store_errors_reach_clients_without_their_detail() {
    for h in stores().await {
        let kind = h.kind;
        let s = Server::start(&h, test_config()).await;
        s.ok(
            "POST",
            "/v1/namespaces/team/documents",
            Some(json!({"text": "# HR\n\nAlice works for Acme.\n", "source_ref": "hr"})),
        )
        .await;
        // A column the read names is gone: the store's error quotes SQL.
        h.execute_sql("ALTER TABLE feedback RENAME COLUMN comment TO comment_gone")
            .await;
        let (status, body) = s.call("GET", "/v1/namespaces/team/feedback", None).await;
        assert!(status >= 500, "{kind}: {status} {body}");
        assert_eq!(body["code"], "store", "{kind}: {body}");
        let message = body["message"].as_str().unwrap();
        let request_id = body["request_id"].as_str().unwrap();
        assert!(message.contains(request_id), "{kind}: {body}");
        for leak in ["comment", "column", "feedback", "SQL", "sqlite", "/"] {
            assert!(!message.contains(leak), "{kind}: `{leak}` in {body}");
        }
        s.stop().await;
    }
}
