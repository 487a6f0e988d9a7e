//! Entities (E3): untyped real-world referents (D95, D96), the records the
//! resolution cascade reads and writes, and the pure pieces of resolution: name
//! normalization, trigram and phonetic keys, and the D103 candidate ordering.

pub mod normalize;
pub mod t4;

use crate::ids::{ClaimId, DecisionId, DocumentId, EntityId, MergeId, NamespaceId};
use crate::time::Timestamp;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// The resolver generation stamped on every decision made with a chat model (T4).
pub const RESOLVER_VERSION: &str = "resolver-2026.11a";
/// The labelled deterministic resolver used without a chat model: it accepts the
/// first exact-lemma candidate in D103 order, which departs from D95's rule that an
/// exact name never decides alone.
pub const OFFLINE_RESOLVER_VERSION: &str = "resolver-offline-exact-2026.11a";

/// An entity as stored.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EntityRecord {
    /// Its id.
    pub entity_id: EntityId,
    /// The namespace.
    pub namespace_id: NamespaceId,
    /// The canonical name (the first name it was minted with).
    pub canonical_name: String,
    /// The canonical name's [`normalize::lemma`].
    pub lemma: String,
    /// Distinct source surfaces and canonical names it was referred to by, oldest first.
    pub aliases: Vec<String>,
    /// Set while the entity is merged into another (a redirect).
    pub merged_into: Option<EntityId>,
    /// Summary prose from salient observations and relations (D96); `None` until built.
    pub profile_summary: Option<String>,
    /// The embedding key of the profile text (content-keyed vector store).
    pub profile_key: Option<String>,
    /// When it was minted.
    pub created_at: Timestamp,
    /// How many mentions resolved to it.
    pub mention_count: u64,
}

/// A name an entity is known by, with its blocking keys (computed in core so
/// every store blocks identically).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NewAlias {
    /// The surface as written.
    pub surface: String,
    /// Its lemma (T0 key).
    pub lemma: String,
    /// Padded trigrams of the lemma (T1 keys).
    pub trigrams: Vec<String>,
    /// Daitch–Mokotoff codes (T2 keys).
    pub phonetic: Vec<String>,
}

impl NewAlias {
    /// The alias of `surface` with its keys.
    pub fn of(surface: &str) -> Self {
        let lemma = normalize::lemma(surface);
        let mut trigrams = normalize::trigrams(&lemma);
        trigrams.sort();
        trigrams.dedup();
        NewAlias {
            surface: surface.trim().to_string(),
            trigrams,
            phonetic: normalize::daitch_mokotoff(surface),
            lemma,
        }
    }
}

/// Which blocking tier surfaced a candidate.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum BlockingTier {
    /// Exact lemma.
    T0,
    /// Trigram similarity.
    T1,
    /// Daitch–Mokotoff code.
    T2,
}

impl BlockingTier {
    /// The name a store keeps this tier's keys under (`entity_keys.kind`).
    pub fn key_kind(self) -> &'static str {
        match self {
            BlockingTier::T0 => "lemma",
            BlockingTier::T1 => "tri",
            BlockingTier::T2 => "dm",
        }
    }

    /// The tier of a stored key kind ([`BlockingTier::key_kind`]).
    pub fn of_key_kind(kind: &str) -> crate::Result<BlockingTier> {
        match kind {
            "lemma" => Ok(BlockingTier::T0),
            "tri" => Ok(BlockingTier::T1),
            "dm" => Ok(BlockingTier::T2),
            other => Err(crate::Error::store(format!(
                "unknown blocking key kind `{other}`"
            ))),
        }
    }
}

/// A blocking key carried by more alias rows than this is too common to block on:
/// it names no candidate in particular and would make blocking walk every entity.
pub const MAX_KEY_ROWS: u64 = 200;
/// When every key of a name is that common, block on this many of the rarest.
pub const KEEP_COMMON_KEYS: usize = 2;

/// The keys worth blocking on, given how many alias rows carry each (`rows`): those
/// carried by at most [`MAX_KEY_ROWS`]; when every key is that common, the rarest
/// [`KEEP_COMMON_KEYS`] (ties by key). Returns the kept keys and whether any was
/// dropped (the block is then incomplete). Every store applies this one rule.
pub fn selective_keys(keys: Vec<String>, rows: impl Fn(&str) -> u64) -> (Vec<String>, bool) {
    let kept: Vec<String> = keys
        .iter()
        .filter(|k| rows(k) <= MAX_KEY_ROWS)
        .cloned()
        .collect();
    if kept.len() == keys.len() {
        return (keys, false);
    }
    if !kept.is_empty() {
        return (kept, true);
    }
    let mut rarest = keys;
    rarest.sort_by(|a, b| rows(a).cmp(&rows(b)).then_with(|| a.cmp(b)));
    rarest.truncate(KEEP_COMMON_KEYS);
    (rarest, true)
}

