//! The local embedding model (feature `local-embedder`), against real model files.
//!
//! These tests need the all-MiniLM-L6-v2 files: `REMEMBERSTACK_TEST_MODEL_DIR`
//! naming their directory, else the default model in the model cache
//! (`scripts/fetch-model.sh` or `remember models pull` puts it there). They compile
//! only with the feature; once compiled, a missing model is a failure, not a skip.

use std::path::{Path, PathBuf};
use std::time::Instant;

use rememberstack_core::embed::{EmbedPurpose, Embedder, ProviderError, cosine};
use rememberstack_llm::{EmbedderConfig, LocalEmbedder, build_embedder, models};

const MODEL_DIR_VAR: &str = "REMEMBERSTACK_TEST_MODEL_DIR";

fn model_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os(MODEL_DIR_VAR).filter(|d| !d.is_empty()) {
        return PathBuf::from(dir);
    }
    let cached = models::models_dir().map(|c| c.join(models::DEFAULT_MODEL));
    match cached {
        Some(dir) if models::is_complete(&dir) => dir,
        _ => panic!(
            "no all-MiniLM-L6-v2 model: run scripts/fetch-model.sh (or `remember models \
             pull`), or set {MODEL_DIR_VAR} to a directory holding config.json, \
             tokenizer.json and model.safetensors"
        ),
    }
}

fn load() -> LocalEmbedder {
    LocalEmbedder::load(&model_dir()).expect("the model loads")
}

async fn embed(e: &LocalEmbedder, texts: &[&str]) -> Vec<Vec<f32>> {
    let texts: Vec<String> = texts.iter().map(|t| t.to_string()).collect();
    e.embed(&texts, EmbedPurpose::Document).await.unwrap()
}

fn assert_close(a: &[f32], b: &[f32], tol: f32, what: &str) {
    assert_eq!(a.len(), b.len(), "{what}");
    let worst = a
        .iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0f32, f32::max);
    assert!(worst <= tol, "{what}: largest difference {worst}");
}

#[tokio::test]
async fn minilm_vectors_are_unit_384_and_semantic() {
    let e = load();
    assert_eq!(e.dimension(), 384);
    assert_eq!(e.identity().dimension, 384);
    assert_eq!(e.identity().provider, "local");
    let generation = e.identity().generation();
    assert!(
        generation.starts_with(&format!("local/{}/d384/v1-", e.identity().model)),
        "{generation}"
    );
    assert!(
        generation.ends_with(&e.files_sha256()[..12]),
        "{generation}"
    );

    const TEXTS: [&str; 6] = [
        "cat",
        "kitten",
        "revenue",
        "",
        "The cat sat on the mat.",
        "The company's quarterly revenue grew by 12 percent.",
    ];
    let v = embed(&e, &TEXTS).await;
    assert_eq!(v.len(), TEXTS.len());
    for x in &v {
        assert_eq!(x.len(), 384);
        assert!(x.iter().all(|c| c.is_finite()));
        let norm = x.iter().map(|c| c * c).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-4, "norm {norm}");
    }
    // Reference values from an independent implementation of the same recipe
    // (`minilm_reference.py` beside this file: a numpy forward pass, Python
    // `tokenizers`, no padding, mean pooling, L2 normalization).
    for (a, b, want) in [
        (0, 1, 0.788_211),  // cat, kitten
        (0, 2, 0.316_346),  // cat, revenue
        (4, 5, -0.027_156), // the cat sentence, the revenue sentence
    ] {
        let got = cosine(&v[a], &v[b]);
        assert!(
            (got - want).abs() < 1e-4,
            "cos({:?}, {:?}) = {got}, want {want}",
            TEXTS[a],
            TEXTS[b]
        );
    }
    assert_close(
        &v[0][..4],
        &[0.037_330, 0.051_162, -0.000_306, 0.060_210],
        1e-5,
        TEXTS[0],
    );
    assert_close(
        &v[4][..4],
        &[0.130_237, -0.015_773, -0.036_717, 0.057_986],
        1e-5,
        TEXTS[4],
    );
}

