//! A sentence-embedding model run in-process on the CPU (feature `local-embedder`).
//!
//! The model is a BERT-family encoder in the sentence-transformers layout (for example
//! all-MiniLM-L6-v2): `config.json`, `tokenizer.json` and `model.safetensors` in one
//! directory. Vectors are the attention-masked mean of the last hidden states,
//! L2-normalized — the sentence-transformers recipe for these models.

use std::collections::VecDeque;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex};

use async_trait::async_trait;
use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config as BertConfig};
use rememberstack_core::embed::{EmbedPurpose, Embedder, EmbedderIdentity, ProviderError};
use sha2::{Digest, Sha256};
use tokenizers::{Encoding, Tokenizer, TruncationParams};

use crate::model_files::{ModelDir, SHORT_HASH_HEX, hash_file, hex_digest};

/// The model configuration file.
const CONFIG_FILE: &str = "config.json";
/// The tokenizer file (Hugging Face `tokenizers` format).
const TOKENIZER_FILE: &str = "tokenizer.json";
/// The weights.
const WEIGHTS_FILE: &str = "model.safetensors";
/// The sentence-transformers settings (optional): `max_seq_length`.
const SENTENCE_CONFIG_FILE: &str = "sentence_bert_config.json";
/// The sentence-transformers pooling settings (optional): refused unless mean pooling.
const POOLING_CONFIG_FILE: &str = "1_Pooling/config.json";
/// The embedder errors name.
const WHO: &str = "local embedder";

/// A sentence-embedding model loaded from a local directory and run on the CPU.
///
/// The directory holds `config.json` (a BERT configuration; the dimension is its
/// `hidden_size`), `tokenizer.json` and `model.safetensors` (tensor names with or
/// without a `bert.` prefix). A sentence-transformers `sentence_bert_config.json`, when
/// present, sets the token limit (`max_seq_length`); otherwise it is the model's
/// `max_position_embeddings`. Longer texts are truncated.
///
/// Embedding pads each batch to its longest text and pools with the attention mask,
/// so a text gets the same vector alone or in any batch (the tokenizer's own padding
/// setting is switched off). A call's texts are grouped by length into forward passes
/// of at most [`LocalEmbedder::PASS_TEXTS`].
///
/// Inference runs on the embedder's own thread, started by [`LocalEmbedder::load`],
/// which also starts the tokenizer's and the tensor library's worker pools from there.
/// The embedded store pins its pipeline to one CPU (see the core's `affinity`
/// module), and threads inherit their creator's CPU set: had the pools started from
/// the pipeline, the whole model would run on that one CPU beside the SQLite writer.
/// Query passes go before waiting document passes (with documents still given one
/// pass in [`LocalEmbedder::DOCUMENT_PASS_EVERY`]), and small requests that wait
/// together (concurrent queries, say) share a pass.
///
/// The identity is `local/<directory name>/d<hidden_size>/v1-<sha256>`, the last part
/// twelve hex digits of a SHA-256 over the bytes of the files that shape the vectors:
/// a different model, tokenizer or configuration is a different generation, and the
/// engine re-embeds.
#[derive(Clone)]
pub struct LocalEmbedder {
    identity: EmbedderIdentity,
    model_dir: PathBuf,
    max_tokens: usize,
    files_sha256: String,
    worker: Arc<Worker>,
}

/// The loaded model, owned by the inference thread.
struct Inner {
    model: BertModel,
    tokenizer: Tokenizer,
    pad_id: u32,
    dimension: usize,
}

impl LocalEmbedder {
    /// The provider name in the identity.
    pub const PROVIDER: &'static str = "local";
    /// The adapter version in the identity (bumped when the pooling or tokenization
    /// recipe changes); the files' hash follows it.
    pub const VERSION: &'static str = "1";
    /// The most texts one call should bring (the embedder's `max_batch`).
    pub const DEFAULT_MAX_BATCH: usize = 32;
    /// The most texts one forward pass carries. A pass cannot be interrupted, so this
    /// bounds how long a query waits behind document work; past a few short texts a
    /// larger batch costs about as much per text.
    pub const PASS_TEXTS: usize = 8;
    /// When queries and documents both wait, at least one pass in this many is the
    /// documents', so that processing still moves under a steady stream of queries.
    pub const DOCUMENT_PASS_EVERY: usize = 4;