/// What the resolver asks the store for: aliases matching any key.
#[derive(Clone, Debug, PartialEq)]
pub struct BlockingQuery {
    /// The namespace.
    pub namespace_id: NamespaceId,
    /// The incoming name's lemma (T0).
    pub lemma: String,
    /// Its trigrams (T1).
    pub trigrams: Vec<String>,
    /// Its phonetic codes (T2).
    pub phonetic: Vec<String>,
    /// At most this many distinct entities per tier (the store reports truncation).
    pub limit: usize,
}

/// One alias that matched a blocking key.
#[derive(Clone, Debug, PartialEq)]
pub struct AliasHit {
    /// The entity the alias belongs to (possibly merged: the resolver follows redirects).
    pub entity_id: EntityId,
    /// The alias lemma.
    pub alias_lemma: String,
    /// The tier that found it.
    pub via: BlockingTier,
}

/// The blocking result.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct BlockingResult {
    /// Hits, any order.
    pub hits: Vec<AliasHit>,
    /// Whether some tier hit its limit (candidate completeness is then `false`).
    pub truncated: bool,
}

/// A blocking key: its tier (T0 a lemma, T1 a trigram, T2 a phonetic code) and value.
pub type BlockingKey = (BlockingTier, String);

/// The keys a query blocks on, tier by tier: sorted, deduplicated, non-empty.
pub fn query_keys(q: &BlockingQuery) -> [(BlockingTier, Vec<String>); 3] {
    let distinct = |keys: &[String]| -> Vec<String> {
        keys.iter()
            .filter(|k| !k.is_empty())
            .cloned()
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect()
    };
    [
        (BlockingTier::T0, distinct(std::slice::from_ref(&q.lemma))),
        (BlockingTier::T1, distinct(&q.trigrams)),
        (BlockingTier::T2, distinct(&q.phonetic)),
    ]
}

/// The keys an alias is stored under.
pub fn alias_keys(a: &NewAlias) -> Vec<BlockingKey> {
    std::iter::once((BlockingTier::T0, a.lemma.clone()))
        .chain(a.trigrams.iter().map(|t| (BlockingTier::T1, t.clone())))
        .chain(a.phonetic.iter().map(|p| (BlockingTier::T2, p.clone())))
        .filter(|(_, k)| !k.is_empty())
        .collect()
}

/// What blocking reads of the stored keys: how many alias rows carry each key, and
/// the rows (entity, alias lemma) of the keys read. A block is computed from it by
/// one rule ([`KeyData::block`]) whichever store holds the keys.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct KeyData {
    /// Alias rows carrying each key (absent: none).
    pub counts: HashMap<BlockingKey, u64>,
    /// The alias rows of each key read (absent: not read).
    pub rows: HashMap<BlockingKey, Vec<(EntityId, String)>>,
    /// Rows added by [`KeyData::add`] to keys not read yet, merged in when they are.
    added: HashMap<BlockingKey, Vec<(EntityId, String)>>,
}

impl KeyData {
    /// The key count (0 when absent).
    pub fn count(&self, key: &BlockingKey) -> u64 {
        self.counts.get(key).copied().unwrap_or(0)
    }

    /// Whether a store must read a key's rows with its count: an exact lemma always,
    /// another key when at most [`MAX_KEY_ROWS`] rows carry it.
    pub fn rows_read_with_counts(key: &BlockingKey, count: u64) -> bool {
        key.0 == BlockingTier::T0 || count <= MAX_KEY_ROWS
    }

    /// Each tier's kept keys ([`selective_keys`]; every exact lemma is kept) and
    /// whether some were dropped.
    fn kept(&self, q: &BlockingQuery) -> Vec<(BlockingTier, Vec<String>, bool)> {
        query_keys(q)
            .into_iter()
            .filter(|(_, keys)| !keys.is_empty())
            .map(|(tier, keys)| {
                if tier == BlockingTier::T0 {
                    (tier, keys, false)
                } else {
                    let (kept, pruned) =
                        selective_keys(keys, |k| self.count(&(tier, k.to_string())));
                    (tier, kept, pruned)
                }
            })
            .collect()
    }

