//! Hard forget on PostgreSQL against a real server (`DATABASE_URL`; skipped,
//! saying so, without it). The records a forget must remove are written with
//! plain SQL, so this checks the scrub in the store's own tables (and its BM25
//! statistics), the guards, the re-honouring of manifests when a restored copy
//! connects, and a manifest root that cannot be read. An interrupted forget
//! finished when the store opens again is tested on every store in
//! `tests/conformance` (`store_forget`).

use chrono::{TimeZone, Utc};
use rememberstack_core::forget::{ForgetManifest, ForgetTarget, source_identity_sha256};
use rememberstack_core::ids::{DocumentId, NamespaceId, VersionId};
use rememberstack_core::store::traits::*;
use rememberstack_pg::{PgStore, PgStoreConfig};
use std::path::Path;

fn database_url(test: &str) -> Option<String> {
    match std::env::var("DATABASE_URL") {
        Ok(url) if !url.trim().is_empty() => Some(url),
        _ => {
            eprintln!("{test}: skipped, DATABASE_URL is not set (scripts/pg-local.sh start)");
            None
        }
    }
}

fn fresh_schema(tag: &str) -> String {
    format!("rs_it_{tag}_{}", uuid::Uuid::new_v4().simple())
}

/// A store in a schema of its own with namespace `docs`, and what a test needs to
/// connect to it again; `None` (the test skips, saying so) without `DATABASE_URL`.
struct Fixture {
    _dir: tempfile::TempDir,
    url: String,
    schema: String,
    manifests: std::path::PathBuf,
    store: PgStore,
    ns: rememberstack_core::store::Namespace,
}

async fn fixture(test: &str, tag: &str) -> Option<Fixture> {
    let url = database_url(test)?;
    let dir = tempfile::tempdir().unwrap();
    let manifests = dir.path().join("manifests");
    let schema = fresh_schema(tag);
    let store = PgStore::connect_with(&url, config(&schema, &manifests))
        .await
        .unwrap();
    let ns = store.ensure_namespace("docs", at(0)).await.unwrap();
    Some(Fixture {
        _dir: dir,
        url,
        schema,
        manifests,
        store,
        ns,
    })
}

fn config(schema: &str, manifests: &Path) -> PgStoreConfig {
    PgStoreConfig {
        max_connections: 2,
        schema: Some(schema.to_string()),
        manifest_root: Some(manifests.to_path_buf()),
        ..PgStoreConfig::default()
    }
}

async fn drop_schema(store: &PgStore) {
    let schema = store.schema().expect("tests use a schema");
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "DROP SCHEMA \"{schema}\" CASCADE"
    )))
    .execute(store.pool())
    .await
    .expect("drop the test schema");
    store.close().await;
}

fn at(secs: i64) -> chrono::DateTime<Utc> {
    Utc.timestamp_opt(1_780_000_000 + secs, 0).unwrap()
}