    /// Loads the model in `model_dir`. Reads and hashes every file (about 90 MB for
    /// all-MiniLM-L6-v2): call it once, off latency-sensitive paths.
    ///
    /// Fails with [`ProviderError::Config`] naming the file when the directory or a
    /// file is missing or unreadable, or holds something other than a BERT model.
    pub fn load(model_dir: &Path) -> Result<Self, ProviderError> {
        let files = ModelDir::new(model_dir, WHO);
        if !model_dir.is_dir() {
            return Err(files.err(format!(
                "the model directory {} does not exist or is not a directory; it must hold \
                 {CONFIG_FILE}, {TOKENIZER_FILE} and {WEIGHTS_FILE}",
                model_dir.display()
            )));
        }
        let mut hasher = Sha256::new();

        let config_bytes = files.read(CONFIG_FILE)?;
        hash_file(&mut hasher, CONFIG_FILE, &config_bytes);
        let config: BertConfig = serde_json::from_slice(&config_bytes).map_err(|e| {
            files.file_err(CONFIG_FILE, format!("is not a BERT configuration: {e}"))
        })?;
        if config.hidden_size == 0 || config.max_position_embeddings == 0 {
            return Err(files.file_err(
                CONFIG_FILE,
                "has a zero hidden_size or max_position_embeddings",
            ));
        }

        let max_tokens = match files.read_optional(SENTENCE_CONFIG_FILE)? {
            Some(bytes) => {
                hash_file(&mut hasher, SENTENCE_CONFIG_FILE, &bytes);
                let settings: serde_json::Value = serde_json::from_slice(&bytes).map_err(|e| {
                    files.file_err(SENTENCE_CONFIG_FILE, format!("is not JSON: {e}"))
                })?;
                match settings.get("max_seq_length") {
                    None => config.max_position_embeddings,
                    Some(v) => v
                        .as_u64()
                        .and_then(|n| usize::try_from(n).ok())
                        .filter(|n| (2..=config.max_position_embeddings).contains(n))
                        .ok_or_else(|| {
                            files.file_err(
                                SENTENCE_CONFIG_FILE,
                                format!(
                                    "has max_seq_length {v}; it must be a whole number from 2 \
                                     to max_position_embeddings ({})",
                                    config.max_position_embeddings
                                ),
                            )
                        })?,
                }
            }
            None => config.max_position_embeddings,
        };
        if let Some(bytes) = files.read_optional(POOLING_CONFIG_FILE)? {
            let pooling: serde_json::Value = serde_json::from_slice(&bytes)
                .map_err(|e| files.file_err(POOLING_CONFIG_FILE, format!("is not JSON: {e}")))?;
            if pooling.get("pooling_mode_mean_tokens") == Some(&serde_json::Value::Bool(false)) {
                return Err(files.file_err(
                    POOLING_CONFIG_FILE,
                    "asks for a pooling other than the mean of the tokens, which this \
                     embedder does not do",
                ));
            }
        }

        let tokenizer_bytes = files.read(TOKENIZER_FILE)?;
        hash_file(&mut hasher, TOKENIZER_FILE, &tokenizer_bytes);
        let mut tokenizer = Tokenizer::from_bytes(&tokenizer_bytes)
            .map_err(|e| files.file_err(TOKENIZER_FILE, format!("is not a tokenizer: {e}")))?;
        // The shipped tokenizer may pad every input to a fixed length: padding is done
        // here, per batch, with an attention mask instead.
        let pad_id = tokenizer.get_padding().map_or(0, |p| p.pad_id);
        tokenizer.with_padding(None);
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: max_tokens,
                ..TruncationParams::default()
            }))
            .map_err(|e| {
                files.file_err(
                    TOKENIZER_FILE,
                    format!("refuses truncation to {max_tokens} tokens: {e}"),
                )
            })?;

        let weights = files.read(WEIGHTS_FILE)?;
        hash_file(&mut hasher, WEIGHTS_FILE, &weights);
        let device = Device::Cpu;
        let model = VarBuilder::from_slice_safetensors(&weights, DType::F32, &device)
            .and_then(|vb| BertModel::load(vb, &config))
            .map_err(|e| {
                files.file_err(
                    WEIGHTS_FILE,
                    format!("does not hold the BERT weights {CONFIG_FILE} describes: {e}"),
                )
            })?;
        drop(weights);

        let files_sha256 = hex_digest(hasher);
        let inner = Arc::new(Inner {
            model,
            tokenizer,
            pad_id,
            dimension: config.hidden_size,
        });
        let worker = Worker::start(inner)
            .map_err(|e| files.err(format!("cannot start the inference thread: {e}")))?;
        let model_name = files.model_name("bert");
        let identity = EmbedderIdentity {
            provider: Self::PROVIDER.to_owned(),
            model: model_name,
            dimension: config.hidden_size,
            version: format!("{}-{}", Self::VERSION, &files_sha256[..SHORT_HASH_HEX]),
        };
        tracing::info!(
            generation = %identity.generation(),
            max_tokens,
            "local embedding model loaded"
        );
        Ok(Self {
            identity,
            model_dir: model_dir.to_path_buf(),
            max_tokens,
            files_sha256,
            worker: Arc::new(worker),
        })
    }

    /// The directory the model was loaded from.
    pub fn model_dir(&self) -> &Path {
        &self.model_dir
    }

    /// The vector dimension (the model's `hidden_size`).
    pub fn dimension(&self) -> usize {
        self.identity.dimension
    }

    /// The most tokens of a text the model sees; the rest is cut off.
    pub fn max_tokens(&self) -> usize {
        self.max_tokens
    }

    /// The full SHA-256 (hex) over the files that shape the vectors; the generation
    /// carries its first twelve digits.
    pub fn files_sha256(&self) -> &str {
        &self.files_sha256
    }
}

