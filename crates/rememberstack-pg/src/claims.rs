//! Claims (E2): extraction commits, reuse lookups, currency, claim reads, claim search
//! and claim vector coverage.
//!
//! Not yet ported: every method returns [`not_yet_ported`](crate::not_yet_ported).
//! Port one from the SQLite store's counterpart, then list it as ported in `lib.rs`.

use crate::{PgStore, not_yet_ported};
use rememberstack_core::Result;
use rememberstack_core::ids::{ClaimId, DocumentId, NamespaceId, VersionId};
use rememberstack_core::ledger::NewWork;
use rememberstack_core::store::{
    ClaimFilter, ClaimHit, ClaimRecord, DecisionRecord, ExtractionCommit, Lease, PriorExtraction,
    VectorCoverage,
};
use rememberstack_core::time::Timestamp;

impl PgStore {
    pub(crate) async fn commit_extractions_impl(
        &self,
        _ns: NamespaceId,
        _extractions: Vec<(Lease, ExtractionCommit, Vec<NewWork>)>,
        _now: Timestamp,
    ) -> Result<Vec<bool>> {
        Err(not_yet_ported("commit_extractions"))
    }

    pub(crate) async fn prior_extractions_impl(
        &self,
        _ns: NamespaceId,
        _doc: DocumentId,
        _input_hashes: &[String],
    ) -> Result<Vec<(String, PriorExtraction)>> {
        Err(not_yet_ported("prior_extractions"))
    }

    pub(crate) async fn claims_by_key_impl(
        &self,
        _ns: NamespaceId,
        _doc: DocumentId,
        _keys: &[String],
    ) -> Result<Vec<(String, ClaimId)>> {
        Err(not_yet_ported("claims_by_key"))
    }

    pub(crate) async fn version_claims_impl(
        &self,
        _ns: NamespaceId,
        _version: VersionId,
        _extractor_version: &str,
    ) -> Result<Vec<ClaimId>> {
        Err(not_yet_ported("version_claims"))
    }

    pub(crate) async fn current_claim_refs_impl(
        &self,
        _ns: NamespaceId,
        _doc: DocumentId,
    ) -> Result<Vec<(ClaimId, String)>> {
        Err(not_yet_ported("current_claim_refs"))
    }

    pub(crate) async fn apply_currency_impl(
        &self,
        _ns: NamespaceId,
        _doc: DocumentId,
        _current: &[ClaimId],
        _reason: &str,
        _version: Option<VersionId>,
        _now: Timestamp,
    ) -> Result<u64> {
        Err(not_yet_ported("apply_currency"))
    }

    pub(crate) async fn list_claims_impl(
        &self,
        _filter: &ClaimFilter,
        _limit: u32,
    ) -> Result<Vec<ClaimRecord>> {
        Err(not_yet_ported("list_claims"))
    }

    pub(crate) async fn claims_impl(
        &self,
        _ns: NamespaceId,
        _ids: &[ClaimId],
    ) -> Result<Vec<ClaimRecord>> {
        Err(not_yet_ported("claims"))
    }

    pub(crate) async fn decisions_impl(
        &self,
        _ns: NamespaceId,
        _doc: DocumentId,
    ) -> Result<Vec<DecisionRecord>> {
        Err(not_yet_ported("decisions"))
    }

    pub(crate) async fn search_claims_lexical_impl(
        &self,
        _filter: &ClaimFilter,
        _terms: &[String],
        _limit: usize,
    ) -> Result<Vec<ClaimHit>> {
        Err(not_yet_ported("search_claims_lexical"))
    }

    pub(crate) async fn search_claims_semantic_impl(
        &self,
        _filter: &ClaimFilter,
        _generation: &str,
        _query: &[f32],
        _limit: usize,
    ) -> Result<Vec<ClaimHit>> {
        Err(not_yet_ported("search_claims_semantic"))
    }

    pub(crate) async fn claim_vector_coverage_impl(
        &self,
        _ns: NamespaceId,
        _generation: &str,
    ) -> Result<VectorCoverage> {
        Err(not_yet_ported("claim_vector_coverage"))
    }

    pub(crate) async fn claims_missing_vectors_impl(
        &self,
        _ns: NamespaceId,
        _generation: &str,
    ) -> Result<Vec<(ClaimId, VersionId)>> {
        Err(not_yet_ported("claims_missing_vectors"))
    }
}
