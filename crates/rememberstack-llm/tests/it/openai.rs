use std::time::{Duration, Instant};

use rememberstack_core::embed::{EmbedPurpose, Embedder, ProviderError};
use rememberstack_llm::{OpenAiEmbedder, OpenAiEmbedderConfig};
use serde_json::{Value, json};
use wiremock::matchers::{body_json, header, method, path};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

const KEY: &str = "sk-test-SECRET-0123456789";

/// A config against `server` with a `/v1` path prefix and tiny backoffs.
fn config(server: &MockServer, dimension: usize) -> OpenAiEmbedderConfig {
    let mut c = OpenAiEmbedderConfig::new(format!("{}/v1", server.uri()), "test-model", dimension);
    c.initial_backoff = Duration::from_millis(1);
    c.max_backoff = Duration::from_millis(10);
    c.max_retries = 2;
    c.timeout = Duration::from_secs(10);
    c
}

fn embedder(config: OpenAiEmbedderConfig) -> OpenAiEmbedder {
    OpenAiEmbedder::new(config).expect("valid config")
}

fn texts(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| (*s).to_owned()).collect()
}

async fn requests(server: &MockServer) -> Vec<Request> {
    server.received_requests().await.expect("recording is on")
}

/// Answers every request with one vector per input, `[n, 0, ...]` for input `"tN"`,
/// listing the items in reverse order (the `index` field says where each belongs).
struct Echo {
    dimension: usize,
}

impl Respond for Echo {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body: Value = request.body_json().expect("request body is JSON");
        let inputs = body["input"].as_array().expect("input is an array");
        let mut data: Vec<Value> = inputs
            .iter()
            .enumerate()
            .map(|(i, text)| {
                let n: f32 = text.as_str().unwrap()[1..].parse().unwrap();
                let mut v = vec![0.0f32; self.dimension];
                v[0] = n;
                json!({"object": "embedding", "embedding": v, "index": i})
            })
            .collect();
        data.reverse();
        ResponseTemplate::new(200).set_body_json(json!({
            "object": "list",
            "data": data,
            "model": "test-model",
            "usage": {"prompt_tokens": 1, "total_tokens": 1}
        }))
    }
}

fn ok_body(vectors: &[(usize, Vec<f32>)]) -> Value {
    let data: Vec<Value> = vectors
        .iter()
        .map(|(i, v)| json!({"object": "embedding", "embedding": v, "index": i}))
        .collect();
    json!({"object": "list", "data": data, "model": "test-model"})
}

#[tokio::test]
async fn request_shape_and_shuffled_answer() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/embeddings"))
        .and(header("authorization", format!("Bearer {KEY}").as_str()))
        .and(header("content-type", "application/json"))
        .and(body_json(json!({
            "model": "test-model",
            "input": ["alpha", "beta", "gamma"],
            "encoding_format": "float"
        })))
        .respond_with(ResponseTemplate::new(200).set_body_json(ok_body(&[
            (2, vec![3.0, 3.5]),
            (0, vec![1.0, 1.5]),
            (1, vec![2.0, 2.5]),
        ])))
        .expect(1)
        .mount(&server)
        .await;

    let e = embedder(config(&server, 2).with_api_key(KEY));
    let got = e
        .embed(&texts(&["alpha", "beta", "gamma"]), EmbedPurpose::Document)
        .await
        .unwrap();
    assert_eq!(got, vec![vec![1.0, 1.5], vec![2.0, 2.5], vec![3.0, 3.5]]);

    let reqs = requests(&server).await;
    assert_eq!(reqs.len(), 1);
    let body: Value = reqs[0].body_json().unwrap();
    assert!(body.get("dimensions").is_none(), "{body}");
}

#[tokio::test]
async fn trailing_slash_and_dimensions_when_configured() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/embeddings"))
        .and(body_json(json!({
            "model": "test-model",
            "input": ["q"],
            "encoding_format": "float",
            "dimensions": 3
        })))
        .respond_with(
            ResponseTemplate::new(200).set_body_json(ok_body(&[(0, vec![0.1, 0.2, 0.3])])),
        )
        .expect(1)
        .mount(&server)
        .await;

    let mut c = config(&server, 3);
    c.base_url.push('/');
    c.send_dimensions = true;
    let got = embedder(c)
        .embed(&texts(&["q"]), EmbedPurpose::Query)
        .await
        .unwrap();
    assert_eq!(got, vec![vec![0.1, 0.2, 0.3]]);
}