/// One lineage with one version, one chunk and one claim (each with its lexical
/// row and vector) and its original bytes. Returns (document, version, sha256).
async fn lineage(
    store: &PgStore,
    ns: NamespaceId,
    source_ref: &str,
    text: &str,
) -> (DocumentId, VersionId, String) {
    let (doc, version) = (DocumentId::new(), VersionId::new());
    let sha = format!("sha-{}", uuid::Uuid::new_v4().simple());
    let (ns_s, doc_s, v_s) = (ns.to_string(), doc.to_string(), version.to_string());
    let pool = store.pool();
    sqlx::query(
        "INSERT INTO content_objects (namespace_id, sha256, size, mime, bytes, created_at)
         VALUES ($1, $2, $3, 'text/plain', $4, $5)",
    )
    .bind(&ns_s)
    .bind(&sha)
    .bind(text.len() as i64)
    .bind(text.as_bytes())
    .bind(at(0))
    .execute(pool)
    .await
    .unwrap();
    sqlx::query(
        "INSERT INTO documents (namespace_id, id, source_kind, source_ref, mode, current_version_id,
             latest_version_id, version_count, created_at, updated_at)
         VALUES ($1, $2, 'file', $3, 'living', $4, $4, 1, $5, $5)",
    )
    .bind(&ns_s)
    .bind(&doc_s)
    .bind(source_ref)
    .bind(&v_s)
    .bind(at(0))
    .execute(pool)
    .await
    .unwrap();
    sqlx::query(
        "INSERT INTO document_versions (namespace_id, id, document_id, ordinal, content_sha256,
             size, mime, source_modified_at, origin, metadata_json, created_at)
         VALUES ($1, $2, $3, 1, $4, $5, 'text/plain', $6, 'external', '{}'::jsonb, $6)",
    )
    .bind(&ns_s)
    .bind(&v_s)
    .bind(&doc_s)
    .bind(&sha)
    .bind(text.len() as i64)
    .bind(at(0))
    .execute(pool)
    .await
    .unwrap();
    let chunk_id = uuid::Uuid::new_v4().to_string();
    let chunk_seq: i64 = sqlx::query_scalar(
        "INSERT INTO chunks (namespace_id, id, version_id, document_id, ordinal, section_ordinal,
             block_start, block_end, start_byte, end_byte, char_start, char_end, text,
             content_hash, token_estimate, embedding_key, event_ids_json)
         VALUES ($1, $2, $3, $4, 0, 0, 0, 1, 0, $5, 0, $5, $6, 'h', 4, $7, '[]'::jsonb)
         RETURNING seq",
    )
    .bind(&ns_s)
    .bind(&chunk_id)
    .bind(&v_s)
    .bind(&doc_s)
    .bind(text.len() as i64)
    .bind(text)
    .bind(format!("chunk-key-{source_ref}"))
    .fetch_one(pool)
    .await
    .unwrap();
    sqlx::query("INSERT INTO chunk_lexical (namespace_id, seq, text) VALUES ($1, $2, $3)")
        .bind(&ns_s)
        .bind(chunk_seq)
        .bind(text)
        .execute(pool)
        .await
        .unwrap();
    let claim_id = uuid::Uuid::new_v4().to_string();
    let claim_seq: i64 = sqlx::query_scalar(
        "INSERT INTO claims (namespace_id, id, document_id, text, added_context_json,
             valid_precision, valid_kind, asserted_at, extractor_version, extraction_input_hash,
             origin_version_id, origin_chunk_id, embedding_key, claim_key, is_current, created_at)
         VALUES ($1, $2, $3, $4, '[]'::jsonb, 'day', 'unknown', $5, 'x', 'h', $6, $7, $8, $9,
             true, $5)
         RETURNING seq",
    )
    .bind(&ns_s)
    .bind(&claim_id)
    .bind(&doc_s)
    .bind(text)
    .bind(at(0))
    .bind(&v_s)
    .bind(&chunk_id)
    .bind(format!("claim-key-{source_ref}"))
    .bind(format!("ck-{source_ref}"))
    .fetch_one(pool)
    .await
    .unwrap();
    sqlx::query("INSERT INTO claim_lexical (namespace_id, seq, text) VALUES ($1, $2, $3)")
        .bind(&ns_s)
        .bind(claim_seq)
        .bind(text)
        .execute(pool)
        .await
        .unwrap();
    sqlx::query(
        "INSERT INTO chunk_claims (namespace_id, chunk_id, claim_id, version_id, document_id,
             extractor_version, extraction_input_hash, ordinal, spans_json, passages_json,
             event_ids_json, reused, created_at)
         VALUES ($1, $2, $3, $4, $5, 'x', 'h', 0, '[]'::jsonb, '[]'::jsonb, '[]'::jsonb, false, $6)",
    )
    .bind(&ns_s)
    .bind(&chunk_id)
    .bind(&claim_id)
    .bind(&v_s)
    .bind(&doc_s)
    .bind(at(0))
    .execute(pool)
    .await
    .unwrap();
    for key in [
        format!("chunk-key-{source_ref}"),
        format!("claim-key-{source_ref}"),
    ] {
        sqlx::query(
            "INSERT INTO vectors (namespace_id, generation, embedding_key, dimension, embedding,
                 created_at)
             VALUES ($1, 'gen', $2, 3, '[1,0,0]'::vector, $3)",
        )
        .bind(&ns_s)
        .bind(key)
        .bind(at(0))
        .execute(pool)
        .await
        .unwrap();
    }
    (doc, version, sha)
}

