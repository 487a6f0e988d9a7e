//! Entities (E3): blocking, resolution decisions, aliases, bindings, profiles, merge and unmerge.
//!
//! Ported statement by statement from the SQLite store's `entities.rs`. Where SQLite
//! relies on its single writer, identity writes here take a transaction-scoped
//! advisory lock on the normalized lemma (`lemma:<ns>:<lemma>`, D99/D103) and merge
//! writes lock the rows they check (`FOR UPDATE`).

use crate::rows::{get, id};
use crate::{PgStore, column, db_err, json_text, parse_id};
use rememberstack_core::entities::{
    AliasHit, BlockingKey, BlockingQuery, BlockingResult, BlockingTier, DocumentBinding,
    EntityFilter, EntityRecord, KeyData, MAX_KEY_ROWS, Mention, MergeEvent, NewAlias,
    ResolutionCommit, ResolutionDecision, alias_keys,
};
use rememberstack_core::ids::{ClaimId, DecisionId, DocumentId, EntityId, MergeId, NamespaceId};
use rememberstack_core::time::Timestamp;
use rememberstack_core::{Error, Result};
use rememberstack_sql::entities::DECISION_COLUMNS;
use rememberstack_sql::rows::{binding_row, entity_row, merge_row, resolution_decision_row};
use sqlx::AssertSqlSafe;
use sqlx::postgres::PgRow;
use sqlx::types::Json;
use std::collections::{BTreeMap, BTreeSet, HashMap};

const ENTITY_SELECT: &str = "
    SELECT e.id, e.namespace_id, e.canonical_name, e.lemma, e.merged_into, e.profile_summary,
           e.profile_key, e.created_at,
           (SELECT COUNT(*) FROM entity_mentions m
             WHERE m.namespace_id = e.namespace_id AND m.entity_id = e.id) AS mention_count
    FROM entities e";

/// The blocking key of an `entity_keys` row (its `kind` and `key`).
fn key_col(r: &PgRow) -> Result<BlockingKey> {
    Ok((
        BlockingTier::of_key_kind(&get::<String>(r, "kind")?)?,
        get(r, "key")?,
    ))
}

/// Sorted, deduplicated, non-empty keys.
fn distinct_keys(keys: &[String]) -> Vec<String> {
    keys.iter()
        .filter(|k| !k.is_empty())
        .cloned()
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect()
}

/// Insert an alias's blocking keys (`(kind, key)` pairs; empty keys skipped) in one
/// statement; the `entity_key_counts` trigger counts the rows actually inserted.
impl PgStore {
    /// One blocking tier: the entities sharing most keys of `kind` with `keys` (ties
    /// by id, bytewise), at most `limit`, and whether there were more; then their
    /// matching (entity, alias lemma) pairs.
    async fn block_tier(
        &self,
        ns: &str,
        kind: &str,
        keys: &[String],
        limit: usize,
        via: BlockingTier,
    ) -> Result<(Vec<AliasHit>, bool)> {
        let keys = distinct_keys(keys);
        if keys.is_empty() {
            return Ok((vec![], false));
        }
        let (keys, pruned) = if kind == "lemma" {
            (keys, false)
        } else {
            self.selective_keys(ns, kind, keys).await?
        };
        let rows = sqlx::query(
            "SELECT entity_id, COUNT(DISTINCT key) AS shared FROM entity_keys
             WHERE namespace_id = $1 AND kind = $2 AND key = ANY($3)
             GROUP BY entity_id ORDER BY shared DESC, entity_id COLLATE \"C\" LIMIT $4",
        )
        .bind(ns)
        .bind(kind)
        .bind(&keys)
        .bind(i64::try_from(limit.saturating_add(1)).unwrap_or(i64::MAX))
        .fetch_all(self.pool())
        .await
        .map_err(db_err)?;
        let mut entities: Vec<String> = rows
            .iter()
            .map(|r| get(r, "entity_id"))
            .collect::<Result<_>>()?;
        let truncated = entities.len() > limit || pruned;
        entities.truncate(limit);
        if entities.is_empty() {
            return Ok((vec![], truncated));
        }
        let hits = sqlx::query(
            "SELECT DISTINCT entity_id COLLATE \"C\" AS entity_id, alias_lemma COLLATE \"C\" AS alias_lemma
             FROM entity_keys
             WHERE namespace_id = $1 AND kind = $2 AND key = ANY($3) AND entity_id = ANY($4)
             ORDER BY 1, 2",
        )
        .bind(ns)
        .bind(kind)
        .bind(&keys)
        .bind(&entities)
        .fetch_all(self.pool())
        .await
        .map_err(db_err)?
        .iter()
        .map(|r| {
            Ok(AliasHit {
                entity_id: id(r, "entity_id")?,
                alias_lemma: get(r, "alias_lemma")?,
                via,
            })
        })
        .collect::<Result<Vec<_>>>()?;
        Ok((hits, truncated))
    }

    /// The keys worth blocking on, by the core rule
    /// ([`rememberstack_core::entities::selective_keys`]) over the stored key counts.
    async fn selective_keys(
        &self,
        ns: &str,
        kind: &str,
        keys: Vec<String>,
    ) -> Result<(Vec<String>, bool)> {
        let counts: HashMap<String, u64> = sqlx::query(
            "SELECT key, n FROM entity_key_counts
             WHERE namespace_id = $1 AND kind = $2 AND key = ANY($3)",
        )
        .bind(ns)
        .bind(kind)
        .bind(&keys)
        .fetch_all(self.pool())
        .await
        .map_err(db_err)?
        .iter()
        .map(|r| Ok((get::<String>(r, "key")?, get::<i64>(r, "n")?.max(0) as u64)))
        .collect::<Result<_>>()?;
        Ok(rememberstack_core::entities::selective_keys(keys, |k| {
            counts.get(k).copied().unwrap_or(0)
        }))
    }

