//! Row decoding written once: every record both stores read is decoded here,
//! over [`SqlRow`].
//!
//! The stores keep the same columns under the same names but different types —
//! timestamps are RFC 3339 text in SQLite and `timestamptz` in PostgreSQL, JSON is
//! text against `jsonb`, booleans `0`/`1` against `bool`, small integers `integer`
//! against `int4` — so a store implements the few typed reads of [`SqlRow`] for its
//! own row and the decoders here do the rest. A missing column, a NULL where a
//! value is required, or a value that does not parse is a store error, never a
//! panic.

use rememberstack_core::claims::{Precision, Validity, ValidityKind};
use rememberstack_core::entities::{DocumentBinding, EntityRecord, MergeEvent, ResolutionDecision};
use rememberstack_core::facts::{AdjudicationRecord, Assertion, FactKind, FactRecord, Window};
use rememberstack_core::ids::WorkId;
use rememberstack_core::keys::ApiKey;
use rememberstack_core::ledger::{DeferReason, Stage, TargetKind, WorkCount, WorkItem, WorkStatus};
use rememberstack_core::source::{
    Admission, IngestPrincipal, Origin, PrincipalKind, VersioningMode,
};
use rememberstack_core::store::{
    ChunkRecord, ClaimRecord, DecisionRow, DocumentRow, Namespace, NoteRecord, Occurrence, Receipt,
    VectorCoverage, VersionRecord, WorkSummary,
};
use rememberstack_core::text::{Block, Section, SectionRole, SourceFormat};
use rememberstack_core::time::Timestamp;
use rememberstack_core::{Error, Result};
use serde::de::DeserializeOwned;
use std::str::FromStr;

/// One result row, read by column name. `S` is the implementing store's own
/// marker type, so that each store can implement this for its driver's row type.
pub trait SqlRow<S> {
    /// A text column.
    fn opt_text(&self, col: &str) -> Result<Option<String>>;
    /// An integer column of any width.
    fn opt_int(&self, col: &str) -> Result<Option<i64>>;
    /// A floating-point column.
    fn opt_float(&self, col: &str) -> Result<Option<f64>>;
    /// A boolean column.
    fn opt_bool(&self, col: &str) -> Result<Option<bool>>;
    /// A point in time.
    fn opt_time(&self, col: &str) -> Result<Option<Timestamp>>;
    /// A JSON column, deserialized.
    fn opt_json<T: DeserializeOwned>(&self, col: &str) -> Result<Option<T>>;

    fn text(&self, col: &str) -> Result<String> {
        self.opt_text(col)?.ok_or_else(|| null(col))
    }

    fn int(&self, col: &str) -> Result<i64> {
        self.opt_int(col)?.ok_or_else(|| null(col))
    }

    fn bool(&self, col: &str) -> Result<bool> {
        self.opt_bool(col)?.ok_or_else(|| null(col))
    }

    fn time(&self, col: &str) -> Result<Timestamp> {
        self.opt_time(col)?.ok_or_else(|| null(col))
    }

    fn json<T: DeserializeOwned>(&self, col: &str) -> Result<T> {
        self.opt_json(col)?.ok_or_else(|| null(col))
    }

    /// A count or size: never negative.
    fn count(&self, col: &str) -> Result<u64> {
        Ok(self.int(col)?.max(0) as u64)
    }

    /// A small non-negative integer (an ordinal, a level).
    fn u32(&self, col: &str) -> Result<u32> {
        u32::try_from(self.int(col)?).map_err(|_| corrupt(col, "out of range"))
    }

    /// An id column.
    fn id<T: FromStr>(&self, col: &str) -> Result<T> {
        parse(col, &self.text(col)?)
    }

    /// A nullable id column.
    fn opt_id<T: FromStr>(&self, col: &str) -> Result<Option<T>> {
        self.opt_text(col)?.map(|s| parse(col, &s)).transpose()
    }

    /// A unit enum stored as its serde name.
    fn variant<T: DeserializeOwned>(&self, col: &str) -> Result<T> {
        // serde's error names the unknown value.
        serde_json::from_value(serde_json::Value::String(self.text(col)?))
            .map_err(|e| corrupt(col, &e.to_string()))
    }