    /// The kept keys of `q` whose rows are not read yet (the store reads them with
    /// [`crate::store::MemoryStore::entity_key_rows`], then [`KeyData::load`]).
    pub fn unread(&self, q: &BlockingQuery) -> Vec<BlockingKey> {
        self.kept(q)
            .into_iter()
            .flat_map(|(tier, keys, _)| keys.into_iter().map(move |k| (tier, k)))
            .filter(|k| !self.rows.contains_key(k))
            .collect()
    }

    /// The stored rows of a key, with the rows [`KeyData::add`] gave it meanwhile.
    pub fn load(&mut self, key: BlockingKey, mut rows: Vec<(EntityId, String)>) {
        rows.extend(self.added.remove(&key).unwrap_or_default());
        self.rows.insert(key, rows);
    }

    /// A new alias row (entity, alias lemma) under `key`: counted, and listed where
    /// the key's rows are read. The caller adds only rows the store does not hold.
    pub fn add(&mut self, key: BlockingKey, entity: EntityId, alias_lemma: &str) {
        *self.counts.entry(key.clone()).or_default() += 1;
        let row = (entity, alias_lemma.to_string());
        match self.rows.get_mut(&key) {
            Some(rows) => rows.push(row),
            None => self.added.entry(key).or_default().push(row),
        }
    }

    /// The block of `q`, tier by tier: the kept keys' rows, the `limit` entities
    /// sharing the most distinct kept keys (ties by id) with the alias lemmas through
    /// which they share them, and whether a tier had more entities or dropped keys.
    /// Kept keys whose rows are not read count as carrying none.
    pub fn block(&self, q: &BlockingQuery) -> BlockingResult {
        let mut result = BlockingResult::default();
        for (via, kept, pruned) in self.kept(q) {
            // entity -> (distinct keys shared, alias lemmas sharing them)
            let mut by_entity: HashMap<EntityId, (usize, std::collections::BTreeSet<&str>)> =
                HashMap::new();
            for key in &kept {
                let mut seen: std::collections::HashSet<EntityId> = Default::default();
                for (entity, alias) in self.rows.get(&(via, key.clone())).into_iter().flatten() {
                    let entry = by_entity.entry(*entity).or_default();
                    if seen.insert(*entity) {
                        entry.0 += 1;
                    }
                    entry.1.insert(alias.as_str());
                }
            }
            let mut ranked: Vec<(EntityId, usize)> =
                by_entity.iter().map(|(e, (n, _))| (*e, *n)).collect();
            ranked.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
            let truncated = ranked.len() > q.limit;
            ranked.truncate(q.limit);
            let mut hits: Vec<(EntityId, &str)> = ranked
                .iter()
                .flat_map(|(entity, _)| by_entity[entity].1.iter().map(move |a| (*entity, *a)))
                .collect();
            hits.sort_unstable();
            result
                .hits
                .extend(hits.into_iter().map(|(entity_id, alias)| AliasHit {
                    entity_id,
                    alias_lemma: alias.to_string(),
                    via,
                }));
            result.truncated |= truncated || pruned;
        }
        result
    }
}

/// A candidate as the resolver saw it, in D103 order (audit row of a decision).
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CandidateAudit {
    /// The candidate.
    pub entity_id: EntityId,
    /// Its canonical name.
    pub canonical_name: String,
    /// The best blocking score (exact lemma 1.0, else trigram similarity, phonetic 0.5).
    pub score: f32,
    /// The tiers that surfaced it.
    pub via: Vec<BlockingTier>,
    /// Its T3 similarity, when computed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub t3_score: Option<f32>,
}

