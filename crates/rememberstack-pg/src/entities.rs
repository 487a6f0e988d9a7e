//! Entities (E3): blocking, resolution decisions, aliases, bindings, profiles, merge and unmerge.
//!
//! Not yet ported: every method returns [`not_yet_ported`](crate::not_yet_ported).
//! Port one from the SQLite store's counterpart, then list it as ported in `lib.rs`.

use crate::{PgStore, not_yet_ported};
use rememberstack_core::Result;
use rememberstack_core::entities::{
    BlockingQuery, BlockingResult, DocumentBinding, EntityFilter, EntityRecord, MergeEvent,
    ResolutionCommit, ResolutionDecision,
};
use rememberstack_core::ids::{ClaimId, DecisionId, DocumentId, EntityId, MergeId, NamespaceId};
use rememberstack_core::time::Timestamp;

impl PgStore {
    pub(crate) async fn block_entities_impl(
        &self,
        _query: &BlockingQuery,
    ) -> Result<BlockingResult> {
        Err(not_yet_ported("block_entities"))
    }

    pub(crate) async fn entities_impl(
        &self,
        _ns: NamespaceId,
        _ids: &[EntityId],
    ) -> Result<Vec<EntityRecord>> {
        Err(not_yet_ported("entities"))
    }

    pub(crate) async fn list_entities_impl(
        &self,
        _filter: &EntityFilter,
        _limit: u32,
    ) -> Result<Vec<EntityRecord>> {
        Err(not_yet_ported("list_entities"))
    }

    pub(crate) async fn resolution_for_impl(
        &self,
        _ns: NamespaceId,
        _claim: ClaimId,
        _ordinal: u32,
        _resolver_version: &str,
    ) -> Result<Option<ResolutionDecision>> {
        Err(not_yet_ported("resolution_for"))
    }

    pub(crate) async fn commit_resolution_impl(
        &self,
        _commit: ResolutionCommit,
        _now: Timestamp,
    ) -> Result<()> {
        Err(not_yet_ported("commit_resolution"))
    }

    pub(crate) async fn exclusions_impl(
        &self,
        _ns: NamespaceId,
        _ids: &[EntityId],
    ) -> Result<Vec<(EntityId, EntityId)>> {
        Err(not_yet_ported("exclusions"))
    }

    pub(crate) async fn document_bindings_impl(
        &self,
        _ns: NamespaceId,
        _doc: DocumentId,
        _lemma: &str,
    ) -> Result<Vec<DocumentBinding>> {
        Err(not_yet_ported("document_bindings"))
    }

    pub(crate) async fn resolution_decision_impl(
        &self,
        _ns: NamespaceId,
        _id: DecisionId,
    ) -> Result<Option<ResolutionDecision>> {
        Err(not_yet_ported("resolution_decision"))
    }

    pub(crate) async fn resolution_decisions_impl(
        &self,
        _ns: NamespaceId,
        _entities: &[EntityId],
    ) -> Result<Vec<ResolutionDecision>> {
        Err(not_yet_ported("resolution_decisions"))
    }

    pub(crate) async fn mentions_impl(
        &self,
        _ns: NamespaceId,
        _entity: EntityId,
        _limit: u32,
    ) -> Result<Vec<rememberstack_core::entities::Mention>> {
        Err(not_yet_ported("mentions"))
    }

    pub(crate) async fn set_profile_impl(
        &self,
        _ns: NamespaceId,
        _entity: EntityId,
        _summary: &str,
        _profile_key: &str,
        _now: Timestamp,
    ) -> Result<()> {
        Err(not_yet_ported("set_profile"))
    }

    pub(crate) async fn merge_entities_impl(&self, _event: MergeEvent) -> Result<()> {
        Err(not_yet_ported("merge_entities"))
    }

    pub(crate) async fn unmerge_entities_impl(
        &self,
        _ns: NamespaceId,
        _merge: MergeId,
        _now: Timestamp,
    ) -> Result<MergeEvent> {
        Err(not_yet_ported("unmerge_entities"))
    }

    pub(crate) async fn merge_events_impl(
        &self,
        _ns: NamespaceId,
        _entities: &[EntityId],
    ) -> Result<Vec<MergeEvent>> {
        Err(not_yet_ported("merge_events"))
    }
}