    /// A time kept as milliseconds since the epoch (the ledger's columns).
    fn opt_millis(&self, col: &str) -> Result<Option<Timestamp>> {
        self.opt_int(col)?
            .map(|ms| {
                chrono::DateTime::from_timestamp_millis(ms).ok_or_else(|| corrupt(col, "time"))
            })
            .transpose()
    }

    fn millis(&self, col: &str) -> Result<Timestamp> {
        self.opt_millis(col)?.ok_or_else(|| null(col))
    }
}

fn null(col: &str) -> Error {
    Error::store(format!("column `{col}` is NULL"))
}

fn corrupt(col: &str, what: &str) -> Error {
    Error::store(format!("corrupt value in column `{col}`: {what}"))
}

fn parse<T: FromStr>(col: &str, s: &str) -> Result<T> {
    T::from_str(s).map_err(|_| corrupt(col, &format!("`{s}`")))
}

/// A result of a core parser, as a store error naming the column.
fn parsed<T, E: std::fmt::Display>(col: &str, r: std::result::Result<T, E>) -> Result<T> {
    r.map_err(|e| corrupt(col, &e.to_string()))
}

fn section_role(col: &str, s: &str) -> Result<SectionRole> {
    SectionRole::parse(s).ok_or_else(|| corrupt(col, &format!("section role `{s}`")))
}

fn format<S>(r: &impl SqlRow<S>) -> Result<Option<SourceFormat>> {
    Ok(r.opt_text("format")?.and_then(|f| SourceFormat::parse(&f)))
}

pub fn namespace_row<S>(r: &impl SqlRow<S>) -> Result<Namespace> {
    Ok(Namespace {
        id: r.id("id")?,
        slug: r.text("slug")?,
        created_at: r.time("created_at")?,
    })
}

pub fn version_row<S>(r: &impl SqlRow<S>) -> Result<VersionRecord> {
    let id = r.text("id")?;
    Ok(VersionRecord {
        version_id: parse("id", &id)?,
        document_id: r.id("document_id")?,
        namespace_id: r.id("namespace_id")?,
        ordinal: r.u32("ordinal")?,
        source_kind: r.text("source_kind")?,
        source_ref: r.text("source_ref")?,
        mode: parsed("mode", VersioningMode::parse(&r.text("mode")?))?,
        content_sha256: r.text("content_sha256")?,
        size: r.count("size")?,
        mime: r.text("mime")?,
        format: format(r)?,
        source_modified_at: r.time("source_modified_at")?,
        origin: parsed("origin", Origin::parse(&r.text("origin")?))?,
        metadata: r.json("metadata_json")?,
        created_at: r.time("created_at")?,
        is_current: r.opt_text("current_version_id")?.as_deref() == Some(id.as_str()),
        ingested_by: match (r.opt_text("principal_kind")?, r.opt_text("principal_ref")?) {
            (Some(kind), Some(external_ref)) => Some(IngestPrincipal {
                kind: parsed("principal_kind", PrincipalKind::parse(&kind))?,
                external_ref,
            }),
            _ => None,
        },
        compacted_at: r.opt_time("compacted_at")?,
    })
}

pub fn document_row<S>(r: &impl SqlRow<S>) -> Result<DocumentRow> {
    Ok(DocumentRow {
        document_id: r.id("id")?,
        source_kind: r.text("source_kind")?,
        source_ref: r.text("source_ref")?,
        mode: parsed("mode", VersioningMode::parse(&r.text("mode")?))?,
        current_version_id: r.opt_id("current_version_id")?,
        latest_version_id: r.id("latest_version_id")?,
        metadata: r.json("metadata_json")?,
        latest_work: WorkSummary {
            open: r.count("open_work")?,
            parked: r.count("parked_work")?,
            dead_letter: r.count("dead_work")?,
        },
        version_count: r.u32("version_count")?,
        created_at: r.time("created_at")?,
        deleted_at: r.opt_time("deleted_at")?,
    })
}

pub fn block_row<S>(r: &impl SqlRow<S>) -> Result<Block> {
    Ok(Block {
        ordinal: r.u32("ordinal")?,
        kind: r.variant("kind")?,
        level: r.opt_int("level")?.map(|l| l as u8),
        start: r.count("start_byte")? as usize,
        end: r.count("end_byte")? as usize,
        hash: r.text("hash")?,
        turn: r.opt_json("turn_json")?,
    })
}