impl fmt::Debug for LocalEmbedder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LocalEmbedder")
            .field("identity", &self.identity)
            .field("model_dir", &self.model_dir)
            .field("max_tokens", &self.max_tokens)
            .finish_non_exhaustive()
    }
}

#[async_trait]
impl Embedder for LocalEmbedder {
    fn identity(&self) -> &EmbedderIdentity {
        &self.identity
    }

    fn is_in_process(&self) -> bool {
        true
    }

    fn max_batch(&self) -> usize {
        Self::DEFAULT_MAX_BATCH
    }

    async fn embed(
        &self,
        texts: &[String],
        purpose: EmbedPurpose,
    ) -> Result<Vec<Vec<f32>>, ProviderError> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        // Texts of similar length go to the same pass, so that little of it is
        // padding; each pass is a job of its own, and other callers' jobs (queries
        // first) can run between them.
        let mut order: Vec<usize> = (0..texts.len()).collect();
        order.sort_by_key(|&i| texts[i].len());
        let urgent = purpose == EmbedPurpose::Query;
        let mut answers = Vec::new();
        for part in order.chunks(Self::PASS_TEXTS) {
            let (reply, answer) = tokio::sync::oneshot::channel();
            let texts = part.iter().map(|&i| texts[i].clone()).collect();
            self.worker.submit(Job { texts, reply }, urgent);
            answers.push((part, answer));
        }
        let mut vectors = vec![Vec::new(); texts.len()];
        for (part, answer) in answers {
            let got = answer
                .await
                .map_err(|_| inference_err("the inference thread stopped"))??;
            if got.len() != part.len() {
                return Err(inference_err(
                    "the model returned a vector count other than asked",
                ));
            }
            for (&i, v) in part.iter().zip(got) {
                vectors[i] = v;
            }
        }
        Ok(vectors)
    }
}

/// One embedding request for the inference thread.
struct Job {
    texts: Vec<String>,
    reply: tokio::sync::oneshot::Sender<Result<Vec<Vec<f32>>, ProviderError>>,
}

/// The waiting jobs: queries first, then documents, each in arrival order.
#[derive(Default)]
struct Jobs {
    queries: VecDeque<Job>,
    documents: VecDeque<Job>,
    /// Query passes run in a row while documents waited.
    queries_ahead: usize,
    closed: bool,
}

/// The inference thread's queue. Dropping the last embedder handle closes it, and
/// the thread ends after the jobs already queued.
struct Worker {
    jobs: Arc<(Mutex<Jobs>, Condvar)>,
}