    pub(crate) async fn block_entities_impl(&self, q: &BlockingQuery) -> Result<BlockingResult> {
        let ns = q.namespace_id.to_string();
        let mut result = BlockingResult::default();
        // The three tiers read independently, on separate pool connections.
        let tiers = tokio::try_join!(
            self.block_tier(
                &ns,
                "lemma",
                std::slice::from_ref(&q.lemma),
                q.limit,
                BlockingTier::T0
            ),
            self.block_tier(&ns, "tri", &q.trigrams, q.limit, BlockingTier::T1),
            self.block_tier(&ns, "dm", &q.phonetic, q.limit, BlockingTier::T2),
        )?;
        for (hits, truncated) in [tiers.0, tiers.1, tiers.2] {
            result.hits.extend(hits);
            result.truncated |= truncated;
        }
        Ok(result)
    }

    async fn attach_aliases(&self, ns: &str, entities: &mut [EntityRecord]) -> Result<()> {
        if entities.is_empty() {
            return Ok(());
        }
        let ids: Vec<EntityId> = entities.iter().map(|e| e.entity_id).collect();
        let rows = sqlx::query(crate::shared(
            &rememberstack_sql::entities::ALIASES_OF_ENTITIES,
        ))
        .bind(ns)
        .bind(crate::any_list(&ids))
        .fetch_all(self.pool())
        .await
        .map_err(db_err)?;
        let mut by_entity: HashMap<EntityId, Vec<String>> = HashMap::new();
        for r in rows {
            by_entity
                .entry(id(&r, "entity_id")?)
                .or_default()
                .push(get(&r, "surface")?);
        }
        for e in entities.iter_mut() {
            e.aliases = by_entity.remove(&e.entity_id).unwrap_or_default();
        }
        Ok(())
    }

    pub(crate) async fn entities_impl(
        &self,
        ns: NamespaceId,
        ids: &[EntityId],
    ) -> Result<Vec<EntityRecord>> {
        if ids.is_empty() {
            return Ok(vec![]);
        }
        let ns_s = ns.to_string();
        let rows = sqlx::query(AssertSqlSafe(format!(
            "{ENTITY_SELECT} WHERE e.namespace_id = $1 AND e.id = ANY($2)"
        )))
        .bind(&ns_s)
        .bind(crate::any_list(ids))
        .fetch_all(self.pool())
        .await
        .map_err(db_err)?;
        let mut by_id: HashMap<EntityId, EntityRecord> = HashMap::new();
        for r in &rows {
            let e = entity_row(r)?;
            by_id.insert(e.entity_id, e);
        }
        let mut out: Vec<EntityRecord> = ids.iter().filter_map(|id| by_id.remove(id)).collect();
        self.attach_aliases(&ns_s, &mut out).await?;
        Ok(out)
    }

    pub(crate) async fn list_entities_impl(
        &self,
        filter: &EntityFilter,
        limit: u32,
    ) -> Result<Vec<EntityRecord>> {
        let ns_s = filter.namespace_id.to_string();
        let rows = sqlx::query(AssertSqlSafe(format!(
            "{ENTITY_SELECT} WHERE e.namespace_id = $1 AND ($2 OR e.merged_into IS NULL)
               AND ($3::text IS NULL OR e.lemma = $3 OR EXISTS (
                   SELECT 1 FROM entity_aliases a WHERE a.namespace_id = e.namespace_id
                      AND a.entity_id = e.id AND a.lemma = $3))
             ORDER BY e.created_at, e.seq LIMIT $4"
        )))
        .bind(&ns_s)
        .bind(filter.include_merged)
        .bind(filter.lemma.as_deref())
        .bind(i64::from(limit))
        .fetch_all(self.pool())
        .await
        .map_err(db_err)?;
        let mut out = rows.iter().map(entity_row).collect::<Result<Vec<_>>>()?;
        self.attach_aliases(&ns_s, &mut out).await?;
        Ok(out)
    }

    /// Every key's stored row count and the alias rows of the keys worth blocking
    /// on (an exact lemma always; another key when at most [`MAX_KEY_ROWS`] rows
    /// carry it), in one statement.
    pub(crate) async fn entity_key_data_impl(
        &self,
        ns: NamespaceId,
        keys: &[BlockingKey],
    ) -> Result<KeyData> {
        let wanted: BTreeSet<&BlockingKey> = keys.iter().collect();
        let mut data = KeyData::default();
        if wanted.is_empty() {
            return Ok(data);
        }
        let kinds: Vec<&str> = wanted.iter().map(|(t, _)| t.key_kind()).collect();
        let texts: Vec<&str> = wanted.iter().map(|(_, k)| k.as_str()).collect();
        let rows = sqlx::query(
            "WITH wanted AS (SELECT * FROM unnest($2::text[], $3::text[]) AS w(kind, key)),
             counts AS (
                 SELECT w.kind, w.key, COALESCE(c.n, 0)::bigint AS n FROM wanted w
                 LEFT JOIN entity_key_counts c
                   ON c.namespace_id = $1 AND c.kind = w.kind AND c.key = w.key)
             SELECT kind, key, n, NULL::text AS entity_id, NULL::text AS alias_lemma FROM counts
             UNION ALL
             SELECT k.kind, k.key, NULL, k.entity_id, k.alias_lemma FROM counts c
             JOIN entity_keys k ON k.namespace_id = $1 AND k.kind = c.kind AND k.key = c.key
             WHERE c.kind = 'lemma' OR c.n <= $4",
        )
        .bind(ns.to_string())
        .bind(&kinds)
        .bind(&texts)
        .bind(MAX_KEY_ROWS as i64)
        .fetch_all(self.pool())
        .await
        .map_err(db_err)?;
        let mut read: HashMap<BlockingKey, Vec<(EntityId, String)>> = HashMap::new();
        for r in &rows {
            let key = key_col(r)?;
            match get::<Option<String>>(r, "entity_id")? {
                None => {
                    data.counts.insert(key, get::<i64>(r, "n")?.max(0) as u64);
                }
                Some(entity) => read
                    .entry(key)
                    .or_default()
                    .push((parse_id(&entity)?, get(r, "alias_lemma")?)),
            }
        }
        for key in wanted {
            let n = data.count(key);
            if KeyData::rows_read_with_counts(key, n) {
                data.load(key.clone(), read.remove(key).unwrap_or_default());
            }
        }
        Ok(data)
    }