pub fn section_row<S>(r: &impl SqlRow<S>) -> Result<Section> {
    Ok(Section {
        ordinal: r.u32("ordinal")?,
        block_start: r.u32("block_start")?,
        block_end: r.u32("block_end")?,
        level: r.int("level")? as u8,
        title: r.text("title")?,
        path: r.json("path_json")?,
        role: section_role("role", &r.text("role")?)?,
        parent: r.opt_int("parent")?.map(|p| p as u32),
    })
}

pub fn chunk_row<S>(r: &impl SqlRow<S>) -> Result<ChunkRecord> {
    let version_id = r.text("version_id")?;
    Ok(ChunkRecord {
        chunk_id: r.id("id")?,
        document_id: r.id("document_id")?,
        version_id: parse("version_id", &version_id)?,
        ordinal: r.u32("ordinal")?,
        section_ordinal: r.u32("section_ordinal")?,
        block_start: r.u32("block_start")?,
        block_end: r.u32("block_end")?,
        start: r.count("start_byte")?,
        end: r.count("end_byte")?,
        document_title: r.text("document_title")?,
        source_kind: r.text("source_kind")?,
        source_ref: r.text("source_ref")?,
        section_path: r.json("path_json")?,
        section_title: r.text("section_title")?,
        section_role: section_role("role", &r.text("role")?)?,
        text: r.text("text")?,
        char_start: r.count("char_start")?,
        char_end: r.count("char_end")?,
        event_ids: r.json("event_ids_json")?,
        source_modified_at: r.time("source_modified_at")?,
        content_hash: r.text("content_hash")?,
        embedding_key: r.text("embedding_key")?,
        is_current: r.opt_text("current_version_id")?.as_deref() == Some(version_id.as_str()),
        format: format(r)?,
    })
}

pub fn work_row<S>(r: &impl SqlRow<S>) -> Result<WorkItem> {
    Ok(WorkItem {
        id: r.id::<WorkId>("id")?,
        namespace_id: r.id("namespace_id")?,
        target_kind: parsed("target_kind", TargetKind::parse(&r.text("target_kind")?))?,
        target_id: r.id("target_id")?,
        version_id: r.id("version_id")?,
        stage: parsed("stage", Stage::parse(&r.text("stage")?))?,
        component_version: r.text("component_version")?,
        status: parsed("status", WorkStatus::parse(&r.text("status")?))?,
        attempts: r.count("attempts")? as u32,
        max_attempts: r.count("max_attempts")? as u32,
        not_before: r.millis("not_before")?,
        defer_reason: r
            .opt_text("defer_reason")?
            .map(|d| parsed("defer_reason", DeferReason::parse(&d)))
            .transpose()?,
        lease_owner: r.opt_text("lease_owner")?,
        lease_expires_at: r.opt_millis("lease_expires_at")?,
        last_error: r.opt_text("last_error")?,
        created_at: r.millis("created_at")?,
        updated_at: r.millis("updated_at")?,
    })
}

/// One (stage, status) count of the ledger: columns `stage`, `status`, `n` and
/// `parked` (the items parked for want of a route).
pub fn work_count_row<S>(r: &impl SqlRow<S>) -> Result<WorkCount> {
    Ok(WorkCount {
        stage: parsed("stage", Stage::parse(&r.text("stage")?))?,
        status: parsed("status", WorkStatus::parse(&r.text("status")?))?,
        parked_no_route: r.count("parked")?,
        count: r.count("n")?,
    })
}

/// A coverage count: columns `n` (the records) and `missing` (those without a
/// vector of the generation asked).
pub fn coverage_row<S>(r: &impl SqlRow<S>) -> Result<VectorCoverage> {
    Ok(VectorCoverage {
        chunks: r.count("n")?,
        missing: r.count("missing")?,
    })
}