impl Worker {
    /// Starts the inference thread from the loading thread (the configuration loads
    /// the model outside any pipeline). Its first job embeds one short text, so that
    /// the worker pools start from it before any pipeline asks.
    fn start(inner: Arc<Inner>) -> std::io::Result<Self> {
        let jobs: Arc<(Mutex<Jobs>, Condvar)> = Arc::default();
        let queue = Arc::clone(&jobs);
        std::thread::Builder::new()
            .name("rememberstack-embed".into())
            .spawn(move || {
                // A panic in the model answers its job with an error and keeps the
                // thread serving the next ones (a dead thread would leave every later
                // caller waiting).
                let run = |texts: Vec<String>| {
                    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        inner.embed_blocking(texts)
                    }))
                    .unwrap_or_else(|_| Err(inference_err("the model panicked")))
                };
                let _ = run(vec!["warm up".to_owned()]);
                while let Some(group) = next_jobs(&queue, LocalEmbedder::PASS_TEXTS) {
                    answer_group(group, &run);
                }
            })?;
        Ok(Self { jobs })
    }

    fn submit(&self, job: Job, urgent: bool) {
        let (lock, ready) = &*self.jobs;
        let mut jobs = lock.lock().unwrap_or_else(|p| p.into_inner());
        if urgent {
            jobs.queries.push_back(job);
        } else {
            jobs.documents.push_back(job);
        }
        ready.notify_one();
    }
}

/// Waits for work and takes the jobs that already wait in one queue, in arrival
/// order, while their texts fit in `max_texts` (the first job is taken whatever its
/// size); `None` once the queue is closed and empty. The queue is the queries' when
/// any wait, except that documents that waited through
/// [`LocalEmbedder::DOCUMENT_PASS_EVERY`] − 1 query passes get the next one.
///
/// Jobs that arrived while the model was busy are run as one forward pass: a batch
/// of short texts costs far less per text than each alone (the model's matrix
/// products and thread hand-offs are paid once). Nothing waits for company, so a job
/// on an idle embedder runs at once and alone.
fn next_jobs(queue: &(Mutex<Jobs>, Condvar), max_texts: usize) -> Option<Vec<Job>> {
    let (lock, ready) = queue;
    let mut jobs = lock.lock().unwrap_or_else(|p| p.into_inner());
    loop {
        let state = &mut *jobs;
        let documents_due = !state.documents.is_empty()
            && (state.queries.is_empty()
                || state.queries_ahead + 1 >= LocalEmbedder::DOCUMENT_PASS_EVERY);
        let waiting = if documents_due {
            state.queries_ahead = 0;
            &mut state.documents
        } else {
            if !state.documents.is_empty() {
                state.queries_ahead += 1;
            }
            &mut state.queries
        };
        if let Some(first) = waiting.pop_front() {
            let mut texts = first.texts.len();
            let mut group = vec![first];
            while let Some(next) = waiting.front() {
                if texts + next.texts.len() > max_texts {
                    break;
                }
                texts += next.texts.len();
                group.extend(waiting.pop_front());
            }
            return Some(group);
        }
        if state.closed {
            return None;
        }
        jobs = ready.wait(jobs).unwrap_or_else(|p| p.into_inner());
    }
}

/// Embeds a group of jobs together and answers each with its own vectors. When the
/// group fails, each job is run again alone, so a text the model cannot embed fails
/// only the job that brought it.
fn answer_group(
    group: Vec<Job>,
    run: &impl Fn(Vec<String>) -> Result<Vec<Vec<f32>>, ProviderError>,
) {
    if group.len() > 1 {
        let texts: Vec<String> = group.iter().flat_map(|j| j.texts.iter().cloned()).collect();
        let expected = texts.len();
        if let Ok(vectors) = run(texts).map(Vec::into_iter)
            && vectors.len() == expected
        {
            let mut vectors = vectors;
            for job in group {
                let mine: Vec<Vec<f32>> = vectors.by_ref().take(job.texts.len()).collect();
                let _ = job.reply.send(Ok(mine));
            }
            return;
        }
    }
    for job in group {
        let _ = job.reply.send(run(job.texts));
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        let (lock, ready) = &*self.jobs;
        lock.lock().unwrap_or_else(|p| p.into_inner()).closed = true;
        ready.notify_all();
    }
}

