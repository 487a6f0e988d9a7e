//! A static embedding model (feature `static-embedder`): a table of token vectors in
//! the model2vec layout, no neural network.
//!
//! A text's vector is the weighted mean of its tokens' rows of the table,
//! L2-normalized. There is no forward pass, so thousands of texts take milliseconds.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use rememberstack_core::embed::{EmbedPurpose, Embedder, EmbedderIdentity, ProviderError};
use safetensors::{Dtype, SafeTensors, tensor::TensorView};
use sha2::{Digest, Sha256};
use tokenizers::Tokenizer;
use tokenizers::models::ModelWrapper;

use crate::model_files::{ModelDir, SHORT_HASH_HEX, hash_file, hex_digest};

/// The model settings (optional; hashed, not otherwise read).
const CONFIG_FILE: &str = "config.json";
/// The tokenizer file (Hugging Face `tokenizers` format).
const TOKENIZER_FILE: &str = "tokenizer.json";
/// The table.
const WEIGHTS_FILE: &str = "model.safetensors";
/// The table of vectors, `[rows, dimension]`.
const EMBEDDINGS: &str = "embeddings";
/// Token id → row of [`EMBEDDINGS`] (optional; without it the row is the token id).
const MAPPING: &str = "mapping";
/// Token id → weight of its row (optional; without it every weight is 1).
const WEIGHTS: &str = "weights";
/// The name errors give the embedder.
const WHO: &str = "static embedder";
/// Texts of at most this many bytes in all are embedded on the calling task; more
/// go to a blocking thread.
const INLINE_BYTES: usize = 16 * 1024;

/// A static (model2vec-style) embedding model loaded from a local directory.
///
/// The directory holds `tokenizer.json`, `model.safetensors` and, optionally,
/// `config.json`. The safetensors file holds `embeddings` (F32, F16, BF16, F64 or
/// I8, `[rows, dimension]`) and, for a vocabulary-quantized model such as
/// tokenlearn-static-model, `mapping` (an integer per token id: its row) and
/// `weights` (a float per token id). Without `mapping` a token's row is its id;
/// without `weights` every token weighs 1.
///
/// A text is tokenized with no special tokens and no padding; the tokenizer model's
/// unknown token (`unk_token` of a WordPiece, WordLevel or BPE model; a Unigram
/// model names none) is dropped, as model2vec does; the first
/// [`StaticEmbedder::MAX_TOKENS`] remaining tokens count. Its vector is
/// `Σ weight[t] · row[t] / n`, always L2-normalized (so an integer table's scale,
/// and `config.json`'s `normalize`, do not matter). A text with no tokens left
/// (empty, whitespace, only unknown tokens) gets the zero vector rather than an
/// error, which would fail the whole batch it came in: it has no direction, and
/// the stores give it similarity 0 to everything, so it never ranks semantically.
/// Each text is pooled on its own, so a text gets the same vector alone or in any
/// batch.
///
/// The identity is `static/<directory name>/d<dimension>/v1-<sha256>`, the last part
/// twelve hex digits of a SHA-256 over the files: a different table or tokenizer is
/// a different generation, and the engine re-embeds.
#[derive(Clone)]
pub struct StaticEmbedder {
    identity: EmbedderIdentity,
    model_dir: PathBuf,
    files_sha256: String,
    inner: Arc<Inner>,
}

/// The loaded model, shared with blocking threads.
struct Inner {
    tokenizer: Tokenizer,
    table: Table,
    /// The token dropped from every text.
    unk_id: Option<u32>,
}

/// The vectors and, per token id, which row and weight it takes.
struct Table {
    dimension: usize,
    /// `[rows, dimension]`, row-major.
    rows: Vec<f32>,
    /// Indexed by token id.
    tokens: Vec<TokenRow>,
}

#[derive(Clone, Copy)]
struct TokenRow {
    row: u32,
    weight: f32,
}

impl StaticEmbedder {
    /// The provider name in the identity.
    pub const PROVIDER: &'static str = "static";
    /// The adapter version in the identity (bumped when the pooling or tokenization
    /// recipe changes); the files' hash follows it.
    pub const VERSION: &'static str = "1";
    /// The most tokens of a text that count; the rest is cut off.
    pub const MAX_TOKENS: usize = 512;
    /// The most texts one call should carry.
    pub const DEFAULT_MAX_BATCH: usize = 1024;

