//! API keys: deployment-wide rows, outside every namespace, shared by every
//! process on this database.

use crate::lifecycle::stored;
use crate::{PgStore, db_err};
use rememberstack_core::keys::ApiKey;
use rememberstack_core::time::Timestamp;
use rememberstack_core::{Error, ErrorCode, Result};
use rememberstack_sql::rows::key_row;
use sqlx::types::Json;

impl PgStore {
    pub(crate) async fn insert_api_key_impl(&self, key: &ApiKey, secret_hash: &str) -> Result<()> {
        sqlx::query(crate::shared(&rememberstack_sql::keys::INSERT))
            .bind(&key.id)
            .bind(&key.name)
            .bind(Json(&key.namespaces))
            .bind(Json(&key.scopes))
            .bind(&key.prefix)
            .bind(secret_hash)
            .bind(stored(key.created_at))
            .bind(key.revoked_at.map(stored))
            .execute(self.pool())
            .await
            .map_err(|e| match &e {
                sqlx::Error::Database(d) if d.is_unique_violation() => Error::new(
                    ErrorCode::Conflict,
                    format!(
                        "an API key with id `{}` or the same secret already exists",
                        key.id
                    ),
                ),
                _ => db_err(e),
            })?;
        Ok(())
    }

    pub(crate) async fn api_keys_impl(&self) -> Result<Vec<ApiKey>> {
        let rows = sqlx::query(crate::shared(&rememberstack_sql::keys::LIST))
            .fetch_all(self.pool())
            .await
            .map_err(db_err)?;
        rows.iter().map(key_row).collect()
    }

    pub(crate) async fn api_key_by_hash_impl(&self, secret_hash: &str) -> Result<Option<ApiKey>> {
        let row = sqlx::query(crate::shared(&rememberstack_sql::keys::BY_HASH))
            .bind(secret_hash)
            .fetch_optional(self.pool())
            .await
            .map_err(db_err)?;
        row.as_ref().map(key_row).transpose()
    }

    pub(crate) async fn revoke_api_key_impl(&self, id: &str, at: Timestamp) -> Result<ApiKey> {
        let row = sqlx::query(crate::shared(&rememberstack_sql::keys::REVOKE))
            .bind(stored(at))
            .bind(id)
            .fetch_optional(self.pool())
            .await
            .map_err(db_err)?;
        match row {
            Some(r) => key_row(&r),
            None => Err(Error::not_found(format!(
                "no API key `{id}`: `remember keys list` shows the keys"
            ))),
        }
    }

    pub(crate) async fn active_api_key_count_impl(&self) -> Result<u64> {
        let n: i64 = sqlx::query_scalar(crate::shared(&rememberstack_sql::keys::ACTIVE_COUNT))
            .fetch_one(self.pool())
            .await
            .map_err(db_err)?;
        Ok(n as u64)
    }
}