fn manifest(
    ns: &rememberstack_core::store::Namespace,
    doc: DocumentId,
    version: VersionId,
    sha: &str,
    source_ref: &str,
) -> ForgetManifest {
    ForgetManifest {
        format: rememberstack_core::forget::MANIFEST_FORMAT.into(),
        manifest_id: uuid::Uuid::new_v4(),
        namespace_id: ns.id,
        namespace: ns.slug.clone(),
        target: ForgetTarget::Document,
        document_id: doc,
        version_ids: vec![version],
        content_sha256: vec![sha.to_string()],
        source_identity_sha256: source_identity_sha256("file", source_ref),
        requested_at: at(10),
    }
}

async fn count(store: &PgStore, sql: &str, ns: NamespaceId) -> i64 {
    sqlx::query_scalar(sqlx::AssertSqlSafe(sql.to_string()))
        .bind(ns.to_string())
        .fetch_one(store.pool())
        .await
        .unwrap()
}

/// Rows of the namespace in each table a lineage above writes to.
async fn footprint(store: &PgStore, ns: NamespaceId) -> Vec<i64> {
    let mut out = vec![];
    for table in [
        "documents",
        "document_versions",
        "content_objects",
        "chunks",
        "chunk_lexical",
        "claims",
        "claim_lexical",
        "chunk_claims",
        "vectors",
    ] {
        out.push(
            count(
                store,
                &format!("SELECT COUNT(*) FROM {table} WHERE namespace_id = $1"),
                ns,
            )
            .await,
        );
    }
    out
}

#[tokio::test]
async fn pg_forget_scrubs_one_lineage_guards_it_and_keeps_the_other() {
    let Some(Fixture {
        _dir,
        manifests,
        store,
        ns,
        ..
    }) = fixture(
        "pg_forget_scrubs_one_lineage_guards_it_and_keeps_the_other",
        "forget",
    )
    .await
    else {
        return;
    };
    let kept = lineage(&store, ns.id, "kept.md", "Alice lives in Oslo").await;
    let before_kept = footprint(&store, ns.id).await;
    let (doc, version, sha) = lineage(&store, ns.id, "secret.md", "Marker zebra-42").await;
    assert_eq!(footprint(&store, ns.id).await[0], 2);

    let m = manifest(&ns, doc, version, &sha, "secret.md");
    let (report, _) = store.forget(&m, at(10)).await.unwrap();
    assert_eq!(report.versions, 1);
    assert_eq!(report.chunks, 1);
    assert_eq!(report.claims, 1);
    assert_eq!(report.vectors, 2);
    assert_eq!(report.blobs, 1);
    assert!(report.verification.iter().all(|c| c.remaining == 0));
    assert!(report.forgotten_at.is_some());
    // Only the forgotten lineage went: the other lineage's rows are all there.
    assert_eq!(footprint(&store, ns.id).await, before_kept);
    // No row anywhere in the namespace holds the marker.
    let marker: i64 = count(
        &store,
        "SELECT (SELECT COUNT(*) FROM chunks WHERE namespace_id = $1 AND text LIKE '%zebra%')
              + (SELECT COUNT(*) FROM claims WHERE namespace_id = $1 AND text LIKE '%zebra%')
              + (SELECT COUNT(*) FROM lexical_terms WHERE namespace_id = $1 AND term LIKE '%zebra%')
              + (SELECT COUNT(*) FROM content_objects WHERE namespace_id = $1
                   AND position('zebra'::bytea in bytes) > 0)",
        ns.id,
    )
    .await;
    assert_eq!(marker, 0);
    // The BM25 statistics count the kept lineage's chunk and claim only.
    let totals = count(
        &store,
        "SELECT COALESCE(SUM(docs), 0)::bigint FROM lexical_totals WHERE namespace_id = $1",
        ns.id,
    )
    .await;
    assert_eq!(totals, 2);
    // The bytes are refused from now on; the episode is complete, the namespace open.
    let guard: i64 = count(
        &store,
        "SELECT COUNT(*) FROM forgotten_content WHERE namespace_id = $1",
        ns.id,
    )
    .await;
    assert_eq!(guard, 1);
    assert!(store.incomplete_forgets(ns.id).await.unwrap().is_empty());
    assert!(store.namespace("docs").await.unwrap().is_some());
    // The manifest was appended to the root, content-free.
    let files: Vec<_> = std::fs::read_dir(&manifests).unwrap().collect();
    assert_eq!(files.len(), 1);
    let text = std::fs::read_to_string(files[0].as_ref().unwrap().path()).unwrap();
    assert!(!text.contains("zebra") && !text.contains("secret.md"));
    // The kept lineage survives a repeat of the same forget (idempotent).
    store.forget(&m, at(11)).await.unwrap();
    assert_eq!(footprint(&store, ns.id).await, before_kept);
    // Through the store's own reads: the kept lineage is there, the forgotten one
    // is not.
    assert!(store.document(ns.id, kept.0).await.unwrap().is_some());
    assert!(store.document(ns.id, doc).await.unwrap().is_none());
    drop_schema(&store).await;
}