/// One append-only resolution decision (D21, D99, D100).
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ResolutionDecision {
    /// Its id.
    pub decision_id: DecisionId,
    /// The namespace.
    pub namespace_id: NamespaceId,
    /// The claim whose reference was resolved.
    pub claim_id: ClaimId,
    /// The claim's lineage (D102 bindings are per document).
    pub document_id: DocumentId,
    /// The reference's position in the claim's normalization.
    pub ordinal: u32,
    /// The canonical name the normalizer emitted.
    pub name: String,
    /// Its lemma.
    pub lemma: String,
    /// `mint` (no candidate), `T0` (document-local replay, D102), `T3`, `T4`, or
    /// `offline_exact` (the labelled offline resolver).
    pub tier: String,
    /// Candidates in the order they were considered.
    pub candidates: Vec<CandidateAudit>,
    /// Whether blocking was not truncated.
    pub complete: bool,
    /// The best T3 score.
    pub t3_score: Option<f32>,
    /// Why T3 accepted or not: `accepted`, `below_threshold`, `multiple_candidates`,
    /// `profile_missing`, `no_candidates`, `not_run`.
    pub t3_outcome: String,
    /// `match` or `new`.
    pub verdict: String,
    /// The entity the reference resolved to.
    pub entity_id: EntityId,
    /// Why.
    pub rationale: String,
    /// The model that decided (T4), if any.
    pub model: Option<String>,
    /// The resolver generation.
    pub resolver_version: String,
    /// Extra features (D102 coordinates, offline-policy disclosure).
    pub features: serde_json::Value,
    /// When.
    pub created_at: Timestamp,
}

/// A mention: where a claim names an entity (a naming transcript, D96).
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Mention {
    /// The claim.
    pub claim_id: ClaimId,
    /// Byte offset of the surface in the claim text (`None` when the name is not
    /// written in the claim verbatim).
    pub start: Option<usize>,
    /// Byte offset one past the end.
    pub end: Option<usize>,
    /// The surface as the claim writes it (or the canonical name).
    pub surface: String,
}

/// Everything one resolution writes, atomically.
#[derive(Clone, Debug, PartialEq)]
pub struct ResolutionCommit {
    /// The decision (its `entity_id` is the resolved entity).
    pub decision: ResolutionDecision,
    /// A newly minted entity (`canonical_name`, `lemma`), when the verdict is `new`.
    pub mint: Option<(String, String)>,
    /// Aliases to add to the entity (idempotent on surface).
    pub aliases: Vec<NewAlias>,
    /// The mention.
    pub mention: Mention,
    /// Cannot-link exclusions between the resolved entity and these candidates.
    pub exclusions: Vec<EntityId>,
    /// The D102 binding row to upsert: (document, lemma, entity, anchor decision).
    pub binding: Option<DocumentBinding>,
}

/// A D102 document-local binding row: within one lineage, a lemma was resolved to
/// an entity. Replay needs exactly one row for (document, lemma), anchored by a T4
/// match; a second entity for the same key is the conflict that disables replay.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DocumentBinding {
    /// The lineage.
    pub document_id: DocumentId,
    /// The canonical lemma.
    pub lemma: String,
    /// The entity.
    pub entity_id: EntityId,
    /// The T4 match decision that anchors replay, if any.
    pub anchor: Option<DecisionId>,
}

/// A merge or unmerge event (D21): append-only, with the membership snapshot.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MergeEvent {
    /// Its id.
    pub merge_id: MergeId,
    /// The namespace.
    pub namespace_id: NamespaceId,
    /// The entity redirected.
    pub from: EntityId,
    /// The entity it was redirected into.
    pub into: EntityId,
    /// Membership before the merge: every entity id whose redirect chain ended at
    /// `from` and at `into` (themselves included).
    pub snapshot: serde_json::Value,
    /// When.
    pub created_at: Timestamp,
    /// When it was undone, if it was.
    pub reverted_at: Option<Timestamp>,
}

/// Listing filter for entities.
#[derive(Clone, Debug, PartialEq)]
pub struct EntityFilter {
    /// The namespace.
    pub namespace_id: NamespaceId,
    /// Include entities merged into others.
    pub include_merged: bool,
    /// Only entities whose lemma or an alias lemma equals this.
    pub lemma: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(k: &[&str]) -> Vec<String> {
        k.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn selective_keys_drop_common_keys_and_keep_the_rarest_when_all_are_common() {
        let rows = |k: &str| match k {
            "per" => 900,
            "ers" => 400,
            "zyx" => 3,
            _ => 0,
        };
        assert_eq!(
            selective_keys(keys(&["per", "zyx", "new"]), rows),
            (keys(&["zyx", "new"]), true)
        );
        assert_eq!(
            selective_keys(keys(&["zyx", "new"]), rows),
            (keys(&["zyx", "new"]), false)
        );
        assert_eq!(
            selective_keys(keys(&["per", "ers", "son"]), |k| rows(k) + 300),
            (keys(&["son", "ers"]), true)
        );
    }
}