    /// The alias rows of these keys, however many carry them, in one statement.
    pub(crate) async fn entity_key_rows_impl(
        &self,
        ns: NamespaceId,
        keys: &[BlockingKey],
    ) -> Result<Vec<(BlockingKey, Vec<(EntityId, String)>)>> {
        let kinds: Vec<&str> = keys.iter().map(|(t, _)| t.key_kind()).collect();
        let texts: Vec<&str> = keys.iter().map(|(_, k)| k.as_str()).collect();
        let rows = sqlx::query(
            "SELECT k.kind, k.key, k.entity_id, k.alias_lemma
               FROM (SELECT DISTINCT kind, key FROM unnest($2::text[], $3::text[]) AS w(kind, key)) w
               JOIN entity_keys k ON k.namespace_id = $1 AND k.kind = w.kind AND k.key = w.key",
        )
        .bind(ns.to_string())
        .bind(&kinds)
        .bind(&texts)
        .fetch_all(self.pool())
        .await
        .map_err(db_err)?;
        let mut read: HashMap<BlockingKey, Vec<(EntityId, String)>> = HashMap::new();
        for r in &rows {
            let key = key_col(r)?;
            read.entry(key)
                .or_default()
                .push((id(r, "entity_id")?, get(r, "alias_lemma")?));
        }
        Ok(keys
            .iter()
            .map(|k| (k.clone(), read.get(k).cloned().unwrap_or_default()))
            .collect())
    }

    /// The decisions already committed for any of these (claim, ordinal)
    /// references under `resolver_version`, in one statement.
    pub(crate) async fn resolutions_for_many_impl(
        &self,
        ns: NamespaceId,
        references: &[(ClaimId, u32)],
        resolver_version: &str,
    ) -> Result<Vec<ResolutionDecision>> {
        // No stored ordinal is out of the column's range.
        let (claims, ordinals): (Vec<String>, Vec<i32>) = references
            .iter()
            .filter_map(|(c, o)| Some((c.to_string(), i32::try_from(*o).ok()?)))
            .unzip();
        if claims.is_empty() {
            return Ok(vec![]);
        }
        sqlx::query(AssertSqlSafe(format!(
            "SELECT {DECISION_COLUMNS} FROM resolution_decisions
              WHERE namespace_id = $1 AND resolver_version = $4
                AND (claim_id, ordinal) IN (SELECT * FROM unnest($2::text[], $3::int[]))
              ORDER BY seq"
        )))
        .bind(ns.to_string())
        .bind(&claims)
        .bind(&ordinals)
        .bind(resolver_version)
        .fetch_all(self.pool())
        .await
        .map_err(db_err)?
        .iter()
        .map(resolution_decision_row)
        .collect()
    }

    /// The binding rows of several (document, lemma) pairs: for each pair in the
    /// order asked, its rows in insertion order, in one statement.
    pub(crate) async fn document_bindings_many_impl(
        &self,
        ns: NamespaceId,
        pairs: &[(DocumentId, String)],
    ) -> Result<Vec<DocumentBinding>> {
        if pairs.is_empty() {
            return Ok(vec![]);
        }
        let docs: Vec<String> = pairs.iter().map(|(d, _)| d.to_string()).collect();
        let lemmas: Vec<&str> = pairs.iter().map(|(_, l)| l.as_str()).collect();
        let rows = sqlx::query(
            "SELECT b.document_id, b.lemma, b.entity_id, b.anchor_decision_id
               FROM unnest($2::text[], $3::text[]) WITH ORDINALITY AS w(doc, lemma, i)
               JOIN document_entity_bindings b
                 ON b.namespace_id = $1 AND b.document_id = w.doc AND b.lemma = w.lemma
              ORDER BY w.i, b.seq",
        )
        .bind(ns.to_string())
        .bind(&docs)
        .bind(&lemmas)
        .fetch_all(self.pool())
        .await
        .map_err(db_err)?;
        rows.iter().map(binding_row).collect()
    }

    pub(crate) async fn resolution_for_impl(
        &self,
        ns: NamespaceId,
        claim: ClaimId,
        ordinal: u32,
        resolver_version: &str,
    ) -> Result<Option<ResolutionDecision>> {
        // No stored ordinal is out of the column's range.
        let Ok(ordinal) = i32::try_from(ordinal) else {
            return Ok(None);
        };
        let row = sqlx::query(crate::shared(
            &rememberstack_sql::entities::DECISION_OF_MENTION,
        ))
        .bind(ns.to_string())
        .bind(claim.to_string())
        .bind(ordinal)
        .bind(resolver_version)
        .fetch_optional(self.pool())
        .await
        .map_err(db_err)?;
        row.map(|r| resolution_decision_row(&r)).transpose()
    }

