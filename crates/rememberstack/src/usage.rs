//! Provider usage in this process: every embedder and chat-model call the engine
//! makes (ingest stages and request-path query embeddings alike), counted by
//! wrapping the providers the memory was opened with.

use async_trait::async_trait;
use rememberstack_core::chat::{ChatModel, ChatRequest, ChatResponse};
use rememberstack_core::embed::{EmbedPurpose, Embedder, EmbedderIdentity, ProviderError};
use serde::Serialize;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// Counters of one provider seat.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct SeatUsage {
    /// `embedder` or `chat`.
    pub provider: String,
    /// The seat (`embed`, `selection`, `claimify`, `normalize`, `resolve`,
    /// `adjudicate`).
    pub seat: String,
    /// The model (embedder generation for the embedder).
    pub model: String,
    /// Calls that answered.
    pub calls: u64,
    /// Calls that failed.
    pub failures: u64,
    /// Texts embedded (embedder only).
    pub texts: u64,
    /// Prompt tokens the provider reported (chat only).
    pub prompt_tokens: u64,
    /// Completion tokens the provider reported (chat only).
    pub completion_tokens: u64,
}

/// The usage of every seat, shared by the wrappers.
#[derive(Debug, Default)]
pub struct ProviderUsage {
    seats: Mutex<BTreeMap<(String, String), SeatUsage>>,
}

impl ProviderUsage {
    fn record(&self, provider: &str, seat: &str, model: &str, f: impl FnOnce(&mut SeatUsage)) {
        let Ok(mut seats) = self.seats.lock() else {
            return;
        };
        let entry = seats
            .entry((provider.to_string(), seat.to_string()))
            .or_insert_with(|| SeatUsage {
                provider: provider.to_string(),
                seat: seat.to_string(),
                model: model.to_string(),
                ..SeatUsage::default()
            });
        f(entry);
    }

    /// Every seat's counters, by provider then seat.
    pub fn snapshot(&self) -> Vec<SeatUsage> {
        self.seats
            .lock()
            .map(|s| s.values().cloned().collect())
            .unwrap_or_default()
    }
}

/// An embedder that counts its calls.
#[derive(Debug)]
pub(crate) struct CountingEmbedder {
    pub(crate) inner: Arc<dyn Embedder>,
    pub(crate) usage: Arc<ProviderUsage>,
}

#[async_trait]
impl Embedder for CountingEmbedder {
    fn identity(&self) -> &EmbedderIdentity {
        self.inner.identity()
    }

    fn is_in_process(&self) -> bool {
        self.inner.is_in_process()
    }

    fn max_batch(&self) -> usize {
        self.inner.max_batch()
    }

    fn degraded(&self) -> Option<rememberstack_core::embed::Degraded> {
        self.inner.degraded()
    }

    async fn embed(
        &self,
        texts: &[String],
        purpose: EmbedPurpose,
    ) -> Result<Vec<Vec<f32>>, ProviderError> {
        let result = self.inner.embed(texts, purpose).await;
        let model = self.inner.identity().generation();
        let n = texts.len() as u64;
        self.usage
            .record("embedder", "embed", &model, |u| match &result {
                Ok(_) => {
                    u.calls += 1;
                    u.texts += n;
                }
                Err(_) => u.failures += 1,
            });
        result
    }
}

/// A chat model that counts its calls and tokens.
#[derive(Debug)]
pub(crate) struct CountingChat {
    pub(crate) inner: Arc<dyn ChatModel>,
    pub(crate) seat: String,
    pub(crate) usage: Arc<ProviderUsage>,
}

#[async_trait]
impl ChatModel for CountingChat {
    fn model(&self) -> &str {
        self.inner.model()
    }

    async fn complete_json(&self, request: &ChatRequest) -> Result<ChatResponse, ProviderError> {
        let result = self.inner.complete_json(request).await;
        self.usage
            .record("chat", &self.seat, self.inner.model(), |u| match &result {
                Ok(r) => {
                    u.calls += 1;
                    u.prompt_tokens += r.usage.prompt_tokens;
                    u.completion_tokens += r.usage.completion_tokens;
                }
                Err(_) => u.failures += 1,
            });
        result
    }
}

/// Wrap a chat seat.
pub(crate) fn count_chat(
    inner: Arc<dyn ChatModel>,
    seat: &str,
    usage: &Arc<ProviderUsage>,
) -> Arc<dyn ChatModel> {
    Arc::new(CountingChat {
        inner,
        seat: seat.to_string(),
        usage: usage.clone(),
    })
}
