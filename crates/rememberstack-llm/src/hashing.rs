//! The deterministic, offline feature-hashing embedder.

use async_trait::async_trait;
use rememberstack_core::embed::{
    Degraded, EmbedPurpose, Embedder, EmbedderIdentity, ProviderError,
};

/// The dimension [`HashingEmbedder::default`] uses.
pub const DEFAULT_HASHING_DIMENSION: usize = 256;

/// Weight of a whole-word feature.
const WORD_WEIGHT: f32 = 1.0;
/// Weight of a character-trigram feature.
const TRIGRAM_WEIGHT: f32 = 0.5;
/// Namespace byte for whole-word features, so a word never shares a hash with a trigram.
const WORD_NAMESPACE: u8 = b'w';
/// Namespace byte for character-trigram features.
const TRIGRAM_NAMESPACE: u8 = b't';
/// Boundary marker at the start of a token (not alphanumeric, so never part of one).
const START_MARK: char = '^';
/// Boundary marker at the end of a token.
const END_MARK: char = '$';

const FNV_OFFSET_BASIS: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// A deterministic, offline, dependency-free embedder based on feature hashing.
///
/// This is the default when no embedding provider is configured. It is **not** a
/// semantic model: it captures shared words and, through character trigrams, shared
/// word stems ("embedding" / "embedded"), but not synonyms or meaning. Its identity
/// (`hashing/feature-hash-v1/dDIM/v1`) says so in every stored vector's generation.
///
/// Algorithm: the text is split into lowercase alphanumeric runs; every token adds a
/// signed feature hash (FNV-1a 64, bucket `h % dim`, sign from the top bit) with
/// weight 1, and every character trigram of `^token$` adds one with weight 0.5; the
/// sum is L2-normalized (a text without tokens gives the zero vector). The same text
/// gives bit-identical vectors on every machine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HashingEmbedder {
    identity: EmbedderIdentity,
    /// Why it stands in for a semantic model that could not be had.
    standing_in_for: Option<String>,
}

impl HashingEmbedder {
    /// The provider name in the identity.
    pub const PROVIDER: &'static str = "hashing";
    /// The model name in the identity.
    pub const MODEL: &'static str = "feature-hash-v1";
    /// The adapter version in the identity.
    pub const VERSION: &'static str = "1";

    /// A hashing embedder producing vectors of `dimension` components.
    ///
    /// A dimension of 0 is accepted but yields empty vectors; [`crate::build_embedder`]
    /// rejects it as a configuration error.
    pub fn new(dimension: usize) -> Self {
        Self {
            identity: EmbedderIdentity {
                provider: Self::PROVIDER.to_owned(),
                model: Self::MODEL.to_owned(),
                dimension,
                version: Self::VERSION.to_owned(),
            },
            standing_in_for: None,
        }
    }

    /// A hashing embedder standing in for a semantic model that could not be had,
    /// for the reason `why` (reported by [`Embedder::degraded`]). Its vectors are
    /// those of [`HashingEmbedder::new`].
    pub fn standing_in(dimension: usize, why: &str) -> Self {
        Self {
            standing_in_for: Some(why.to_owned()),
            ..Self::new(dimension)
        }
    }

    /// The vector dimension.
    pub fn dimension(&self) -> usize {
        self.identity.dimension
    }

    /// Embed one text synchronously (the [`Embedder::embed`] implementation calls this
    /// for every text).
    pub fn embed_text(&self, text: &str) -> Vec<f32> {
        let dim = self.identity.dimension;
        let mut vector = vec![0.0f32; dim];
        if dim == 0 {
            return vector;
        }
        let mut add = |namespace: u8, feature: &[u8], weight: f32| {
            let h = fnv1a64(namespace, feature);
            // `dim` fits in u64 on every supported platform; the remainder is < dim.
            let bucket = (h % dim as u64) as usize;
            let sign = if h >> 63 == 1 { -1.0 } else { 1.0 };
            vector[bucket] += sign * weight;
        };

        let mut chars: Vec<char> = Vec::new();
        let mut buf = [0u8; 4];
        let mut feature: Vec<u8> = Vec::new();
        for token in tokens(text) {
            add(WORD_NAMESPACE, token.as_bytes(), WORD_WEIGHT);

            chars.clear();
            chars.push(START_MARK);
            chars.extend(token.chars());
            chars.push(END_MARK);
            for trigram in chars.windows(3) {
                feature.clear();
                for c in trigram {
                    feature.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                }
                add(TRIGRAM_NAMESPACE, &feature, TRIGRAM_WEIGHT);
            }
        }

        let norm = vector
            .iter()
            .map(|x| f64::from(*x) * f64::from(*x))
            .sum::<f64>()
            .sqrt();
        if norm > 0.0 {
            for x in &mut vector {
                *x = (f64::from(*x) / norm) as f32;
            }
        }
        vector
    }
}