    pub(crate) async fn commit_resolution_impl(
        &self,
        commit: ResolutionCommit,
        now: Timestamp,
    ) -> Result<EntityId> {
        let mut tx = self.pool().begin().await.map_err(db_err)?;
        let entity = resolve_many(&mut tx, &[(&commit, now)]).await?[0];
        tx.commit().await.map_err(db_err)?;
        Ok(entity)
    }

    /// Several resolutions of one namespace in order, in one transaction, each as
    /// [`Self::commit_resolution_impl`] commits it at its decision's time. The engine
    /// holds the batch's lemma locks across processes while it decides and commits,
    /// so the lemmas' transaction locks taken here, held to the one commit, are not
    /// waited for by another batch's.
    pub(crate) async fn commit_resolutions_impl(
        &self,
        commits: Vec<ResolutionCommit>,
    ) -> Result<Vec<EntityId>> {
        if commits.is_empty() {
            return Ok(vec![]);
        }
        let timed: Vec<(&ResolutionCommit, Timestamp)> =
            commits.iter().map(|c| (c, c.decision.created_at)).collect();
        let mut tx = self.pool().begin().await.map_err(db_err)?;
        let mut out = Vec::with_capacity(commits.len());
        // One namespace's run at a time (a batch is one namespace's in practice).
        for run in timed.chunk_by(|a, b| a.0.decision.namespace_id == b.0.decision.namespace_id) {
            out.extend(resolve_many(&mut tx, run).await?);
        }
        tx.commit().await.map_err(db_err)?;
        Ok(out)
    }
}

