//! The embedded store is self-contained in its directory: copying the directory
//! copies the memory.

use rememberstack::{Config, IngestOptions, Memory};

fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

#[tokio::test]
async fn copying_the_directory_copies_the_memory() {
    let root = tempfile::tempdir().unwrap();
    let original = root.path().join("original");
    let receipt = {
        let memory = Memory::builder()
            .path(original.join("memory.db"))
            .config(Config {
                embedder: rememberstack::EmbedderConfig::hashing(),
                ..Config::default()
            })
            .open()
            .await
            .unwrap();
        let r = memory
            .ingest_text(
                "The lighthouse keeper logs every storm.",
                IngestOptions::new("log"),
            )
            .await
            .unwrap();
        memory.process_until_idle().await.unwrap();
        r
    };
    let copy = root.path().join("copy");
    copy_dir(&original, &copy);
    std::fs::remove_dir_all(&original).unwrap();

    let memory = Memory::builder()
        .path(copy.join("memory.db"))
        .config(Config {
            embedder: rememberstack::EmbedderConfig::hashing(),
            ..Config::default()
        })
        .open()
        .await
        .unwrap();
    let env = memory.search("lighthouse storm", 3).await.unwrap();
    assert_eq!(env.results.len(), 1);
    assert_eq!(env.results[0].document_id, receipt.document_id);
    let detail = memory.document(receipt.document_id).await.unwrap();
    let ns = memory
        .engine()
        .store()
        .namespace("default")
        .await
        .unwrap()
        .unwrap();
    let bytes = memory
        .engine()
        .store()
        .content(ns.id, &detail.versions[0].content_sha256)
        .await
        .unwrap();
    assert_eq!(bytes, b"The lighthouse keeper logs every storm.");
}