#[tokio::test]
async fn batches_and_padding_do_not_change_vectors() {
    let e = load();
    let long = "The quarterly revenue report was delayed because the finance team \
                found an error in the spreadsheet that tracks subscriptions. "
        .repeat(8);
    // Far past the 256-token limit: truncated, not refused.
    let very_long = "Alice moved to Berlin in 2021 and works as a nurse. ".repeat(60);
    let texts = [
        "cat",
        very_long.as_str(),
        long.as_str(),
        "A kitten sleeps on the warm windowsill.",
        "",
        "Alice moved to Berlin in 2021 and works as a nurse.",
    ];
    let batch = embed(&e, &texts).await;
    for (text, in_batch) in texts.iter().zip(&batch) {
        let alone = embed(&e, &[text]).await;
        assert_close(&alone[0], in_batch, 1e-5, text);
    }
    // Truncation keeps the first tokens: a text past the limit embeds like a longer one
    // with the same start.
    let longer = format!("{very_long} And then something else entirely happened.");
    assert_close(
        &embed(&e, &[&longer]).await[0],
        &batch[1],
        1e-5,
        "truncated",
    );
    // More texts than one forward pass carries: split, same vectors, same order.
    let many: Vec<&str> = texts
        .iter()
        .copied()
        .cycle()
        .take(e.max_batch() * 2 + 3)
        .collect();
    let split = embed(&e, &many).await;
    assert_eq!(split.len(), many.len());
    for (i, v) in split.iter().enumerate() {
        assert_close(v, &batch[i % texts.len()], 1e-5, many[i]);
    }
    // Query and document purposes embed alike for this model.
    let q = e
        .embed(&["cat".to_owned()], EmbedPurpose::Query)
        .await
        .unwrap();
    assert_close(&q[0], &batch[0], 1e-6, "query");
    assert!(embed(&e, &[]).await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_requests_get_their_own_vectors() {
    let e = load();
    let texts: Vec<String> = (0..12)
        .map(|i| format!("Person number {i} moved to city {} last spring.", 12 - i))
        .collect();
    let mut alone = Vec::new();
    for t in &texts {
        alone.push(
            e.embed(std::slice::from_ref(t), EmbedPurpose::Query)
                .await
                .unwrap(),
        );
    }
    // A long document job keeps the model busy while the others arrive, so they wait
    // together and run as shared batches.
    let busy = {
        let e = e.clone();
        let long = vec!["The quarterly report was late again this year. ".repeat(20); 16];
        tokio::spawn(async move { e.embed(&long, EmbedPurpose::Document).await })
    };
    let mut tasks = Vec::new();
    for (i, t) in texts.iter().enumerate() {
        let e = e.clone();
        // Queries alone, and documents in pairs with a text of their own.
        let (job, purpose) = if i % 3 == 0 {
            (vec![t.clone(), "cat".to_owned()], EmbedPurpose::Document)
        } else {
            (vec![t.clone()], EmbedPurpose::Query)
        };
        tasks.push(tokio::spawn(async move { e.embed(&job, purpose).await }));
    }
    let cat = embed(&e, &["cat"]).await;
    assert_eq!(busy.await.unwrap().unwrap().len(), 16);
    for (i, task) in tasks.into_iter().enumerate() {
        let got = task.await.unwrap().unwrap();
        assert_eq!(got.len(), if i % 3 == 0 { 2 } else { 1 }, "{}", texts[i]);
        assert_close(&got[0], &alone[i][0], 1e-5, &texts[i]);
        if i % 3 == 0 {
            assert_close(&got[1], &cat[0], 1e-5, "cat");
        }
    }
}

#[tokio::test]
async fn builds_from_configuration() {
    let config: EmbedderConfig = serde_json::from_value(serde_json::json!({
        "provider": "local",
        "model_dir": model_dir(),
    }))
    .unwrap();
    let e = build_embedder(&config).unwrap();
    assert_eq!(e.identity(), load().identity());
    assert_eq!(e.max_batch(), LocalEmbedder::DEFAULT_MAX_BATCH);
}

#[test]
fn missing_or_broken_files_are_config_errors() {
    let err = LocalEmbedder::load(Path::new("/nonexistent/rememberstack-model")).unwrap_err();
    assert!(
        matches!(&err, ProviderError::Config(m) if m.contains("/nonexistent/rememberstack-model")),
        "{err}"
    );

    let src = model_dir();
    for (file, broken) in [
        ("config.json", Some(&b"{\"hidden_size\": 384}"[..])),
        ("tokenizer.json", Some(&b"not a tokenizer"[..])),
        (
            "model.safetensors",
            Some(&b"\x08\x00\x00\x00\x00\x00\x00\x00{}      "[..]),
        ),
        ("model.safetensors", None),
        ("config.json", None),
    ] {
        let dir = copy_model(&src);
        let path = dir.path().join(file);
        std::fs::remove_file(&path).unwrap();
        if let Some(bytes) = broken {
            std::fs::write(&path, bytes).unwrap();
        }
        match LocalEmbedder::load(dir.path()) {
            Err(ProviderError::Config(m)) => assert!(m.contains(file), "{file}: {m}"),
            other => panic!("{file}: expected a configuration error, got {other:?}"),
        }
    }
}

#[test]
fn generation_follows_the_files() {
    let src = model_dir();
    let base = LocalEmbedder::load(&src).unwrap().identity().generation();

    let same = copy_model(&src);
    let copy = LocalEmbedder::load(same.path()).unwrap();
    // The directory name is the model name; the hash part is the same bytes.
    assert_eq!(
        copy.identity().version,
        LocalEmbedder::load(&src).unwrap().identity().version
    );

    for file in ["config.json", "tokenizer.json"] {
        let dir = copy_model(&src);
        let path = dir.path().join(file);
        let mut text = std::fs::read_to_string(&path).unwrap();
        text.push('\n'); // Same meaning, different bytes.
        std::fs::remove_file(&path).unwrap();
        std::fs::write(&path, text).unwrap();
        let changed = LocalEmbedder::load(dir.path()).unwrap();
        assert_ne!(
            changed.identity().version,
            copy.identity().version,
            "{file}"
        );
        assert_ne!(changed.identity().generation(), base, "{file}");
    }
}

/// Embedding throughput on this machine, printed (`--nocapture` shows it): ~100-char
/// texts in batches of `max_batch`. Asserts only that the vectors came back.
#[tokio::test]
async fn throughput_is_printed() {
    let e = load();
    let texts: Vec<String> = (0..256)
        .map(|i| {
            format!(
                "Note {i}: Caroline went to the LGBTQ support group on Tuesday and felt \
                 welcomed by everyone."
            )
        })
        .collect();
    let chars = texts.iter().map(|t| t.chars().count()).sum::<usize>() / texts.len();
    let started = Instant::now();
    let mut n = 0;
    for batch in texts.chunks(e.max_batch()) {
        n += e.embed(batch, EmbedPurpose::Document).await.unwrap().len();
    }
    let secs = started.elapsed().as_secs_f64();
    assert_eq!(n, texts.len());
    println!(
        "local embedder: {n} texts of ~{chars} chars in batches of {} in {secs:.2} s: \
         {:.1} texts/s",
        e.max_batch(),
        n as f64 / secs
    );
}

/// A temporary directory with the model's files (the weights hard-linked where the
/// file system allows, the rest copied). Tests replace a file by removing it first,
/// so a linked original is never written through.
fn copy_model(src: &Path) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for entry in std::fs::read_dir(src).unwrap() {
        let entry = entry.unwrap();
        if !entry.file_type().unwrap().is_file() {
            continue;
        }
        let to = dir.path().join(entry.file_name());
        if entry.file_name() != "model.safetensors"
            || std::fs::hard_link(entry.path(), &to).is_err()
        {
            std::fs::copy(entry.path(), &to).unwrap();
        }
    }
    dir
}

/// First use with an empty cache: the model is downloaded from the hub (here a
/// local stand-in serving the real files), installed whole, and loaded; the next
/// resolution loads it from the cache without asking the hub.
#[tokio::test]
async fn first_use_downloads_the_model_into_the_cache_once() {
    use rememberstack_llm::{models::ModelSource, resolve_cached};
    use std::sync::atomic::{AtomicU64, Ordering};
    use wiremock::matchers::{method, path};
    use wiremock::{Mock, MockServer, ResponseTemplate};

    let src = model_dir();
    let hub = MockServer::start().await;
    for file in ["config.json", "tokenizer.json", "model.safetensors"] {
        Mock::given(method("GET"))
            .and(path(format!(
                "/sentence-transformers/all-MiniLM-L6-v2/resolve/main/{file}"
            )))
            .respond_with(
                ResponseTemplate::new(200).set_body_bytes(std::fs::read(src.join(file)).unwrap()),
            )
            .expect(1)
            .mount(&hub)
            .await;
    }
    // The optional sentence-transformers files are absent on this hub: fine.
    Mock::given(method("GET"))
        .respond_with(ResponseTemplate::new(404))
        .mount(&hub)
        .await;
    let cache = tempfile::tempdir().unwrap();
    let source = ModelSource {
        cache: Some(cache.path().to_path_buf()),
        endpoint: hub.uri(),
        download_on_first_use: true,
    };
    let bytes = AtomicU64::new(0);
    let progress = |_: &str, got: u64, _: Option<u64>| {
        bytes.fetch_max(got, Ordering::Relaxed);
    };
    let r = resolve_cached("all-MiniLM-L6-v2", &source, Some(&progress)).await;
    assert_eq!(r.fallback, None);
    assert!(r.embedder.degraded().is_none());
    assert!(
        r.embedder
            .identity()
            .generation()
            .starts_with("local/all-MiniLM-L6-v2/d384/")
    );
    assert!(
        bytes.load(Ordering::Relaxed) > 80_000_000,
        "progress was reported"
    );
    let installed = cache.path().join("all-MiniLM-L6-v2");
    assert_eq!(
        std::fs::read(installed.join("model.safetensors")).unwrap(),
        std::fs::read(src.join("model.safetensors")).unwrap()
    );
    // Only the model directory is left in the cache.
    let names: Vec<_> = std::fs::read_dir(cache.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, vec![std::ffi::OsString::from("all-MiniLM-L6-v2")]);
    // Cached: the hub is not asked again (each file was expected once).
    let again = resolve_cached("all-MiniLM-L6-v2", &source, None).await;
    assert_eq!(again.embedder.identity(), r.embedder.identity());
    hub.verify().await;
}

/// Inference runs on the embedder's own thread, started at load: a caller pinned to
/// one CPU, as the embedded store's pipeline is, does not pin the model. Afterwards
/// every thread of the process (the inference thread and the worker pools it
/// started) may run on every CPU the process may.
#[cfg(target_os = "linux")]
#[test]
fn a_pinned_caller_does_not_pin_the_model() {
    fn allowed(status: &str) -> Option<String> {
        status
            .lines()
            .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
            .map(|v| v.trim().to_owned())
    }
    let e = load();
    let (vectors, pinned_cpus) = std::thread::spawn(move || {
        rememberstack_sqlite::affinity::pin_to_pipeline_cpu();
        let here = allowed(&std::fs::read_to_string("/proc/thread-self/status").unwrap());
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let texts: Vec<String> = (0..64)
            .map(|i| format!("A pinned caller asks for vector number {i} of a long batch."))
            .collect();
        let v = rt
            .block_on(e.embed(&texts, EmbedPurpose::Document))
            .unwrap();
        (v, here)
    })
    .join()
    .unwrap();
    assert_eq!(vectors.len(), 64);
    let process = allowed(&std::fs::read_to_string("/proc/self/status").unwrap()).unwrap();
    if rememberstack_sqlite::affinity::pipeline_cpu().is_some() {
        assert_ne!(
            pinned_cpus.as_deref(),
            Some(process.as_str()),
            "the caller was pinned"
        );
    }
    let mut inference_threads = 0;
    for task in std::fs::read_dir("/proc/self/task").unwrap() {
        let dir = task.unwrap().path();
        let (Ok(comm), Ok(status)) = (
            std::fs::read_to_string(dir.join("comm")),
            std::fs::read_to_string(dir.join("status")),
        ) else {
            continue; // the thread ended meanwhile
        };
        inference_threads += usize::from(comm.trim() == "rememberstack-e");
        assert_eq!(
            allowed(&status).as_deref(),
            Some(process.as_str()),
            "thread {} may not run on every CPU",
            comm.trim()
        );
    }
    assert!(inference_threads >= 1, "no inference thread");
}