impl Inner {
    /// Tokenizes `texts` and returns one vector per text, in order: one forward pass
    /// (the worker's passes carry at most [`LocalEmbedder::PASS_TEXTS`], grouped by
    /// length in [`LocalEmbedder`]'s `embed`), or more for a longer list.
    fn embed_blocking(&self, texts: Vec<String>) -> Result<Vec<Vec<f32>>, ProviderError> {
        let encodings = self
            .tokenizer
            .encode_batch(texts, true)
            .map_err(|e| inference_err(format!("tokenization failed: {e}")))?;
        let mut vectors = Vec::with_capacity(encodings.len());
        for batch in encodings.chunks(LocalEmbedder::PASS_TEXTS) {
            let batch: Vec<&Encoding> = batch.iter().collect();
            vectors.extend(self.forward(&batch)?);
        }
        Ok(vectors)
    }

    /// One forward pass over `batch`, padded to its longest sequence; the attention-
    /// masked mean of the last hidden states, L2-normalized.
    fn forward(&self, batch: &[&Encoding]) -> Result<Vec<Vec<f32>>, ProviderError> {
        let n = batch.len();
        let len = batch
            .iter()
            .map(|e| e.get_ids().len())
            .max()
            .unwrap_or(0)
            .max(1);
        let mut ids = vec![self.pad_id; n * len];
        let mut mask = vec![0u32; n * len];
        for (row, e) in batch.iter().enumerate() {
            let start = row * len;
            ids[start..start + e.get_ids().len()].copy_from_slice(e.get_ids());
            // The tokenizer pads nothing here, so its mask is all ones; keep it anyway.
            mask[start..start + e.get_attention_mask().len()]
                .copy_from_slice(e.get_attention_mask());
        }
        let hidden = self
            .run_model(ids, &mask, n, len)
            .map_err(|e| inference_err(format!("the model failed: {e}")))?;

        let dim = self.dimension;
        if hidden.len() != n * len * dim {
            return Err(ProviderError::DimensionMismatch {
                expected: dim,
                got: hidden.len() / (n * len).max(1),
            });
        }
        let mut out = Vec::with_capacity(n);
        for row in 0..n {
            let mut sum = vec![0.0f64; dim];
            let mut count = 0.0f64;
            for t in 0..len {
                if mask[row * len + t] == 0 {
                    continue;
                }
                count += 1.0;
                let h = &hidden[(row * len + t) * dim..(row * len + t + 1) * dim];
                for (s, x) in sum.iter_mut().zip(h) {
                    *s += f64::from(*x);
                }
            }
            let count = count.max(1.0);
            let norm = sum.iter().map(|s| (s / count).powi(2)).sum::<f64>().sqrt();
            let v: Vec<f32> = sum
                .iter()
                .map(|s| {
                    if norm > 0.0 {
                        (s / count / norm) as f32
                    } else {
                        0.0
                    }
                })
                .collect();
            if v.iter().any(|x| !x.is_finite()) {
                return Err(inference_err("the model produced a non-finite vector"));
            }
            out.push(v);
        }
        Ok(out)
    }

    /// The last hidden states, flattened `[n, len, dimension]`.
    fn run_model(
        &self,
        ids: Vec<u32>,
        mask: &[u32],
        n: usize,
        len: usize,
    ) -> candle_core::Result<Vec<f32>> {
        let device = Device::Cpu;
        let input_ids = Tensor::from_vec(ids, (n, len), &device)?;
        let token_type_ids = input_ids.zeros_like()?;
        let attention_mask = Tensor::from_slice(mask, (n, len), &device)?;
        self.model
            .forward(&input_ids, &token_type_ids, Some(&attention_mask))?
            .flatten_all()?
            .to_vec1::<f32>()
    }
}

