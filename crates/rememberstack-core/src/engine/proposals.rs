//! Merge proposals: names that are one entity across a namespace.
//!
//! Within a document a short form already binds to the longer name it abbreviates
//! (resolution tier `offline_short_form`). Across documents a bounded pass over the
//! namespace's active entities finds each one-word name that abbreviates exactly
//! one longer name (`Marta` → `Marta Ilves`, `Mel` → `Melanie`) and proposes the
//! pair as a merge. A proposal is *automatic* when it is unambiguous and within the
//! blast-radius guard: the idle pipeline then merges it by itself. The rest wait for
//! `accept` or `reject`. Every merge is an ordinary, reversible one whose event
//! records the rule (ids and rule names only: a name in an audit row would outlive
//! a forget); a rejection is a cannot-link pair the pass never proposes again.

use super::*;
use crate::entities::normalize::abbreviates;
use crate::entities::{EntityFilter, MergeEvent};
use serde_json::json;
use std::collections::BTreeSet;

/// Active entities one pass reads at most (the pass is bounded; a larger
/// namespace is scanned oldest first up to this many).
pub const MAX_PROPOSAL_SCAN: u32 = 20_000;
/// Merges one idle pass applies at most.
pub const AUTO_MERGES_PER_PASS: usize = 50;
/// Mentions read per entity to find the documents two names share.
const MENTIONS_READ: u32 = 500;

/// The abbreviation rules, by name (the `rule` of a proposal and of its merge).
pub mod rule {
    /// A one-word name is the first word of exactly one longer name.
    pub const FIRST_WORD: &str = "short_form_first_word";
    /// A one-word name is the last word of exactly one longer name.
    pub const LAST_WORD: &str = "short_form_last_word";
    /// A one-word name of three letters or more begins exactly one longer one-word
    /// name (`Mel` → `Melanie`).
    pub const PREFIX: &str = "short_form_prefix";
}

/// One proposed merge of `from` (the short form) into `into`.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MergeProposal {
    /// The short form's entity (active root).
    pub from: EntityId,
    /// Its canonical name.
    pub from_name: String,
    /// The longer name's entity (active root).
    pub into: EntityId,
    /// Its canonical name.
    pub into_name: String,
    /// The rule that found it (`short_form_first_word`, `short_form_last_word`,
    /// `short_form_prefix`).
    pub rule: String,
    /// Why, in words.
    pub reason: String,
    /// Mentions the merge moves (the short form's).
    pub mentions: u64,
    /// Documents that name both.
    pub shared_documents: usize,
    /// Whether the idle pipeline merges it by itself: the first word of one longer
    /// name, or another rule with a shared document, and at most
    /// `auto_merge_max_mentions` mentions moved.
    pub automatic: bool,
}

/// How a one-word name abbreviates a longer one, if it does.
fn abbreviation_rule(short: &str, long: &str) -> Option<&'static str> {
    if !abbreviates(short, long) {
        return None;
    }
    let words: Vec<&str> = long.split(' ').filter(|w| !w.is_empty()).collect();
    Some(match words.as_slice() {
        [_] => rule::PREFIX,
        [first, ..] if *first == short => rule::FIRST_WORD,
        _ => rule::LAST_WORD,
    })
}

impl Engine {
    /// The merges the namespace's names propose now, by the longer name then the
    /// short one. Ambiguous short forms (abbreviating two or more names) and pairs
    /// a caller rejected are not proposed.
    pub async fn merge_proposals(&self, namespace: &str) -> Result<Vec<MergeProposal>> {
        validate_namespace(namespace)?;
        let Some(ns) = self.store.namespace(namespace).await? else {
            return Ok(vec![]);
        };
        // Boxed, as every call into this pass: its state stays off the callers'
        // futures (and stacks), which the pipeline's idle path nests deeply.
        Box::pin(self.proposals_in(ns.id)).await
    }

