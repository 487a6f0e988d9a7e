use rememberstack_core::embed::{EmbedPurpose, Embedder, cosine};
use rememberstack_llm::HashingEmbedder;

fn norm(v: &[f32]) -> f32 {
    v.iter().map(|x| x * x).sum::<f32>().sqrt()
}

#[tokio::test]
async fn identity_says_hashing() {
    let e = HashingEmbedder::default();
    assert_eq!(e.dimension(), 256);
    assert_eq!(e.identity().provider, "hashing");
    assert_eq!(e.identity().model, "feature-hash-v1");
    assert_eq!(e.identity().version, "1");
    assert_eq!(e.identity().generation(), "hashing/feature-hash-v1/d256/v1");
    assert_eq!(
        HashingEmbedder::new(64).identity().generation(),
        "hashing/feature-hash-v1/d64/v1"
    );
}

#[tokio::test]
async fn deterministic_across_instances_and_calls() {
    let texts: Vec<String> = ["The quick brown fox", "jumps over the lazy dog", ""]
        .map(String::from)
        .to_vec();
    let a = HashingEmbedder::new(128)
        .embed(&texts, EmbedPurpose::Document)
        .await
        .unwrap();
    let b = HashingEmbedder::new(128)
        .embed(&texts, EmbedPurpose::Query)
        .await
        .unwrap();
    assert_eq!(a, b);
    assert_eq!(a.len(), 3);
    // Case and punctuation do not matter; only the alphanumeric runs do.
    let e = HashingEmbedder::new(128);
    assert_eq!(
        e.embed_text("the QUICK, brown fox!"),
        e.embed_text("The quick brown fox")
    );
}

#[test]
fn golden_buckets_are_machine_independent() {
    // FNV-1a is fully specified: these values must be the same everywhere. If this
    // fails the algorithm changed and HashingEmbedder::VERSION must be bumped.
    let v = HashingEmbedder::new(256).embed_text("a");
    // Features of "a": word "a" (FNV-1a of b"wa": bucket 117, sign +, weight 1) and
    // trigram "^a$" (FNV-1a of b"t^a$": bucket 226, sign -, weight 0.5), normalized.
    let golden = [
        (117usize, 1.0 / 1.25f32.sqrt()),
        (226, -0.5 / 1.25f32.sqrt()),
    ];
    let nonzero: Vec<(usize, f32)> = v
        .iter()
        .enumerate()
        .filter(|(_, x)| **x != 0.0)
        .map(|(i, x)| (i, *x))
        .collect();
    assert_eq!(nonzero.len(), golden.len(), "{nonzero:?}");
    for ((i, x), (gi, gx)) in nonzero.iter().zip(golden) {
        assert_eq!(*i, gi);
        assert!((x - gx).abs() < 1e-6, "{x} vs {gx}");
    }
}

#[tokio::test]
async fn normalized_and_dimension_respected() {
    for dim in [1usize, 7, 64, 256, 1024] {
        let e = HashingEmbedder::new(dim);
        let out = e
            .embed(
                &["memory engines for agents".to_owned(), "x".to_owned()],
                EmbedPurpose::Document,
            )
            .await
            .unwrap();
        for v in &out {
            assert_eq!(v.len(), dim);
            assert!(v.iter().all(|x| x.is_finite()));
            let n = norm(v);
            // One bucket can cancel to zero when dim is tiny; otherwise unit length.
            assert!(n == 0.0 || (n - 1.0).abs() < 1e-5, "dim {dim}: norm {n}");
        }
    }
    let e = HashingEmbedder::default();
    assert!((norm(&e.embed_text("hello world")) - 1.0).abs() < 1e-5);
    // No tokens: the zero vector, not NaN.
    assert_eq!(e.embed_text(" -- !! "), vec![0.0; 256]);
    assert!(
        e.embed(&[], EmbedPurpose::Document)
            .await
            .unwrap()
            .is_empty()
    );
}

#[test]
fn shared_words_are_closer_than_unrelated_text() {
    let e = HashingEmbedder::default();
    let a = e.embed_text("the cat sat on the mat");
    let b = e.embed_text("a cat sat on a mat");
    let c = e.embed_text("quantum chromodynamics lecture notes");
    let related = cosine(&a, &b);
    let unrelated = cosine(&a, &c);
    assert!(related > 0.5, "related {related}");
    assert!(related > unrelated + 0.3, "{related} vs {unrelated}");
    assert!((cosine(&a, &a) - 1.0).abs() < 1e-5);
}

#[test]
fn morphological_variants_are_close() {
    let e = HashingEmbedder::default();
    let a = e.embed_text("embedding");
    let b = e.embed_text("embedded");
    let c = e.embed_text("volcano");
    assert!(
        cosine(&a, &b) > cosine(&a, &c) + 0.2,
        "{} vs {}",
        cosine(&a, &b),
        cosine(&a, &c)
    );
}