/// A failure while embedding. Reported as a malformed answer: the work ledger retries
/// it a bounded number of times, then dead-letters the item with this message.
fn inference_err(message: impl Into<String>) -> ProviderError {
    ProviderError::Malformed {
        message: format!("local embedder: {}", message.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type Answer = tokio::sync::oneshot::Receiver<Result<Vec<Vec<f32>>, ProviderError>>;

    fn job(texts: &[&str]) -> (Job, Answer) {
        let (reply, answer) = tokio::sync::oneshot::channel();
        let texts = texts.iter().map(|t| (*t).to_owned()).collect();
        (Job { texts, reply }, answer)
    }

    fn queue() -> (Mutex<Jobs>, Condvar) {
        (Mutex::new(Jobs::default()), Condvar::new())
    }

    fn texts_of(group: &[Job]) -> Vec<Vec<String>> {
        group.iter().map(|j| j.texts.clone()).collect()
    }

    #[test]
    fn waiting_jobs_are_grouped_queries_first_within_the_batch() {
        let q = queue();
        {
            let mut jobs = q.0.lock().unwrap();
            for texts in [&["d1", "d2"][..], &["d3"], &["d4", "d5", "d6"]] {
                jobs.documents.push_back(job(texts).0);
            }
            for texts in [&["q1"][..], &["q2", "q3"], &["q4"]] {
                jobs.queries.push_back(job(texts).0);
            }
        }
        // Queries first, as many as fit in three texts, in arrival order.
        let group = next_jobs(&q, 3).unwrap();
        assert_eq!(texts_of(&group), [vec!["q1"], vec!["q2", "q3"]]);
        let group = next_jobs(&q, 3).unwrap();
        assert_eq!(texts_of(&group), [vec!["q4"]]);
        // Then documents; a job larger than the batch still goes, alone.
        let group = next_jobs(&q, 3).unwrap();
        assert_eq!(texts_of(&group), [vec!["d1", "d2"], vec!["d3"]]);
        let group = next_jobs(&q, 2).unwrap();
        assert_eq!(texts_of(&group), [vec!["d4", "d5", "d6"]]);
        q.0.lock().unwrap().closed = true;
        assert!(next_jobs(&q, 3).is_none());
    }

    #[test]
    fn waiting_documents_get_a_pass_between_queries() {
        let q = queue();
        {
            let mut jobs = q.0.lock().unwrap();
            jobs.documents.push_back(job(&["d1"]).0);
            jobs.documents.push_back(job(&["d2"]).0);
            for _ in 0..10 {
                jobs.queries.push_back(job(&["q"]).0);
            }
        }
        let every = LocalEmbedder::DOCUMENT_PASS_EVERY;
        let mut order = Vec::new();
        for _ in 0..12 {
            order.push(next_jobs(&q, 1).unwrap()[0].texts[0].clone());
        }
        let mut want = vec!["q"; 10];
        want.insert(every - 1, "d1");
        want.insert(2 * every - 1, "d2");
        assert_eq!(order, want);
        q.0.lock().unwrap().closed = true;
        assert!(next_jobs(&q, 3).is_none());
    }

    /// A stand-in model: one "vector" per text, its length; "bad" fails the pass.
    fn fake(texts: Vec<String>) -> Result<Vec<Vec<f32>>, ProviderError> {
        if texts.iter().any(|t| t == "bad") {
            return Err(inference_err("bad text"));
        }
        Ok(texts.iter().map(|t| vec![t.len() as f32]).collect())
    }

    #[test]
    fn a_group_answers_each_job_with_its_own_vectors() {
        let (a, mut ra) = job(&["x", "yy"]);
        let (b, mut rb) = job(&["zzz"]);
        let (c, mut rc) = job(&["", "wwww", "v"]);
        answer_group(vec![a, b, c], &fake);
        assert_eq!(ra.try_recv().unwrap().unwrap(), [vec![1.0], vec![2.0]]);
        assert_eq!(rb.try_recv().unwrap().unwrap(), [vec![3.0]]);
        assert_eq!(
            rc.try_recv().unwrap().unwrap(),
            [vec![0.0], vec![4.0], vec![1.0]]
        );
    }

    #[test]
    fn a_failing_text_fails_only_its_own_job() {
        let (a, mut ra) = job(&["ok"]);
        let (b, mut rb) = job(&["bad", "fine"]);
        let (c, mut rc) = job(&["also"]);
        answer_group(vec![a, b, c], &fake);
        assert_eq!(ra.try_recv().unwrap().unwrap(), [vec![2.0]]);
        assert!(rb.try_recv().unwrap().is_err());
        assert_eq!(rc.try_recv().unwrap().unwrap(), [vec![4.0]]);
    }
}