    /// Loads the model in `model_dir`. Reads and hashes every file (about 14 MB for
    /// tokenlearn-static-model): call it once, off latency-sensitive paths.
    ///
    /// Fails with [`ProviderError::Config`] naming the file when the directory or a
    /// file is missing, unreadable or malformed: a file that is not a tokenizer or
    /// not safetensors, a missing or non-2-D `embeddings` tensor, an unsupported
    /// dtype, a `mapping` pointing past the table, `mapping` and `weights` of
    /// different lengths, or a tokenizer with ids the table does not cover.
    pub fn load(model_dir: &Path) -> Result<Self, ProviderError> {
        let files = ModelDir::new(model_dir, WHO);
        if !model_dir.is_dir() {
            return Err(files.err(format!(
                "the model directory {} does not exist or is not a directory; it must hold \
                 {TOKENIZER_FILE} and {WEIGHTS_FILE}",
                model_dir.display()
            )));
        }
        let mut hasher = Sha256::new();

        if let Some(bytes) = files.read_optional(CONFIG_FILE)? {
            hash_file(&mut hasher, CONFIG_FILE, &bytes);
            match serde_json::from_slice::<serde_json::Value>(&bytes) {
                Ok(serde_json::Value::Object(_)) => {}
                Ok(_) => return Err(files.file_err(CONFIG_FILE, "is not a JSON object")),
                Err(e) => return Err(files.file_err(CONFIG_FILE, format!("is not JSON: {e}"))),
            }
        }

        let tokenizer_bytes = files.read(TOKENIZER_FILE)?;
        hash_file(&mut hasher, TOKENIZER_FILE, &tokenizer_bytes);
        let mut tokenizer = Tokenizer::from_bytes(&tokenizer_bytes)
            .map_err(|e| files.file_err(TOKENIZER_FILE, format!("is not a tokenizer: {e}")))?;
        drop(tokenizer_bytes);
        // Padding would add tokens and truncation would cut before the unknown token
        // is dropped: the token limit is applied here instead.
        tokenizer.with_padding(None);
        tokenizer.with_truncation(None).map_err(|e| {
            files.file_err(
                TOKENIZER_FILE,
                format!("refuses to switch truncation off: {e}"),
            )
        })?;
        let unk_token = match tokenizer.get_model() {
            ModelWrapper::WordPiece(m) => Some(m.unk_token.clone()),
            ModelWrapper::WordLevel(m) => Some(m.unk_token.clone()),
            ModelWrapper::BPE(m) => m.unk_token.clone(),
            // model2vec reads no unknown token from a Unigram model either.
            ModelWrapper::Unigram(_) => None,
        };
        let unk_id = unk_token.and_then(|t| tokenizer.token_to_id(&t));

        let weights_bytes = files.read(WEIGHTS_FILE)?;
        hash_file(&mut hasher, WEIGHTS_FILE, &weights_bytes);
        let table = Table::from_safetensors(&weights_bytes)
            .map_err(|what| files.file_err(WEIGHTS_FILE, what))?;
        drop(weights_bytes);
        let vocab = tokenizer.get_vocab_size(true);
        if vocab > table.tokens.len() {
            return Err(files.err(format!(
                "{} has {vocab} tokens but {} covers only {}",
                model_dir.join(TOKENIZER_FILE).display(),
                model_dir.join(WEIGHTS_FILE).display(),
                table.tokens.len()
            )));
        }

        let files_sha256 = hex_digest(hasher);
        let identity = EmbedderIdentity {
            provider: Self::PROVIDER.to_owned(),
            model: files.model_name("static"),
            dimension: table.dimension,
            version: format!("{}-{}", Self::VERSION, &files_sha256[..SHORT_HASH_HEX]),
        };
        tracing::info!(
            generation = %identity.generation(),
            rows = table.rows.len() / table.dimension,
            vocab,
            "static embedding model loaded"
        );
        Ok(Self {
            identity,
            model_dir: model_dir.to_path_buf(),
            files_sha256,
            inner: Arc::new(Inner {
                tokenizer,
                table,
                unk_id,
            }),
        })
    }

    /// The directory the model was loaded from.
    pub fn model_dir(&self) -> &Path {
        &self.model_dir
    }

    /// The vector dimension (the table's second axis).
    pub fn dimension(&self) -> usize {
        self.identity.dimension
    }

    /// The full SHA-256 (hex) over the model's files; the generation carries its
    /// first twelve digits.
    pub fn files_sha256(&self) -> &str {
        &self.files_sha256
    }
}

