use rememberstack_core::embed::{EmbedPurpose, ProviderError};
use rememberstack_llm::{EmbedderConfig, build_embedder};
use serde_json::json;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

/// An environment variable no test machine sets.
const UNSET_VAR: &str = "REMEMBERSTACK_LLM_TEST_DEFINITELY_UNSET_KEY";

#[tokio::test]
async fn builds_the_hashing_embedder() {
    let e = build_embedder(&EmbedderConfig::hashing()).unwrap();
    assert_eq!(e.identity().generation(), "hashing/feature-hash-v1/d256/v1");
    let v = e
        .embed(&["hello".to_owned()], EmbedPurpose::Document)
        .await
        .unwrap();
    assert_eq!(v[0].len(), 256);
}

#[tokio::test]
async fn builds_an_openai_embedder_for_a_keyless_local_server() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/embeddings"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "data": [{"embedding": [0.25, 0.75], "index": 0}]
        })))
        .expect(1)
        .mount(&server)
        .await;

    let config: EmbedderConfig = serde_json::from_value(json!({
        "provider": "openai",
        "base_url": format!("{}/v1", server.uri()),
        "model": "nomic-embed-text",
        "dimension": 2,
        "api_key_env": UNSET_VAR,
        "timeout_secs": 5
    }))
    .unwrap();
    let e = build_embedder(&config).unwrap();
    assert_eq!(
        e.identity().generation(),
        "openai-compatible/nomic-embed-text/d2/v1"
    );
    let v = e
        .embed(&["hi".to_owned()], EmbedPurpose::Query)
        .await
        .unwrap();
    assert_eq!(v, vec![vec![0.25, 0.75]]);
    let reqs = server.received_requests().await.unwrap();
    assert!(reqs[0].headers.get("authorization").is_none());
}

#[test]
fn bad_configs_are_config_errors() {
    for config in [
        json!({"provider": "hashing", "dimension": 0}),
        json!({"provider": "openai", "base_url": "file:///etc", "model": "m", "dimension": 2,
               "api_key_env": UNSET_VAR}),
        json!({"provider": "openai", "base_url": "http://localhost/v1", "model": "", "dimension": 2,
               "api_key_env": UNSET_VAR}),
        json!({"provider": "openai", "base_url": "http://localhost/v1", "model": "m", "dimension": 0,
               "api_key_env": UNSET_VAR}),
    ] {
        let parsed: EmbedderConfig = serde_json::from_value(config.clone()).unwrap();
        assert!(
            matches!(build_embedder(&parsed), Err(ProviderError::Config(_))),
            "{config}"
        );
    }
}

#[test]
fn local_parses_in_every_build() {
    let config: EmbedderConfig = serde_json::from_value(json!({
        "provider": "local",
        "model_dir": "/nonexistent/rememberstack-model"
    }))
    .unwrap();
    assert_eq!(
        config,
        EmbedderConfig::Local {
            model_dir: Some("/nonexistent/rememberstack-model".into()),
            model: None,
        }
    );
    // Without the feature: the build says so; with it: the directory is missing.
    let err = build_embedder(&config).unwrap_err();
    let ProviderError::Config(message) = &err else {
        panic!("expected a configuration error, got {err:?}");
    };
    if cfg!(feature = "local-embedder") {
        assert!(
            message.contains("/nonexistent/rememberstack-model"),
            "{message}"
        );
    } else {
        assert_eq!(
            message,
            "this build has no local embedder: rebuild with the `local-embedder` feature"
        );
    }
    assert!(!err.is_retryable());
}

/// A cache with no model, a hub nothing answers at and downloads allowed.
fn unreachable_source(cache: &std::path::Path) -> rememberstack_llm::models::ModelSource {
    // A port just freed: connecting is refused at once.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    rememberstack_llm::models::ModelSource {
        cache: Some(cache.to_path_buf()),
        endpoint: format!("http://127.0.0.1:{port}"),
        download_on_first_use: true,
    }
}

#[tokio::test]
async fn without_a_model_the_hashing_embedder_stands_in_and_says_why() {
    use rememberstack_llm::{models::ModelSource, resolve_cached};
    let cache = tempfile::tempdir().unwrap();
    let offline = ModelSource {
        download_on_first_use: false,
        ..unreachable_source(cache.path())
    };
    let r = resolve_cached("all-MiniLM-L6-v2", &offline, None).await;
    let why = r.fallback.clone().expect("a fallback");
    assert!(why.contains("remember models pull"), "{why}");
    assert_eq!(
        r.embedder.identity().generation(),
        "hashing/feature-hash-v1/d256/v1"
    );
    let degraded = r.embedder.degraded().expect("degraded");
    assert_eq!(degraded.kind, "lexical embedder");
    assert_eq!(degraded.reason.as_deref(), Some(why.as_str()));

    // A name this build cannot download is named as such.
    let r = resolve_cached("no-such-model", &unreachable_source(cache.path()), None).await;
    assert!(r.fallback.unwrap().contains("models import"));
    // A configured hashing embedder is lexical too, but stands in for nothing.
    let e = build_embedder(&EmbedderConfig::hashing()).unwrap();
    assert_eq!(e.degraded().unwrap().reason, None);
}

#[cfg(feature = "local-embedder")]
#[tokio::test]
async fn an_unreachable_hub_fails_fast_once_then_not_again_for_an_hour() {
    use rememberstack_llm::resolve_cached;
    let cache = tempfile::tempdir().unwrap();
    let source = unreachable_source(cache.path());
    let started = std::time::Instant::now();
    let r = resolve_cached("all-MiniLM-L6-v2", &source, None).await;
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
    let why = r.fallback.unwrap();
    assert!(why.contains("could not be downloaded"), "{why}");
    // Nothing half-written is left where a store would load the model.
    assert!(!cache.path().join("all-MiniLM-L6-v2").exists());
    let r = resolve_cached("all-MiniLM-L6-v2", &source, None).await;
    assert!(r.fallback.unwrap().contains("within the last hour"));
}
