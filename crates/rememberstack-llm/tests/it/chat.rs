use std::time::{Duration, Instant};

use rememberstack_core::chat::{ChatModel, ChatRequest, StructuredMode, Usage, canonical_json};
use rememberstack_core::embed::ProviderError;
use rememberstack_llm::{OpenAiChatConfig, OpenAiChatModel, StrictMode};
use serde_json::{Value, json};
use wiremock::matchers::{body_partial_json, header, method, path};
use wiremock::{Mock, MockServer, Request, ResponseTemplate};

const KEY: &str = "sk-test-CHAT-SECRET-42";

fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "claims": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {"text": {"type": "string"}},
                    "required": ["text"],
                    "additionalProperties": false
                }
            }
        },
        "required": ["claims"],
        "additionalProperties": false
    })
}

fn request() -> ChatRequest {
    ChatRequest::new(
        "claimify",
        "You extract claims.",
        "The sky is blue.",
        "claims",
        schema(),
    )
}

/// A config against `server` with a `/v1` path prefix and tiny backoffs.
fn config(server: &MockServer) -> OpenAiChatConfig {
    let mut c = OpenAiChatConfig::new(format!("{}/v1", server.uri()), "test-chat-model");
    c.initial_backoff = Duration::from_millis(1);
    c.max_backoff = Duration::from_millis(10);
    c.max_retries = 2;
    c.timeout = Duration::from_secs(10);
    c
}

fn model(config: OpenAiChatConfig) -> OpenAiChatModel {
    OpenAiChatModel::new(config).expect("valid config")
}

/// A completion whose content is `content`.
fn completion(content: &str, finish_reason: &str) -> Value {
    json!({
        "id": "chatcmpl-123",
        "object": "chat.completion",
        "model": "test-chat-model-2024",
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": content},
            "finish_reason": finish_reason
        }],
        "usage": {"prompt_tokens": 31, "completion_tokens": 7, "total_tokens": 38}
    })
}

fn good_answer() -> Value {
    completion(r#"{"claims": [{"text": "The sky is blue."}]}"#, "stop")
}

async fn bodies(server: &MockServer) -> Vec<Value> {
    server
        .received_requests()
        .await
        .expect("recording is on")
        .iter()
        .map(|r: &Request| r.body_json::<Value>().expect("JSON body"))
        .collect()
}

fn json_object_system(request: &ChatRequest) -> String {
    format!(
        "{}\n\nRespond with a single JSON object and nothing else: no prose, no Markdown \
         code fences. The object must conform to this JSON Schema (named \"{}\"):\n{}",
        request.system,
        request.schema_name,
        canonical_json(&request.schema)
    )
}

#[tokio::test]
async fn strict_request_shape_and_validated_answer() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .and(header("authorization", format!("Bearer {KEY}").as_str()))
        .and(header("content-type", "application/json"))
        .respond_with(
            ResponseTemplate::new(200)
                .insert_header("x-request-id", "req-abc")
                .set_body_json(good_answer()),
        )
        .expect(1)
        .mount(&server)
        .await;

    let mut c = config(&server).with_api_key(KEY);
    c.temperature = Some(0.2);
    let m = model(c);
    assert_eq!(m.model(), "test-chat-model");
    let mut req = request();
    req.max_tokens = Some(512);
    let answer = m.complete_json(&req).await.unwrap();
    assert_eq!(
        answer.value,
        json!({"claims": [{"text": "The sky is blue."}]})
    );
    assert_eq!(answer.model, "test-chat-model-2024");
    assert_eq!(
        answer.usage,
        Usage {
            prompt_tokens: 31,
            completion_tokens: 7
        }
    );
    assert_eq!(answer.provider_request_id.as_deref(), Some("req-abc"));
    assert_eq!(answer.mode, StructuredMode::JsonSchema);

    let sent = bodies(&server).await;
    assert_eq!(sent.len(), 1);
    assert_eq!(
        sent[0],
        json!({
            "model": "test-chat-model",
            "messages": [
                {"role": "system", "content": "You extract claims."},
                {"role": "user", "content": "The sky is blue."}
            ],
            "response_format": {
                "type": "json_schema",
                "json_schema": {"name": "claims", "schema": schema(), "strict": true}
            },
            "temperature": 0.2,
            "max_tokens": 512
        })
    );
    assert!(!m.uses_json_object());
}