impl fmt::Debug for StaticEmbedder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StaticEmbedder")
            .field("identity", &self.identity)
            .field("model_dir", &self.model_dir)
            .field("tokens", &self.inner.table.tokens.len())
            .field("unk_id", &self.inner.unk_id)
            .finish_non_exhaustive()
    }
}

#[async_trait]
impl Embedder for StaticEmbedder {
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
        _purpose: EmbedPurpose,
    ) -> Result<Vec<Vec<f32>>, ProviderError> {
        if texts.iter().map(String::len).sum::<usize>() <= INLINE_BYTES {
            return self.inner.embed_blocking(texts);
        }
        let inner = Arc::clone(&self.inner);
        let texts = texts.to_vec();
        tokio::task::spawn_blocking(move || inner.embed_blocking(&texts))
            .await
            .map_err(|e| inference_err(format!("the embedding thread failed: {e}")))?
    }
}

impl Inner {
    /// One vector per text, in order.
    fn embed_blocking(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, ProviderError> {
        let tokenize = |e: tokenizers::Error| inference_err(format!("tokenization failed: {e}"));
        let encodings = match texts {
            [] => return Ok(Vec::new()),
            [text] => vec![
                self.tokenizer
                    .encode_fast(text.as_str(), false)
                    .map_err(tokenize)?,
            ],
            _ => self
                .tokenizer
                .encode_batch_fast(texts.iter().map(String::as_str).collect(), false)
                .map_err(tokenize)?,
        };
        encodings
            .iter()
            .map(|e| self.table.pool(e.get_ids(), self.unk_id))
            .collect()
    }
}

impl Table {
    /// The weighted mean of the rows of `ids` (without `unk_id`, at most
    /// [`StaticEmbedder::MAX_TOKENS`]), L2-normalized; zero when no token counts.
    fn pool(&self, ids: &[u32], unk_id: Option<u32>) -> Result<Vec<f32>, ProviderError> {
        let dim = self.dimension;
        let mut sum = vec![0.0f32; dim];
        let mut count = 0usize;
        for &id in ids.iter().filter(|&&id| Some(id) != unk_id) {
            if count == StaticEmbedder::MAX_TOKENS {
                break;
            }
            // Load checked that the table covers every id of the tokenizer.
            let token = self.tokens.get(id as usize).ok_or_else(|| {
                inference_err(format!("the tokenizer produced id {id}, which has no row"))
            })?;
            let start = token.row as usize * dim;
            for (s, x) in sum.iter_mut().zip(&self.rows[start..start + dim]) {
                *s += token.weight * x;
            }
            count += 1;
        }
        if count == 0 {
            return Ok(sum);
        }
        let n = count as f32;
        sum.iter_mut().for_each(|s| *s /= n);
        let norm = sum.iter().map(|s| s * s).sum::<f32>().sqrt();
        if norm > 0.0 {
            sum.iter_mut().for_each(|s| *s /= norm);
        }
        if sum.iter().any(|s| !s.is_finite()) {
            return Err(inference_err("the table produced a non-finite vector"));
        }
        Ok(sum)
    }