/// Write one namespace's resolutions in `tx`, in order, each at its time (see
/// `MemoryStore::commit_resolution`); returns the entity that stands for each.
///
/// It leaves what committing them one at a time would, with one statement per kind
/// of row: a decision already committed for its (claim, ordinal, resolver), before
/// or earlier in the batch, makes its commit a no-op that answers the decided
/// entity; an alias is added once and brings its blocking keys when it is new; a
/// document binding keeps the first anchor it is given. Rows go in in commit order,
/// so their `seq` order is the one-at-a-time order.
async fn resolve_many(
    tx: &mut sqlx::PgConnection,
    commits: &[(&ResolutionCommit, Timestamp)],
) -> Result<Vec<EntityId>> {
    let Some((first, _)) = commits.first() else {
        return Ok(vec![]);
    };
    let ns = first.decision.namespace_id.to_string();
    // Identity writes serialize on the normalized lemma (D99/D103): each decision's
    // lemma and, when minting, the new entity's, all taken in sorted order so two
    // writers never wait on each other crosswise.
    let mut locks: BTreeSet<String> = BTreeSet::new();
    for (c, _) in commits {
        locks.insert(format!("lemma:{ns}:{}", c.decision.lemma));
        if let Some((_, lemma)) = &c.mint {
            locks.insert(format!("lemma:{ns}:{lemma}"));
        }
    }
    crate::lock_keys(&mut *tx, locks).await?;
    // Decisions already committed for the batch's (claim, ordinal, resolver) keys:
    // a re-run after a crash writes nothing twice.
    let mut ordinals = Vec::with_capacity(commits.len());
    for (c, _) in commits {
        ordinals.push(ordinal_param(c.decision.ordinal)?);
    }
    let decided: Vec<(String, i32, String, String)> = sqlx::query_as(
        "SELECT d.claim_id, d.ordinal, d.resolver_version, d.entity_id
           FROM resolution_decisions d
           JOIN unnest($2::text[], $3::int4[], $4::text[]) AS k(claim_id, ordinal, resolver_version)
             ON d.claim_id = k.claim_id AND d.ordinal = k.ordinal
            AND d.resolver_version = k.resolver_version
          WHERE d.namespace_id = $1",
    )
    .bind(&ns)
    .bind(
        commits
            .iter()
            .map(|(c, _)| c.decision.claim_id.to_string())
            .collect::<Vec<_>>(),
    )
    .bind(&ordinals)
    .bind(
        commits
            .iter()
            .map(|(c, _)| c.decision.resolver_version.as_str())
            .collect::<Vec<_>>(),
    )
    .fetch_all(&mut *tx)
    .await
    .map_err(db_err)?;
    let mut decided: HashMap<(String, i32, String), EntityId> = decided
        .into_iter()
        .map(|(claim, ordinal, resolver, entity)| {
            Ok(((claim, ordinal, resolver), parse_id(&entity)?))
        })
        .collect::<Result<_>>()?;
    let mut out = Vec::with_capacity(commits.len());
    let mut writes: Vec<(&ResolutionCommit, Timestamp)> = Vec::new();
    for ((c, at), ordinal) in commits.iter().zip(&ordinals) {
        let d = &c.decision;
        let key = (d.claim_id.to_string(), *ordinal, d.resolver_version.clone());
        if let Some(entity) = decided.get(&key) {
            out.push(*entity);
            continue;
        }
        decided.insert(key, d.entity_id);
        out.push(d.entity_id);
        writes.push((c, *at));
    }
    if writes.is_empty() {
        return Ok(out);
    }
    let times = column(&writes, |(_, at)| *at);

    // New entities.
    let minted: Vec<(String, &str, &str, Timestamp)> = writes
        .iter()
        .filter_map(|(c, at)| {
            c.mint.as_ref().map(|(name, lemma)| {
                (
                    c.decision.entity_id.to_string(),
                    name.as_str(),
                    lemma.as_str(),
                    *at,
                )
            })
        })
        .collect();
    if !minted.is_empty() {
        sqlx::query(
            "INSERT INTO entities (namespace_id, id, canonical_name, lemma, created_at)
             SELECT $1, e.id, e.name, e.lemma, e.at
               FROM unnest($2::text[], $3::text[], $4::text[], $5::timestamptz[])
                    WITH ORDINALITY AS e(id, name, lemma, at, i)
              ORDER BY e.i
             ON CONFLICT (namespace_id, id) DO NOTHING",
        )
        .bind(&ns)
        .bind(minted.iter().map(|m| m.0.clone()).collect::<Vec<_>>())
        .bind(minted.iter().map(|m| m.1).collect::<Vec<_>>())
        .bind(minted.iter().map(|m| m.2).collect::<Vec<_>>())
        .bind(minted.iter().map(|m| m.3).collect::<Vec<_>>())
        .execute(&mut *tx)
        .await
        .map_err(db_err)?;
    }

    // Aliases, each (entity, surface) once; the new ones bring their blocking keys
    // (an alias's keys derive from its surface alone and were written with it).
    let mut seen: std::collections::HashSet<(String, &str)> = std::collections::HashSet::new();
    let mut aliases: Vec<(String, &NewAlias, Timestamp)> = Vec::new();
    for (c, at) in &writes {
        let entity = c.decision.entity_id.to_string();
        for a in &c.aliases {
            if seen.insert((entity.clone(), a.surface.as_str())) {
                aliases.push((entity.clone(), a, *at));
            }
        }
    }
    if !aliases.is_empty() {
        let added: Vec<(String, String)> = sqlx::query_as(
            "INSERT INTO entity_aliases (namespace_id, entity_id, surface, lemma, created_at)
             SELECT $1, a.entity, a.surface, a.lemma, a.at
               FROM unnest($2::text[], $3::text[], $4::text[], $5::timestamptz[])
                    WITH ORDINALITY AS a(entity, surface, lemma, at, i)
              ORDER BY a.i
             ON CONFLICT DO NOTHING
             RETURNING entity_id, surface",
        )
        .bind(&ns)
        .bind(aliases.iter().map(|a| a.0.clone()).collect::<Vec<_>>())
        .bind(
            aliases
                .iter()
                .map(|a| a.1.surface.as_str())
                .collect::<Vec<_>>(),
        )
        .bind(
            aliases
                .iter()
                .map(|a| a.1.lemma.as_str())
                .collect::<Vec<_>>(),
        )
        .bind(aliases.iter().map(|a| a.2).collect::<Vec<_>>())
        .fetch_all(&mut *tx)
        .await
        .map_err(db_err)?;
        let added: std::collections::HashSet<(String, String)> = added.into_iter().collect();
        let mut keys: BTreeSet<(String, String, String, String)> = BTreeSet::new();
        for (entity, alias, _) in &aliases {
            if !added.contains(&(entity.clone(), alias.surface.clone())) {
                continue;
            }
            for (tier, key) in alias_keys(alias) {
                keys.insert((
                    tier.key_kind().to_string(),
                    key,
                    entity.clone(),
                    alias.lemma.clone(),
                ));
            }
        }
        if !keys.is_empty() {
            let (mut kinds, mut values, mut entities, mut lemmas) =
                (vec![], vec![], vec![], vec![]);
            for (kind, key, entity, lemma) in keys {
                kinds.push(kind);
                values.push(key);
                entities.push(entity);
                lemmas.push(lemma);
            }
            sqlx::query(
                "INSERT INTO entity_keys (namespace_id, kind, key, entity_id, alias_lemma)
                 SELECT $1, k.kind, k.key, k.entity, k.lemma
                   FROM unnest($2::text[], $3::text[], $4::text[], $5::text[]) AS k(kind, key, entity, lemma)
                 ON CONFLICT DO NOTHING",
            )
            .bind(&ns)
            .bind(kinds)
            .bind(values)
            .bind(entities)
            .bind(lemmas)
            .execute(&mut *tx)
            .await
            .map_err(db_err)?;
        }
    }

    // The mentions and the decisions, in commit order.
    sqlx::query(
        "INSERT INTO entity_mentions (namespace_id, entity_id, claim_id, start_byte, end_byte,
             surface, decision_id, created_at)
         SELECT $1, m.entity, m.claim, m.start_byte, m.end_byte, m.surface, m.decision, m.at
           FROM unnest($2::text[], $3::text[], $4::int8[], $5::int8[], $6::text[], $7::text[],
                       $8::timestamptz[])
                WITH ORDINALITY AS m(entity, claim, start_byte, end_byte, surface, decision, at, i)
          ORDER BY m.i",
    )
    .bind(&ns)
    .bind(column(&writes, |(c, _)| c.decision.entity_id.to_string()))
    .bind(column(&writes, |(c, _)| c.mention.claim_id.to_string()))
    .bind(
        writes
            .iter()
            .map(|(c, _)| c.mention.start.map(|s| s as i64))
            .collect::<Vec<_>>(),
    )
    .bind(
        writes
            .iter()
            .map(|(c, _)| c.mention.end.map(|e| e as i64))
            .collect::<Vec<_>>(),
    )
    .bind(column(&writes, |(c, _)| c.mention.surface.as_str()))
    .bind(column(&writes, |(c, _)| c.decision.decision_id.to_string()))
    .bind(&times)
    .execute(&mut *tx)
    .await
    .map_err(db_err)?;
    let mut candidates = Vec::with_capacity(writes.len());
    let mut features = Vec::with_capacity(writes.len());
    let mut ordinals = Vec::with_capacity(writes.len());
    for (c, _) in &writes {
        candidates.push(json_text(&c.decision.candidates)?);
        features.push(json_text(&c.decision.features)?);
        ordinals.push(ordinal_param(c.decision.ordinal)?);
    }
    sqlx::query(
        "INSERT INTO resolution_decisions (namespace_id, id, claim_id, document_id, ordinal, name,
             lemma, tier, candidates_json, complete, t3_score, t3_outcome, verdict, entity_id,
             rationale, model, resolver_version, features_json, created_at)
         SELECT $1, d.id, d.claim, d.document, d.ordinal, d.name, d.lemma, d.tier,
                d.candidates::jsonb, d.complete, d.t3_score, d.t3_outcome, d.verdict, d.entity,
                d.rationale, d.model, d.resolver, d.features::jsonb, d.at
           FROM unnest($2::text[], $3::text[], $4::text[], $5::int4[], $6::text[], $7::text[],
                       $8::text[], $9::text[], $10::bool[], $11::float8[], $12::text[], $13::text[],
                       $14::text[], $15::text[], $16::text[], $17::text[], $18::text[],
                       $19::timestamptz[])
                WITH ORDINALITY AS d(id, claim, document, ordinal, name, lemma, tier, candidates,
                                     complete, t3_score, t3_outcome, verdict, entity, rationale,
                                     model, resolver, features, at, i)
          ORDER BY d.i",
    )
    .bind(&ns)
    .bind(column(&writes, |(c, _)| c.decision.decision_id.to_string()))
    .bind(column(&writes, |(c, _)| c.decision.claim_id.to_string()))
    .bind(column(&writes, |(c, _)| c.decision.document_id.to_string()))
    .bind(&ordinals)
    .bind(column(&writes, |(c, _)| c.decision.name.as_str()))
    .bind(column(&writes, |(c, _)| c.decision.lemma.as_str()))
    .bind(column(&writes, |(c, _)| c.decision.tier.as_str()))
    .bind(&candidates)
    .bind(
        writes
            .iter()
            .map(|(c, _)| c.decision.complete)
            .collect::<Vec<bool>>(),
    )
    .bind(
        writes
            .iter()
            .map(|(c, _)| c.decision.t3_score.map(|s| s as f64))
            .collect::<Vec<Option<f64>>>(),
    )
    .bind(column(&writes, |(c, _)| c.decision.t3_outcome.as_str()))
    .bind(column(&writes, |(c, _)| c.decision.verdict.as_str()))
    .bind(column(&writes, |(c, _)| c.decision.entity_id.to_string()))
    .bind(column(&writes, |(c, _)| c.decision.rationale.as_str()))
    .bind(
        writes
            .iter()
            .map(|(c, _)| c.decision.model.clone())
            .collect::<Vec<Option<String>>>(),
    )
    .bind(column(&writes, |(c, _)| {
        c.decision.resolver_version.as_str()
    }))
    .bind(&features)
    .bind(
        writes
            .iter()
            .map(|(c, _)| c.decision.created_at)
            .collect::<Vec<Timestamp>>(),
    )
    .execute(&mut *tx)
    .await
    .map_err(db_err)?;

    // Cannot-link pairs, stored ordered (a < b), each once with its first decision.
    let mut pairs: BTreeMap<(String, String), String> = BTreeMap::new();
    for (c, _) in &writes {
        let entity = c.decision.entity_id.to_string();
        for other in &c.exclusions {
            let other = other.to_string();
            if other == entity {
                continue;
            }
            let key = if entity < other {
                (entity.clone(), other)
            } else {
                (other, entity.clone())
            };
            pairs
                .entry(key)
                .or_insert_with(|| c.decision.decision_id.to_string());
        }
    }
    if !pairs.is_empty() {
        let (mut a, mut b, mut decision) = (vec![], vec![], vec![]);
        for ((x, y), d) in pairs {
            a.push(x);
            b.push(y);
            decision.push(d);
        }
        sqlx::query(
            "INSERT INTO resolution_exclusions (namespace_id, a, b, decision_id)
             SELECT $1, p.a, p.b, p.decision FROM unnest($2::text[], $3::text[], $4::text[]) AS p(a, b, decision)
             ON CONFLICT DO NOTHING",
        )
        .bind(&ns)
        .bind(a)
        .bind(b)
        .bind(decision)
        .execute(&mut *tx)
        .await
        .map_err(db_err)?;
    }

    // Document bindings, each key once in order of first appearance with the first
    // anchor the batch gives it. An existing anchor is kept: the first T4 match
    // anchors replay. A row is only rewritten when it gains an anchor (the COALESCE
    // of SQLite, without a no-op update that would move the row).
    let mut bindings: Vec<(String, &str, String, Option<String>)> = Vec::new();
    let mut at: HashMap<(String, &str, String), usize> = HashMap::new();
    for (c, _) in &writes {
        let Some(b) = &c.binding else {
            continue;
        };
        let key = (
            b.document_id.to_string(),
            b.lemma.as_str(),
            b.entity_id.to_string(),
        );
        let anchor = b.anchor.map(|a| a.to_string());
        match at.get(&key) {
            Some(&i) => {
                if bindings[i].3.is_none() {
                    bindings[i].3 = anchor;
                }
            }
            None => {
                at.insert(key.clone(), bindings.len());
                bindings.push((key.0, key.1, key.2, anchor));
            }
        }
    }
    if !bindings.is_empty() {
        sqlx::query(
            "INSERT INTO document_entity_bindings (namespace_id, document_id, lemma, entity_id,
                     anchor_decision_id)
             SELECT $1, b.document, b.lemma, b.entity, b.anchor
               FROM unnest($2::text[], $3::text[], $4::text[], $5::text[])
                    WITH ORDINALITY AS b(document, lemma, entity, anchor, i)
              ORDER BY b.i
             ON CONFLICT (namespace_id, document_id, lemma, entity_id) DO UPDATE SET
                 anchor_decision_id = COALESCE(document_entity_bindings.anchor_decision_id,
                                               excluded.anchor_decision_id)
             WHERE document_entity_bindings.anchor_decision_id IS NULL
               AND excluded.anchor_decision_id IS NOT NULL",
        )
        .bind(&ns)
        .bind(bindings.iter().map(|b| b.0.clone()).collect::<Vec<_>>())
        .bind(bindings.iter().map(|b| b.1).collect::<Vec<_>>())
        .bind(bindings.iter().map(|b| b.2.clone()).collect::<Vec<_>>())
        .bind(bindings.iter().map(|b| b.3.clone()).collect::<Vec<_>>())
        .execute(&mut *tx)
        .await
        .map_err(db_err)?;
    }
    Ok(out)
}