#[tokio::test]
async fn refused_strict_mode_falls_back_to_json_object_and_remembers() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(body_partial_json(
            json!({"response_format": {"type": "json_schema"}}),
        ))
        .respond_with(ResponseTemplate::new(400).set_body_json(json!({
            "error": {"message": "response_format json_schema is not supported"}
        })))
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(body_partial_json(
            json!({"response_format": {"type": "json_object"}}),
        ))
        .respond_with(ResponseTemplate::new(200).set_body_json(good_answer()))
        .mount(&server)
        .await;

    let m = model(config(&server));
    let first = m.complete_json(&request()).await.unwrap();
    assert_eq!(first.mode, StructuredMode::JsonObject);
    assert_eq!(first.value["claims"][0]["text"], "The sky is blue.");
    // No request-id header: the completion id stands in.
    assert_eq!(first.provider_request_id.as_deref(), Some("chatcmpl-123"));
    assert!(m.uses_json_object());

    let second = m.complete_json(&request()).await.unwrap();
    assert_eq!(second.mode, StructuredMode::JsonObject);

    let sent = bodies(&server).await;
    let formats: Vec<&Value> = sent.iter().map(|b| &b["response_format"]["type"]).collect();
    assert_eq!(formats, ["json_schema", "json_object", "json_object"]);
    for body in &sent[1..] {
        assert_eq!(body["response_format"], json!({"type": "json_object"}));
        assert_eq!(body["messages"][0]["role"], "system");
        assert_eq!(
            body["messages"][0]["content"],
            json_object_system(&request())
        );
        assert_eq!(body["messages"][1]["content"], "The sky is blue.");
        assert_eq!(body["model"], "test-chat-model");
    }

    // A clone shares the memory; a sibling model for another name does not.
    assert!(m.clone().uses_json_object());
    assert!(!m.with_model("other").unwrap().uses_json_object());
}

#[tokio::test]
async fn strict_always_reports_the_refusal_and_never_skips_strict() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(body_partial_json(
            json!({"response_format": {"type": "json_schema"}}),
        ))
        .respond_with(ResponseTemplate::new(422).set_body_json(json!({
            "detail": "json_schema response format is not supported"
        })))
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(body_partial_json(
            json!({"response_format": {"type": "json_object"}}),
        ))
        .respond_with(ResponseTemplate::new(200).set_body_json(good_answer()))
        .mount(&server)
        .await;

    let mut always = config(&server);
    always.strict = StrictMode::Always;
    let err = model(always).complete_json(&request()).await.unwrap_err();
    assert!(
        matches!(&err, ProviderError::Status { status: 422, message, .. }
            if message.contains("not supported")),
        "{err:?}"
    );
    assert_eq!(bodies(&server).await.len(), 1);

    let mut never = config(&server);
    never.strict = StrictMode::Never;
    let m = model(never);
    assert!(m.uses_json_object());
    let answer = m.complete_json(&request()).await.unwrap();
    assert_eq!(answer.mode, StructuredMode::JsonObject);
    let sent = bodies(&server).await;
    assert_eq!(sent.len(), 2);
    assert_eq!(sent[1]["response_format"], json!({"type": "json_object"}));
}