#[tokio::test]
async fn pg_a_restored_copy_is_forgotten_again_on_connect() {
    let Some(Fixture {
        _dir,
        url,
        schema,
        manifests,
        store,
        ns,
    }) = fixture(
        "pg_a_restored_copy_is_forgotten_again_on_connect",
        "restore",
    )
    .await
    else {
        return;
    };
    let (doc, version, sha) = lineage(&store, ns.id, "secret.md", "Marker zebra-42").await;
    let m = manifest(&ns, doc, version, &sha, "secret.md");
    store.forget(&m, at(10)).await.unwrap();
    // A restore of an older copy: the records are back (same ids), the episode row
    // and the guard are not.
    sqlx::query("DELETE FROM forget_episodes")
        .execute(store.pool())
        .await
        .unwrap();
    sqlx::query("DELETE FROM forgotten_content")
        .execute(store.pool())
        .await
        .unwrap();
    let (doc2, _, _) = lineage(&store, ns.id, "secret.md", "Marker zebra-42").await;
    sqlx::query("UPDATE documents SET id = $1 WHERE id = $2")
        .bind(doc.to_string())
        .bind(doc2.to_string())
        .execute(store.pool())
        .await
        .unwrap();
    sqlx::query("UPDATE document_versions SET document_id = $1, id = $2 WHERE document_id = $3")
        .bind(doc.to_string())
        .bind(version.to_string())
        .bind(doc2.to_string())
        .execute(store.pool())
        .await
        .unwrap();
    for table in ["chunks", "claims", "chunk_claims"] {
        sqlx::query(sqlx::AssertSqlSafe(format!(
            "UPDATE {table} SET document_id = $1 WHERE document_id = $2"
        )))
        .bind(doc.to_string())
        .bind(doc2.to_string())
        .execute(store.pool())
        .await
        .unwrap();
    }
    for table in ["chunks", "chunk_claims"] {
        sqlx::query(sqlx::AssertSqlSafe(format!(
            "UPDATE {table} SET version_id = $1"
        )))
        .bind(version.to_string())
        .execute(store.pool())
        .await
        .unwrap();
    }
    assert_eq!(footprint(&store, ns.id).await[3], 1, "the chunk is back");
    store.close().await;
    let store = PgStore::connect_with(&url, config(&schema, &manifests))
        .await
        .unwrap();
    assert_eq!(footprint(&store, ns.id).await, vec![0; 9]);
    let guard: i64 = count(
        &store,
        "SELECT COUNT(*) FROM forgotten_content WHERE namespace_id = $1",
        ns.id,
    )
    .await;
    assert_eq!(guard, 1);
    drop_schema(&store).await;
}