    /// The table in a safetensors file; the error says what is wrong with it.
    fn from_safetensors(bytes: &[u8]) -> Result<Self, String> {
        let file = SafeTensors::deserialize(bytes)
            .map_err(|e| format!("is not a safetensors file: {e}"))?;
        let embeddings = file.tensor(EMBEDDINGS).map_err(|_| {
            format!(
                "holds no `{EMBEDDINGS}` tensor (it holds: {})",
                file.names().join(", ")
            )
        })?;
        let (rows, dimension) = match *embeddings.shape() {
            [rows, dimension] if rows > 0 && dimension > 0 => (rows, dimension),
            ref shape => {
                return Err(format!(
                    "has `{EMBEDDINGS}` of shape {shape:?}; it must be [rows, dimension], \
                     neither zero"
                ));
            }
        };
        let table = floats(&embeddings, EMBEDDINGS)?;
        if table.iter().any(|x| !x.is_finite()) {
            return Err(format!("has non-finite values in `{EMBEDDINGS}`"));
        }
        let one_d = |name: &str| -> Result<Option<TensorView<'_>>, String> {
            let Ok(t) = file.tensor(name) else {
                return Ok(None);
            };
            if t.shape().len() != 1 {
                return Err(format!(
                    "has `{name}` of shape {:?}; it must be one value per token",
                    t.shape()
                ));
            }
            Ok(Some(t))
        };
        let mapping = match one_d(MAPPING)? {
            Some(t) => {
                let ids = integers(&t, MAPPING)?;
                let mut mapped = Vec::with_capacity(ids.len());
                for (token, row) in ids.into_iter().enumerate() {
                    match u32::try_from(row) {
                        Ok(r) if (r as usize) < rows => mapped.push(r),
                        _ => {
                            return Err(format!(
                                "maps token {token} to row {row} of `{MAPPING}`, outside \
                                 the {rows} rows of `{EMBEDDINGS}`"
                            ));
                        }
                    }
                }
                Some(mapped)
            }
            None => None,
        };
        let weights = match one_d(WEIGHTS)? {
            Some(t) => {
                let w = floats(&t, WEIGHTS)?;
                if w.iter().any(|x| !x.is_finite()) {
                    return Err(format!("has non-finite values in `{WEIGHTS}`"));
                }
                Some(w)
            }
            None => None,
        };
        let tokens = match (mapping, weights) {
            (Some(m), Some(w)) if m.len() != w.len() => {
                return Err(format!(
                    "has {} values in `{MAPPING}` but {} in `{WEIGHTS}`",
                    m.len(),
                    w.len()
                ));
            }
            (Some(m), w) => m
                .iter()
                .enumerate()
                .map(|(t, &row)| TokenRow {
                    row,
                    weight: w.as_ref().map_or(1.0, |w| w[t]),
                })
                .collect(),
            (None, w) => {
                // Without a mapping, a token's row is its id (token ids are u32).
                let n = w.as_ref().map_or(rows, |w| w.len().min(rows));
                let n = n.min(u32::MAX as usize);
                (0..n)
                    .map(|t| TokenRow {
                        row: t as u32,
                        weight: w.as_ref().map_or(1.0, |w| w[t]),
                    })
                    .collect()
            }
        };
        Ok(Self {
            dimension,
            rows: table,
            tokens,
        })
    }
}

/// The values of a float (or, for the table, 8-bit integer) tensor as `f32`.
fn floats(t: &TensorView<'_>, name: &str) -> Result<Vec<f32>, String> {
    let data = t.data();
    Ok(match t.dtype() {
        Dtype::F32 => data
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect(),
        Dtype::F64 => data
            .chunks_exact(8)
            .map(|b| f64::from_le_bytes(b.try_into().expect("8 bytes")) as f32)
            .collect(),
        Dtype::F16 => data
            .chunks_exact(2)
            .map(|b| half::f16::from_le_bytes([b[0], b[1]]).to_f32())
            .collect(),
        Dtype::BF16 => data
            .chunks_exact(2)
            .map(|b| half::bf16::from_le_bytes([b[0], b[1]]).to_f32())
            .collect(),
        Dtype::I8 if name == EMBEDDINGS => data.iter().map(|&b| f32::from(b as i8)).collect(),
        other => {
            return Err(format!(
                "has `{name}` of dtype {other:?}; it must be F32, F16, BF16 or F64{}",
                if name == EMBEDDINGS { " or I8" } else { "" }
            ));
        }
    })
}

/// The values of an integer tensor.
fn integers(t: &TensorView<'_>, name: &str) -> Result<Vec<i64>, String> {
    let data = t.data();
    Ok(match t.dtype() {
        Dtype::I64 => data
            .chunks_exact(8)
            .map(|b| i64::from_le_bytes(b.try_into().expect("8 bytes")))
            .collect(),
        Dtype::U64 => data
            .chunks_exact(8)
            .map(|b| {
                i64::try_from(u64::from_le_bytes(b.try_into().expect("8 bytes"))).unwrap_or(-1)
            })
            .collect(),
        Dtype::I32 => data
            .chunks_exact(4)
            .map(|b| i64::from(i32::from_le_bytes([b[0], b[1], b[2], b[3]])))
            .collect(),
        Dtype::U32 => data
            .chunks_exact(4)
            .map(|b| i64::from(u32::from_le_bytes([b[0], b[1], b[2], b[3]])))
            .collect(),
        other => {
            return Err(format!(
                "has `{name}` of dtype {other:?}; it must be I64, U64, I32 or U32"
            ));
        }
    })
}