#[tokio::test]
async fn other_bad_requests_do_not_fall_back() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(400).set_body_json(json!({
            "error": {"message": "maximum context length is 8192 tokens"}
        })))
        .mount(&server)
        .await;
    let m = model(config(&server));
    let err = m.complete_json(&request()).await.unwrap_err();
    assert!(
        matches!(err, ProviderError::Status { status: 400, .. }),
        "{err:?}"
    );
    assert!(!err.is_retryable());
    assert_eq!(bodies(&server).await.len(), 1);
    assert!(!m.uses_json_object());
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
        .respond_with(ResponseTemplate::new(200).set_body_json(good_answer()))
        .with_priority(2)
        .mount(&server)
        .await;

    let mut c = config(&server);
    c.max_backoff = Duration::from_secs(30);
    let started = Instant::now();
    let answer = model(c).complete_json(&request()).await.unwrap();
    let elapsed = started.elapsed();
    assert_eq!(answer.mode, StructuredMode::JsonSchema);
    assert_eq!(bodies(&server).await.len(), 2);
    assert!(
        elapsed >= Duration::from_millis(900),
        "waited only {elapsed:?}"
    );
}

#[tokio::test]
async fn repeated_503_gives_up_after_max_retries() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(503)
                .insert_header("x-request-id", "req-503")
                .set_body_string("upstream overloaded"),
        )
        .mount(&server)
        .await;
    let err = model(config(&server))
        .complete_json(&request())
        .await
        .unwrap_err();
    match &err {
        ProviderError::Status {
            status: 503,
            message,
            ..
        } => assert_eq!(message, "upstream overloaded (request id req-503)"),
        other => panic!("{other:?}"),
    }
    assert!(err.is_retryable());
    assert_eq!(bodies(&server).await.len(), 3);
}

#[tokio::test]
async fn malformed_answers_are_not_retried_here() {
    let cases: Vec<(&str, ResponseTemplate, Vec<String>)> = vec![
        (
            "content not JSON",
            ResponseTemplate::new(200)
                .set_body_json(completion("Sure! The claims are: the sky is blue.", "stop")),
            vec![
                "the content is not JSON".into(),
                "content starts: Sure! The claims are".into(),
            ],
        ),
        (
            "schema violation",
            ResponseTemplate::new(200)
                .set_body_json(completion(r#"{"claims": [{"text": 42}]}"#, "stop")),
            vec!["violates schema `claims` at /claims/0/text: expected string, got integer".into()],
        ),
        (
            "cut off",
            ResponseTemplate::new(200)
                .set_body_json(completion(r#"{"claims": [{"text": "The sky"#, "length")),
            vec![
                "finish_reason length".into(),
                "cut off at the token limit (finish_reason=length".into(),
            ],
        ),
        (
            "no choices",
            ResponseTemplate::new(200)
                .set_body_json(json!({"id": "x", "model": "m", "choices": []})),
            vec![
                "the answer has no choices".into(),
                "request id req-m".into(),
            ],
        ),
        (
            "body not JSON",
            ResponseTemplate::new(200).set_body_string(format!("<html>{}</html>", "x".repeat(900))),
            vec!["the body is not JSON".into()],
        ),
        (
            "refusal",
            ResponseTemplate::new(200).set_body_json(json!({
                "choices": [{"message": {"content": null, "refusal": "I can't help with that."},
                             "finish_reason": "stop"}]
            })),
            vec!["the model refused".into(), "I can't help with that.".into()],
        ),
    ];
    for (name, response, wants) in cases {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .respond_with(response.insert_header("x-request-id", "req-m"))
            .mount(&server)
            .await;
        let err = model(config(&server).with_api_key(KEY))
            .complete_json(&request())
            .await
            .unwrap_err();
        match &err {
            ProviderError::Malformed { message } => {
                for want in &wants {
                    assert!(message.contains(want.as_str()), "{name}: {message}");
                }
                assert!(
                    message.contains("/v1/chat/completions"),
                    "{name}: {message}"
                );
                assert!(!message.contains(KEY), "{name}: {message}");
                // The quoted excerpt is bounded.
                assert!(message.chars().count() < 700, "{name}: {message}");
            }
            other => panic!("{name}: {other:?}"),
        }
        assert_eq!(bodies(&server).await.len(), 1, "{name}: one request");
    }
}

#[tokio::test]
async fn malformed_messages_name_model_and_request_id() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(200)
                .insert_header("x-request-id", "req-xyz")
                .set_body_json(completion("{\"claims\": 3}", "stop")),
        )
        .mount(&server)
        .await;
    let err = model(config(&server))
        .complete_json(&request())
        .await
        .unwrap_err();
    let ProviderError::Malformed { message } = &err else {
        panic!("{err:?}");
    };
    assert!(
        message.contains(
            "(model test-chat-model-2024, finish_reason stop, request id req-xyz): \
             the answer violates schema `claims` at /claims: expected array, got integer; \
             content starts: {\"claims\": 3}"
        ),
        "{message}"
    );
    assert!(err.is_retryable());
}

#[tokio::test]
async fn fenced_and_part_content_is_accepted() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(completion("```json\n{\"claims\": []}\n```", "stop")),
        )
        .up_to_n_times(1)
        .with_priority(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "choices": [{"message": {"content": [
                {"type": "text", "text": "{\"claims\": [{\"text\": "},
                {"type": "text", "text": "\"a\"}]}"}
            ]}, "finish_reason": "stop"}]
        })))
        .with_priority(2)
        .mount(&server)
        .await;
    let m = model(config(&server));
    let a = m.complete_json(&request()).await.unwrap();
    assert_eq!(a.value, json!({"claims": []}));
    let b = m.complete_json(&request()).await.unwrap();
    assert_eq!(b.value, json!({"claims": [{"text": "a"}]}));
    // No usage, model or id in the body: zeros, the configured model, no id.
    assert_eq!(b.usage, Usage::default());
    assert_eq!(b.model, "test-chat-model");
    assert_eq!(b.provider_request_id, None);
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
    let err = model(config(&server).with_api_key(KEY))
        .complete_json(&request())
        .await
        .unwrap_err();
    match &err {
        ProviderError::Status {
            status: 401,
            message,
            retry_after: None,
        } => assert_eq!(message, "Incorrect API key provided: <redacted>."),
        other => panic!("{other:?}"),
    }
    assert!(!format!("{err:?}").contains(KEY));
    assert!(!err.is_retryable());
    assert_eq!(bodies(&server).await.len(), 1);
}