impl PgStore {
    pub(crate) async fn add_exclusion_impl(
        &self,
        ns: NamespaceId,
        a: EntityId,
        b: EntityId,
        decided_by: &str,
    ) -> Result<()> {
        sqlx::query(crate::shared(
            &rememberstack_sql::entities::INSERT_EXCLUSION,
        ))
        .bind(ns.to_string())
        .bind(a.to_string())
        .bind(b.to_string())
        .bind(decided_by)
        .execute(self.pool())
        .await
        .map_err(db_err)?;
        Ok(())
    }

    pub(crate) async fn exclusions_impl(
        &self,
        ns: NamespaceId,
        ids: &[EntityId],
    ) -> Result<Vec<(EntityId, EntityId)>> {
        if ids.is_empty() {
            return Ok(vec![]);
        }
        let list = crate::any_list(ids);
        let rows = sqlx::query(crate::shared(
            &rememberstack_sql::entities::EXCLUSIONS_OF_ENTITIES,
        ))
        .bind(ns.to_string())
        .bind(&list)
        .bind(&list)
        .fetch_all(self.pool())
        .await
        .map_err(db_err)?;
        let mut pairs: BTreeSet<(String, String)> = BTreeSet::new();
        for r in rows {
            pairs.insert((get(&r, "a")?, get(&r, "b")?));
        }
        pairs
            .into_iter()
            .map(|(a, b)| Ok((parse_id(&a)?, parse_id(&b)?)))
            .collect()
    }

