//! The `ChatModel` port: structured JSON completion against a JSON schema.
//! Adapters live in `rememberstack-llm`; without a configured chat model the
//! engine runs its deterministic offline stages.

use crate::embed::ProviderError;
use async_trait::async_trait;
use serde::{Deserialize, Serialize};

/// One structured completion request.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ChatRequest {
    /// A deterministic key naming the logical call (e.g. `selection`).
    pub call_key: String,
    /// The system prompt.
    pub system: String,
    /// The user prompt.
    pub user: String,
    /// The schema's name.
    pub schema_name: String,
    /// The JSON schema the answer must satisfy.
    pub schema: serde_json::Value,
}

/// Token usage of one call.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Prompt tokens.
    pub prompt_tokens: u64,
    /// Completion tokens.
    pub completion_tokens: u64,
}

/// A validated structured answer.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ChatResponse {
    /// The answer, valid against the request's schema.
    pub value: serde_json::Value,
    /// The model that answered.
    pub model: String,
    /// Usage as the provider reported it.
    pub usage: Usage,
}

/// A chat model that answers with JSON matching a schema.
#[async_trait]
pub trait ChatModel: Send + Sync + std::fmt::Debug {
    /// The configured model name.
    fn model(&self) -> &str;
    /// Complete `request`.
    async fn complete_json(&self, request: &ChatRequest) -> Result<ChatResponse, ProviderError>;
}
