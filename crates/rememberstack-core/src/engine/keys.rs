//! API keys (D50): create, list, revoke and authenticate deployment-wide keys. The
//! secret leaves this module once, in [`Engine::create_api_key`]'s answer; the
//! store keeps only its hash.

use super::Engine;
use crate::keys::{self, ApiKey, KeyScope};
use crate::{Error, Result};
use chrono::SubsecRound;

/// Longer presented secrets are not looked up (a real one is 47 characters).
const MAX_SECRET_LEN: usize = 256;

impl Engine {
    /// Create a key granting `scopes` on `namespaces`: returns the key and its secret,
    /// which is shown this once and never stored (only its SHA-256 is). Bad input
    /// (no namespace, a malformed namespace, no scope, a blank, over-long or
    /// unprintable name) is `invalid_input` and stores nothing.
    pub async fn create_api_key(
        &self,
        namespaces: Vec<String>,
        scopes: Vec<KeyScope>,
        name: Option<String>,
    ) -> Result<(ApiKey, String)> {
        // Millisecond precision, as every store keeps instants: the answer equals
        // what later listings return.
        let now = self.clock.now().trunc_subsecs(3);
        let (key, secret) = keys::new_key(namespaces, scopes, name, now)?;
        self.store
            .insert_api_key(&key, &keys::hash_secret(&secret))
            .await?;
        tracing::info!(key_id = %key.id, namespaces = ?key.namespaces, scopes = ?key.scopes, "api key created");
        Ok((key, secret))
    }

    /// Every key, revoked ones included, oldest first; never a secret or its hash.
    pub async fn api_keys(&self) -> Result<Vec<ApiKey>> {
        self.store.api_keys().await
    }

    /// Revoke a key: it authenticates nothing from now on. Revoking it again keeps
    /// the first revocation time; an unknown id is `not_found`.
    pub async fn revoke_api_key(&self, id: &str) -> Result<ApiKey> {
        if id.is_empty() || id.len() > 64 {
            return Err(Error::not_found(format!("no API key `{id}`")));
        }
        let key = self
            .store
            .revoke_api_key(id, self.clock.now().trunc_subsecs(3))
            .await?;
        tracing::info!(key_id = %key.id, "api key revoked");
        Ok(key)
    }

    /// The live key a presented secret belongs to: `None` for an unknown secret
    /// and for a revoked key alike, so a caller cannot tell them apart.
    pub async fn authenticate_key(&self, secret: &str) -> Result<Option<ApiKey>> {
        if !secret.starts_with(keys::SECRET_PREFIX) || secret.len() > MAX_SECRET_LEN {
            return Ok(None);
        }
        let key = self
            .store
            .api_key_by_hash(&keys::hash_secret(secret))
            .await?;
        Ok(key.filter(|k| !k.is_revoked()))
    }

    /// Whether any key is live (the server refuses non-loopback binds without one).
    pub async fn has_active_api_keys(&self) -> Result<bool> {
        Ok(self.store.active_api_key_count().await? > 0)
    }
}
