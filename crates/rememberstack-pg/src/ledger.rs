//! The work ledger (D12, D67): enqueue, claim, complete, fail, park, defer, barriers,
//! dead letters; provider-call accounting.
//!
//! Not yet ported: every method returns [`not_yet_ported`](crate::not_yet_ported).
//! Port one from the SQLite store's counterpart, then list it as ported in `lib.rs`.

use crate::{PgStore, not_yet_ported};
use rememberstack_core::Result;
use rememberstack_core::ids::{NamespaceId, VersionId, WorkId};
use rememberstack_core::ledger::{
    BarrierStatus, ClaimRequest, DeferReason, FailureOutcome, NewWork, Stage, WorkCount, WorkItem,
    WorkStatus,
};
use rememberstack_core::store::{CallRecord, Lease};
use rememberstack_core::text::SourceFormat;
use rememberstack_core::time::Timestamp;

impl PgStore {
    pub(crate) async fn enqueue_impl(&self, _items: Vec<NewWork>, _now: Timestamp) -> Result<u64> {
        Err(not_yet_ported("enqueue"))
    }

    pub(crate) async fn claim_impl(&self, _request: &ClaimRequest) -> Result<Vec<WorkItem>> {
        Err(not_yet_ported("claim"))
    }

    pub(crate) async fn complete_impl(
        &self,
        _lease: &Lease,
        _follow_up: Vec<NewWork>,
        _now: Timestamp,
    ) -> Result<()> {
        Err(not_yet_ported("complete"))
    }

    pub(crate) async fn fail_impl(
        &self,
        _lease: &Lease,
        _error: &str,
        _outcome: FailureOutcome,
        _now: Timestamp,
    ) -> Result<()> {
        Err(not_yet_ported("fail"))
    }

    pub(crate) async fn park_impl(
        &self,
        _lease: &Lease,
        _reason: DeferReason,
        _not_before: Timestamp,
        _now: Timestamp,
    ) -> Result<()> {
        Err(not_yet_ported("park"))
    }

    pub(crate) async fn work_item_impl(&self, _id: WorkId) -> Result<Option<WorkItem>> {
        Err(not_yet_ported("work_item"))
    }

    pub(crate) async fn barrier_impl(
        &self,
        _ns: NamespaceId,
        _version: VersionId,
        _stage: Stage,
    ) -> Result<BarrierStatus> {
        Err(not_yet_ported("barrier"))
    }

    pub(crate) async fn work_counts_impl(
        &self,
        _ns: Option<NamespaceId>,
    ) -> Result<Vec<WorkCount>> {
        Err(not_yet_ported("work_counts"))
    }

    pub(crate) async fn work_items_impl(
        &self,
        _ns: Option<NamespaceId>,
        _status: WorkStatus,
        _limit: u32,
    ) -> Result<Vec<WorkItem>> {
        Err(not_yet_ported("work_items"))
    }

    pub(crate) async fn replay_dead_letters_impl(
        &self,
        _ns: Option<NamespaceId>,
        _stage: Option<Stage>,
        _allowance: u32,
        _now: Timestamp,
    ) -> Result<u64> {
        Err(not_yet_ported("replay_dead_letters"))
    }

    pub(crate) async fn expedite_failed_impl(
        &self,
        _ns: Option<NamespaceId>,
        _stage: Option<Stage>,
        _now: Timestamp,
    ) -> Result<u64> {
        Err(not_yet_ported("expedite_failed"))
    }

    pub(crate) async fn next_wakeup_impl(&self) -> Result<Option<Timestamp>> {
        Err(not_yet_ported("next_wakeup"))
    }

    pub(crate) async fn latest_versions_impl(
        &self,
    ) -> Result<Vec<(NamespaceId, VersionId, Option<SourceFormat>)>> {
        Err(not_yet_ported("latest_versions"))
    }

    pub(crate) async fn record_call_impl(&self, _call: CallRecord, _now: Timestamp) -> Result<()> {
        Err(not_yet_ported("record_call"))
    }

    pub(crate) async fn call_costs_impl(
        &self,
        _ns: NamespaceId,
    ) -> Result<Vec<(String, String, u64, u64)>> {
        Err(not_yet_ported("call_costs"))
    }

    pub(crate) async fn defer_impl(
        &self,
        _lease: &Lease,
        _reason: DeferReason,
        _not_before: Timestamp,
        _now: Timestamp,
    ) -> Result<()> {
        Err(not_yet_ported("defer"))
    }
}
