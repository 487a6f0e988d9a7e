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
/// title (alias `c`; the shared [`claims::CLAIM_SELECT`](crate::claims::CLAIM_SELECT)).
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
/// representation title and section (alias `c`; the shared
/// [`documents::CHUNK_SELECT`](crate::documents::CHUNK_SELECT)).
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