#[tokio::test]
async fn no_key_means_no_authorization_header() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(Echo { dimension: 2 })
        .mount(&server)
        .await;
    embedder(config(&server, 2))
        .embed(&texts(&["t1"]), EmbedPurpose::Document)
        .await
        .unwrap();
    let reqs = requests(&server).await;
    assert_eq!(reqs.len(), 1);
    assert!(reqs[0].headers.get("authorization").is_none());
}

#[tokio::test]
async fn batches_are_split_and_order_is_kept() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/embeddings"))
        .respond_with(Echo { dimension: 4 })
        .expect(3)
        .mount(&server)
        .await;

    let mut c = config(&server, 4);
    c.max_batch = 2;
    let e = embedder(c);
    assert_eq!(e.max_batch(), 2);
    let inputs = texts(&["t0", "t1", "t2", "t3", "t4"]);
    let got = e.embed(&inputs, EmbedPurpose::Document).await.unwrap();
    let firsts: Vec<f32> = got.iter().map(|v| v[0]).collect();
    assert_eq!(firsts, vec![0.0, 1.0, 2.0, 3.0, 4.0]);
    assert!(got.iter().all(|v| v.len() == 4));

    let sent: Vec<Value> = requests(&server)
        .await
        .iter()
        .map(|r| r.body_json::<Value>().unwrap()["input"].clone())
        .collect();
    assert_eq!(
        sent,
        vec![json!(["t0", "t1"]), json!(["t2", "t3"]), json!(["t4"])]
    );
}

#[tokio::test]
async fn empty_input_makes_no_request() {
    let server = MockServer::start().await;
    let got = embedder(config(&server, 2))
        .embed(&[], EmbedPurpose::Document)
        .await
        .unwrap();
    assert!(got.is_empty());
    assert!(requests(&server).await.is_empty());
}

#[tokio::test]
async fn wrong_dimension_is_a_mismatch_and_not_retried() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(ok_body(&[(0, vec![1.0, 2.0, 3.0]), (1, vec![1.0, 2.0])])),
        )
        .mount(&server)
        .await;
    let err = embedder(config(&server, 3))
        .embed(&texts(&["a", "b"]), EmbedPurpose::Document)
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            ProviderError::DimensionMismatch {
                expected: 3,
                got: 2
            }
        ),
        "{err:?}"
    );
    assert!(!err.is_retryable());
    assert_eq!(requests(&server).await.len(), 1);
}

#[tokio::test]
async fn retry_after_is_honoured_on_429() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(429)
                .insert_header("retry-after", "1")
                .set_body_json(json!({"error": {"message": "Rate limit reached"}})),
        )
        .up_to_n_times(1)
        .with_priority(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(ok_body(&[(0, vec![0.5, 0.5])])))
        .with_priority(2)
        .mount(&server)
        .await;

    let mut c = config(&server, 2);
    c.max_backoff = Duration::from_secs(30);
    let started = Instant::now();
    let got = embedder(c)
        .embed(&texts(&["x"]), EmbedPurpose::Document)
        .await
        .unwrap();
    let elapsed = started.elapsed();
    assert_eq!(got, vec![vec![0.5, 0.5]]);
    assert_eq!(requests(&server).await.len(), 2);
    assert!(
        elapsed >= Duration::from_millis(900),
        "waited only {elapsed:?}"
    );
}

#[tokio::test]
async fn repeated_503_gives_up_after_max_retries() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(503).set_body_string("upstream overloaded"))
        .mount(&server)
        .await;
    let c = config(&server, 2);
    let max_retries = c.max_retries;
    let err = embedder(c)
        .embed(&texts(&["x"]), EmbedPurpose::Document)
        .await
        .unwrap_err();
    match &err {
        ProviderError::Status {
            status,
            message,
            retry_after,
        } => {
            assert_eq!(*status, 503);
            assert_eq!(message, "upstream overloaded");
            assert_eq!(*retry_after, None);
        }
        other => panic!("{other:?}"),
    }
    assert!(err.is_retryable());
    assert_eq!(requests(&server).await.len(), max_retries as usize + 1);
}