pub fn claim_row<S>(r: &impl SqlRow<S>) -> Result<ClaimRecord> {
    Ok(ClaimRecord {
        claim_id: r.id("id")?,
        document_id: r.id("document_id")?,
        document_title: r.text("document_title")?,
        source_kind: r.text("source_kind")?,
        source_ref: r.text("source_ref")?,
        text: r.text("text")?,
        added_context: r.json("added_context_json")?,
        validity: Validity {
            from: r.opt_time("valid_from")?,
            until: r.opt_time("valid_until")?,
            precision: r.variant::<Precision>("valid_precision")?,
            kind: r.variant::<ValidityKind>("valid_kind")?,
        },
        asserted_at: r.time("asserted_at")?,
        extractor_version: r.text("extractor_version")?,
        is_current: r.bool("is_current")?,
        embedding_key: r.text("embedding_key")?,
        occurrences: vec![],
    })
}

pub fn occurrence_row<S>(r: &impl SqlRow<S>) -> Result<Occurrence> {
    Ok(Occurrence {
        claim_id: r.id("claim_id")?,
        chunk_id: r.id("chunk_id")?,
        version_id: r.id("version_id")?,
        document_id: r.id("document_id")?,
        extractor_version: r.text("extractor_version")?,
        extraction_input_hash: r.text("extraction_input_hash")?,
        ordinal: r.u32("ordinal")?,
        spans: r.json("spans_json")?,
        passages: r.json("passages_json")?,
        event_ids: r.json("event_ids_json")?,
        reused: r.bool("reused")?,
    })
}

/// An extraction decision (the claim ledger).
pub fn extraction_decision_row<S>(r: &impl SqlRow<S>) -> Result<DecisionRow> {
    Ok(DecisionRow {
        kind: r.text("kind")?,
        passage: r.opt_text("passage")?,
        reason: r.opt_text("reason")?,
        claim_id: r.opt_id("claim_id")?,
        detail: r.json("detail_json")?,
    })
}

pub fn entity_row<S>(r: &impl SqlRow<S>) -> Result<EntityRecord> {
    Ok(EntityRecord {
        entity_id: r.id("id")?,
        namespace_id: r.id("namespace_id")?,
        canonical_name: r.text("canonical_name")?,
        lemma: r.text("lemma")?,
        aliases: vec![],
        merged_into: r.opt_id("merged_into")?,
        profile_summary: r.opt_text("profile_summary")?,
        profile_key: r.opt_text("profile_key")?,
        created_at: r.time("created_at")?,
        mention_count: r.count("mention_count")?,
    })
}

/// A resolution decision (the identity ledger).
pub fn resolution_decision_row<S>(r: &impl SqlRow<S>) -> Result<ResolutionDecision> {
    Ok(ResolutionDecision {
        decision_id: r.id("id")?,
        namespace_id: r.id("namespace_id")?,
        claim_id: r.id("claim_id")?,
        document_id: r.id("document_id")?,
        ordinal: r.u32("ordinal")?,
        name: r.text("name")?,
        lemma: r.text("lemma")?,
        tier: r.text("tier")?,
        candidates: r.json("candidates_json")?,
        complete: r.bool("complete")?,
        t3_score: r.opt_float("t3_score")?.map(|s| s as f32),
        t3_outcome: r.text("t3_outcome")?,
        verdict: r.text("verdict")?,
        entity_id: r.id("entity_id")?,
        rationale: r.text("rationale")?,
        model: r.opt_text("model")?,
        resolver_version: r.text("resolver_version")?,
        features: r.json("features_json")?,
        created_at: r.time("created_at")?,
    })
}

pub fn merge_row<S>(r: &impl SqlRow<S>) -> Result<MergeEvent> {
    Ok(MergeEvent {
        merge_id: r.id("id")?,
        namespace_id: r.id("namespace_id")?,
        from: r.id("from_id")?,
        into: r.id("into_id")?,
        snapshot: r.json("snapshot_json")?,
        created_at: r.time("created_at")?,
        reverted_at: r.opt_time("reverted_at")?,
    })
}

pub fn binding_row<S>(r: &impl SqlRow<S>) -> Result<DocumentBinding> {
    Ok(DocumentBinding {
        document_id: r.id("document_id")?,
        lemma: r.text("lemma")?,
        entity_id: r.id("entity_id")?,
        anchor: r.opt_id("anchor_decision_id")?,
    })
}

pub fn window_row<S>(r: &impl SqlRow<S>) -> Result<Window> {
    Ok(Window {
        valid_from: r.opt_time("valid_from")?,
        valid_until: r.opt_time("valid_until")?,
        precision: r.variant::<Precision>("valid_precision")?,
    })
}

