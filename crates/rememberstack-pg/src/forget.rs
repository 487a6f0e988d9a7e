//! Hard forget (D74) and note revocation: scrub, manifests, ingest guards.
//!
//! Not yet ported: every method returns [`not_yet_ported`](crate::not_yet_ported).
//! Port one from the SQLite store's counterpart, then list it as ported in `lib.rs`.

use crate::{PgStore, not_yet_ported};
use rememberstack_core::Result;
use rememberstack_core::ids::{EntityId, NamespaceId, VersionId};
use rememberstack_core::store::NoteRecord;
use rememberstack_core::time::Timestamp;

impl PgStore {
    pub(crate) async fn revoke_note_impl(
        &self,
        _ns: NamespaceId,
        _version: VersionId,
        _expected: u32,
        _now: Timestamp,
    ) -> Result<(NoteRecord, Vec<EntityId>)> {
        Err(not_yet_ported("revoke_note"))
    }

    pub(crate) async fn forget_impl(
        &self,
        _manifest: &rememberstack_core::forget::ForgetManifest,
        _now: Timestamp,
    ) -> Result<(rememberstack_core::forget::ForgetReport, Vec<EntityId>)> {
        Err(not_yet_ported("forget"))
    }

    pub(crate) async fn begin_forget_impl(
        &self,
        _manifest: &rememberstack_core::forget::ForgetManifest,
        _now: Timestamp,
    ) -> Result<()> {
        Err(not_yet_ported("begin_forget"))
    }

    pub(crate) async fn incomplete_forgets_impl(
        &self,
        _ns: NamespaceId,
    ) -> Result<Vec<rememberstack_core::forget::ForgetManifest>> {
        Err(not_yet_ported("incomplete_forgets"))
    }
}
