//! Chunk vectors and chunk search (lexical over `chunk_lexical`, semantic over
//! `vectors`), the change stamp, recall receipts.
//!
//! Not yet ported: every method returns [`not_yet_ported`](crate::not_yet_ported).
//! Port one from the SQLite store's counterpart, then list it as ported in `lib.rs`.

use crate::{PgStore, not_yet_ported};
use rememberstack_core::Result;
use rememberstack_core::embed::EmbedderIdentity;
use rememberstack_core::ids::{NamespaceId, ReceiptId};
use rememberstack_core::store::{ChunkFilter, ChunkHit, ChunkRef, Lease, Receipt, VectorCoverage};
use rememberstack_core::time::Timestamp;

impl PgStore {
    pub(crate) async fn existing_vectors_impl(
        &self,
        _ns: NamespaceId,
        _generation: &str,
        _keys: &[String],
    ) -> Result<Vec<String>> {
        Err(not_yet_ported("existing_vectors"))
    }

    pub(crate) async fn commit_vectors_impl(
        &self,
        _leases: &[Lease],
        _ns: NamespaceId,
        _generation: &EmbedderIdentity,
        _vectors: Vec<(String, Vec<f32>)>,
        _now: Timestamp,
    ) -> Result<()> {
        Err(not_yet_ported("commit_vectors"))
    }

    pub(crate) async fn vector_coverage_impl(
        &self,
        _ns: NamespaceId,
        _generation: &str,
    ) -> Result<VectorCoverage> {
        Err(not_yet_ported("vector_coverage"))
    }

    pub(crate) async fn change_stamp_impl(&self, _ns: NamespaceId) -> Result<u64> {
        Err(not_yet_ported("change_stamp"))
    }

    pub(crate) async fn chunks_missing_vectors_impl(
        &self,
        _ns: NamespaceId,
        _generation: &str,
    ) -> Result<Vec<ChunkRef>> {
        Err(not_yet_ported("chunks_missing_vectors"))
    }

    pub(crate) async fn search_chunks_lexical_impl(
        &self,
        _filter: &ChunkFilter,
        _terms: &[String],
        _limit: usize,
    ) -> Result<Vec<ChunkHit>> {
        Err(not_yet_ported("search_chunks_lexical"))
    }

    pub(crate) async fn search_chunks_semantic_impl(
        &self,
        _filter: &ChunkFilter,
        _generation: &str,
        _query: &[f32],
        _limit: usize,
    ) -> Result<Vec<ChunkHit>> {
        Err(not_yet_ported("search_chunks_semantic"))
    }

    pub(crate) async fn put_receipt_impl(&self, _receipt: Receipt) -> Result<Receipt> {
        Err(not_yet_ported("put_receipt"))
    }

    pub(crate) async fn receipt_impl(
        &self,
        _ns: NamespaceId,
        _id: ReceiptId,
    ) -> Result<Option<Receipt>> {
        Err(not_yet_ported("receipt"))
    }

    pub(crate) async fn receipt_by_request_impl(
        &self,
        _ns: NamespaceId,
        _request_id: &str,
    ) -> Result<Option<Receipt>> {
        Err(not_yet_ported("receipt_by_request"))
    }
}
