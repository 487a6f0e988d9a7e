//! API keys, deployment-wide rows outside every namespace: the statements both
//! stores run as they are.

statements! {
    /// How many keys are not revoked.
    ACTIVE_COUNT = "SELECT COUNT(*) FROM api_keys WHERE revoked_at IS NULL";

    /// The key with a secret's hash. Binds: hash.
    BY_HASH = "SELECT id, name, namespaces, scopes, prefix, created_at, revoked_at FROM api_keys
 WHERE secret_hash = ?";

    /// A new key. Binds: the listed columns in order.
    INSERT = "INSERT INTO api_keys (id, name, namespaces, scopes, prefix, secret_hash, created_at, revoked_at)
 VALUES (?, ?, ?, ?, ?, ?, ?, ?)";

    /// Revoke a key (the first revocation time stays). Binds: now, id.
    REVOKE = "UPDATE api_keys SET revoked_at = COALESCE(revoked_at, ?) WHERE id = ?
 RETURNING id, name, namespaces, scopes, prefix, created_at, revoked_at";

    /// Every key, oldest first.
    LIST = "SELECT id, name, namespaces, scopes, prefix, created_at, revoked_at FROM api_keys
 ORDER BY created_at, {SEQ}";
}