#[tokio::test]
async fn no_key_means_no_authorization_header() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(good_answer()))
        .mount(&server)
        .await;
    model(config(&server))
        .complete_json(&request())
        .await
        .unwrap();
    let reqs = server.received_requests().await.unwrap();
    assert_eq!(reqs.len(), 1);
    assert!(reqs[0].headers.get("authorization").is_none());
}

#[tokio::test]
async fn debug_never_shows_the_key() {
    let server = MockServer::start().await;
    let c = config(&server).with_api_key(KEY);
    let config_debug = format!("{c:?}");
    let m = model(c);
    let sibling = m.with_model("other-model").unwrap();
    for shown in [
        config_debug,
        format!("{m:?}"),
        format!("{m:#?}"),
        format!("{sibling:?}"),
    ] {
        assert!(!shown.contains(KEY), "{shown}");
        assert!(!shown.contains("SECRET"), "{shown}");
        assert!(shown.contains("<redacted>"), "{shown}");
    }
    assert!(format!("{m:?}").contains("test-chat-model"));
    assert!(format!("{sibling:?}").contains("other-model"));
}

#[tokio::test]
async fn sibling_models_send_their_own_name() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(good_answer()))
        .mount(&server)
        .await;
    let m = model(config(&server).with_api_key(KEY));
    let big = m.with_model("big-model").unwrap();
    assert_eq!(big.model(), "big-model");
    big.complete_json(&request()).await.unwrap();
    let reqs = server.received_requests().await.unwrap();
    assert_eq!(reqs[0].body_json::<Value>().unwrap()["model"], "big-model");
    assert!(reqs[0].headers.get("authorization").is_some());
}
