//! Documents and their versions, names, representations, sections, blocks and
//! chunks: the statements both stores run as they are.

statements! {
    /// How many chunks of their document's current version a namespace has and how
    /// many lack a vector of one generation. Binds: generation, namespace.
    CHUNK_VECTOR_COVERAGE = "SELECT COUNT(*) AS n,
        COALESCE(SUM(CASE WHEN vv.embedding_key IS NULL THEN 1 ELSE 0 END), 0){BIGINT}
            AS missing
 FROM chunks c
 JOIN documents d ON d.namespace_id = c.namespace_id AND d.current_version_id = c.version_id
 LEFT JOIN vectors vv ON vv.namespace_id = c.namespace_id AND vv.generation = ?
                      AND vv.embedding_key = c.embedding_key
 WHERE c.namespace_id = ?";

    /// A version by id. Binds: namespace, version.
    VERSION_BY_ID = concat!(version_select!(), "
 WHERE v.namespace_id = ? AND v.id = ?");

    /// A document's versions in order. Binds: namespace, document.
    VERSIONS_OF_DOCUMENT = concat!(version_select!(), "
 WHERE v.namespace_id = ? AND v.document_id = ? ORDER BY v.ordinal");

    /// A document by id. Binds: namespace, document.
    DOCUMENT_BY_ID = concat!(document_select!(), "
 WHERE d.namespace_id = ? AND d.id = ?");

    /// A document by its source's kind and name. Binds: namespace, kind, name.
    DOCUMENT_BY_NAME = concat!(document_select!(), "
 WHERE d.namespace_id = ? AND d.source_kind = ? AND d.source_ref = ?");

    /// A namespace's documents not deleted, newest first. Binds: namespace.
    LIVE_DOCUMENTS = concat!(document_select!(), "
 WHERE d.namespace_id = ? AND d.deleted_at IS NULL
 ORDER BY d.created_at DESC, d.id");

    /// Chunks by id, in no order. Binds: namespace, the ids (`{ANY}`).
    CHUNKS_BY_ID = concat!(chunk_select!(), "
 WHERE c.namespace_id = ? AND c.id {ANY}");

    /// Which of the embedding keys have a vector of one generation. Binds: namespace,
    /// generation, the keys (`{ANY}`).
    EXISTING_VECTORS = "SELECT embedding_key FROM vectors
 WHERE namespace_id = ? AND generation = ? AND embedding_key {ANY}";

    /// A version's chunks in order. Binds: namespace, version.
    CHUNKS_OF_VERSION = concat!(chunk_select!(), "
 WHERE c.namespace_id = ? AND c.version_id = ? ORDER BY c.ordinal");

    /// A version's blocks in order. Binds: namespace, version.
    BLOCKS = "SELECT ordinal, kind, level, start_byte, end_byte, hash, turn_json FROM blocks
 WHERE namespace_id = ? AND version_id = ? ORDER BY ordinal";

    /// A version's chunks. Binds: namespace, version.
    DELETE_CHUNKS = "DELETE FROM chunks WHERE namespace_id = ? AND version_id = ?";

    /// A document by name with its latest version's content digest. Binds: each `?` in
    /// turn.
    DOCUMENT_WITH_LATEST_DIGEST = "SELECT d.id, d.mode, d.latest_version_id, d.version_count, d.deleted_at, v.content_sha256
 FROM documents d JOIN document_versions v
   ON v.namespace_id = d.namespace_id AND v.id = d.latest_version_id
 WHERE d.namespace_id = ? AND d.source_kind = ? AND d.source_ref = ?";

    /// A name a document went by, once. Binds: the listed columns in order.
    INSERT_NAME = "INSERT INTO document_names (namespace_id, document_id, name, first_version_id)
 VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING";

    /// A version's Markdown representation. Binds: the listed columns in order.
    INSERT_REPRESENTATION = "INSERT INTO representations (namespace_id, version_id, markdown, turns_json, title, component_version, created_at)
 VALUES (?, ?, ?, ?, ?, ?, ?)";

    /// One section of a version. Binds: the listed columns in order.
    INSERT_SECTION = "INSERT INTO sections (namespace_id, version_id, ordinal, block_start, block_end, level, title, path_json, role, parent)
 VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)";

    /// A new document version. Binds: the listed columns in order.
    INSERT_VERSION = "INSERT INTO document_versions (namespace_id, id, document_id, ordinal, content_sha256, size,
     mime, format, source_modified_at, origin, metadata_json, created_at, admission,
     ingested_by_principal_id)
 VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)";

    /// A version's sections in order. Binds: namespace, version.
    SECTIONS = "SELECT ordinal, block_start, block_end, level, title, path_json, role, parent FROM sections
 WHERE namespace_id = ? AND version_id = ? ORDER BY ordinal";

    /// A version's sections with how many chunks each holds. Binds: each `?` in turn.
    SECTIONS_WITH_CHUNK_COUNTS = "SELECT s.ordinal, s.block_start, s.block_end, s.level, s.title, s.path_json, s.role, s.parent,
        (SELECT COUNT(*) FROM chunks c WHERE c.namespace_id = s.namespace_id
            AND c.version_id = s.version_id AND c.section_ordinal = s.ordinal) AS chunk_count
 FROM sections s WHERE s.namespace_id = ? AND s.version_id = ? ORDER BY s.ordinal";

    /// A document's newest version (and an undeleted document). Binds: each `?` in turn.
    SET_LATEST_VERSION = "UPDATE documents SET latest_version_id = ?, version_count = version_count + 1,
     updated_at = ?, deleted_at = NULL
 WHERE namespace_id = ? AND id = ?";

    /// A version's document and ordinal. Binds: namespace, version.
    VERSION_PLACE = "SELECT document_id, ordinal FROM document_versions WHERE namespace_id = ? AND id = ?";

    /// A promoted, live version becomes its document's current one unless a later
    /// version already is. Binds: version, now, namespace, document, the version's
    /// ordinal, version.
    ADVANCE_CURRENT_VERSION = "UPDATE documents SET current_version_id = ?, updated_at = ?
 WHERE namespace_id = ? AND id = ? AND (current_version_id IS NULL OR
     (SELECT ordinal FROM document_versions WHERE namespace_id = documents.namespace_id
          AND id = documents.current_version_id) <= ?)
   AND deleted_at IS NULL
   AND (SELECT deleted_at IS NULL AND admission = 'promoted' FROM document_versions
          WHERE namespace_id = documents.namespace_id AND id = ?)";

    /// Every document's latest version and its format, by namespace, oldest document first.
    LATEST_VERSIONS = "SELECT d.namespace_id, d.latest_version_id, v.format FROM documents d
 JOIN document_versions v ON v.namespace_id = d.namespace_id AND v.id = d.latest_version_id
 ORDER BY d.namespace_id{COLLATE_C}, d.created_at";

    /// A namespace's current chunks without a vector of one generation, in order. Binds: generation, namespace.
    CHUNKS_MISSING_VECTORS = "SELECT c.id, c.version_id FROM chunks c
 JOIN documents d ON d.namespace_id = c.namespace_id AND d.current_version_id = c.version_id
 LEFT JOIN vectors vv ON vv.namespace_id = c.namespace_id AND vv.generation = ?
                      AND vv.embedding_key = c.embedding_key
 WHERE c.namespace_id = ? AND vv.embedding_key IS NULL
 ORDER BY c.version_id{COLLATE_C}, c.ordinal";

    /// A document's names, in the order its versions took them. Binds: namespace, document.
    NAMES = "SELECT n.name FROM document_names n
 JOIN document_versions v ON v.namespace_id = n.namespace_id AND v.id = n.first_version_id
 WHERE n.namespace_id = ? AND n.document_id = ? ORDER BY v.ordinal, n.name{COLLATE_C}";
}
