use std::sync::Arc;

use rememberstack_core::chat::{ChatModel, ChatRequest, StructuredMode, Usage, request_hash};
use rememberstack_core::embed::ProviderError;
use rememberstack_llm::{ChatSeats, ScriptedChatModel};
use serde_json::{Value, json};

fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {"keep": {"type": "array", "items": {"type": "integer"}}},
        "required": ["keep"],
        "additionalProperties": false
    })
}

fn request(call_key: &str, user: &str) -> ChatRequest {
    ChatRequest::new(call_key, "Select passages.", user, "selection", schema())
}

#[tokio::test]
async fn answers_by_call_key_in_queue_order() {
    let model = ScriptedChatModel::new("scripted-model")
        .answer("selection", ScriptedChatModel::ANY, json!({"keep": [1]}))
        .answer("selection", ScriptedChatModel::ANY, json!({"keep": [2]}));
    assert_eq!(model.unused_answers(), 2);

    let first = model
        .complete_json(&request("selection", "a"))
        .await
        .unwrap();
    assert_eq!(first.value, json!({"keep": [1]}));
    assert_eq!(first.model, "scripted-model");
    assert_eq!(first.mode, StructuredMode::Scripted);
    assert_eq!(first.usage, Usage::default());
    let second = model
        .complete_json(&request("selection", "b"))
        .await
        .unwrap();
    assert_eq!(second.value, json!({"keep": [2]}));
    assert_eq!(model.unused_answers(), 0);

    // The queue is used up: the next request is unexpected.
    let err = model
        .complete_json(&request("selection", "c"))
        .await
        .unwrap_err();
    assert!(matches!(err, ProviderError::Config(_)), "{err:?}");

    assert_eq!(model.call_count(), 3);
    let users: Vec<String> = model.calls().into_iter().map(|r| r.user).collect();
    assert_eq!(users, ["a", "b", "c"]);
    assert_eq!(model.model(), "scripted-model");
}

#[tokio::test]
async fn exact_request_hash_wins_over_the_wildcard() {
    let special = request("selection", "special");
    let model = ScriptedChatModel::new("m")
        .answer("selection", ScriptedChatModel::ANY, json!({"keep": []}))
        .answer("selection", request_hash(&special), json!({"keep": [7]}));

    let got = model.complete_json(&special).await.unwrap();
    assert_eq!(got.value, json!({"keep": [7]}));
    let got = model
        .complete_json(&request("selection", "other"))
        .await
        .unwrap();
    assert_eq!(got.value, json!({"keep": []}));

    // Once the exact answer is used, the same request falls back to the wildcard,
    // and once that is used too, it is unexpected.
    let err = model.complete_json(&special).await.unwrap_err();
    let ProviderError::Config(message) = &err else {
        panic!("{err:?}");
    };
    assert!(
        message.starts_with(&format!(
            "unexpected chat request: call_key=selection, request_hash={}",
            request_hash(&special)
        )),
        "{message}"
    );
}

#[tokio::test]
async fn a_hash_for_another_request_does_not_match() {
    let model = ScriptedChatModel::new("m").answer(
        "selection",
        request_hash(&request("selection", "x")),
        json!({"keep": []}),
    );
    let err = model
        .complete_json(&request("selection", "y"))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, ProviderError::Config(m) if m.contains("unexpected chat request")),
        "{err:?}"
    );
    // Nor does a call key other than the scripted one.
    let err = model
        .complete_json(&request("claimify", "x"))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, ProviderError::Config(m)
            if m.starts_with("unexpected chat request: call_key=claimify, request_hash=")),
        "{err:?}"
    );
    assert_eq!(model.unused_answers(), 1);
    assert_eq!(model.call_count(), 2);
}

#[tokio::test]
async fn injected_errors_come_back_in_order() {
    let model = ScriptedChatModel::new("m")
        .fail(
            "selection",
            ScriptedChatModel::ANY,
            ProviderError::Status {
                status: 429,
                message: "slow down".into(),
                retry_after: None,
            },
        )
        .fail(
            "selection",
            ScriptedChatModel::ANY,
            ProviderError::Transport {
                message: "reset".into(),
            },
        )
        .answer("selection", ScriptedChatModel::ANY, json!({"keep": [0]}));
    let r = request("selection", "u");
    assert!(matches!(
        model.complete_json(&r).await,
        Err(ProviderError::Status { status: 429, .. })
    ));
    assert!(matches!(
        model.complete_json(&r).await,
        Err(ProviderError::Transport { .. })
    ));
    assert_eq!(
        model.complete_json(&r).await.unwrap().value,
        json!({"keep": [0]})
    );
}

#[tokio::test]
async fn scripted_answers_are_validated_against_the_schema() {
    let model = ScriptedChatModel::new("m")
        .answer(
            "selection",
            ScriptedChatModel::ANY,
            json!({"keep": ["one"]}),
        )
        .answer("selection", ScriptedChatModel::ANY, json!({"drop": []}));
    let r = request("selection", "u");
    for want in [
        "at /keep/0: expected integer, got string",
        "at /keep: required property is missing",
    ] {
        let err = model.complete_json(&r).await.unwrap_err();
        match &err {
            ProviderError::Malformed { message } => {
                assert!(message.contains(want), "{message}");
                assert!(message.contains("call_key=selection"), "{message}");
                assert!(message.contains("`selection`"), "{message}");
            }
            other => panic!("{other:?}"),
        }
        assert!(err.is_retryable());
    }
}

#[tokio::test]
async fn answer_always_repeats_after_the_queue() {
    let model = ScriptedChatModel::new("m")
        .with_usage(Usage {
            prompt_tokens: 10,
            completion_tokens: 2,
        })
        .answer_always("selection", ScriptedChatModel::ANY, json!({"keep": []}))
        .answer("selection", ScriptedChatModel::ANY, json!({"keep": [5]}));
    let r = request("selection", "u");
    assert_eq!(
        model.complete_json(&r).await.unwrap().value,
        json!({"keep": [5]})
    );
    for _ in 0..3 {
        let got = model.complete_json(&r).await.unwrap();
        assert_eq!(got.value, json!({"keep": []}));
        assert_eq!(got.usage.prompt_tokens, 10);
    }
    assert_eq!(model.unused_answers(), 0);
}

#[tokio::test]
async fn shared_models_can_be_scripted_later_and_seated() {
    let model = Arc::new(ScriptedChatModel::new("default-model"));
    let claimify = Arc::new(ScriptedChatModel::new("claimify-model"));
    let seats = ChatSeats::new(model.clone()).with_seat("claimify", claimify.clone());
    assert_eq!(seats.seat("selection").unwrap().model(), "default-model");
    assert_eq!(seats.seat("claimify").unwrap().model(), "claimify-model");

    model.push_answer("selection", ScriptedChatModel::ANY, json!({"keep": [3]}));
    claimify.push_error(
        "claimify",
        ScriptedChatModel::ANY,
        ProviderError::Config("boom".into()),
    );
    let got = seats
        .seat("selection")
        .unwrap()
        .complete_json(&request("selection", "u"))
        .await
        .unwrap();
    assert_eq!(got.value, json!({"keep": [3]}));
    assert!(
        seats
            .seat("claimify")
            .unwrap()
            .complete_json(&request("claimify", "u"))
            .await
            .is_err()
    );
    assert_eq!(model.call_count(), 1);
    assert_eq!(claimify.call_count(), 1);
    assert!(format!("{model:?}").contains("default-model"));
}
