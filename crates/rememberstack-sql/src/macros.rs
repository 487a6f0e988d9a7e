//! The declaration of a module's shared statements.

/// Declares a module's shared statements: each a documented `pub static` [`Statement`]
/// from its template, and (in tests) `ALL`, every one by name, which the module's
/// snapshot tests render in both dialects.
macro_rules! statements {
    ($($(#[$meta:meta])* $name:ident = $template:expr;)+) => {
        $($(#[$meta])* pub static $name: $crate::Statement = $crate::Statement::new($template);)+

        /// Every statement of this module, by name.
        #[cfg(test)]
        pub(crate) const ALL: &[(&str, &$crate::Statement)] = &[$((stringify!($name), &$name)),+];

        /// Every statement as each store runs it: a change to one shows here.
        #[cfg(test)]
        mod statement_snapshots {
            #[test]
            fn statements_in_sqlite() {
                insta::assert_snapshot!($crate::render_all(super::ALL, $crate::Dialect::Sqlite));
            }

            #[test]
            fn statements_in_postgres() {
                insta::assert_snapshot!($crate::render_all(super::ALL, $crate::Dialect::Postgres));
            }
        }
    };
}

/// The claim columns every claim read selects, with the claim's document and its
/// title (alias `c`).
macro_rules! claim_select {
    () => {
        "SELECT c.id, c.document_id, c.text, c.added_context_json, c.valid_from, c.valid_until,
       c.valid_precision, c.valid_kind, c.asserted_at, c.extractor_version, c.is_current,
       c.embedding_key, d.source_kind, d.source_ref,
       COALESCE((SELECT r.title FROM representations r WHERE r.namespace_id = d.namespace_id
                     AND r.version_id = COALESCE(d.current_version_id, d.latest_version_id)),
                d.source_ref) AS document_title
 FROM claims c
 JOIN documents d ON d.namespace_id = c.namespace_id AND d.id = c.document_id"
    };
}

/// The chunk columns every chunk read selects, with its document, version,
/// representation title and section (alias `c`).
macro_rules! chunk_select {
    () => {
        "SELECT c.id, c.document_id, c.version_id, c.ordinal, c.section_ordinal, c.block_start, c.block_end,
       c.start_byte, c.end_byte, c.text, c.char_start, c.char_end,
       c.event_ids_json, c.content_hash, c.embedding_key,
       d.source_kind, d.source_ref, d.current_version_id,
       v.source_modified_at, v.format,
       r.title AS document_title,
       s.title AS section_title, s.path_json, s.role
 FROM chunks c
 JOIN documents d ON d.namespace_id = c.namespace_id AND d.id = c.document_id
 JOIN document_versions v ON v.namespace_id = c.namespace_id AND v.id = c.version_id
 JOIN representations r ON r.namespace_id = c.namespace_id AND r.version_id = c.version_id
 JOIN sections s ON s.namespace_id = c.namespace_id AND s.version_id = c.version_id
               AND s.ordinal = c.section_ordinal"
    };
}

/// A resolution decision's columns, `seq` first.
macro_rules! decision_columns {
    () => {
        "seq, namespace_id, id, claim_id, document_id, ordinal, name, lemma,
 tier, candidates_json, complete, t3_score, t3_outcome, verdict, entity_id, rationale, model,
 resolver_version, features_json, created_at"
    };
}

/// A merge event's columns, `seq` first.
macro_rules! merge_columns {
    () => {
        "seq, namespace_id, id, from_id, into_id, snapshot_json, created_at, reverted_at"
    };
}

/// A version's columns with its document's and its ingest principal's (alias `v`).
macro_rules! version_select {
    () => {
        "SELECT v.id, v.document_id, v.namespace_id, v.ordinal, v.content_sha256, v.size, v.mime, v.format,
       v.source_modified_at, v.origin, v.metadata_json, v.created_at, v.compacted_at,
       d.source_kind, d.source_ref, d.mode, d.current_version_id,
       ip.kind AS principal_kind, ip.external_ref AS principal_ref
 FROM document_versions v
 JOIN documents d ON d.namespace_id = v.namespace_id AND d.id = v.document_id
 LEFT JOIN ingest_principals ip ON ip.id = v.ingested_by_principal_id"
    };
}

/// A document's columns with its latest version's metadata and work counts (alias
/// `d`).
macro_rules! document_select {
    () => {
        "SELECT d.id, d.source_kind, d.source_ref, d.mode, d.current_version_id, d.latest_version_id,
       d.version_count, d.created_at, d.deleted_at, v.metadata_json,
       (SELECT COUNT(*) FROM processing_state p WHERE p.namespace_id = d.namespace_id
            AND p.version_id = d.latest_version_id AND p.status IN ('pending', 'running', 'failed')
            AND (p.defer_reason IS NULL OR p.defer_reason <> 'no_route')) AS open_work,
       (SELECT COUNT(*) FROM processing_state p WHERE p.namespace_id = d.namespace_id
            AND p.version_id = d.latest_version_id AND p.status = 'pending'
            AND p.defer_reason = 'no_route') AS parked_work,
       (SELECT COUNT(*) FROM processing_state p WHERE p.namespace_id = d.namespace_id
            AND p.version_id = d.latest_version_id AND p.status = 'dead_letter') AS dead_work
 FROM documents d
 JOIN document_versions v ON v.namespace_id = d.namespace_id AND v.id = d.latest_version_id"
    };
}

/// A note revision's columns.
macro_rules! note_select {
    () => {
        "SELECT seq, document_id, version_id, source_key, source_revision, digest,
       lifecycle, lifecycle_version, metadata_json, created_at, updated_at FROM notes"
    };
}

/// A staged assertion's columns.
macro_rules! assertion_select {
    () => {
        "SELECT seq, id, namespace_id, claim_id, document_id, version_id, kind, subject_id, predicate,
       object_id, statement, valid_from, valid_until, valid_precision, validity_kind,
       asserted_at, ordinal
 FROM staged_assertions"
    };
}
