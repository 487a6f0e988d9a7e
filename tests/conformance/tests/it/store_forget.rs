//! Hard forget at the store contract, on every store: a forget that began and
//! stopped (a crash after the manifest and the gate) closes its namespace, and
//! only it, until it is finished, which the store does when it next opens. What
//! only PostgreSQL shows (the scrub of its own tables and BM25 statistics, a
//! restored copy of its schema) stays in its own tests; the forget's effects on
//! every read are tested through `Memory` in `forget`.

use crate::store_fixtures::{
    chunk_as, chunked_version, claim, forget_manifest, identity, new_version, put_vectors,
};
use chrono::{TimeZone, Utc};
use rememberstack::store::text::SectionRole;
use rememberstack::store::{ChunkFilter, ClaimFilter};
use rememberstack::{ChunkId, ErrorCode};
use rememberstack_conformance::stores;

fn at(secs: i64) -> chrono::DateTime<Utc> {
    Utc.timestamp_opt(1_780_000_000 + secs, 0).unwrap()
}

#[tokio::test]
async fn an_incomplete_forget_closes_the_namespace_until_the_store_opens_again() {
    for h in stores().await {
        let store = h.store.as_ref();
        let ns = store.ensure_namespace("docs", at(0)).await.unwrap();
        let other = store.ensure_namespace("other", at(0)).await.unwrap();
        // One lineage: its original, a chunk and a claim, each with a vector.
        let text = "Marker zebra-42";
        let k = chunk_as(ChunkId::new(), 0, 0, text, "chunk-key");
        let k_id = k.id;
        let (doc, version) = chunked_version(
            store,
            ns.id,
            "secret.md",
            text.as_bytes(),
            "secret",
            &[SectionRole::Body],
            vec![k],
            at(0),
        )
        .await;
        let c = claim(store, ns.id, (doc, version, k_id), text, true, at(0)).await;
        let keys = vec![
            "chunk-key".to_string(),
            store.claims(ns.id, &[c]).await.unwrap()[0]
                .embedding_key
                .clone(),
        ];
        let generation = identity("gen", 3);
        put_vectors(
            store,
            ns.id,
            &generation,
            keys.iter()
                .map(|k| (k.clone(), vec![1.0, 0.0, 0.0]))
                .collect(),
            at(0),
        )
        .await;
        let sha = store
            .version(ns.id, version)
            .await
            .unwrap()
            .unwrap()
            .content_sha256;
        let m = forget_manifest(store, "docs", doc, ("file", "secret.md"), at(10)).await;

        // The forget begins (manifest appended, namespace closed) and the process dies.
        store.begin_forget(&m, at(10)).await.unwrap();
        let err = store.namespace("docs").await.unwrap_err();
        assert_eq!(err.code(), ErrorCode::ForgetInProgress, "{}", h.kind);
        // Other namespaces are unaffected.
        assert_eq!(
            store.namespace("other").await.unwrap().unwrap().id,
            other.id
        );
        assert_eq!(
            store.incomplete_forgets(ns.id).await.unwrap(),
            vec![m.clone()]
        );

        // Opening the store again finishes the forget before serving.
        let reopened = h.open_again().await;
        assert!(
            reopened.namespace("docs").await.unwrap().is_some(),
            "{}",
            h.kind
        );
        assert!(reopened.incomplete_forgets(ns.id).await.unwrap().is_empty());
        assert!(reopened.document(ns.id, doc).await.unwrap().is_none());
        assert!(reopened.version(ns.id, version).await.unwrap().is_none());
        assert_eq!(
            reopened.content(ns.id, &sha).await.unwrap_err().code(),
            ErrorCode::NotFound
        );
        assert!(reopened.chunks(ns.id, &[k_id]).await.unwrap().is_empty());
        assert!(reopened.claims(ns.id, &[c]).await.unwrap().is_empty());
        assert!(
            reopened
                .vectors(ns.id, &generation.generation(), &keys)
                .await
                .unwrap()
                .is_empty()
        );
        let zebra = vec!["zebra".to_string()];
        let chunks = ChunkFilter {
            namespace_id: ns.id,
            roles: vec![SectionRole::Body],
            entities: vec![],
            documents: None,
            exact: false,
        };
        assert!(
            reopened
                .search_chunks_lexical(&chunks, &zebra, 10)
                .await
                .unwrap()
                .is_empty()
        );
        let claims = ClaimFilter {
            namespace_id: ns.id,
            include_retired: true,
            document_id: None,
            entities: vec![],
            documents: None,
        };
        assert!(
            reopened
                .search_claims_lexical(&claims, &zebra, 10)
                .await
                .unwrap()
                .is_empty()
        );
        // The bytes are refused from now on.
        let err = reopened
            .create_version(new_version(ns.id, "again.md", text.as_bytes(), at(11)))
            .await
            .unwrap_err();
        assert_eq!(err.code(), ErrorCode::ForgottenContent);
    }
}