#[tokio::test]
async fn last_error_carries_retry_after_and_wait_is_capped() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(500).insert_header("retry-after", "3600"))
        .mount(&server)
        .await;
    let mut c = config(&server, 2);
    c.max_retries = 1;
    // max_backoff is 10 ms: an hour-long Retry-After is capped, so this finishes.
    let err = embedder(c)
        .embed(&texts(&["x"]), EmbedPurpose::Document)
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            ProviderError::Status { status: 500, retry_after: Some(d), .. } if d == Duration::from_secs(3600)
        ),
        "{err:?}"
    );
    assert_eq!(requests(&server).await.len(), 2);
}

#[tokio::test]
async fn unauthorized_fails_at_once_without_leaking_the_key() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(401).set_body_json(json!({
            "error": {
                "message": format!("Incorrect API key provided: {KEY}."),
                "type": "invalid_request_error",
                "code": "invalid_api_key"
            }
        })))
        .mount(&server)
        .await;
    let err = embedder(config(&server, 2).with_api_key(KEY))
        .embed(&texts(&["x"]), EmbedPurpose::Document)
        .await
        .unwrap_err();
    match &err {
        ProviderError::Status {
            status: 401,
            message,
            retry_after: None,
        } => assert!(
            message.starts_with("Incorrect API key provided"),
            "{message}"
        ),
        other => panic!("{other:?}"),
    }
    assert!(!err.to_string().contains(KEY));
    assert!(!format!("{err:?}").contains(KEY));
    assert!(!err.is_retryable());
    assert_eq!(requests(&server).await.len(), 1);
}

#[tokio::test]
async fn other_client_errors_are_not_retried() {
    for status in [400u16, 403, 404, 422] {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .respond_with(ResponseTemplate::new(status).insert_header("retry-after", "1"))
            .mount(&server)
            .await;
        let err = embedder(config(&server, 2))
            .embed(&texts(&["x"]), EmbedPurpose::Document)
            .await
            .unwrap_err();
        assert!(
            matches!(err, ProviderError::Status { status: s, .. } if s == status),
            "{err:?}"
        );
        assert_eq!(requests(&server).await.len(), 1, "status {status}");
    }
}

#[tokio::test]
async fn malformed_answers() {
    let long_garbage = format!("<html>{}</html>", "oops ".repeat(500));
    let cases: Vec<(&str, ResponseTemplate)> = vec![
        (
            "wrong shape",
            ResponseTemplate::new(200).set_body_json(json!({"foo": 1})),
        ),
        (
            "not JSON",
            ResponseTemplate::new(200).set_body_string(long_garbage.clone()),
        ),
        (
            "wrong count",
            ResponseTemplate::new(200).set_body_json(ok_body(&[(0, vec![1.0, 2.0])])),
        ),
        (
            "base64 instead of floats",
            ResponseTemplate::new(200).set_body_json(json!({
                "data": [{"embedding": "AACAPwAAAEA=", "index": 0},
                         {"embedding": "AACAPwAAAEA=", "index": 1}]
            })),
        ),
        (
            "duplicate index",
            ResponseTemplate::new(200)
                .set_body_json(ok_body(&[(0, vec![1.0, 2.0]), (0, vec![1.0, 2.0])])),
        ),
        ("empty body", ResponseTemplate::new(200)),
    ];
    for (name, response) in cases {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .respond_with(response)
            .mount(&server)
            .await;
        let err = embedder(config(&server, 2).with_api_key(KEY))
            .embed(&texts(&["a", "b"]), EmbedPurpose::Document)
            .await
            .unwrap_err();
        match &err {
            ProviderError::Malformed { message } => {
                assert!(!message.contains(KEY), "{name}: {message}");
                // The quoted body is bounded.
                assert!(message.chars().count() < 600, "{name}: {message}");
            }
            other => panic!("{name}: {other:?}"),
        }
        assert_eq!(requests(&server).await.len(), 1, "{name}: not retried");
    }
}