pub fn assertion_row<S>(r: &impl SqlRow<S>) -> Result<Assertion> {
    Ok(Assertion {
        assertion_id: r.id("id")?,
        namespace_id: r.id("namespace_id")?,
        claim_id: r.id("claim_id")?,
        document_id: r.id("document_id")?,
        version_id: r.id("version_id")?,
        kind: parsed("kind", FactKind::parse(&r.text("kind")?))?,
        subject: r.id("subject_id")?,
        predicate: r.opt_text("predicate")?,
        object: r.opt_id("object_id")?,
        statement: r.text("statement")?,
        window: window_row(r)?,
        validity_kind: r.variant::<ValidityKind>("validity_kind")?,
        asserted_at: r.time("asserted_at")?,
        ordinal: r.u32("ordinal")?,
    })
}

pub fn fact_row<S>(r: &impl SqlRow<S>) -> Result<FactRecord> {
    Ok(FactRecord {
        fact_id: r.id("id")?,
        namespace_id: r.id("namespace_id")?,
        kind: parsed("kind", FactKind::parse(&r.text("kind")?))?,
        subject: r.id("subject_id")?,
        subject_name: r.text("subject_name")?,
        predicate: r.opt_text("predicate")?,
        object: r.opt_id("object_id")?,
        object_name: r.opt_text("object_name")?,
        statement: r.text("statement")?,
        window: window_row(r)?,
        validity_kind: r.variant::<ValidityKind>("validity_kind")?,
        recorded_at: r.time("recorded_at")?,
        invalidated_at: r.opt_time("invalidated_at")?,
        closed_reason: r.opt_text("closed_reason")?,
        contradiction_group: r.opt_id("contradiction_group")?,
        superseded_by: r.opt_id("superseded_by")?,
        evidence_count: r.count("evidence_count")?,
        contradict_count: r.count("contradict_count")?,
        embedding_key: r.text("embedding_key")?,
        updated_at: r.time("updated_at")?,
    })
}

pub fn adjudication_row<S>(r: &impl SqlRow<S>) -> Result<AdjudicationRecord> {
    Ok(AdjudicationRecord {
        adjudication_id: r.id("id")?,
        namespace_id: r.id("namespace_id")?,
        assertion_id: r.id("assertion_id")?,
        claim_id: r.id("claim_id")?,
        verdict: r.text("verdict")?,
        target_fact: r.opt_id("target_fact")?,
        result_fact: r.id("result_fact")?,
        candidates: r.json("candidates_json")?,
        reason: r.text("reason")?,
        input: r.json("input_json")?,
        model: r.opt_text("model")?,
        adjudicator_version: r.text("adjudicator_version")?,
        created_at: r.time("created_at")?,
    })
}

pub fn key_row<S>(r: &impl SqlRow<S>) -> Result<ApiKey> {
    Ok(ApiKey {
        id: r.text("id")?,
        name: r.opt_text("name")?,
        namespaces: r.json("namespaces")?,
        scopes: r.json("scopes")?,
        prefix: r.text("prefix")?,
        created_at: r.time("created_at")?,
        revoked_at: r.opt_time("revoked_at")?,
    })
}

pub fn note_row<S>(r: &impl SqlRow<S>) -> Result<NoteRecord> {
    Ok(NoteRecord {
        note_id: r.id("document_id")?,
        version_id: r.id("version_id")?,
        source_key: r.text("source_key")?,
        source_revision: r.text("source_revision")?,
        digest: r.text("digest")?,
        lifecycle: parsed("lifecycle", Admission::parse(&r.text("lifecycle")?))?,
        lifecycle_version: r.u32("lifecycle_version")?,
        metadata: r.json("metadata_json")?,
        created_at: r.time("created_at")?,
        updated_at: r.time("updated_at")?,
        seq: r.int("seq")?,
    })
}

