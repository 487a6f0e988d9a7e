//! API keys (D50): deployment-wide keys in the store, so every process on one
//! database shares them. Created with a secret shown once and stored only as its
//! hash; listed without secrets; revoked for good; untouched by delete and forget.

use rememberstack::{ApiKey, ErrorCode, IngestOptions, KeyScope, Memory, MemoryStore, hash_secret};
use rememberstack_conformance::{Harness, Location, ManualClock, stores, test_config};
use std::time::Duration;

fn ns(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

/// Everything the store holds for its keys, as bytes: the SQLite file and its
/// write-ahead log, or every `api_keys` row as JSON.
async fn stored_bytes(h: &Harness) -> Vec<u8> {
    match &h.location {
        Location::Sqlite(path) => {
            let mut bytes = std::fs::read(path).unwrap();
            let mut wal = path.clone().into_os_string();
            wal.push("-wal");
            if let Ok(w) = std::fs::read(&wal) {
                bytes.extend(w);
            }
            bytes
        }
        Location::Postgres { url, config } => {
            let store = rememberstack::PgStore::connect_with(url, config.clone())
                .await
                .unwrap();
            let rows: String = sqlx::query_scalar(
                "SELECT COALESCE(string_agg(to_jsonb(k)::text, E'\\n'), '') FROM api_keys k",
            )
            .fetch_one(store.pool())
            .await
            .unwrap();
            store.close().await;
            rows.into_bytes()
        }
    }
}

fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|w| w == needle.as_bytes())
}

#[tokio::test]
async fn keys_are_created_listed_looked_up_revoked_and_counted() {
    for h in stores().await {
        let clock = ManualClock::new();
        let memory = h
            .memory_with(test_config(), None, Some(clock.clone()))
            .await;
        assert!(memory.api_keys().await.unwrap().is_empty(), "{}", h.kind);
        assert!(!memory.has_active_api_keys().await.unwrap(), "{}", h.kind);
        assert_eq!(h.store.active_api_key_count().await.unwrap(), 0);

        let (reader, reader_secret) = memory
            .create_api_key(
                ns(&["team-a", "team-b", "team-a"]),
                vec![KeyScope::Read, KeyScope::Read],
                Some("dashboard".into()),
            )
            .await
            .unwrap();
        assert_eq!(reader.namespaces, ns(&["team-a", "team-b"]), "{}", h.kind);
        assert_eq!(reader.scopes, vec![KeyScope::Read]);
        assert_eq!(reader.name.as_deref(), Some("dashboard"));
        assert!(reader.id.starts_with("key_"));
        assert!(reader_secret.starts_with("rsk_"));
        assert_eq!(reader.prefix, reader_secret[..12]);
        assert_eq!(reader.revoked_at, None);
        clock.advance(Duration::from_secs(1));
        let (writer, writer_secret) = memory
            .create_api_key(ns(&["team-a"]), vec![KeyScope::Write], None)
            .await
            .unwrap();
        assert_ne!(reader_secret, writer_secret);

        // Oldest first, exactly as created.
        let listed = memory.api_keys().await.unwrap();
        assert_eq!(listed, vec![reader.clone(), writer.clone()], "{}", h.kind);
        assert_eq!(h.store.active_api_key_count().await.unwrap(), 2);
        assert!(memory.has_active_api_keys().await.unwrap());

        // Lookup by hash, in the store and through the facade.
        assert_eq!(
            h.store
                .api_key_by_hash(&hash_secret(&reader_secret))
                .await
                .unwrap(),
            Some(reader.clone()),
            "{}",
            h.kind
        );
        assert_eq!(
            h.store
                .api_key_by_hash(&hash_secret("rsk_nope"))
                .await
                .unwrap(),
            None
        );
        let authed = memory
            .authenticate_key(&writer_secret)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(authed, writer);
        assert!(authed.allows("team-a", KeyScope::Ingest));
        assert!(!authed.allows("team-a", KeyScope::Read));
        assert!(!authed.allows("team-b", KeyScope::Write));
        let authed = memory
            .authenticate_key(&reader_secret)
            .await
            .unwrap()
            .unwrap();
        assert!(authed.allows("team-b", KeyScope::Read));
        assert!(!authed.allows("team-b", KeyScope::Ingest));
        for wrong in [
            "",
            "rsk_",
            "rsk_wrong",
            "Bearer x",
            &writer_secret[..20],
            &format!("{writer_secret}x"),
        ] {
            assert_eq!(
                memory.authenticate_key(wrong).await.unwrap(),
                None,
                "{wrong:?}"
            );
        }

        // Another store over the same database (another process) sees the same keys.
        let again: std::sync::Arc<dyn MemoryStore> = h.open_again().await;
        let other = Memory::builder()
            .store(again)
            .config(test_config())
            .open()
            .await
            .unwrap();
        assert_eq!(other.api_keys().await.unwrap(), listed, "{}", h.kind);
        assert_eq!(
            other.authenticate_key(&reader_secret).await.unwrap(),
            Some(reader.clone())
        );

        // Revocation: the key stays listed with its time, authenticates nothing, and a
        // second revocation keeps the first time.
        clock.advance(Duration::from_secs(1));
        let revoked = memory.revoke_api_key(&reader.id).await.unwrap();
        let first = revoked.revoked_at.expect("revoked_at");
        assert_eq!(
            ApiKey {
                revoked_at: None,
                ..revoked.clone()
            },
            reader
        );
        assert!(!revoked.allows("team-a", KeyScope::Read));
        clock.advance(Duration::from_secs(60));
        let again = memory.revoke_api_key(&reader.id).await.unwrap();
        assert_eq!(again.revoked_at, Some(first), "{}", h.kind);
        assert_eq!(memory.authenticate_key(&reader_secret).await.unwrap(), None);
        assert_eq!(other.authenticate_key(&reader_secret).await.unwrap(), None);
        assert_eq!(
            h.store
                .api_key_by_hash(&hash_secret(&reader_secret))
                .await
                .unwrap()
                .and_then(|k| k.revoked_at),
            Some(first)
        );
        assert_eq!(
            memory.api_keys().await.unwrap(),
            vec![revoked, writer.clone()]
        );
        assert_eq!(h.store.active_api_key_count().await.unwrap(), 1);
        assert!(memory.has_active_api_keys().await.unwrap());
        memory.revoke_api_key(&writer.id).await.unwrap();
        assert!(!memory.has_active_api_keys().await.unwrap(), "{}", h.kind);
        assert!(!other.has_active_api_keys().await.unwrap());
    }
}