#[tokio::test]
async fn connection_refused_is_a_transport_error_after_retries() {
    // A port nothing listens on: bind, note it, close it.
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let mut c =
        OpenAiEmbedderConfig::new(format!("http://127.0.0.1:{port}/v1"), "m", 2).with_api_key(KEY);
    c.initial_backoff = Duration::from_millis(1);
    c.max_backoff = Duration::from_millis(5);
    c.max_retries = 1;
    let err = embedder(c)
        .embed(&texts(&["x"]), EmbedPurpose::Document)
        .await
        .unwrap_err();
    match &err {
        ProviderError::Transport { message } => {
            assert!(message.contains("/v1/embeddings"), "{message}");
            assert!(!message.contains(KEY));
        }
        other => panic!("{other:?}"),
    }
    assert!(err.is_retryable());
}

#[tokio::test]
async fn slow_provider_times_out() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(ok_body(&[(0, vec![1.0, 2.0])]))
                .set_delay(Duration::from_secs(5)),
        )
        .mount(&server)
        .await;
    let mut c = config(&server, 2);
    c.timeout = Duration::from_millis(200);
    c.max_retries = 0;
    let err = embedder(c)
        .embed(&texts(&["x"]), EmbedPurpose::Document)
        .await
        .unwrap_err();
    match &err {
        ProviderError::Transport { message } => assert!(message.contains("timed out"), "{message}"),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn debug_never_shows_the_key() {
    let server = MockServer::start().await;
    let c = config(&server, 8).with_api_key(KEY);
    let config_debug = format!("{c:?}");
    let e = embedder(c);
    let debug = format!("{e:?}");
    let pretty = format!("{e:#?}");
    for shown in [&config_debug, &debug, &pretty] {
        assert!(!shown.contains(KEY), "{shown}");
        assert!(!shown.contains("SECRET"), "{shown}");
        assert!(shown.contains("<redacted>"), "{shown}");
    }
    assert!(debug.contains("test-model"));
    assert_eq!(
        e.identity().generation(),
        "openai-compatible/test-model/d8/v1"
    );
}

#[tokio::test]
async fn credentials_in_the_base_url_are_not_shown() {
    let mut c = OpenAiEmbedderConfig::new("https://user:hunter2@example.com/v1?key=abc", "m", 2);
    c.api_key = None;
    let e = embedder(c.clone());
    for shown in [format!("{e:?}"), format!("{c:?}"), e.endpoint().to_owned()] {
        assert!(!shown.contains("hunter2"), "{shown}");
        assert!(!shown.contains("abc"), "{shown}");
    }
}

/// Set in the environment of the child process `plain_http_needs_no_system_roots` spawns.
const CHILD_ENV: &str = "REMEMBERSTACK_LLM_TEST_NO_ROOTS_CHILD";

#[test]
fn plain_http_needs_no_system_roots() {
    // reqwest 0.13 (rustls + platform verifier) loads the system CA roots when a client
    // is built and fails without any. Simulate a machine without them by pointing
    // rustls-native-certs at nothing, in a child process (the environment of this one
    // is shared by all tests).
    let exe = std::env::current_exe().expect("test binary path");
    let missing = std::env::temp_dir().join("rememberstack-llm-no-such-ca-bundle.pem");
    let output = std::process::Command::new(exe)
        .args([
            "--exact",
            "openai::no_roots_child",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, "1")
        .env("SSL_CERT_FILE", &missing)
        .env("SSL_CERT_DIR", &missing)
        .output()
        .expect("spawn the test binary");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("1 passed"), "{stdout}\n{stderr}");
    assert!(stdout.contains("child ran"), "{stdout}\n{stderr}");
}

/// Runs only inside `plain_http_needs_no_system_roots`'s child process.
#[tokio::test]
async fn no_roots_child() {
    if std::env::var_os(CHILD_ENV).is_none() {
        return;
    }
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(Echo { dimension: 2 })
        .mount(&server)
        .await;
    let got = embedder(config(&server, 2))
        .embed(&texts(&["t7"]), EmbedPurpose::Document)
        .await
        .unwrap();
    assert_eq!(got, vec![vec![7.0, 0.0]]);

    match OpenAiEmbedder::new(OpenAiEmbedderConfig::new(
        "https://api.openai.com/v1",
        "m",
        2,
    )) {
        Err(ProviderError::Config(msg)) => {
            assert!(msg.contains("CA certificates"), "{msg}");
        }
        other => panic!("https without roots should be a Config error: {other:?}"),
    }
    println!("child ran");
}
