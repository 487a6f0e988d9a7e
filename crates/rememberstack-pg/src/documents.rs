//! Sources: versions, originals, prepared representations, chunks and lineages; store-
//! wide settings.
//!
//! Not yet ported: every method returns [`not_yet_ported`](crate::not_yet_ported).
//! Port one from the SQLite store's counterpart, then list it as ported in `lib.rs`.

use crate::{PgStore, not_yet_ported};
use rememberstack_core::Result;
use rememberstack_core::ids::{ChunkId, DocumentId, NamespaceId, VersionId};
use rememberstack_core::ledger::NewWork;
use rememberstack_core::store::{
    ChunkRecord, DocumentRow, Lease, NewChunk, NewVersion, PreparedVersion, SectionRow,
    VersionOutcome, VersionRecord,
};
use rememberstack_core::time::Timestamp;

impl PgStore {
    pub(crate) async fn create_version_impl(&self, _version: NewVersion) -> Result<VersionOutcome> {
        Err(not_yet_ported("create_version"))
    }

    pub(crate) async fn version_impl(
        &self,
        _ns: NamespaceId,
        _id: VersionId,
    ) -> Result<Option<VersionRecord>> {
        Err(not_yet_ported("version"))
    }

    pub(crate) async fn versions_impl(
        &self,
        _ns: NamespaceId,
        _doc: DocumentId,
    ) -> Result<Vec<VersionRecord>> {
        Err(not_yet_ported("versions"))
    }

    pub(crate) async fn content_impl(&self, _ns: NamespaceId, _sha256: &str) -> Result<Vec<u8>> {
        Err(not_yet_ported("content"))
    }

    pub(crate) async fn commit_prepared_impl(
        &self,
        _lease: &Lease,
        _prepared: PreparedVersion,
        _follow_up: Vec<NewWork>,
        _now: Timestamp,
    ) -> Result<()> {
        Err(not_yet_ported("commit_prepared"))
    }

    pub(crate) async fn prepared_impl(
        &self,
        _ns: NamespaceId,
        _id: VersionId,
    ) -> Result<Option<PreparedVersion>> {
        Err(not_yet_ported("prepared"))
    }

    pub(crate) async fn commit_chunks_impl(
        &self,
        _lease: &Lease,
        _version_id: VersionId,
        _chunks: Vec<NewChunk>,
        _follow_up: Vec<NewWork>,
        _now: Timestamp,
    ) -> Result<()> {
        Err(not_yet_ported("commit_chunks"))
    }

    pub(crate) async fn documents_impl(&self, _ns: NamespaceId) -> Result<Vec<DocumentRow>> {
        Err(not_yet_ported("documents"))
    }

    pub(crate) async fn document_impl(
        &self,
        _ns: NamespaceId,
        _doc: DocumentId,
    ) -> Result<Option<DocumentRow>> {
        Err(not_yet_ported("document"))
    }

    pub(crate) async fn document_by_ref_impl(
        &self,
        _ns: NamespaceId,
        _source_kind: &str,
        _source_ref: &str,
    ) -> Result<Option<DocumentRow>> {
        Err(not_yet_ported("document_by_ref"))
    }

    pub(crate) async fn document_names_impl(
        &self,
        _ns: NamespaceId,
        _doc: DocumentId,
    ) -> Result<Vec<String>> {
        Err(not_yet_ported("document_names"))
    }

    pub(crate) async fn sections_impl(
        &self,
        _ns: NamespaceId,
        _version: VersionId,
    ) -> Result<Vec<SectionRow>> {
        Err(not_yet_ported("sections"))
    }

    pub(crate) async fn chunks_impl(
        &self,
        _ns: NamespaceId,
        _ids: &[ChunkId],
    ) -> Result<Vec<ChunkRecord>> {
        Err(not_yet_ported("chunks"))
    }

    pub(crate) async fn version_chunks_impl(
        &self,
        _ns: NamespaceId,
        _version: VersionId,
    ) -> Result<Vec<ChunkRecord>> {
        Err(not_yet_ported("version_chunks"))
    }

    pub(crate) async fn setting_impl(&self, _key: &str) -> Result<Option<String>> {
        Err(not_yet_ported("setting"))
    }

    pub(crate) async fn set_setting_impl(&self, _key: &str, _value: &str) -> Result<()> {
        Err(not_yet_ported("set_setting"))
    }
}