/// A failure while embedding. Reported as a malformed answer: the work ledger retries
/// it a bounded number of times, then dead-letters the item with this message.
fn inference_err(message: impl Into<String>) -> ProviderError {
    ProviderError::Malformed {
        message: format!("{WHO}: {}", message.into()),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use rememberstack_core::embed::dot;

    /// The tiny model's words, by token id. `[CLS]` is what the tokenizer's post-
    /// processor and padding would add: its row and weight would show in any vector.
    const VOCAB: [&str; 6] = ["[UNK]", "cat", "dog", "sat", "mat", "[CLS]"];

    /// A WordLevel tokenizer over [`VOCAB`]: lowercase, split on whitespace, with a
    /// `[CLS]` template and fixed padding to 8 with `[CLS]`.
    fn tokenizer_json() -> String {
        let vocab: serde_json::Map<String, serde_json::Value> = VOCAB
            .iter()
            .enumerate()
            .map(|(i, w)| (w.to_string(), serde_json::json!(i)))
            .collect();
        let cls = serde_json::json!({"SpecialToken": {"id": "[CLS]", "type_id": 0}});
        serde_json::json!({
            "version": "1.0",
            "truncation": null,
            "padding": {"strategy": {"Fixed": 8}, "direction": "Right",
                        "pad_to_multiple_of": null, "pad_id": 5, "pad_type_id": 0,
                        "pad_token": "[CLS]"},
            "added_tokens": [{"id": 5, "content": "[CLS]", "single_word": false,
                              "lstrip": false, "rstrip": false, "normalized": false,
                              "special": true}],
            "normalizer": {"type": "Lowercase"},
            "pre_tokenizer": {"type": "Whitespace"},
            "post_processor": {
                "type": "TemplateProcessing",
                "single": [cls, {"Sequence": {"id": "A", "type_id": 0}}],
                "pair": [cls, {"Sequence": {"id": "A", "type_id": 0}},
                         {"Sequence": {"id": "B", "type_id": 1}}],
                "special_tokens": {"[CLS]": {"id": "[CLS]", "ids": [5], "tokens": ["[CLS]"]}}
            },
            "decoder": null,
            "model": {"type": "WordLevel", "vocab": vocab, "unk_token": "[UNK]"}
        })
        .to_string()
    }

    /// A tensor to write: name, dtype, shape, little-endian bytes.
    type Tensor = (&'static str, Dtype, Vec<usize>, Vec<u8>);

    fn f32s(name: &'static str, shape: Vec<usize>, values: &[f32]) -> Tensor {
        let bytes = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        (name, Dtype::F32, shape, bytes)
    }

    fn safetensors_bytes(tensors: &[Tensor]) -> Vec<u8> {
        let views = tensors.iter().map(|(name, dtype, shape, bytes)| {
            (
                *name,
                TensorView::new(*dtype, shape.clone(), bytes).unwrap(),
            )
        });
        safetensors::serialize(views, None).unwrap()
    }

    fn write_model(dir: &Path, tensors: &[Tensor]) {
        std::fs::create_dir_all(dir).unwrap();
        std::fs::write(dir.join(CONFIG_FILE), r#"{"normalize": true}"#).unwrap();
        std::fs::write(dir.join(TOKENIZER_FILE), tokenizer_json()).unwrap();
        std::fs::write(dir.join(WEIGHTS_FILE), safetensors_bytes(tensors)).unwrap();
    }

    /// The vocabulary-quantized layout (as tokenlearn-static-model): an I8 table of
    /// four rows, a mapping and weights per token.
    fn quantized_tensors() -> Vec<Tensor> {
        #[rustfmt::skip]
        let rows: [i8; 12] = [
            1, 1, 1,   // row 0: [UNK] and [CLS]
            3, 0, -4,  // row 1: cat and sat
            0, 5, 0,   // row 2: dog
            -2, 2, 1,  // row 3: mat
        ];
        let mapping: [i64; 6] = [0, 1, 2, 1, 3, 0];
        let weights: [f32; 6] = [1.0, 0.5, 2.0, 1.5, 1.0, 9.0];
        vec![
            (
                EMBEDDINGS,
                Dtype::I8,
                vec![4, 3],
                rows.iter().map(|&v| v as u8).collect(),
            ),
            (
                MAPPING,
                Dtype::I64,
                vec![6],
                mapping.iter().flat_map(|v| v.to_le_bytes()).collect(),
            ),
            f32s(WEIGHTS, vec![6], &weights),
        ]
    }

    /// The plain model2vec layout: one F32 row per token id, no mapping, no weights.
    const PLAIN_ROWS: [f32; 12] = [
        9.0, 9.0, // [UNK]
        1.0, 0.0, // cat
        0.0, 1.0, // dog
        1.0, 1.0, // sat
        3.0, -4.0, // mat
        -7.0, 7.0, // [CLS]
    ];

    /// The tiny quantized model in `dir` (also used by the configuration tests).
    pub(crate) fn write_test_model(dir: &Path) {
        write_model(dir, &quantized_tensors());
    }

    fn load_with(tensors: &[Tensor]) -> (tempfile::TempDir, StaticEmbedder) {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("tiny-static");
        write_model(&dir, tensors);
        let e = StaticEmbedder::load(&dir).unwrap();
        (tmp, e)
    }

    async fn embed(e: &StaticEmbedder, texts: &[&str]) -> Vec<Vec<f32>> {
        let texts: Vec<String> = texts.iter().map(|t| t.to_string()).collect();
        e.embed(&texts, EmbedPurpose::Document).await.unwrap()
    }

    /// `v` divided by its length.
    fn normalized(v: &[f64]) -> Vec<f64> {
        let n = v.iter().map(|x| x * x).sum::<f64>().sqrt();
        v.iter().map(|x| x / n).collect()
    }

    fn assert_close(got: &[f32], want: &[f64], what: &str) {
        assert_eq!(got.len(), want.len(), "{what}: dimension");
        for (g, w) in got.iter().zip(want) {
            assert!(
                (f64::from(*g) - w).abs() < 1e-6,
                "{what}: {got:?} != {want:?}"
            );
        }
    }

    #[tokio::test]
    async fn the_vector_is_the_weighted_mean_of_mapped_rows_normalized() {
        let (_tmp, e) = load_with(&quantized_tensors());
        assert_eq!(e.dimension(), 3);
        // The template and the padding would add [CLS] (row 0, weight 9): check that
        // the tokenizer really has them, so that the vectors below prove them off.
        let with_special = e.inner.tokenizer.encode("cat", true).unwrap();
        assert!(with_special.get_ids().contains(&5), "{with_special:?}");

        let cases: [(&str, Vec<f64>); 6] = [
            // 0.5 × [3, 0, -4]
            ("cat", normalized(&[1.5, 0.0, -2.0])),
            // (0.5 × [3, 0, -4] + 2 × [0, 5, 0]) / 2
            ("cat dog", normalized(&[0.75, 5.0, -1.0])),
            // cat and sat share row 1: (0.5 + 1.5) × [3, 0, -4] / 2
            ("Cat SAT", normalized(&[3.0, 0.0, -4.0])),
            // the unknown word is dropped, not row 0
            ("dog zebra", normalized(&[0.0, 10.0, 0.0])),
            // (1 × [-2, 2, 1] + 2 × [0, 5, 0] + 0.5 × [3, 0, -4]) / 3
            (
                "mat dog cat",
                normalized(&[-0.5 / 3.0, 12.0 / 3.0, -1.0 / 3.0]),
            ),
            // a repeated token counts every time: (2 × 2 × [0, 5, 0] + [-2, 2, 1]) / 3
            (
                "dog dog mat",
                normalized(&[-2.0 / 3.0, 22.0 / 3.0, 1.0 / 3.0]),
            ),
        ];
        for (text, want) in &cases {
            let got = embed(&e, &[text]).await;
            assert_close(&got[0], want, text);
            assert!(
                (dot(&got[0], &got[0]) - 1.0).abs() < 1e-6,
                "{text}: unit length"
            );
        }
    }

    #[tokio::test]
    async fn the_plain_layout_takes_the_row_of_the_token_id_with_weight_one() {
        let (_tmp, e) = load_with(&[f32s(EMBEDDINGS, vec![6, 2], &PLAIN_ROWS)]);
        assert_eq!(e.dimension(), 2);
        let got = embed(&e, &["cat dog", "mat", "cat mat", "zebra cat"]).await;
        assert_close(&got[0], &normalized(&[1.0, 1.0]), "cat dog");
        assert_close(&got[1], &[0.6, -0.8], "mat");
        assert_close(&got[2], &normalized(&[4.0, -4.0]), "cat mat");
        // The unknown word is dropped, not row 0.
        assert_close(&got[3], &[1.0, 0.0], "zebra cat");

        // The same table stored as F16, BF16 or F64 (the values are exact in each).
        let f16: Vec<u8> = PLAIN_ROWS
            .iter()
            .flat_map(|&v| half::f16::from_f32(v).to_le_bytes())
            .collect();
        let bf16: Vec<u8> = PLAIN_ROWS
            .iter()
            .flat_map(|&v| half::bf16::from_f32(v).to_le_bytes())
            .collect();
        let f64s: Vec<u8> = PLAIN_ROWS
            .iter()
            .flat_map(|&v| f64::from(v).to_le_bytes())
            .collect();
        for (dtype, bytes) in [(Dtype::F16, f16), (Dtype::BF16, bf16), (Dtype::F64, f64s)] {
            let (_tmp, other) = load_with(&[(EMBEDDINGS, dtype, vec![6, 2], bytes)]);
            let again = embed(&other, &["cat dog", "mat", "cat mat", "zebra cat"]).await;
            assert_eq!(again, got, "{dtype:?}");
        }
    }

    #[tokio::test]
    async fn weights_without_a_mapping_scale_the_rows_of_the_token_ids() {
        let weights = [1.0, 3.0, 1.0, 1.0, 0.5, 1.0];
        let (_tmp, e) = load_with(&[
            f32s(EMBEDDINGS, vec![6, 2], &PLAIN_ROWS),
            f32s(WEIGHTS, vec![6], &weights),
        ]);
        // (3 × [1, 0] + 1 × [0, 1]) / 2
        let got = embed(&e, &["cat dog"]).await;
        assert_close(&got[0], &normalized(&[3.0, 1.0]), "cat dog");
    }

    #[tokio::test]
    async fn a_text_gets_the_same_vector_alone_or_in_a_batch() {
        let (_tmp, e) = load_with(&quantized_tensors());
        let texts = ["cat", "dog mat", "", "zebra", "cat sat dog mat", "mat"];
        let batch = embed(&e, &texts).await;
        for (text, v) in texts.iter().zip(&batch) {
            assert_eq!(&embed(&e, &[text]).await[0], v, "{text}");
        }
        // A batch too large to embed on the calling task goes to a blocking thread.
        let many: Vec<&str> = texts.iter().copied().cycle().take(6 * 1000).collect();
        assert!(many.iter().map(|t| t.len()).sum::<usize>() > INLINE_BYTES);
        let vectors = embed(&e, &many).await;
        assert_eq!(vectors.len(), many.len());
        for (i, v) in vectors.iter().enumerate() {
            assert_eq!(v, &batch[i % texts.len()], "text {i}");
        }
        assert!(embed(&e, &[]).await.is_empty());
    }

    #[tokio::test]
    async fn a_text_without_tokens_gets_the_zero_vector() {
        let (_tmp, e) = load_with(&quantized_tensors());
        for text in ["", "   \n", "zebra", "zebra okapi"] {
            assert_eq!(embed(&e, &[text]).await[0], vec![0.0; 3], "{text:?}");
        }
    }

    #[tokio::test]
    async fn only_the_first_512_known_tokens_count() {
        let (_tmp, e) = load_with(&quantized_tensors());
        let cat = embed(&e, &["cat"]).await.remove(0);
        let dog = embed(&e, &["dog"]).await.remove(0);
        let long = |n: usize, word: &str, tail: &str| format!("{}{tail}", word.repeat(n));
        assert_eq!(
            embed(&e, &[&long(512, "cat ", "dog dog")]).await[0],
            cat,
            "tokens after the 512th are cut off"
        );
        assert_ne!(embed(&e, &[&long(511, "cat ", "dog")]).await[0], cat);
        assert_eq!(
            embed(&e, &[&long(600, "zebra ", "dog")]).await[0],
            dog,
            "unknown tokens are dropped before the limit"
        );
    }

    #[test]
    fn the_identity_names_the_directory_the_dimension_and_the_files() {
        let (tmp, e) = load_with(&quantized_tensors());
        let id = e.identity();
        assert_eq!(
            (id.provider.as_str(), id.model.as_str()),
            ("static", "tiny-static")
        );
        let generation = id.generation();
        let version = generation
            .strip_prefix("static/tiny-static/d3/v1-")
            .unwrap_or_else(|| panic!("{generation}"));
        assert_eq!(version.len(), SHORT_HASH_HEX, "{generation}");
        assert!(e.files_sha256().starts_with(version));
        assert!(format!("{e:?}").contains("tiny-static"));

        // The same files elsewhere under the same name: the same generation.
        let twin_dir = tmp.path().join("twin").join("tiny-static");
        write_model(&twin_dir, &quantized_tensors());
        let twin = StaticEmbedder::load(&twin_dir).unwrap();
        assert_eq!(twin.identity(), e.identity());

        // Another table, tokenizer or configuration: another generation.
        let mut tensors = quantized_tensors();
        tensors[2] = f32s(WEIGHTS, vec![6], &[1.0, 0.5, 2.0, 1.5, 1.0, 8.0]);
        write_model(&twin_dir, &tensors);
        let changed = StaticEmbedder::load(&twin_dir).unwrap();
        assert_ne!(changed.identity().version, e.identity().version);
        write_model(&twin_dir, &quantized_tensors());
        std::fs::write(twin_dir.join(CONFIG_FILE), r#"{"normalize": false}"#).unwrap();
        let changed = StaticEmbedder::load(&twin_dir).unwrap();
        assert_ne!(changed.identity().version, e.identity().version);
        // config.json is optional.
        std::fs::remove_file(twin_dir.join(CONFIG_FILE)).unwrap();
        let without = StaticEmbedder::load(&twin_dir).unwrap();
        assert_ne!(without.identity().version, e.identity().version);
    }

    /// Loading `dir` fails with a configuration error that mentions `needle`.
    fn assert_config_error(dir: &Path, needle: &str) {
        match StaticEmbedder::load(dir) {
            Err(ProviderError::Config(m)) => {
                assert!(m.starts_with("static embedder: "), "{m}");
                assert!(m.contains(needle), "{needle:?} not in {m:?}");
            }
            other => panic!("expected a configuration error about {needle}, got {other:?}"),
        }
    }

    #[test]
    fn broken_models_are_configuration_errors() {
        let tmp = tempfile::tempdir().unwrap();
        assert_config_error(&tmp.path().join("absent"), "does not exist");

        let dir = tmp.path().join("m");
        let tensors_case = |tensors: &[Tensor], needle: &str| {
            write_model(&dir, tensors);
            assert_config_error(&dir, needle);
        };
        let [table, mapping, weights] = <[Tensor; 3]>::try_from(quantized_tensors()).unwrap();
        tensors_case(&[mapping.clone(), weights], "no `embeddings` tensor");
        tensors_case(
            &[(EMBEDDINGS, Dtype::I8, vec![12], table.3.clone())],
            "it must be [rows, dimension]",
        );
        tensors_case(
            &[(EMBEDDINGS, Dtype::I32, vec![2, 2], vec![0; 16])],
            "dtype I32",
        );
        tensors_case(
            &[
                (EMBEDDINGS, Dtype::I8, vec![2, 6], table.3.clone()),
                mapping.clone(),
            ],
            "outside the 2 rows",
        );
        tensors_case(
            &[
                table.clone(),
                mapping.clone(),
                f32s(WEIGHTS, vec![5], &[1.0; 5]),
            ],
            "6 values in `mapping` but 5 in `weights`",
        );
        tensors_case(
            &[
                table.clone(),
                mapping.clone(),
                f32s(WEIGHTS, vec![2, 3], &[1.0; 6]),
            ],
            "one value per token",
        );
        tensors_case(
            &[
                table.clone(),
                mapping.clone(),
                f32s(WEIGHTS, vec![6], &[f32::NAN; 6]),
            ],
            "non-finite",
        );
        // The plain layout with fewer rows than the tokenizer has tokens.
        tensors_case(
            &[f32s(EMBEDDINGS, vec![4, 2], &PLAIN_ROWS[..8])],
            "has 6 tokens but",
        );

        // Corrupt files.
        write_model(&dir, &quantized_tensors());
        let good = std::fs::read(dir.join(WEIGHTS_FILE)).unwrap();
        std::fs::write(dir.join(WEIGHTS_FILE), &good[..good.len() - 7]).unwrap();
        assert_config_error(&dir, "is not a safetensors file");
        std::fs::write(dir.join(WEIGHTS_FILE), b"not safetensors at all").unwrap();
        assert_config_error(&dir, "is not a safetensors file");
        std::fs::remove_file(dir.join(WEIGHTS_FILE)).unwrap();
        assert_config_error(&dir, "model.safetensors cannot be read");

        write_model(&dir, &quantized_tensors());
        std::fs::write(dir.join(TOKENIZER_FILE), r#"{"model": "nope"}"#).unwrap();
        assert_config_error(&dir, "tokenizer.json is not a tokenizer");
        std::fs::remove_file(dir.join(TOKENIZER_FILE)).unwrap();
        assert_config_error(&dir, "tokenizer.json cannot be read");

        write_model(&dir, &quantized_tensors());
        std::fs::write(dir.join(CONFIG_FILE), b"{normalize").unwrap();
        assert_config_error(&dir, "config.json is not JSON");
        std::fs::write(dir.join(CONFIG_FILE), b"[1]").unwrap();
        assert_config_error(&dir, "config.json is not a JSON object");

        // After all that, a good model in the same place loads.
        write_model(&dir, &quantized_tensors());
        StaticEmbedder::load(&dir).unwrap();
    }
}
