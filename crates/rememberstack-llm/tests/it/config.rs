use rememberstack_core::embed::{EmbedPurpose, ProviderError};
use rememberstack_llm::{EmbedderConfig, build_embedder};
use serde_json::json;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

/// An environment variable no test machine sets.
const UNSET_VAR: &str = "REMEMBERSTACK_LLM_TEST_DEFINITELY_UNSET_KEY";

#[tokio::test]
async fn builds_the_default_hashing_embedder() {
    let e = build_embedder(&EmbedderConfig::default()).unwrap();
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
            model_dir: "/nonexistent/rememberstack-model".into()
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
