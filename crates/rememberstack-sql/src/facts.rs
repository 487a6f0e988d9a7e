//! Which facts a read may serve, written once: the eligibility condition every
//! fact listing and search of both stores puts in its statement (so it applies
//! before `ORDER BY … LIMIT`), and the columns a fact is read with.

use crate::{Arg, Params};
use rememberstack_core::facts::FactFilter;

/// A staged assertion's columns, for statements a store builds at run time.
pub const ASSERTION_SELECT: &str = assertion_select!();

/// Facts with their entity names and the evidence counts (distinct lineages with
/// current testimony per stance; see [`SUPPORTED`]).
pub fn fact_select() -> String {
    format!(
        "SELECT f.seq, f.id, f.namespace_id, f.kind, f.subject_id, f.predicate, f.object_id, f.statement,
           f.valid_from, f.valid_until, f.valid_precision, f.validity_kind, f.recorded_at,
           f.invalidated_at, f.closed_reason, f.contradiction_group, f.superseded_by, f.embedding_key,
           f.updated_at, COALESCE(s.canonical_name, '') AS subject_name,
           o.canonical_name AS object_name, {} AS evidence_count, {} AS contradict_count
    FROM facts f
    LEFT JOIN entities s ON s.namespace_id = f.namespace_id AND s.id = f.subject_id
    LEFT JOIN entities o ON o.namespace_id = f.namespace_id AND o.id = f.object_id",
        evidence_count("support"),
        evidence_count("contradict")
    )
}

/// A fact's count of distinct lineages (documents) with current testimony of one
/// stance: both stores keep it on the fact's row, recounted by triggers in the
/// statement that changes an input (migration 0017 in SQLite, 0025 in
/// PostgreSQL).
fn evidence_count(stance: &str) -> String {
    let column = if stance == "support" {
        "evidence"
    } else {
        "contradict"
    };
    format!("f.{column}_count")
}

/// Whether some current testimony supports the fact (alias `f`): its support
/// count is above zero. Reads serve only such facts; a lifecycle change closes a
/// fact it leaves without.
pub const SUPPORTED: &str = "f.evidence_count > 0";

/// Eligibility of facts (alias `f`) under a filter: an SQL condition whose values
/// are bound through `p`, in order. Only placeholders are generated; every value
/// is bound.
/// Facts by id, in no order (a template: a store renders it once). Binds: namespace,
/// the fact ids (`{ANY}`).
pub fn facts_by_id() -> String {
    format!(
        "{} WHERE f.namespace_id = ? AND f.id {{ANY}}",
        fact_select()
    )
}

pub fn eligibility(filter: &FactFilter, p: &mut Params) -> String {
    let d = p.dialect();
    let ns = filter.namespace_id.to_string();
    let mut sql = format!("f.namespace_id = {}", p.push(Arg::Text(ns.clone())));
    if !filter.entities.is_empty() {
        // A union of the two index searches: as one `subject IN … OR object IN …`
        // SQLite's planner walked every fact of the namespace (43 ms against 0.4 ms
        // for one person's facts at 77k claims).
        let entities: Vec<String> = filter.entities.iter().map(|e| e.to_string()).collect();
        let (ns1, subjects) = (p.push(Arg::Text(ns.clone())), p.any_list(&entities));
        let (ns2, objects) = (p.push(Arg::Text(ns.clone())), p.any_list(&entities));
        sql.push_str(&format!(
            " AND f.seq IN (SELECT seq FROM facts WHERE namespace_id = {ns1} AND subject_id {subjects}
                  UNION ALL SELECT seq FROM facts WHERE namespace_id = {ns2} AND object_id {objects})"
        ));
    }
    if let Some(documents) = &filter.documents {
        // Through supporting claims that are current testimony of a scoped lineage.
        let ids: Vec<String> = documents.iter().map(|d| d.to_string()).collect();
        let (ns, docs) = (p.push(Arg::Text(ns)), p.any_list(&ids));
        sql.push_str(&format!(
            " AND f.id IN (SELECT e.fact_id FROM fact_evidence e
                JOIN claims c ON c.namespace_id = e.namespace_id AND c.id = e.claim_id
               WHERE e.namespace_id = {ns} AND e.stance = 'support' AND {}
                 AND c.document_id {docs})",
            d.truthy("c.is_current")
        ));
    }
    if let Some(group) = filter.group {
        let g = p.push(Arg::Text(group.to_string()));
        sql.push_str(&format!(" AND f.contradiction_group = {g}"));
    }
    if !filter.history {
        sql.push_str(" AND f.invalidated_at IS NULL");
        // Only facts some current testimony supports: testimony that is not promoted
        // (a candidate or archived note) or no longer current never serves a fact.
        if !filter.unsupported {
            sql.push_str(&format!(" AND {SUPPORTED}"));
        }
        if filter.at.is_none() && filter.overlap.is_none() {
            // Current view: a superseded fact no longer holds. As of an instant, its
            // (capped) window decides.
            sql.push_str(" AND f.superseded_by IS NULL");
        }
        if let Some(at) = filter.at {
            let (a, b) = (p.push(Arg::Time(at)), p.push(Arg::Time(at)));
            sql.push_str(&format!(
                " AND (f.valid_from IS NULL OR f.valid_from <= {a})
                  AND (f.valid_until IS NULL OR {b} < f.valid_until)"
            ));
        }
        if let Some((from, until)) = filter.overlap {
            // Half-open windows overlap when each starts before the other ends.
            if let Some(until) = until {
                let u = p.push(Arg::Time(until));
                sql.push_str(&format!(
                    " AND (f.valid_from IS NULL OR f.valid_from < {u})"
                ));
            }
            if let Some(from) = from {
                let f = p.push(Arg::Time(from));
                sql.push_str(&format!(
                    " AND (f.valid_until IS NULL OR {f} < f.valid_until)"
                ));
            }
        }
    }
    sql
}

