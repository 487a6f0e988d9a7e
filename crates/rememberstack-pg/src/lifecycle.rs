//! Lifecycle writes: document deletion (D135), claim retraction, fact invalidation,
//! fact events, feedback and notes.
//!
//! Not yet ported: every method returns [`not_yet_ported`](crate::not_yet_ported).
//! Port one from the SQLite store's counterpart, then list it as ported in `lib.rs`.

use crate::{PgStore, not_yet_ported};
use rememberstack_core::Result;
use rememberstack_core::ids::{ClaimId, DocumentId, FactId, NamespaceId, ReceiptId, VersionId};
use rememberstack_core::source::Admission;
use rememberstack_core::store::{
    ClaimRetraction, DeletionOutcome, FactEvent, FactInvalidation, FeedbackRecord, NoteLookup,
    NoteRecord, RequestKey,
};
use rememberstack_core::time::Timestamp;

impl PgStore {
    pub(crate) async fn delete_document_impl(
        &self,
        _ns: NamespaceId,
        _doc: DocumentId,
        _now: Timestamp,
    ) -> Result<DeletionOutcome> {
        Err(not_yet_ported("delete_document"))
    }

    pub(crate) async fn note_lookup_impl(
        &self,
        _ns: NamespaceId,
        _request_id: &str,
        _source_key: &str,
        _source_revision: &str,
    ) -> Result<NoteLookup> {
        Err(not_yet_ported("note_lookup"))
    }

    pub(crate) async fn add_note_request_impl(
        &self,
        _ns: NamespaceId,
        _request_id: &str,
        _request_digest: &str,
        _version: VersionId,
        _now: Timestamp,
    ) -> Result<()> {
        Err(not_yet_ported("add_note_request"))
    }

    pub(crate) async fn note_impl(
        &self,
        _ns: NamespaceId,
        _version: VersionId,
    ) -> Result<Option<NoteRecord>> {
        Err(not_yet_ported("note"))
    }

    pub(crate) async fn transition_note_impl(
        &self,
        _ns: NamespaceId,
        _version: VersionId,
        _expected: u32,
        _to: Admission,
        _now: Timestamp,
    ) -> Result<NoteRecord> {
        Err(not_yet_ported("transition_note"))
    }

    pub(crate) async fn list_notes_impl(
        &self,
        _ns: NamespaceId,
        _after: i64,
        _limit: u32,
    ) -> Result<Vec<NoteRecord>> {
        Err(not_yet_ported("list_notes"))
    }

    pub(crate) async fn retract_claim_impl(
        &self,
        _ns: NamespaceId,
        _claim: ClaimId,
        _reason: &str,
        _request: Option<&RequestKey>,
        _now: Timestamp,
    ) -> Result<ClaimRetraction> {
        Err(not_yet_ported("retract_claim"))
    }

    pub(crate) async fn invalidate_fact_impl(
        &self,
        _ns: NamespaceId,
        _fact: FactId,
        _reason: &str,
        _correction: Option<&str>,
        _request: Option<&RequestKey>,
        _now: Timestamp,
    ) -> Result<FactInvalidation> {
        Err(not_yet_ported("invalidate_fact"))
    }

    pub(crate) async fn put_feedback_impl(
        &self,
        _feedback: FeedbackRecord,
        _prune_before: Timestamp,
    ) -> Result<()> {
        Err(not_yet_ported("put_feedback"))
    }

    pub(crate) async fn list_feedback_impl(
        &self,
        _ns: NamespaceId,
        _receipt: Option<ReceiptId>,
        _limit: u32,
    ) -> Result<Vec<FeedbackRecord>> {
        Err(not_yet_ported("list_feedback"))
    }

    pub(crate) async fn prune_feedback_impl(&self, _before: Timestamp) -> Result<u64> {
        Err(not_yet_ported("prune_feedback"))
    }

    pub(crate) async fn fact_events_impl(
        &self,
        _ns: NamespaceId,
        _fact: FactId,
    ) -> Result<Vec<FactEvent>> {
        Err(not_yet_ported("fact_events"))
    }
}
