//! Namespaces, their change stamps, embedder generations and store settings: the
//! statements both stores run as they are.

statements! {
    /// Every namespace, by slug.
    LIST = "SELECT id, slug, created_at FROM namespaces ORDER BY slug";

    /// A namespace by slug. Binds: slug.
    BY_SLUG = "SELECT id, slug, created_at FROM namespaces WHERE slug = ?";

    /// A namespace's change stamp. Binds: namespace.
    CHANGE_STAMP = "SELECT n FROM change_stamps WHERE namespace_id = ?";

    /// A namespace, unless its slug exists. Binds: id, slug, now.
    INSERT = "INSERT INTO namespaces (id, slug, created_at) VALUES (?, ?, ?) ON CONFLICT (slug) DO NOTHING";

    /// An embedder generation, recorded when first seen. Binds: the listed columns in
    /// order.
    INSERT_EMBEDDER_GENERATION = "INSERT INTO embedder_generations (generation, provider, model, dimension, version, first_seen)
 VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING";

    /// A namespace row again (a forget resumed after a crash), unless it exists. Binds: id,
    /// slug, time.
    RESTORE = "INSERT INTO namespaces (id, slug, created_at) VALUES (?, ?, ?)
 ON CONFLICT DO NOTHING";

    /// A store setting. Binds: key.
    SETTING = "SELECT value FROM settings WHERE key = ?";

    /// A namespace with the document of its oldest unfinished forget episode. Binds: each
    /// `?` in turn.
    WITH_OPEN_FORGET = "SELECT id, slug, created_at, (SELECT e.document_id FROM forget_episodes e
     WHERE e.namespace_id = namespaces.id AND e.completed_at IS NULL
     ORDER BY e.started_at, e.manifest_id LIMIT 1) AS gated
 FROM namespaces WHERE slug = ?";

    /// A store setting, replacing its value. Binds: key, value.
    SET_SETTING = "INSERT INTO settings (key, value) VALUES (?, ?)
 ON CONFLICT (key) DO UPDATE SET value = excluded.value";
}