statements! {
    /// One adjudication verdict. Binds: the listed columns in order.
    INSERT_ADJUDICATION = "INSERT INTO adjudications (namespace_id, id, assertion_id, claim_id, verdict, target_fact,
     result_fact, candidates_json, reason, input_json, model, adjudicator_version, created_at)
 VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)";

    /// A fact's contradicting evidence but for the claims kept (a link's
    /// `contradicted_by`). Binds: namespace, fact, the kept claim ids (`{ANY}`).
    CONTRADICTIONS_NOT_KEPT = "DELETE FROM fact_evidence WHERE namespace_id = ? AND fact_id = ?
   AND stance = 'contradict' AND NOT (claim_id {ANY})";

    /// A claim that contradicts a fact, once. Binds: namespace, fact, claim, now.
    INSERT_CONTRADICTING_EVIDENCE = "INSERT INTO fact_evidence (namespace_id, fact_id, claim_id, stance, added_at)
 VALUES (?, ?, ?, 'contradict', ?) ON CONFLICT DO NOTHING";

    /// A claim's evidence for a fact, once. Binds: namespace, fact, claim, stance, now.
    INSERT_EVIDENCE = "INSERT INTO fact_evidence (namespace_id, fact_id, claim_id, stance, added_at)
 VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING";

    /// A normalized assertion waiting to be adjudicated. Binds: the listed columns in
    /// order.
    INSERT_STAGED_ASSERTION = "INSERT INTO staged_assertions (namespace_id, id, claim_id, document_id, version_id,
     normalizer_version, kind, subject_id, predicate, object_id, statement, valid_from,
     valid_until, valid_precision, validity_kind, asserted_at, ordinal, created_at)
 VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
 ON CONFLICT DO NOTHING";

    /// A staged assertion is applied, with its fact and verdict. Binds: each `?` in turn.
    MARK_APPLIED = "UPDATE staged_assertions SET applied_at = ?, fact_id = ?, verdict = ?
 WHERE namespace_id = ? AND id = ?";

    /// A claim's normalization by one normalizer version. Binds: each `?` in turn.
    NORMALIZATION = "SELECT output_json FROM normalizations
 WHERE namespace_id = ? AND claim_id = ? AND normalizer_version = ?";

    /// The predicate registry of a namespace, core predicates first. Binds: namespace.
    PREDICATES = "SELECT name, description, synonyms_json, status, uses FROM predicates
 WHERE namespace_id = ?
 ORDER BY status <> 'core', COALESCE(core_ordinal, 0),
          CASE WHEN status = 'core' THEN 0 ELSE uses END DESC, name";

    /// A fact's window, successor and contradiction group as its chain decides them. Binds:
    /// each `?` in turn.
    SET_CHAIN_LINK = "UPDATE facts SET valid_from = ?, valid_until = ?, valid_precision = ?, superseded_by = ?,
     contradiction_group = ?, updated_at = ?
 WHERE namespace_id = ? AND id = ?";

    /// A fact's contradiction group. Binds: group, now, namespace, fact.
    SET_GROUP = "UPDATE facts SET contradiction_group = ?, updated_at = ?
 WHERE namespace_id = ? AND id = ?";

    /// A fact's successor. Binds: successor, now, namespace, fact.
    SET_SUCCESSOR = "UPDATE facts SET superseded_by = ?, updated_at = ? WHERE namespace_id = ? AND id = ?";

    /// A fact's window. Binds: from, until, precision, now, namespace, fact.
    SET_WINDOW = "UPDATE facts SET valid_from = ?, valid_until = ?, valid_precision = ?, updated_at = ?
 WHERE namespace_id = ? AND id = ?";

    /// The adjudications that targeted or produced a fact, in order. Binds: namespace,
    /// fact, fact.
    ADJUDICATIONS_OF_FACT = "SELECT * FROM adjudications
 WHERE namespace_id = ? AND (target_fact = ? OR result_fact = ?) ORDER BY seq";

    /// When a staged assertion was applied (its row locked on PostgreSQL). Binds:
    /// namespace, id.
    APPLIED_AT = "SELECT applied_at FROM staged_assertions WHERE namespace_id = ? AND id = ?{FOR_UPDATE}";

    /// A fact's evidence with each claim's document and currency, in order. Binds: each `?`
    /// in turn.
    EVIDENCE = "SELECT e.fact_id, e.claim_id, e.stance, e.added_at, c.document_id, c.is_current
 FROM fact_evidence e
 JOIN claims c ON c.namespace_id = e.namespace_id AND c.id = e.claim_id
 WHERE e.namespace_id = ? AND e.fact_id = ?
 ORDER BY e.added_at, e.{SEQ}";

    /// How many facts a namespace has and how many lack a vector of one generation. Binds:
    /// each `?` in turn.
    VECTOR_COVERAGE = "SELECT COUNT(*) AS n,
        COALESCE(SUM(CASE WHEN vv.embedding_key IS NULL THEN 1 ELSE 0 END), 0){BIGINT}
            AS missing
 FROM facts f
 LEFT JOIN vectors vv ON vv.namespace_id = f.namespace_id AND vv.generation = ?
                      AND vv.embedding_key = f.embedding_key
 WHERE f.namespace_id = ? AND f.invalidated_at IS NULL AND f.superseded_by IS NULL";

    /// A core predicate of the registry, its text brought up to date. Binds: namespace, name, description, synonyms, core ordinal.
    UPSERT_CORE_PREDICATE = "INSERT INTO predicates (namespace_id, name, description, synonyms_json, status,
     core_ordinal, uses)
 VALUES (?, ?, ?, ?, 'core', ?, 0)
 ON CONFLICT (namespace_id, name) DO UPDATE SET status = 'core',
     description = excluded.description, synonyms_json = excluded.synonyms_json,
     core_ordinal = excluded.core_ordinal";

    /// A claim's normalization by one normalizer version, replacing an earlier one. Binds: the listed columns in order.
    UPSERT_NORMALIZATION = "INSERT INTO normalizations (namespace_id, claim_id, normalizer_version, output_json, created_at)
 VALUES (?, ?, ?, ?, ?)
 ON CONFLICT (namespace_id, claim_id, normalizer_version) DO UPDATE SET
     output_json = excluded.output_json, created_at = excluded.created_at";
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Dialect;
    use rememberstack_core::ids::{DocumentId, EntityId, NamespaceId};

    fn filter() -> FactFilter {
        let id = |n: u128| uuid::Uuid::from_u128(n).to_string();
        FactFilter {
            namespace_id: id(1).parse::<NamespaceId>().unwrap(),
            entities: vec![id(2).parse::<EntityId>().unwrap()],
            at: Some("2024-05-01T00:00:00Z".parse().unwrap()),
            documents: Some(vec![id(3).parse::<DocumentId>().unwrap()]),
            history: false,
            overlap: None,
            group: Some(uuid::Uuid::from_u128(4)),
            unsupported: false,
        }
    }

    fn rendered(d: Dialect, offset: usize) -> String {
        let mut p = Params::after(d, offset);
        let cond = eligibility(&filter(), &mut p);
        format!("{cond}\n-- binds\n{:?}", p.args())
    }

    #[test]
    fn eligibility_sqlite() {
        insta::assert_snapshot!(rendered(Dialect::Sqlite, 0));
    }

    #[test]
    fn eligibility_postgres_after_one_leading_parameter() {
        insta::assert_snapshot!(rendered(Dialect::Postgres, 1));
    }

    #[test]
    fn every_placeholder_has_its_value() {
        for d in [Dialect::Sqlite, Dialect::Postgres] {
            let mut p = Params::new(d);
            let cond = eligibility(&filter(), &mut p);
            let placeholders = match d {
                Dialect::Sqlite => cond.matches('?').count(),
                Dialect::Postgres => cond.matches('$').count(),
            };
            assert_eq!(placeholders, p.args().len(), "{d:?}: {cond}");
        }
    }

    #[test]
    fn history_drops_the_currency_conditions() {
        let mut f = filter();
        f.history = true;
        let cond = eligibility(&f, &mut Params::new(Dialect::Sqlite));
        assert!(!cond.contains("evidence_count"), "{cond}");
        assert!(!cond.contains("invalidated_at"), "{cond}");
        let cond = eligibility(&filter(), &mut Params::new(Dialect::Sqlite));
        assert!(cond.contains("f.evidence_count > 0"), "{cond}");
    }
}
