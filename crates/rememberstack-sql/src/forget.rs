//! Forget episodes and the digests of forgotten content (the scrub itself is
//! [`crate::scrub`]): the statements both stores run as they are.

statements! {
    /// A forget episode's manifest, kept until the scrub completes. Binds: the listed
    /// columns in order.
    INSERT_EPISODE = "INSERT INTO forget_episodes (namespace_id, manifest_id, document_id, manifest_json, started_at)
 VALUES (?, ?, ?, ?, ?)
 ON CONFLICT (namespace_id, manifest_id) DO UPDATE SET completed_at = NULL, report_json = NULL";

    /// The digest of forgotten content, refused if ingested again. Binds: the listed
    /// columns in order.
    INSERT_FORGOTTEN_CONTENT = "INSERT INTO forgotten_content (namespace_id, sha256, manifest_id, document_id,
     source_identity_sha256, forgotten_at)
 VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (namespace_id, sha256) DO NOTHING";

    /// Unfinished forget episodes of every namespace. Binds: each `?` in turn.
    OPEN_EPISODES = "SELECT n.slug, e.manifest_id, e.document_id, e.started_at, e.last_error
 FROM forget_episodes e JOIN namespaces n ON n.id = e.namespace_id
 WHERE e.completed_at IS NULL ORDER BY e.started_at, e.manifest_id";

    /// The manifests of a namespace's unfinished forget episodes, oldest first. Binds:
    /// namespace.
    OPEN_MANIFESTS = "SELECT manifest_json FROM forget_episodes
 WHERE namespace_id = ? AND completed_at IS NULL ORDER BY started_at, manifest_id";

    /// Why a forget episode has not finished yet. Binds: error, namespace, manifest.
    SET_EPISODE_ERROR = "UPDATE forget_episodes SET last_error = ? WHERE namespace_id = ? AND manifest_id = ?";
}
