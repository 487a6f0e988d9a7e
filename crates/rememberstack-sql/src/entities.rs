//! Entities, their aliases and mentions, resolution decisions and exclusions, and
//! merges: the statements both stores run as they are.

/// A resolution decision's columns, `seq` first, for statements a store builds at
/// run time.
pub const DECISION_COLUMNS: &str = decision_columns!();

statements! {
    /// A resolution decision by id. Binds: namespace, decision.
    DECISION_BY_ID = concat!("SELECT ", decision_columns!(), " FROM resolution_decisions
 WHERE namespace_id = ? AND id = ?");

    /// The decision one resolver version made for a mention. Binds: namespace, claim,
    /// ordinal, resolver version.
    DECISION_OF_MENTION = concat!("SELECT ", decision_columns!(), " FROM resolution_decisions
 WHERE namespace_id = ? AND claim_id = ? AND ordinal = ? AND resolver_version = ?");

    /// A merge event by id, its row locked (two unmerges of one event serialize).
    /// Binds: namespace, merge.
    MERGE_BY_ID_LOCKED = concat!("SELECT ", merge_columns!(), " FROM merge_events
 WHERE namespace_id = ? AND id = ?{FOR_UPDATE}");

    /// The surface forms of entities, oldest first. Binds: namespace, the entity ids
    /// (`{ANY}`).
    ALIASES_OF_ENTITIES = "SELECT entity_id, surface FROM entity_aliases
 WHERE namespace_id = ? AND entity_id {ANY} ORDER BY created_at, {SEQ}";

    /// The cannot-link pairs that name any of the entities. Binds: namespace, the
    /// entity ids (`{ANY}`), the entity ids again.
    EXCLUSIONS_OF_ENTITIES = "SELECT a, b FROM resolution_exclusions
 WHERE namespace_id = ? AND (a {ANY} OR b {ANY})";

    /// The resolution decisions that chose any of the entities, in order. Binds:
    /// namespace, the entity ids (`{ANY}`).
    DECISIONS_OF_ENTITIES = concat!("SELECT ", decision_columns!(), " FROM resolution_decisions
 WHERE namespace_id = ? AND entity_id {ANY} ORDER BY seq");

    /// A namespace's merges, in order. Binds: namespace.
    MERGES = concat!("SELECT ", merge_columns!(), " FROM merge_events
 WHERE namespace_id = ? ORDER BY seq");

    /// The merges from or into any of the entities, in order. Binds: namespace, the
    /// entity ids (`{ANY}`), the entity ids again.
    MERGES_OF_ENTITIES = concat!("SELECT ", merge_columns!(), " FROM merge_events
 WHERE namespace_id = ? AND (from_id {ANY} OR into_id {ANY}) ORDER BY seq");

    /// The entity a mention was resolved to by one resolver version. Binds: each `?` in
    /// turn.
    DECIDED_ENTITY = "SELECT entity_id FROM resolution_decisions
 WHERE namespace_id = ? AND claim_id = ? AND ordinal = ? AND resolver_version = ?";

    /// A surface form of an entity, once. Binds: the listed columns in order.
    INSERT_ALIAS = "INSERT INTO entity_aliases (namespace_id, entity_id, surface, lemma, created_at)
 VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING";

    /// A new entity, once. Binds: the listed columns in order.
    INSERT_ENTITY = "INSERT INTO entities (namespace_id, id, canonical_name, lemma, created_at)
 VALUES (?, ?, ?, ?, ?) ON CONFLICT (namespace_id, id) DO NOTHING";

    /// Two entities that must not be merged, once. Binds: namespace, a, b, decision.
    INSERT_EXCLUSION = "INSERT INTO resolution_exclusions (namespace_id, a, b, decision_id)
 VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING";

    /// A mention of an entity in a claim. Binds: the listed columns in order.
    INSERT_MENTION = "INSERT INTO entity_mentions (namespace_id, entity_id, claim_id, start_byte, end_byte,
     surface, decision_id, created_at)
 VALUES (?, ?, ?, ?, ?, ?, ?, ?)";

    /// A merge of two entities, with what undoing it needs. Binds: the listed columns in
    /// order.
    INSERT_MERGE_EVENT = "INSERT INTO merge_events (namespace_id, id, from_id, into_id, snapshot_json, created_at, reverted_at)
 VALUES (?, ?, ?, ?, ?, ?, ?)";

    /// One mention's resolution decision. Binds: the listed columns in order.
    INSERT_RESOLUTION_DECISION = "INSERT INTO resolution_decisions (namespace_id, id, claim_id, document_id, ordinal, name,
     lemma, tier, candidates_json, complete, t3_score, t3_outcome, verdict, entity_id,
     rationale, model, resolver_version, features_json, created_at)
 VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)";

    /// An entity's mentions, oldest first. Binds: namespace, entity, limit.
    MENTIONS = "SELECT claim_id, start_byte, end_byte, surface FROM entity_mentions
 WHERE namespace_id = ? AND entity_id = ? ORDER BY seq LIMIT ?";

    /// An unmerged entity merges into another. Binds: into, namespace, from.
    MERGE_INTO = "UPDATE entities SET merged_into = ? WHERE namespace_id = ? AND id = ? AND merged_into IS NULL";

    /// An entity's profile summary. Binds: each `?` in turn.
    SET_PROFILE = "UPDATE entities SET profile_summary = ?, profile_key = ?, profile_updated_at = ?
 WHERE namespace_id = ? AND id = ?";

    /// Undo a merge. Binds: namespace, from, into.
    UNMERGE = "UPDATE entities SET merged_into = NULL
 WHERE namespace_id = ? AND id = ? AND merged_into = ?";

    /// A document's name bindings, in order. Binds: namespace, document.
    DOCUMENT_BINDINGS = "SELECT document_id, lemma, entity_id, anchor_decision_id FROM document_entity_bindings
 WHERE namespace_id = ? AND document_id = ? ORDER BY {SEQ}";

    /// A document's bindings of one lemma, in order. Binds: namespace, document, lemma.
    DOCUMENT_BINDINGS_OF_LEMMA = "SELECT document_id, lemma, entity_id, anchor_decision_id FROM document_entity_bindings
 WHERE namespace_id = ? AND document_id = ? AND lemma = ? ORDER BY {SEQ}";
}

/// The merge event an unmerge reverts, as read by [`MERGE_BY_ID_LOCKED`]: refused
/// when the namespace has no such event or it was reverted already.
pub fn event_to_revert(
    event: Option<rememberstack_core::entities::MergeEvent>,
    merge: rememberstack_core::ids::MergeId,
) -> rememberstack_core::Result<rememberstack_core::entities::MergeEvent> {
    use rememberstack_core::Error;
    let Some(event) = event else {
        return Err(Error::invalid_input(format!(
            "merge event {merge} does not exist in this namespace"
        )));
    };
    if let Some(at) = event.reverted_at {
        return Err(Error::invalid_input(format!(
            "merge event {merge} was already reverted at {}",
            rememberstack_core::time::to_rfc3339(&at)
        )));
    }
    Ok(event)
}

/// An unmerge whose [`UNMERGE`] cleared `cleared` redirects: refused when none,
/// because the entity was unmerged or merged elsewhere since.
pub fn check_unmerged(
    cleared: u64,
    event: &rememberstack_core::entities::MergeEvent,
) -> rememberstack_core::Result<()> {
    if cleared == 0 {
        return Err(rememberstack_core::Error::invalid_input(format!(
            "entity {} is no longer merged into {}: merge event {} cannot be reverted",
            event.from, event.into, event.merge_id
        )));
    }
    Ok(())
}

#[cfg(test)]
mod unmerge_tests {
    use super::*;
    use rememberstack_core::ErrorCode;
    use rememberstack_core::entities::MergeEvent;
    use rememberstack_core::ids::{EntityId, MergeId, NamespaceId};

    fn event(reverted: bool) -> MergeEvent {
        let at = rememberstack_core::time::parse_rfc3339("2026-01-02T03:04:05Z").unwrap();
        MergeEvent {
            merge_id: MergeId::new(),
            namespace_id: NamespaceId::new(),
            from: EntityId::new(),
            into: EntityId::new(),
            snapshot: serde_json::json!({}),
            created_at: at,
            reverted_at: reverted.then_some(at),
        }
    }

    #[test]
    fn an_unmerge_reverts_a_live_merge_that_still_stands_and_nothing_else() {
        let live = event(false);
        assert_eq!(
            event_to_revert(Some(live.clone()), live.merge_id).unwrap(),
            live
        );
        let missing = MergeId::new();
        let err = event_to_revert(None, missing).unwrap_err();
        assert_eq!(err.code(), ErrorCode::InvalidInput);
        assert!(err.to_string().contains(&missing.to_string()), "{err}");
        let reverted = event(true);
        let err = event_to_revert(Some(reverted.clone()), reverted.merge_id).unwrap_err();
        assert!(
            err.to_string().contains("already reverted at 2026-01-02"),
            "{err}"
        );
        assert!(check_unmerged(1, &live).is_ok());
        let err = check_unmerged(0, &live).unwrap_err();
        assert_eq!(err.code(), ErrorCode::InvalidInput);
        assert!(err.to_string().contains("no longer merged"), "{err}");
    }
}