    pub(crate) async fn document_entity_bindings_impl(
        &self,
        ns: NamespaceId,
        doc: DocumentId,
    ) -> Result<Vec<DocumentBinding>> {
        let rows = sqlx::query(crate::shared(
            &rememberstack_sql::entities::DOCUMENT_BINDINGS,
        ))
        .bind(ns.to_string())
        .bind(doc.to_string())
        .fetch_all(self.pool())
        .await
        .map_err(db_err)?;
        rows.iter().map(binding_row).collect()
    }

    pub(crate) async fn document_bindings_impl(
        &self,
        ns: NamespaceId,
        doc: DocumentId,
        lemma: &str,
    ) -> Result<Vec<DocumentBinding>> {
        // Insertion order (`seq`, as SQLite's rowid).
        let rows = sqlx::query(crate::shared(
            &rememberstack_sql::entities::DOCUMENT_BINDINGS_OF_LEMMA,
        ))
        .bind(ns.to_string())
        .bind(doc.to_string())
        .bind(lemma)
        .fetch_all(self.pool())
        .await
        .map_err(db_err)?;
        rows.iter().map(binding_row).collect()
    }

    pub(crate) async fn resolution_decision_impl(
        &self,
        ns: NamespaceId,
        id: DecisionId,
    ) -> Result<Option<ResolutionDecision>> {
        let row = sqlx::query(crate::shared(&rememberstack_sql::entities::DECISION_BY_ID))
            .bind(ns.to_string())
            .bind(id.to_string())
            .fetch_optional(self.pool())
            .await
            .map_err(db_err)?;
        row.map(|r| resolution_decision_row(&r)).transpose()
    }

    pub(crate) async fn resolution_decisions_impl(
        &self,
        ns: NamespaceId,
        entities: &[EntityId],
    ) -> Result<Vec<ResolutionDecision>> {
        if entities.is_empty() {
            return Ok(vec![]);
        }
        let rows = sqlx::query(crate::shared(
            &rememberstack_sql::entities::DECISIONS_OF_ENTITIES,
        ))
        .bind(ns.to_string())
        .bind(crate::any_list(entities))
        .fetch_all(self.pool())
        .await
        .map_err(db_err)?;
        rows.iter().map(resolution_decision_row).collect()
    }

    pub(crate) async fn mentions_impl(
        &self,
        ns: NamespaceId,
        entity: EntityId,
        limit: u32,
    ) -> Result<Vec<Mention>> {
        let rows = sqlx::query(crate::shared(&rememberstack_sql::entities::MENTIONS))
            .bind(ns.to_string())
            .bind(entity.to_string())
            .bind(i64::from(limit))
            .fetch_all(self.pool())
            .await
            .map_err(db_err)?;
        rows.iter()
            .map(|r| {
                Ok(Mention {
                    claim_id: id(r, "claim_id")?,
                    start: get::<Option<i64>>(r, "start_byte")?.map(|s| s as usize),
                    end: get::<Option<i64>>(r, "end_byte")?.map(|e| e as usize),
                    surface: get(r, "surface")?,
                })
            })
            .collect()
    }

