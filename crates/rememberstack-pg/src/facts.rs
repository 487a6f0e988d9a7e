//! Normalization, the predicate registry and facts (E3): staged assertions,
//! adjudication, fact reads, fact search and label vectors.
//!
//! Not yet ported: every method returns [`not_yet_ported`](crate::not_yet_ported).
//! Port one from the SQLite store's counterpart, then list it as ported in `lib.rs`.

use crate::{PgStore, not_yet_ported};
use rememberstack_core::Result;
use rememberstack_core::facts::{
    AdjudicationRecord, ApplyCommit, Assertion, EvidenceRecord, FactFilter, FactKey, FactRecord,
    PredicateRow,
};
use rememberstack_core::ids::{ClaimId, EntityId, FactId, NamespaceId, VersionId};
use rememberstack_core::ledger::NewWork;
use rememberstack_core::store::{Lease, VectorCoverage};
use rememberstack_core::time::Timestamp;

impl PgStore {
    pub(crate) async fn bootstrap_predicates_impl(
        &self,
        _ns: NamespaceId,
        _core: &[(String, String, Vec<String>)],
    ) -> Result<()> {
        Err(not_yet_ported("bootstrap_predicates"))
    }

    pub(crate) async fn predicates_impl(&self, _ns: NamespaceId) -> Result<Vec<PredicateRow>> {
        Err(not_yet_ported("predicates"))
    }

    #[allow(clippy::too_many_arguments)]
    pub(crate) async fn commit_normalization_impl(
        &self,
        _lease: &Lease,
        _claim: ClaimId,
        _normalizer_version: &str,
        _output: serde_json::Value,
        _assertions: Vec<Assertion>,
        _follow_up: Vec<NewWork>,
        _now: Timestamp,
    ) -> Result<()> {
        Err(not_yet_ported("commit_normalization"))
    }

    pub(crate) async fn normalization_impl(
        &self,
        _ns: NamespaceId,
        _claim: ClaimId,
        _normalizer_version: &str,
    ) -> Result<Option<serde_json::Value>> {
        Err(not_yet_ported("normalization"))
    }

    pub(crate) async fn unapplied_assertions_impl(
        &self,
        _ns: NamespaceId,
        _subjects: &[EntityId],
    ) -> Result<Vec<Assertion>> {
        Err(not_yet_ported("unapplied_assertions"))
    }

    pub(crate) async fn pending_subjects_impl(
        &self,
        _ns: NamespaceId,
        _version: VersionId,
    ) -> Result<Vec<EntityId>> {
        Err(not_yet_ported("pending_subjects"))
    }

    pub(crate) async fn apply_assertion_impl(
        &self,
        _ns: NamespaceId,
        _commit: ApplyCommit,
        _now: Timestamp,
    ) -> Result<bool> {
        Err(not_yet_ported("apply_assertion"))
    }

    pub(crate) async fn list_facts_impl(
        &self,
        _filter: &FactFilter,
        _limit: u32,
    ) -> Result<Vec<FactRecord>> {
        Err(not_yet_ported("list_facts"))
    }

    pub(crate) async fn list_fact_keys_impl(
        &self,
        _filter: &FactFilter,
        _limit: u32,
    ) -> Result<Vec<FactKey>> {
        Err(not_yet_ported("list_fact_keys"))
    }

    pub(crate) async fn facts_impl(
        &self,
        _ns: NamespaceId,
        _ids: &[FactId],
    ) -> Result<Vec<FactRecord>> {
        Err(not_yet_ported("facts"))
    }

    pub(crate) async fn fact_evidence_impl(
        &self,
        _ns: NamespaceId,
        _fact: FactId,
    ) -> Result<Vec<EvidenceRecord>> {
        Err(not_yet_ported("fact_evidence"))
    }

    pub(crate) async fn adjudications_impl(
        &self,
        _ns: NamespaceId,
        _fact: FactId,
    ) -> Result<Vec<AdjudicationRecord>> {
        Err(not_yet_ported("adjudications"))
    }

    pub(crate) async fn fact_vector_coverage_impl(
        &self,
        _ns: NamespaceId,
        _generation: &str,
    ) -> Result<VectorCoverage> {
        Err(not_yet_ported("fact_vector_coverage"))
    }

    pub(crate) async fn search_facts_lexical_impl(
        &self,
        _filter: &FactFilter,
        _terms: &[String],
        _limit: usize,
    ) -> Result<Vec<(FactId, f64)>> {
        Err(not_yet_ported("search_facts_lexical"))
    }

    pub(crate) async fn search_facts_semantic_impl(
        &self,
        _filter: &FactFilter,
        _generation: &str,
        _query: &[f32],
        _limit: usize,
    ) -> Result<Vec<(FactId, f64)>> {
        Err(not_yet_ported("search_facts_semantic"))
    }

    pub(crate) async fn vectors_impl(
        &self,
        _ns: NamespaceId,
        _generation: &str,
        _keys: &[String],
    ) -> Result<Vec<(String, Vec<f32>)>> {
        Err(not_yet_ported("vectors"))
    }
}