    async fn proposals_in(&self, ns: NamespaceId) -> Result<Vec<MergeProposal>> {
        let entities = self
            .store
            .list_entities(
                &EntityFilter {
                    namespace_id: ns,
                    include_merged: false,
                    lemma: None,
                },
                MAX_PROPOSAL_SCAN,
            )
            .await?;
        // Longer names by the word a short form can be: first, last, or (one-word
        // names) every prefix of three letters or more, so each short form looks
        // up its candidates instead of scanning every name.
        let mut by_word: HashMap<&str, Vec<usize>> = HashMap::new();
        for (i, e) in entities.iter().enumerate() {
            let words: Vec<&str> = e.lemma.split(' ').filter(|w| !w.is_empty()).collect();
            match words.as_slice() {
                [] => {}
                [one] => {
                    for (end, _) in one.char_indices().skip(3) {
                        by_word.entry(&one[..end]).or_default().push(i);
                    }
                }
                [first, .., last] => {
                    by_word.entry(first).or_default().push(i);
                    if last != first {
                        by_word.entry(last).or_default().push(i);
                    }
                }
            }
        }
        let mut pairs: Vec<(usize, usize, &'static str)> = Vec::new();
        for (i, e) in entities.iter().enumerate() {
            if e.lemma.is_empty() || e.lemma.contains(' ') {
                continue;
            }
            let Some(candidates) = by_word.get(e.lemma.as_str()) else {
                continue;
            };
            let found: Vec<(usize, &'static str)> = candidates
                .iter()
                .filter(|&&j| j != i && entities[j].lemma != e.lemma)
                .filter_map(|&j| abbreviation_rule(&e.lemma, &entities[j].lemma).map(|r| (j, r)))
                .collect();
            if let [(j, r)] = found.as_slice() {
                pairs.push((i, *j, r));
            }
        }
        if pairs.is_empty() {
            return Ok(vec![]);
        }
        let shorts: Vec<EntityId> = pairs.iter().map(|p| entities[p.0].entity_id).collect();
        let excluded: BTreeSet<(EntityId, EntityId)> = self
            .store
            .exclusions(ns, &shorts)
            .await?
            .into_iter()
            .collect();
        let guard = self.config.facts.auto_merge_max_mentions;
        let mut out = Vec::with_capacity(pairs.len());
        // One longer name may be proposed for several short forms (`Marta` and
        // `Ilves`): its documents are read once.
        let mut documents: HashMap<EntityId, BTreeSet<DocumentId>> = HashMap::new();
        for (i, j, r) in pairs {
            let (short, long) = (&entities[i], &entities[j]);
            let key = if short.entity_id < long.entity_id {
                (short.entity_id, long.entity_id)
            } else {
                (long.entity_id, short.entity_id)
            };
            if excluded.contains(&key) {
                continue;
            }
            for e in [short.entity_id, long.entity_id] {
                if let std::collections::hash_map::Entry::Vacant(slot) = documents.entry(e) {
                    slot.insert(self.documents_naming(ns, e).await?);
                }
            }
            let shared_documents = documents[&short.entity_id]
                .intersection(&documents[&long.entity_id])
                .count();
            let automatic = guard > 0
                && short.mention_count <= guard
                && (r == rule::FIRST_WORD || shared_documents > 0);
            let reason = match r {
                rule::FIRST_WORD => format!(
                    "`{}` is the first word of `{}` and of no other name here",
                    short.canonical_name, long.canonical_name
                ),
                rule::LAST_WORD => format!(
                    "`{}` is the last word of `{}` and of no other name here",
                    short.canonical_name, long.canonical_name
                ),
                _ => format!(
                    "`{}` begins `{}` and no other name here",
                    short.canonical_name, long.canonical_name
                ),
            };
            out.push(MergeProposal {
                from: short.entity_id,
                from_name: short.canonical_name.clone(),
                into: long.entity_id,
                into_name: long.canonical_name.clone(),
                rule: r.to_string(),
                reason,
                mentions: short.mention_count,
                shared_documents,
                automatic,
            });
        }
        out.sort_by(|x, y| {
            x.into_name
                .cmp(&y.into_name)
                .then_with(|| x.from_name.cmp(&y.from_name))
                .then_with(|| x.from.cmp(&y.from))
        });
        Ok(out)
    }

    /// The documents whose claims mention an entity or any entity merged into it.
    async fn documents_naming(
        &self,
        ns: NamespaceId,
        entity: EntityId,
    ) -> Result<BTreeSet<DocumentId>> {
        let mut claims: Vec<ClaimId> = Vec::new();
        for m in self.members(ns, entity).await? {
            claims.extend(
                self.store
                    .mentions(ns, m, MENTIONS_READ)
                    .await?
                    .into_iter()
                    .map(|x| x.claim_id),
            );
        }
        claims.sort();
        claims.dedup();
        Ok(self
            .store
            .claims(ns, &claims)
            .await?
            .into_iter()
            .map(|c| c.document_id)
            .collect())
    }

    /// The proposal to merge `from` into `into`, as the namespace proposes it now,
    /// or a `not_found` error saying so.
    async fn proposal(
        &self,
        ns: NamespaceId,
        namespace: &str,
        from: EntityId,
        into: EntityId,
    ) -> Result<MergeProposal> {
        Box::pin(self.proposals_in(ns))
            .await?
            .into_iter()
            .find(|p| p.from == from && p.into == into)
            .ok_or_else(|| {
                Error::new(
                    ErrorCode::NotFound,
                    format!(
                        "`{namespace}` proposes no merge of {from} into {into} (list the proposals to see the current ones)"
                    ),
                )
            })
    }

    /// Accept a proposal: merge `from` into `into` (reversible with
    /// `unmerge_entities`); the merge event records the rule.
    pub async fn accept_merge_proposal(
        &self,
        namespace: &str,
        from: EntityId,
        into: EntityId,
    ) -> Result<MergeEvent> {
        validate_namespace(namespace)?;
        let ns = self.namespace_or_not_found(namespace).await?;
        let p = self.proposal(ns, namespace, from, into).await?;
        Box::pin(self.merge_because(
            namespace,
            from,
            into,
            Some(json!({"rule": p.rule, "by": "accepted"})),
        ))
        .await
    }

    /// Reject a proposal: the pair becomes cannot-link, never proposed again and
    /// never joined by the resolver.
    pub async fn reject_merge_proposal(
        &self,
        namespace: &str,
        from: EntityId,
        into: EntityId,
    ) -> Result<MergeProposal> {
        validate_namespace(namespace)?;
        let ns = self.namespace_or_not_found(namespace).await?;
        let p = self.proposal(ns, namespace, from, into).await?;
        // A proposal never pairs an entity with itself; the pair is stored ordered,
        // as every cannot-link pair is.
        let (a, b) = if from < into {
            (from, into)
        } else {
            (into, from)
        };
        self.store
            .add_exclusion(ns, a, b, &format!("rejected:{}", p.rule))
            .await?;
        Ok(p)
    }

    /// The idle pass: in each namespace whose contents changed since the last pass
    /// of this process, merge the automatic proposals (at most
    /// [`AUTO_MERGES_PER_PASS`]). Returns the merges made.
    pub(super) async fn apply_merge_proposals(&self) -> Result<usize> {
        if self.config.facts.auto_merge_max_mentions == 0 {
            return Ok(0);
        }
        let mut made = 0;
        for n in self.store.namespaces().await? {
            let stamp = self.store.change_stamp(n.id).await?;
            let seen = self
                .merge_pass_stamps
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .get(&n.id)
                .copied();
            if seen == Some(stamp) {
                continue;
            }
            for p in Box::pin(self.proposals_in(n.id)).await? {
                if made >= AUTO_MERGES_PER_PASS {
                    return Ok(made);
                }
                if !p.automatic {
                    continue;
                }
                // A merge another worker made first, or an entity gone since the
                // pass read it, is refused: the next pass sees the new state.
                match Box::pin(self.merge_because(
                    &n.slug,
                    p.from,
                    p.into,
                    Some(json!({"rule": p.rule, "by": "automatic"})),
                ))
                .await
                {
                    Ok(_) => made += 1,
                    Err(e) if matches!(e.code(), ErrorCode::InvalidInput | ErrorCode::NotFound) => {
                        tracing::debug!(error = %e, "an automatic merge was refused");
                    }
                    Err(e) => return Err(e),
                }
            }
            let stamp = self.store.change_stamp(n.id).await?;
            self.merge_pass_stamps
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(n.id, stamp);
        }
        Ok(made)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_forms_are_named_by_their_rule() {
        assert_eq!(
            abbreviation_rule("marta", "marta ilves"),
            Some(rule::FIRST_WORD)
        );
        assert_eq!(
            abbreviation_rule("ilves", "marta ilves"),
            Some(rule::LAST_WORD)
        );
        assert_eq!(abbreviation_rule("mel", "melanie"), Some(rule::PREFIX));
        assert_eq!(abbreviation_rule("me", "melanie"), None);
        assert_eq!(abbreviation_rule("jon", "john"), None);
        assert_eq!(abbreviation_rule("marta", "marta"), None);
    }
}