    pub(crate) async fn set_profile_impl(
        &self,
        ns: NamespaceId,
        entity: EntityId,
        summary: &str,
        profile_key: &str,
        now: Timestamp,
    ) -> Result<()> {
        let r = sqlx::query(crate::shared(&rememberstack_sql::entities::SET_PROFILE))
            .bind(summary)
            .bind(profile_key)
            .bind(now)
            .bind(ns.to_string())
            .bind(entity.to_string())
            .execute(self.pool())
            .await
            .map_err(db_err)?;
        if r.rows_affected() == 0 {
            return Err(Error::not_found(format!("entity {entity} not found")));
        }
        Ok(())
    }

    pub(crate) async fn merge_entities_impl(&self, event: MergeEvent) -> Result<()> {
        let ns = event.namespace_id.to_string();
        if event.from == event.into {
            return Err(Error::invalid_input(format!(
                "cannot merge entity {} into itself",
                event.from
            )));
        }
        let mut tx = self.pool().begin().await.map_err(db_err)?;
        // Lock both rows (in id order, so concurrent merges cannot deadlock) before
        // the checks: a concurrent merge of either waits for this one.
        let mut ids = [event.from.to_string(), event.into.to_string()];
        ids.sort();
        let locked: HashMap<String, Option<String>> = sqlx::query(
            "SELECT id, merged_into FROM entities WHERE namespace_id = $1 AND id = ANY($2)
             ORDER BY id FOR UPDATE",
        )
        .bind(&ns)
        .bind(&ids[..])
        .fetch_all(&mut *tx)
        .await
        .map_err(db_err)?
        .iter()
        .map(|r| Ok((get(r, "id")?, get(r, "merged_into")?)))
        .collect::<Result<_>>()?;
        for id in [event.from, event.into] {
            let Some(merged_into) = locked.get(&id.to_string()) else {
                return Err(Error::invalid_input(format!(
                    "entity {id} does not exist in this namespace"
                )));
            };
            if let Some(target) = merged_into {
                return Err(Error::invalid_input(format!(
                    "entity {id} is already merged into {target}; unmerge it first"
                )));
            }
        }
        sqlx::query(crate::shared(&rememberstack_sql::entities::MERGE_INTO))
            .bind(event.into.to_string())
            .bind(&ns)
            .bind(event.from.to_string())
            .execute(&mut *tx)
            .await
            .map_err(db_err)?;
        sqlx::query(crate::shared(
            &rememberstack_sql::entities::INSERT_MERGE_EVENT,
        ))
        .bind(&ns)
        .bind(event.merge_id.to_string())
        .bind(event.from.to_string())
        .bind(event.into.to_string())
        .bind(Json(&event.snapshot))
        .bind(event.created_at)
        .bind(event.reverted_at)
        .execute(&mut *tx)
        .await
        .map_err(db_err)?;
        tx.commit().await.map_err(db_err)
    }

    pub(crate) async fn unmerge_entities_impl(
        &self,
        ns: NamespaceId,
        merge: MergeId,
        now: Timestamp,
    ) -> Result<MergeEvent> {
        let ns_s = ns.to_string();
        let mut tx = self.pool().begin().await.map_err(db_err)?;
        // The event row is locked: two unmerges of one event serialize, and the
        // second sees it reverted.
        let row = sqlx::query(crate::shared(
            &rememberstack_sql::entities::MERGE_BY_ID_LOCKED,
        ))
        .bind(&ns_s)
        .bind(merge.to_string())
        .fetch_optional(&mut *tx)
        .await
        .map_err(db_err)?;
        let mut event = rememberstack_sql::entities::event_to_revert(
            row.as_ref().map(merge_row).transpose()?,
            merge,
        )?;
        let cleared = sqlx::query(crate::shared(&rememberstack_sql::entities::UNMERGE))
            .bind(&ns_s)
            .bind(event.from.to_string())
            .bind(event.into.to_string())
            .execute(&mut *tx)
            .await
            .map_err(db_err)?;
        rememberstack_sql::entities::check_unmerged(cleared.rows_affected(), &event)?;
        // The stored value (microsecond precision), so the returned event equals what
        // a later read returns.
        let reverted: Timestamp = sqlx::query_scalar(
            "UPDATE merge_events SET reverted_at = $1 WHERE namespace_id = $2 AND id = $3
             RETURNING reverted_at",
        )
        .bind(now)
        .bind(&ns_s)
        .bind(merge.to_string())
        .fetch_one(&mut *tx)
        .await
        .map_err(db_err)?;
        tx.commit().await.map_err(db_err)?;
        event.reverted_at = Some(reverted);
        Ok(event)
    }

    pub(crate) async fn merge_events_impl(
        &self,
        ns: NamespaceId,
        entities: &[EntityId],
    ) -> Result<Vec<MergeEvent>> {
        let ns_s = ns.to_string();
        if entities.is_empty() {
            let rows = sqlx::query(crate::shared(&rememberstack_sql::entities::MERGES))
                .bind(&ns_s)
                .fetch_all(self.pool())
                .await
                .map_err(db_err)?;
            return rows.iter().map(merge_row).collect();
        }
        let list = crate::any_list(entities);
        let rows = sqlx::query(crate::shared(
            &rememberstack_sql::entities::MERGES_OF_ENTITIES,
        ))
        .bind(&ns_s)
        .bind(&list)
        .bind(&list)
        .fetch_all(self.pool())
        .await
        .map_err(db_err)?;
        rows.iter().map(merge_row).collect()
    }
}

/// An ordinal as the `integer` column binds it.
fn ordinal_param(ordinal: u32) -> Result<i32> {
    i32::try_from(ordinal)
        .map_err(|_| Error::invalid_input(format!("ordinal {ordinal} is out of range")))
}