impl Default for HashingEmbedder {
    /// A hashing embedder of [`DEFAULT_HASHING_DIMENSION`] (256) components.
    fn default() -> Self {
        Self::new(DEFAULT_HASHING_DIMENSION)
    }
}

#[async_trait]
impl Embedder for HashingEmbedder {
    fn identity(&self) -> &EmbedderIdentity {
        &self.identity
    }

    fn is_in_process(&self) -> bool {
        true
    }

    fn max_batch(&self) -> usize {
        // Local and cheap: no reason to make callers split finely.
        1024
    }

    fn degraded(&self) -> Option<Degraded> {
        Some(Degraded {
            kind: Degraded::LEXICAL.to_owned(),
            reason: self.standing_in_for.clone(),
        })
    }

    async fn embed(
        &self,
        texts: &[String],
        _purpose: EmbedPurpose,
    ) -> Result<Vec<Vec<f32>>, ProviderError> {
        Ok(texts.iter().map(|t| self.embed_text(t)).collect())
    }
}

/// Lowercase alphanumeric runs of `text`.
fn tokens(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|run| !run.is_empty())
        .map(str::to_lowercase)
}

/// FNV-1a 64 over a namespace byte followed by `bytes`.
fn fnv1a64(namespace: u8, bytes: &[u8]) -> u64 {
    let mut h = FNV_OFFSET_BASIS;
    for b in std::iter::once(&namespace).chain(bytes) {
        h ^= u64::from(*b);
        h = h.wrapping_mul(FNV_PRIME);
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv_matches_reference_vectors() {
        // FNV-1a 64 reference values, computed over the namespace byte + input.
        fn plain(bytes: &[u8]) -> u64 {
            let mut h = FNV_OFFSET_BASIS;
            for b in bytes {
                h ^= u64::from(*b);
                h = h.wrapping_mul(FNV_PRIME);
            }
            h
        }
        assert_eq!(plain(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(plain(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(plain(b"foobar"), 0x8594_4171_f739_67e8);
        assert_eq!(fnv1a64(b'w', b"x"), plain(b"wx"));
    }

    #[test]
    fn tokenizes_lowercase_alphanumeric_runs() {
        let got: Vec<String> = tokens("Hello, WORLD! it's 2024-01-02 Ünïcode").collect();
        assert_eq!(
            got,
            ["hello", "world", "it", "s", "2024", "01", "02", "ünïcode"]
        );
        assert_eq!(tokens(" ,;- ").count(), 0);
    }

    #[test]
    fn stable_golden_vector() {
        // Pins the algorithm: if this changes, bump VERSION (stored generations change).
        let e = HashingEmbedder::new(8);
        let v = e.embed_text("a");
        // Features: word "a", trigram "^a$".
        let mut expected = [0.0f64; 8];
        for (ns, feat, w) in [(WORD_NAMESPACE, "a", 1.0), (TRIGRAM_NAMESPACE, "^a$", 0.5)] {
            let h = fnv1a64(ns, feat.as_bytes());
            let sign = if h >> 63 == 1 { -1.0 } else { 1.0 };
            expected[(h % 8) as usize] += sign * w;
        }
        let norm = expected.iter().map(|x| x * x).sum::<f64>().sqrt();
        for (got, want) in v.iter().zip(expected) {
            assert!((f64::from(*got) - want / norm).abs() < 1e-6);
        }
    }

    #[test]
    fn zero_dimension_and_empty_text_do_not_panic() {
        assert!(HashingEmbedder::new(0).embed_text("hello").is_empty());
        let v = HashingEmbedder::new(16).embed_text("");
        assert_eq!(v, vec![0.0; 16]);
    }
}