pub fn receipt_row<S>(r: &impl SqlRow<S>) -> Result<Receipt> {
    r.json("body_json")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    /// A row of named text and integer cells; JSON and times are kept as text, as
    /// SQLite keeps them.
    #[derive(Default)]
    struct Cells(HashMap<&'static str, Option<String>>);

    impl Cells {
        fn with(mut self, col: &'static str, v: Option<&str>) -> Self {
            self.0.insert(col, v.map(str::to_string));
            self
        }

        fn cell(&self, col: &str) -> Result<Option<String>> {
            self.0
                .get(col)
                .cloned()
                .ok_or_else(|| Error::store(format!("no column `{col}`")))
        }
    }

    impl SqlRow<()> for Cells {
        fn opt_text(&self, col: &str) -> Result<Option<String>> {
            self.cell(col)
        }
        fn opt_int(&self, col: &str) -> Result<Option<i64>> {
            self.cell(col)?
                .map(|s| s.parse().map_err(|_| Error::store("not an integer")))
                .transpose()
        }
        fn opt_float(&self, col: &str) -> Result<Option<f64>> {
            self.cell(col)?
                .map(|s| s.parse().map_err(|_| Error::store("not a number")))
                .transpose()
        }
        fn opt_bool(&self, col: &str) -> Result<Option<bool>> {
            Ok(self.opt_int(col)?.map(|n| n != 0))
        }
        fn opt_time(&self, col: &str) -> Result<Option<Timestamp>> {
            self.cell(col)?
                .map(|s| {
                    rememberstack_core::time::parse_rfc3339(&s)
                        .ok_or_else(|| Error::store("not a time"))
                })
                .transpose()
        }
        fn opt_json<T: DeserializeOwned>(&self, col: &str) -> Result<Option<T>> {
            self.cell(col)?
                .map(|s| serde_json::from_str(&s).map_err(|e| Error::store(e.to_string())))
                .transpose()
        }
    }

    fn key() -> Cells {
        Cells::default()
            .with("id", Some("k1"))
            .with("name", None)
            .with("namespaces", Some(r#"["*"]"#))
            .with("scopes", Some(r#"["read"]"#))
            .with("prefix", Some("rs_k1"))
            .with("created_at", Some("2026-01-02T03:04:05Z"))
            .with("revoked_at", None)
    }

    #[test]
    fn a_row_decodes_its_typed_columns() {
        let k = key_row(&key()).unwrap();
        assert_eq!(k.id, "k1");
        assert_eq!(k.name, None);
        assert_eq!(k.namespaces, vec!["*".to_string()]);
        assert_eq!(k.created_at.to_rfc3339(), "2026-01-02T03:04:05+00:00");
        assert!(k.revoked_at.is_none());
    }

    #[test]
    fn a_bad_row_is_a_store_error_naming_its_column() {
        for (col, v, says) in [
            ("created_at", None, "column `created_at` is NULL"),
            ("id", None, "column `id` is NULL"),
            ("scopes", Some("not json"), ""),
            ("prefix", Some("x"), ""),
        ] {
            let row = key().with(col, v);
            match key_row(&row) {
                Err(e) => {
                    assert_eq!(e.code(), rememberstack_core::ErrorCode::Store);
                    assert!(e.to_string().contains(says), "{e}");
                }
                Ok(_) => assert_eq!(col, "prefix", "{col} = {v:?} decoded"),
            }
        }
        let missing = Cells::default().with("id", Some("k1"));
        assert!(key_row(&missing).is_err());
    }

    #[test]
    fn ids_enums_and_counts_are_checked() {
        let ns = |id: &str| {
            Cells::default()
                .with("id", Some(id))
                .with("slug", Some("s"))
                .with("created_at", Some("2026-01-02T03:04:05Z"))
        };
        assert!(namespace_row(&ns(&uuid::Uuid::now_v7().to_string())).is_ok());
        let e = namespace_row(&ns("not-an-id")).unwrap_err();
        assert!(e.to_string().contains("column `id`"), "{e}");

        let w = |p: &str| {
            Cells::default()
                .with("valid_from", None)
                .with("valid_until", Some("2026-01-02T00:00:00Z"))
                .with("valid_precision", Some(p))
        };
        assert!(window_row(&w("day")).unwrap().valid_until.is_some());
        let e = window_row(&w("fortnight")).unwrap_err();
        assert!(e.to_string().contains("valid_precision"), "{e}");

        let c = Cells::default()
            .with("n", Some("-3"))
            .with("o", Some("70000000000"));
        assert_eq!(c.count("n").unwrap(), 0);
        assert!(c.u32("o").is_err());
    }
}