#[tokio::test]
async fn unknown_key_ids_are_not_found() {
    for h in stores().await {
        let memory = h.memory().await;
        for id in [
            "key_00000000000000000000000000000000",
            "",
            "nope",
            &"k".repeat(500),
        ] {
            let e = memory.revoke_api_key(id).await.unwrap_err();
            assert_eq!(e.code(), ErrorCode::NotFound, "{}: {id:?}", h.kind);
        }
        let e = h
            .store
            .revoke_api_key("key_missing", chrono::Utc::now())
            .await
            .unwrap_err();
        assert_eq!(e.code(), ErrorCode::NotFound, "{}", h.kind);
        assert!(memory.api_keys().await.unwrap().is_empty());
    }
}

#[tokio::test]
async fn bad_key_requests_are_refused_and_change_nothing() {
    for h in stores().await {
        let memory = h.memory().await;
        let cases: Vec<(Vec<String>, Vec<KeyScope>, Option<String>)> = vec![
            (vec![], vec![KeyScope::Read], None),
            (ns(&["Team A"]), vec![KeyScope::Read], None),
            (ns(&["ok", "../etc"]), vec![KeyScope::Admin], None),
            (ns(&["ok"]), vec![], None),
            (ns(&["ok"]), vec![KeyScope::Read], Some(" ".into())),
            (ns(&["ok"]), vec![KeyScope::Read], Some("a\u{7}bell".into())),
            (ns(&["ok"]), vec![KeyScope::Read], Some("n".repeat(201))),
        ];
        for (namespaces, scopes, name) in cases {
            let e = memory
                .create_api_key(namespaces.clone(), scopes.clone(), name.clone())
                .await
                .unwrap_err();
            assert_eq!(
                e.code(),
                ErrorCode::InvalidInput,
                "{}: {namespaces:?} {scopes:?} {name:?}",
                h.kind
            );
        }
        assert_eq!(
            KeyScope::parse("superuser").unwrap_err().code(),
            ErrorCode::InvalidInput
        );
        assert!(memory.api_keys().await.unwrap().is_empty(), "{}", h.kind);
        assert_eq!(h.store.active_api_key_count().await.unwrap(), 0);
        assert!(!memory.has_active_api_keys().await.unwrap());
    }
}

#[tokio::test]
async fn the_secret_is_never_listed_or_stored() {
    for h in stores().await {
        let memory = h.memory().await;
        let (key, secret) = memory
            .create_api_key(ns(&["default"]), vec![KeyScope::Admin], Some("ops".into()))
            .await
            .unwrap();
        let hash = hash_secret(&secret);
        let listing = serde_json::to_string(&memory.api_keys().await.unwrap()).unwrap();
        assert!(listing.contains(&key.id), "{}", h.kind);
        assert!(!listing.contains(&secret), "{}: {listing}", h.kind);
        assert!(!listing.contains(&hash), "{}: {listing}", h.kind);
        // The store keeps the hash (so this looks in the right place) and never the
        // secret, nor anything of it beyond the listed prefix.
        let stored = stored_bytes(&h).await;
        assert!(
            contains(&stored, &hash),
            "{}: the hash is not where we look",
            h.kind
        );
        assert!(
            !contains(&stored, &secret),
            "{}: the secret is stored",
            h.kind
        );
        assert!(!contains(&stored, &secret[..20]), "{}", h.kind);
        assert!(contains(&stored, &key.prefix), "{}", h.kind);
    }
}

#[tokio::test]
async fn delete_and_forget_leave_keys_alone() {
    for h in stores().await {
        let memory = h.memory().await;
        let (key, secret) = memory
            .create_api_key(ns(&["default"]), vec![KeyScope::Admin], None)
            .await
            .unwrap();
        let a = memory
            .ingest_text(
                "Ada Lovelace wrote the first program.",
                IngestOptions::new("notes/ada"),
            )
            .await
            .unwrap();
        let b = memory
            .ingest_text(
                "Grace Hopper built the first compiler.",
                IngestOptions::new("notes/grace"),
            )
            .await
            .unwrap();
        memory.process_until_idle().await.unwrap();
        memory.delete_document(a.document_id).await.unwrap();
        memory.forget_document(b.document_id).await.unwrap();
        assert_eq!(
            memory.api_keys().await.unwrap(),
            vec![key.clone()],
            "{}",
            h.kind
        );
        assert_eq!(memory.authenticate_key(&secret).await.unwrap(), Some(key));
    }
}