#[tokio::test]
async fn pg_an_unreadable_manifest_root_fails_the_connect() {
    let Some(url) = database_url("pg_an_unreadable_manifest_root_fails_the_connect") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    // A manifest that does not parse: the store must not serve.
    let manifests = dir.path().join("manifests");
    std::fs::create_dir_all(&manifests).unwrap();
    std::fs::write(manifests.join("broken.json"), b"{not json").unwrap();
    let schema = fresh_schema("badroot");
    let err = PgStore::connect_with(&url, config(&schema, &manifests))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("unreadable"), "{err}");
    let cleanup = PgStore::connect_with(&url, config(&schema, &dir.path().join("empty")))
        .await
        .unwrap();
    drop_schema(&cleanup).await;
}

/// A pipeline commit of the lineage that is under way when a forget begins (here a
/// transaction holding the lineage row, as a chunk commit does from its first
/// statement, which then writes a chunk) finishes before the forget reads
/// anything: its chunk is scrubbed with the rest and the forget verifies, instead
/// of the chunk surviving and the namespace staying closed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pg_a_commit_under_way_when_a_forget_begins_is_scrubbed_with_the_rest() {
    let Some(Fixture {
        _dir, store, ns, ..
    }) = fixture(
        "pg_a_commit_under_way_when_a_forget_begins_is_scrubbed_with_the_rest",
        "forget_race",
    )
    .await
    else {
        return;
    };
    let (doc, version, sha) = lineage(&store, ns.id, "secret.md", "Marker zebra-42").await;
    let m = manifest(&ns, doc, version, &sha, "secret.md");

    // The commit under way: the lineage row first, as `commit_chunks` takes it.
    let mut commit = store.pool().begin().await.unwrap();
    sqlx::query("SELECT 1 FROM documents WHERE namespace_id = $1 AND id = $2 FOR UPDATE")
        .bind(ns.id.to_string())
        .bind(doc.to_string())
        .execute(&mut *commit)
        .await
        .unwrap();
    let forgetting = {
        let store = store.clone();
        let m = m.clone();
        tokio::spawn(async move { store.forget(&m, at(10)).await })
    };
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    assert!(
        !forgetting.is_finished(),
        "the forget waits for the commit that holds its lineage"
    );
    // The commit writes a second chunk of the version, then ends.
    sqlx::query(
        "INSERT INTO chunks (namespace_id, id, version_id, document_id, ordinal, section_ordinal,
             block_start, block_end, start_byte, end_byte, char_start, char_end, text,
             content_hash, token_estimate, embedding_key, event_ids_json)
         SELECT namespace_id, $3, version_id, document_id, ordinal + 1, section_ordinal,
             block_start, block_end, start_byte, end_byte, char_start, char_end,
             text || ' again', content_hash, token_estimate, embedding_key, event_ids_json
         FROM chunks WHERE namespace_id = $1 AND version_id = $2",
    )
    .bind(ns.id.to_string())
    .bind(version.to_string())
    .bind(uuid::Uuid::now_v7().to_string())
    .execute(&mut *commit)
    .await
    .unwrap();
    commit.commit().await.unwrap();

    let (report, _) = forgetting.await.unwrap().unwrap();
    assert_eq!(report.chunks, 2, "both chunks scrubbed: {report:?}");
    assert!(
        report.verification.iter().all(|c| c.remaining == 0),
        "{:?}",
        report.verification
    );
    assert!(report.forgotten_at.is_some());
    assert!(store.incomplete_forgets(ns.id).await.unwrap().is_empty());
    let left = count(
        &store,
        "SELECT COUNT(*) FROM chunks WHERE namespace_id = $1",
        ns.id,
    )
    .await;
    assert_eq!(left, 0);
    drop_schema(&store).await;
}
