//! Entities (E3): resolution commits, blocking keys, aliases, mentions, D102
//! bindings and reversible merges.

use crate::rows::*;
use crate::{SqliteStore, db_err, parse_id, ts};
use rememberstack_core::entities::{
    BlockingKey, BlockingQuery, BlockingResult, BlockingTier, DocumentBinding, EntityFilter,
    EntityRecord, KeyData, MAX_KEY_ROWS, Mention, MergeEvent, NewAlias, ResolutionCommit,
    ResolutionDecision, alias_keys, query_keys,
};
use rememberstack_core::ids::*;
use rememberstack_core::time::{Timestamp, to_rfc3339};
use rememberstack_core::{Error, Result};
use rememberstack_sql::rows::{entity_row, merge_row, resolution_decision_row};
use sqlx::{AssertSqlSafe, Row};
use std::collections::{BTreeSet, HashMap};

const ENTITY_SELECT: &str = "
    SELECT e.id, e.namespace_id, e.canonical_name, e.lemma, e.merged_into, e.profile_summary,
           e.profile_key, e.created_at,
           COALESCE((SELECT n FROM entity_mention_counts m
             WHERE m.namespace_id = e.namespace_id AND m.entity_id = e.id), 0) AS mention_count
    FROM entities e";

/// Insert blocking key rows `(key, entity, alias lemma)`, each as
/// [`alias_keys`] gives an alias's keys; returns how many were new.
async fn insert_keys(
    tx: &mut sqlx::SqliteConnection,
    ns: &str,
    rows: &[(BlockingKey, String, &str)],
) -> Result<u64> {
    insert_rows(
        tx,
        "INSERT INTO entity_keys (namespace_id, kind, key, entity_id, alias_lemma) ",
        " ON CONFLICT DO NOTHING",
        rows,
        |mut row, ((tier, key), entity, alias_lemma)| {
            row.push_bind(ns)
                .push_bind(tier.key_kind())
                .push_bind(key.as_str())
                .push_bind(entity.as_str())
                .push_bind(*alias_lemma);
        },
    )
    .await
}

/// The store's name of a blocking tier's keys (`entity_keys.kind`).
/// The blocking keys this process has read, per namespace, each with its alias-row
/// count and (when read) its rows, valid while the namespace's key stamp (moved by
/// every key row written or removed, whichever process writes) is the one they were
/// read under. This process's own key writes update it in place: they move the
/// stamp by the rows they insert and drop the keys they touch.
#[derive(Debug, Default)]
pub(crate) struct KeyCache {
    inner: std::sync::Mutex<HashMap<NamespaceId, CachedKeys>>,
}

#[derive(Debug, Default)]
struct CachedKeys {
    stamp: i64,
    /// The writer's count of failed group commits when read: a rolled-back stamp
    /// can come back with other keys under it.
    epoch: u64,
    counts: HashMap<BlockingKey, u64>,
    rows: HashMap<BlockingKey, Vec<(EntityId, String)>>,
    size: usize,
}

/// Rows the cache holds at most per namespace before it starts again.
const KEY_CACHE_ROWS: usize = 1_000_000;

impl KeyCache {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<NamespaceId, CachedKeys>> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The namespace's cache as of `stamp` (emptied if it was of another).
    fn at(
        map: &mut HashMap<NamespaceId, CachedKeys>,
        ns: NamespaceId,
        (stamp, epoch): (i64, u64),
    ) -> &mut CachedKeys {
        let c = map.entry(ns).or_default();
        if c.stamp != stamp || c.epoch != epoch || c.size > KEY_CACHE_ROWS {
            *c = CachedKeys {
                stamp,
                epoch,
                ..CachedKeys::default()
            };
        }
        c
    }

    /// This process wrote `inserted` key rows under `keys`: the stamp moved by that
    /// many, and those keys are read again.
    pub(crate) fn wrote(&self, ns: NamespaceId, keys: &[BlockingKey], inserted: u64, epoch: u64) {
        if inserted == 0 {
            return;
        }
        let mut map = self.lock();
        if let Some(c) = map.get_mut(&ns).filter(|c| c.epoch == epoch) {
            c.stamp += inserted as i64;
            for k in keys {
                c.counts.remove(k);
                if let Some(rows) = c.rows.remove(k) {
                    c.size = c.size.saturating_sub(rows.len());
                }
            }
        }
    }
}

impl SqliteStore {
    /// The namespace's key stamp as this connection sees it, with the writer's
    /// failed-commit epoch.
    async fn key_stamp(&self, ns: &str) -> Result<(i64, u64)> {
        let epoch = self.write.epoch();
        let n: Option<i64> =
            sqlx::query_scalar("SELECT n FROM entity_key_stamps WHERE namespace_id = ?")
                .bind(ns)
                .fetch_optional(&self.read)
                .await
                .map_err(db_err)?;
        Ok((n.unwrap_or(0), epoch))
    }

    /// The alias rows of these keys, however many carry them.
    pub(crate) async fn entity_key_rows_impl(
        &self,
        ns: NamespaceId,
        keys: &[BlockingKey],
    ) -> Result<Vec<(BlockingKey, Vec<(EntityId, String)>)>> {
        let ns_s = ns.to_string();
        let stamp = self.key_stamp(&ns_s).await?;
        let mut out: HashMap<BlockingKey, Vec<(EntityId, String)>> = HashMap::new();
        let missing: Vec<BlockingKey> = {
            let mut map = self.key_cache.lock();
            let c = KeyCache::at(&mut map, ns, stamp);
            keys.iter()
                .filter(|k| match c.rows.get(*k) {
                    Some(rows) => {
                        out.insert((*k).clone(), rows.clone());
                        false
                    }
                    None => true,
                })
                .cloned()
                .collect()
        };
        let mut read: HashMap<BlockingKey, Vec<(EntityId, String)>> =
            missing.iter().map(|k| (k.clone(), vec![])).collect();
        for batch in missing.chunks(200) {
            let values = vec!["(?, ?)"; batch.len()].join(", ");
            let sql = format!(
                "WITH wanted(kind, key) AS (VALUES {values})
                 SELECT k.kind, k.key, k.entity_id, k.alias_lemma FROM wanted w
                 JOIN entity_keys k ON k.namespace_id = ? AND k.kind = w.kind AND k.key = w.key"
            );
            let mut q = sqlx::query(AssertSqlSafe(sql));
            for (tier, key) in batch {
                q = q.bind(tier.key_kind()).bind(key);
            }
            for r in q.bind(&ns_s).fetch_all(&self.read).await.map_err(db_err)? {
                let key = (
                    BlockingTier::of_key_kind(&r.get::<String, _>("kind"))?,
                    r.get("key"),
                );
                read.entry(key).or_default().push((
                    parse_id(&r.get::<String, _>("entity_id"))?,
                    r.get("alias_lemma"),
                ));
            }
        }
        {
            let mut map = self.key_cache.lock();
            let c = KeyCache::at(&mut map, ns, stamp);
            for (k, rows) in &read {
                c.size += rows.len();
                c.rows.insert(k.clone(), rows.clone());
            }
        }
        out.extend(read);
        Ok(keys
            .iter()
            .map(|k| (k.clone(), out.remove(k).unwrap_or_default()))
            .collect())
    }

    /// Every key's stored row count and the alias rows of the keys worth blocking on
    /// (the exact lemma always; a trigram or phonetic key when at most
    /// [`MAX_KEY_ROWS`] rows carry it): from the cache where it holds them under the
    /// current key stamp, the rest in one statement per 200 keys.
    pub(crate) async fn entity_key_data_impl(
        &self,
        ns: NamespaceId,
        keys: &[BlockingKey],
    ) -> Result<KeyData> {
        let ns_s = ns.to_string();
        let stamp = self.key_stamp(&ns_s).await?;
        let mut data = KeyData::default();
        let wanted: BTreeSet<&BlockingKey> = keys.iter().collect();
        let missing: Vec<&BlockingKey> = {
            let mut map = self.key_cache.lock();
            let c = KeyCache::at(&mut map, ns, stamp);
            wanted
                .into_iter()
                .filter(|k| {
                    let Some(n) = c.counts.get(*k).copied() else {
                        return true;
                    };
                    data.counts.insert((*k).clone(), n);
                    if KeyData::rows_read_with_counts(k, n) {
                        data.load((*k).clone(), c.rows.get(*k).cloned().unwrap_or_default());
                    }
                    false
                })
                .collect()
        };
        for batch in missing.chunks(200) {
            // `?1` and `?2` come first; the pairs are numbered after them.
            let values = (0..batch.len())
                .map(|i| format!("(?{}, ?{})", 3 + 2 * i, 4 + 2 * i))
                .collect::<Vec<_>>()
                .join(", ");
            let sql = format!(
                "WITH wanted(kind, key) AS (VALUES {values}),
                 counts AS (
                     SELECT w.kind, w.key, COALESCE(c.n, 0) AS n FROM wanted w
                     LEFT JOIN entity_key_counts c
                       ON c.namespace_id = ?1 AND c.kind = w.kind AND c.key = w.key)
                 SELECT kind, key, n, NULL AS entity_id, NULL AS alias_lemma FROM counts
                 UNION ALL
                 SELECT k.kind, k.key, NULL, k.entity_id, k.alias_lemma FROM counts c
                 JOIN entity_keys k
                   ON k.namespace_id = ?1 AND k.kind = c.kind AND k.key = c.key
                 WHERE c.kind = 'lemma' OR c.n <= ?2"
            );
            let mut query = sqlx::query(AssertSqlSafe(sql))
                .bind(&ns_s)
                .bind(MAX_KEY_ROWS as i64);
            for (tier, key) in batch {
                query = query.bind(tier.key_kind()).bind(key.as_str());
            }
            let mut rows: HashMap<BlockingKey, Vec<(EntityId, String)>> = HashMap::new();
            let mut counts: HashMap<BlockingKey, u64> = HashMap::new();
            for r in query.fetch_all(&self.read).await.map_err(db_err)? {
                let key = (
                    BlockingTier::of_key_kind(&r.get::<String, _>("kind"))?,
                    r.get::<String, _>("key"),
                );
                match r.get::<Option<String>, _>("entity_id") {
                    None => {
                        counts.insert(key, r.get::<i64, _>("n").max(0) as u64);
                    }
                    Some(entity) => rows
                        .entry(key)
                        .or_default()
                        .push((parse_id(&entity)?, r.get("alias_lemma"))),
                }
            }
            let mut map = self.key_cache.lock();
            let c = KeyCache::at(&mut map, ns, stamp);
            for key in batch {
                let n = counts.get(*key).copied().unwrap_or(0);
                data.counts.insert((*key).clone(), n);
                c.counts.insert((*key).clone(), n);
                if KeyData::rows_read_with_counts(key, n) {
                    let r = rows.remove(*key).unwrap_or_default();
                    c.size += r.len();
                    c.rows.insert((*key).clone(), r.clone());
                    data.load((*key).clone(), r);
                }
            }
        }
        Ok(data)
    }

    /// The three blocking tiers of a query (see [`Self::block_entities_many_impl`]).
    pub(crate) async fn block_entities_impl(&self, q: &BlockingQuery) -> Result<BlockingResult> {
        Ok(self
            .block_entities_many_impl(std::slice::from_ref(q))
            .await?
            .pop()
            .unwrap_or_default())
    }

    /// The blocks of several queries of one namespace: the counts and alias rows of
    /// all their keys in one statement, then each block by the core rule
    /// ([`KeyData::block`]); only when every key of a tier is too common are its
    /// rarest keys' rows read by a second statement.
    pub(crate) async fn block_entities_many_impl(
        &self,
        queries: &[BlockingQuery],
    ) -> Result<Vec<BlockingResult>> {
        let Some(first) = queries.first() else {
            return Ok(vec![]);
        };
        let ns = first.namespace_id;
        if queries.iter().any(|q| q.namespace_id != ns) {
            return Err(Error::internal("blocking queries of several namespaces"));
        }
        let keys: Vec<BlockingKey> = queries
            .iter()
            .flat_map(|q| {
                query_keys(q)
                    .into_iter()
                    .flat_map(|(tier, keys)| keys.into_iter().map(move |k| (tier, k)))
            })
            .collect();
        let mut data = self.entity_key_data_impl(ns, &keys).await?;
        let mut out = Vec::with_capacity(queries.len());
        for q in queries {
            let unread = data.unread(q);
            if !unread.is_empty() {
                for (key, rows) in self.entity_key_rows_impl(ns, &unread).await? {
                    data.load(key, rows);
                }
            }
            out.push(data.block(q));
        }
        Ok(out)
    }

    async fn attach_aliases(&self, ns: &str, entities: &mut [EntityRecord]) -> Result<()> {
        let mut by_entity: HashMap<EntityId, Vec<String>> = HashMap::new();
        let ids: Vec<EntityId> = entities.iter().map(|e| e.entity_id).collect();
        let rows = sqlx::query(crate::shared(
            &rememberstack_sql::entities::ALIASES_OF_ENTITIES,
        ))
        .bind(ns)
        .bind(crate::any_list(&ids))
        .fetch_all(&self.read)
        .await
        .map_err(db_err)?;
        for r in rows {
            by_entity
                .entry(parse_id(&r.get::<String, _>("entity_id"))?)
                .or_default()
                .push(r.get("surface"));
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
        let ns_s = ns.to_string();
        let mut by_id: HashMap<EntityId, EntityRecord> = HashMap::new();
        let sql = format!("{ENTITY_SELECT} WHERE e.namespace_id = ? AND e.id IN ({{list}})");
        for r in fetch_in_batches(&self.read, &sql, &[&ns_s], &id_strings(ids)).await? {
            let e = entity_row(&r)?;
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
            "{ENTITY_SELECT} WHERE e.namespace_id = ? AND (? OR e.merged_into IS NULL)
               AND (? IS NULL OR e.lemma = ? OR EXISTS (
                   SELECT 1 FROM entity_aliases a WHERE a.namespace_id = e.namespace_id
                      AND a.entity_id = e.id AND a.lemma = ?))
             ORDER BY e.created_at, e.seq LIMIT ?"
        )))
        .bind(&ns_s)
        .bind(filter.include_merged)
        .bind(filter.lemma.as_deref())
        .bind(filter.lemma.as_deref())
        .bind(filter.lemma.as_deref())
        .bind(limit as i64)
        .fetch_all(&self.read)
        .await
        .map_err(db_err)?;
        let mut out = rows.iter().map(entity_row).collect::<Result<Vec<_>>>()?;
        self.attach_aliases(&ns_s, &mut out).await?;
        Ok(out)
    }

    pub(crate) async fn resolution_for_impl(
        &self,
        ns: NamespaceId,
        claim: ClaimId,
        ordinal: u32,
        resolver_version: &str,
    ) -> Result<Option<ResolutionDecision>> {
        let row = sqlx::query(crate::shared(
            &rememberstack_sql::entities::DECISION_OF_MENTION,
        ))
        .bind(ns.to_string())
        .bind(claim.to_string())
        .bind(ordinal as i64)
        .bind(resolver_version)
        .fetch_optional(&self.read)
        .await
        .map_err(db_err)?;
        row.map(|r| resolution_decision_row(&r)).transpose()
    }

    pub(crate) async fn commit_resolution_impl(
        &self,
        commit: ResolutionCommit,
        now: Timestamp,
    ) -> Result<EntityId> {
        let d = &commit.decision;
        let ns = d.namespace_id.to_string();
        let entity = d.entity_id.to_string();
        let decision = d.decision_id.to_string();
        let at = to_rfc3339(&now);
        let mut tx = self.write.begin().await.map_err(db_err)?;
        // A decision already committed for (claim, ordinal, resolver) makes the whole
        // commit a no-op: a re-run after a crash writes nothing twice.
        let existing = sqlx::query(crate::shared(&rememberstack_sql::entities::DECIDED_ENTITY))
            .bind(&ns)
            .bind(d.claim_id.to_string())
            .bind(d.ordinal as i64)
            .bind(&d.resolver_version)
            .fetch_optional(&mut *tx)
            .await
            .map_err(db_err)?;
        if let Some(row) = existing {
            return parse_id(&row.get::<String, _>("entity_id"));
        }
        let mut written = 0u64;
        let mut touched_keys: Vec<BlockingKey> = Vec::new();
        if let Some((canonical_name, lemma)) = &commit.mint {
            sqlx::query(crate::shared(&rememberstack_sql::entities::INSERT_ENTITY))
                .bind(&ns)
                .bind(&entity)
                .bind(canonical_name)
                .bind(lemma)
                .bind(&at)
                .execute(&mut *tx)
                .await
                .map_err(db_err)?;
        }
        for a in &commit.aliases {
            let inserted = sqlx::query(crate::shared(&rememberstack_sql::entities::INSERT_ALIAS))
                .bind(&ns)
                .bind(&entity)
                .bind(&a.surface)
                .bind(&a.lemma)
                .bind(&at)
                .execute(&mut *tx)
                .await
                .map_err(db_err)?;
            // An alias's keys derive from its surface alone and were written with it:
            // a known alias has them already.
            if inserted.rows_affected() == 0 {
                continue;
            }
            let rows: Vec<(BlockingKey, String, &str)> = alias_keys(a)
                .into_iter()
                .map(|k| (k, entity.clone(), a.lemma.as_str()))
                .collect();
            written += insert_keys(&mut tx, &ns, &rows).await?;
            touched_keys.extend(rows.into_iter().map(|(k, _, _)| k));
        }
        let m = &commit.mention;
        sqlx::query(crate::shared(&rememberstack_sql::entities::INSERT_MENTION))
            .bind(&ns)
            .bind(&entity)
            .bind(m.claim_id.to_string())
            .bind(m.start.map(|s| s as i64))
            .bind(m.end.map(|e| e as i64))
            .bind(&m.surface)
            .bind(&decision)
            .bind(&at)
            .execute(&mut *tx)
            .await
            .map_err(db_err)?;
        sqlx::query(crate::shared(
            &rememberstack_sql::entities::INSERT_RESOLUTION_DECISION,
        ))
        .bind(&ns)
        .bind(&decision)
        .bind(d.claim_id.to_string())
        .bind(d.document_id.to_string())
        .bind(d.ordinal as i64)
        .bind(&d.name)
        .bind(&d.lemma)
        .bind(&d.tier)
        .bind(json(&d.candidates)?)
        .bind(d.complete)
        .bind(d.t3_score.map(|s| s as f64))
        .bind(&d.t3_outcome)
        .bind(&d.verdict)
        .bind(&entity)
        .bind(&d.rationale)
        .bind(&d.model)
        .bind(&d.resolver_version)
        .bind(json(&d.features)?)
        .bind(to_rfc3339(&d.created_at))
        .execute(&mut *tx)
        .await
        .map_err(db_err)?;
        for other in &commit.exclusions {
            let other = other.to_string();
            if other == entity {
                continue;
            }
            let (a, b) = if entity < other {
                (&entity, &other)
            } else {
                (&other, &entity)
            };
            sqlx::query(crate::shared(
                &rememberstack_sql::entities::INSERT_EXCLUSION,
            ))
            .bind(&ns)
            .bind(a)
            .bind(b)
            .bind(&decision)
            .execute(&mut *tx)
            .await
            .map_err(db_err)?;
        }
        if let Some(b) = &commit.binding {
            // An existing anchor is kept: the first T4 match anchors replay.
            sqlx::query(
                "INSERT INTO document_entity_bindings (namespace_id, document_id, lemma, entity_id,
                     anchor_decision_id)
                 VALUES (?, ?, ?, ?, ?)
                 ON CONFLICT (namespace_id, document_id, lemma, entity_id) DO UPDATE SET
                     anchor_decision_id = COALESCE(document_entity_bindings.anchor_decision_id,
                                                   excluded.anchor_decision_id)",
            )
            .bind(&ns)
            .bind(b.document_id.to_string())
            .bind(&b.lemma)
            .bind(b.entity_id.to_string())
            .bind(b.anchor.map(|a| a.to_string()))
            .execute(&mut *tx)
            .await
            .map_err(db_err)?;
        }
        tx.commit().await.map_err(db_err)?;
        self.key_cache
            .wrote(d.namespace_id, &touched_keys, written, self.write.epoch());
        Ok(d.entity_id)
    }

    /// [`Self::commit_resolution_impl`] for several commits of one namespace, in one
    /// transaction and a few multi-row statements: the decisions that already stand
    /// are read first and their commits skipped, mints are inserted, then aliases
    /// (their keys for those actually new), mentions, decision rows, exclusions and
    /// bindings, each table's rows in commit order. Each commit is stamped with its
    /// decision's time.
    pub(crate) async fn commit_resolutions_impl(
        &self,
        commits: Vec<ResolutionCommit>,
    ) -> Result<Vec<EntityId>> {
        let Some(first) = commits.first() else {
            return Ok(vec![]);
        };
        let ns_id = first.decision.namespace_id;
        if commits.iter().any(|c| c.decision.namespace_id != ns_id) {
            return Err(Error::internal("resolution commits of several namespaces"));
        }
        let ns = ns_id.to_string();
        let mut tx = self.write.begin().await.map_err(db_err)?;
        // Decisions already committed for (claim, ordinal, resolver) stand.
        let claims: Vec<String> = commits
            .iter()
            .map(|c| c.decision.claim_id.to_string())
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        let mut standing: HashMap<(String, i64, String), String> = HashMap::new();
        for batch in claims.chunks(400) {
            let sql = format!(
                "SELECT claim_id, ordinal, resolver_version, entity_id FROM resolution_decisions
                 WHERE namespace_id = ? AND claim_id IN ({})",
                in_list(batch.len())
            );
            let mut q = sqlx::query(AssertSqlSafe(sql)).bind(&ns);
            for c in batch {
                q = q.bind(c);
            }
            for r in q.fetch_all(&mut *tx).await.map_err(db_err)? {
                standing.insert(
                    (
                        r.get("claim_id"),
                        r.get("ordinal"),
                        r.get("resolver_version"),
                    ),
                    r.get("entity_id"),
                );
            }
        }
        let mut out = Vec::with_capacity(commits.len());
        let mut fresh: Vec<&ResolutionCommit> = Vec::new();
        for c in &commits {
            let d = &c.decision;
            let key = (
                d.claim_id.to_string(),
                d.ordinal as i64,
                d.resolver_version.clone(),
            );
            match standing.get(&key) {
                Some(entity) => out.push(parse_id(entity)?),
                None => {
                    standing.insert(key, d.entity_id.to_string());
                    out.push(d.entity_id);
                    fresh.push(c);
                }
            }
        }
        let at = |c: &ResolutionCommit| to_rfc3339(&c.decision.created_at);
        let mints: Vec<&ResolutionCommit> =
            fresh.iter().copied().filter(|c| c.mint.is_some()).collect();
        insert_rows(
            &mut tx,
            "INSERT INTO entities (namespace_id, id, canonical_name, lemma, created_at) ",
            " ON CONFLICT (namespace_id, id) DO NOTHING",
            &mints,
            |mut row, c| {
                let (name, lemma) = c.mint.as_ref().expect("a mint");
                row.push_bind(&ns)
                    .push_bind(c.decision.entity_id.to_string())
                    .push_bind(name.clone())
                    .push_bind(lemma.clone())
                    .push_bind(at(c));
            },
        )
        .await?;
        // Aliases, then the keys of those that are new (an alias's keys derive from
        // its surface alone and were written with it).
        let aliases: Vec<(&ResolutionCommit, &NewAlias)> = fresh
            .iter()
            .flat_map(|c| c.aliases.iter().map(move |a| (*c, a)))
            .collect();
        let mut new_aliases: BTreeSet<(String, String)> = BTreeSet::new();
        for batch in aliases.chunks(64) {
            let mut q = sqlx::QueryBuilder::<sqlx::Sqlite>::new(
                "INSERT INTO entity_aliases (namespace_id, entity_id, surface, lemma, created_at) ",
            );
            q.push_values(batch, |mut row, (c, a)| {
                row.push_bind(&ns)
                    .push_bind(c.decision.entity_id.to_string())
                    .push_bind(&a.surface)
                    .push_bind(&a.lemma)
                    .push_bind(at(c));
            });
            q.push(" ON CONFLICT DO NOTHING RETURNING entity_id, surface");
            for r in q.build().fetch_all(&mut *tx).await.map_err(db_err)? {
                new_aliases.insert((r.get("entity_id"), r.get("surface")));
            }
        }
        let mut keys: Vec<(BlockingKey, String, &str)> = Vec::new();
        let mut keyed: BTreeSet<(String, String)> = BTreeSet::new();
        for (c, a) in &aliases {
            let entity = c.decision.entity_id.to_string();
            let pair = (entity.clone(), a.surface.clone());
            if !new_aliases.contains(&pair) || !keyed.insert(pair) {
                continue;
            }
            for key in alias_keys(a) {
                keys.push((key, entity.clone(), a.lemma.as_str()));
            }
        }
        let written = insert_keys(&mut tx, &ns, &keys).await?;
        insert_rows(
            &mut tx,
            "INSERT INTO entity_mentions (namespace_id, entity_id, claim_id, start_byte, end_byte,
                 surface, decision_id, created_at) ",
            "",
            &fresh,
            |mut row, c| {
                let m = &c.mention;
                row.push_bind(&ns)
                    .push_bind(c.decision.entity_id.to_string())
                    .push_bind(m.claim_id.to_string())
                    .push_bind(m.start.map(|s| s as i64))
                    .push_bind(m.end.map(|e| e as i64))
                    .push_bind(&m.surface)
                    .push_bind(c.decision.decision_id.to_string())
                    .push_bind(at(c));
            },
        )
        .await?;
        let mut rows: Vec<(&ResolutionCommit, String, String)> = Vec::with_capacity(fresh.len());
        for c in &fresh {
            rows.push((
                c,
                json(&c.decision.candidates)?,
                json(&c.decision.features)?,
            ));
        }
        insert_rows(
            &mut tx,
            "INSERT INTO resolution_decisions (namespace_id, id, claim_id, document_id, ordinal, name,
                 lemma, tier, candidates_json, complete, t3_score, t3_outcome, verdict, entity_id,
                 rationale, model, resolver_version, features_json, created_at) ",
            "",
            &rows,
            |mut row, (c, candidates, features)| {
                let d = &c.decision;
                row.push_bind(&ns)
                    .push_bind(d.decision_id.to_string())
                    .push_bind(d.claim_id.to_string())
                    .push_bind(d.document_id.to_string())
                    .push_bind(d.ordinal as i64)
                    .push_bind(&d.name)
                    .push_bind(&d.lemma)
                    .push_bind(&d.tier)
                    .push_bind(candidates.clone())
                    .push_bind(d.complete)
                    .push_bind(d.t3_score.map(|s| s as f64))
                    .push_bind(&d.t3_outcome)
                    .push_bind(&d.verdict)
                    .push_bind(d.entity_id.to_string())
                    .push_bind(&d.rationale)
                    .push_bind(&d.model)
                    .push_bind(&d.resolver_version)
                    .push_bind(features.clone())
                    .push_bind(to_rfc3339(&d.created_at));
            },
        )
        .await?;
        let mut exclusions: Vec<(String, String, String)> = Vec::new();
        for c in &fresh {
            let entity = c.decision.entity_id.to_string();
            for other in &c.exclusions {
                let other = other.to_string();
                if other == entity {
                    continue;
                }
                let (a, b) = if entity < other {
                    (entity.clone(), other)
                } else {
                    (other, entity.clone())
                };
                exclusions.push((a, b, c.decision.decision_id.to_string()));
            }
        }
        insert_rows(
            &mut tx,
            "INSERT INTO resolution_exclusions (namespace_id, a, b, decision_id) ",
            " ON CONFLICT DO NOTHING",
            &exclusions,
            |mut row, (a, b, decision)| {
                row.push_bind(&ns)
                    .push_bind(a.clone())
                    .push_bind(b.clone())
                    .push_bind(decision.clone());
            },
        )
        .await?;
        let bindings: Vec<&DocumentBinding> =
            fresh.iter().filter_map(|c| c.binding.as_ref()).collect();
        // An existing anchor is kept: the first T4 match anchors replay.
        insert_rows(
            &mut tx,
            "INSERT INTO document_entity_bindings (namespace_id, document_id, lemma, entity_id,
                 anchor_decision_id) ",
            " ON CONFLICT (namespace_id, document_id, lemma, entity_id) DO UPDATE SET
                 anchor_decision_id = COALESCE(document_entity_bindings.anchor_decision_id,
                                               excluded.anchor_decision_id)",
            &bindings,
            |mut row, b| {
                row.push_bind(&ns)
                    .push_bind(b.document_id.to_string())
                    .push_bind(&b.lemma)
                    .push_bind(b.entity_id.to_string())
                    .push_bind(b.anchor.map(|a| a.to_string()));
            },
        )
        .await?;
        tx.commit().await.map_err(db_err)?;
        let touched_keys: Vec<BlockingKey> = keys.into_iter().map(|(k, _, _)| k).collect();
        self.key_cache
            .wrote(ns_id, &touched_keys, written, self.write.epoch());
        Ok(out)
    }

    /// [`Self::document_bindings_impl`] for several (document, lemma) pairs: each
    /// pair's rows in insertion order, pairs in the order asked.
    pub(crate) async fn document_bindings_many_impl(
        &self,
        ns: NamespaceId,
        pairs: &[(DocumentId, String)],
    ) -> Result<Vec<DocumentBinding>> {
        let ns_s = ns.to_string();
        let mut by_pair: HashMap<(DocumentId, String), Vec<DocumentBinding>> = HashMap::new();
        for batch in pairs.chunks(200) {
            let values = vec!["(?, ?)"; batch.len()].join(", ");
            let sql = format!(
                "WITH wanted(document_id, lemma) AS (VALUES {values})
                 SELECT b.document_id, b.lemma, b.entity_id, b.anchor_decision_id
                 FROM wanted w JOIN document_entity_bindings b
                   ON b.namespace_id = ? AND b.document_id = w.document_id AND b.lemma = w.lemma
                 ORDER BY b.rowid"
            );
            let mut q = sqlx::query(AssertSqlSafe(sql));
            for (doc, lemma) in batch {
                q = q.bind(doc.to_string()).bind(lemma);
            }
            for r in q.bind(&ns_s).fetch_all(&self.read).await.map_err(db_err)? {
                let b = DocumentBinding {
                    document_id: parse_id(&r.get::<String, _>("document_id"))?,
                    lemma: r.get("lemma"),
                    entity_id: parse_id(&r.get::<String, _>("entity_id"))?,
                    anchor: opt_id(&r, "anchor_decision_id")?,
                };
                by_pair
                    .entry((b.document_id, b.lemma.clone()))
                    .or_default()
                    .push(b);
            }
        }
        Ok(pairs
            .iter()
            .flat_map(|p| by_pair.remove(p).unwrap_or_default())
            .collect())
    }

    /// [`Self::resolution_for_impl`] for several (claim, ordinal) references.
    pub(crate) async fn resolutions_for_many_impl(
        &self,
        ns: NamespaceId,
        references: &[(ClaimId, u32)],
        resolver_version: &str,
    ) -> Result<Vec<ResolutionDecision>> {
        let ns_s = ns.to_string();
        let wanted: BTreeSet<(ClaimId, u32)> = references.iter().copied().collect();
        let claims: Vec<String> = wanted
            .iter()
            .map(|(c, _)| c.to_string())
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        let rows = fetch_in_batches(
            &self.read,
            "SELECT * FROM resolution_decisions
             WHERE namespace_id = ? AND resolver_version = ? AND claim_id IN ({list})",
            &[&ns_s, resolver_version],
            &claims,
        )
        .await?;
        let mut out = Vec::new();
        for r in rows {
            let d = resolution_decision_row(&r)?;
            if wanted.contains(&(d.claim_id, d.ordinal)) {
                out.push(d);
            }
        }
        Ok(out)
    }

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
        .execute(&self.write)
        .await
        .map_err(db_err)?;
        Ok(())
    }

    pub(crate) async fn exclusions_impl(
        &self,
        ns: NamespaceId,
        ids: &[EntityId],
    ) -> Result<Vec<(EntityId, EntityId)>> {
        let ns_s = ns.to_string();
        let mut pairs: BTreeSet<(String, String)> = BTreeSet::new();
        let list = crate::any_list(ids);
        let rows = sqlx::query(crate::shared(
            &rememberstack_sql::entities::EXCLUSIONS_OF_ENTITIES,
        ))
        .bind(&ns_s)
        .bind(&list)
        .bind(&list)
        .fetch_all(&self.read)
        .await
        .map_err(db_err)?;
        for r in rows {
            pairs.insert((r.get("a"), r.get("b")));
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
        .fetch_all(&self.read)
        .await
        .map_err(db_err)?;
        rows.iter()
            .map(|r| {
                Ok(DocumentBinding {
                    document_id: parse_id(&r.get::<String, _>("document_id"))?,
                    lemma: r.get("lemma"),
                    entity_id: parse_id(&r.get::<String, _>("entity_id"))?,
                    anchor: opt_id(r, "anchor_decision_id")?,
                })
            })
            .collect()
    }

    pub(crate) async fn document_bindings_impl(
        &self,
        ns: NamespaceId,
        doc: DocumentId,
        lemma: &str,
    ) -> Result<Vec<DocumentBinding>> {
        let rows = sqlx::query(crate::shared(
            &rememberstack_sql::entities::DOCUMENT_BINDINGS_OF_LEMMA,
        ))
        .bind(ns.to_string())
        .bind(doc.to_string())
        .bind(lemma)
        .fetch_all(&self.read)
        .await
        .map_err(db_err)?;
        rows.iter()
            .map(|r| {
                Ok(DocumentBinding {
                    document_id: parse_id(&r.get::<String, _>("document_id"))?,
                    lemma: r.get("lemma"),
                    entity_id: parse_id(&r.get::<String, _>("entity_id"))?,
                    anchor: opt_id(r, "anchor_decision_id")?,
                })
            })
            .collect()
    }

    pub(crate) async fn resolution_decision_impl(
        &self,
        ns: NamespaceId,
        id: DecisionId,
    ) -> Result<Option<ResolutionDecision>> {
        let row = sqlx::query(crate::shared(&rememberstack_sql::entities::DECISION_BY_ID))
            .bind(ns.to_string())
            .bind(id.to_string())
            .fetch_optional(&self.read)
            .await
            .map_err(db_err)?;
        row.map(|r| resolution_decision_row(&r)).transpose()
    }

    pub(crate) async fn resolution_decisions_impl(
        &self,
        ns: NamespaceId,
        entities: &[EntityId],
    ) -> Result<Vec<ResolutionDecision>> {
        let ns_s = ns.to_string();
        sqlx::query(crate::shared(
            &rememberstack_sql::entities::DECISIONS_OF_ENTITIES,
        ))
        .bind(&ns_s)
        .bind(crate::any_list(entities))
        .fetch_all(&self.read)
        .await
        .map_err(db_err)?
        .iter()
        .map(resolution_decision_row)
        .collect()
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
            .bind(limit as i64)
            .fetch_all(&self.read)
            .await
            .map_err(db_err)?;
        rows.iter()
            .map(|r| {
                Ok(Mention {
                    claim_id: parse_id(&r.get::<String, _>("claim_id"))?,
                    start: r.get::<Option<i64>, _>("start_byte").map(|s| s as usize),
                    end: r.get::<Option<i64>, _>("end_byte").map(|e| e as usize),
                    surface: r.get("surface"),
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
            .bind(to_rfc3339(&now))
            .bind(ns.to_string())
            .bind(entity.to_string())
            .execute(&self.write)
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
        let mut tx = self.write.begin().await.map_err(db_err)?;
        for id in [event.from, event.into] {
            let row =
                sqlx::query("SELECT merged_into FROM entities WHERE namespace_id = ? AND id = ?")
                    .bind(&ns)
                    .bind(id.to_string())
                    .fetch_optional(&mut *tx)
                    .await
                    .map_err(db_err)?;
            let Some(row) = row else {
                return Err(Error::invalid_input(format!(
                    "entity {id} does not exist in this namespace"
                )));
            };
            if let Some(target) = row.get::<Option<String>, _>("merged_into") {
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
        .bind(json(&event.snapshot)?)
        .bind(to_rfc3339(&event.created_at))
        .bind(event.reverted_at.as_ref().map(to_rfc3339))
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
        let mut tx = self.write.begin().await.map_err(db_err)?;
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
        let at = to_rfc3339(&now);
        sqlx::query("UPDATE merge_events SET reverted_at = ? WHERE namespace_id = ? AND id = ?")
            .bind(&at)
            .bind(&ns_s)
            .bind(merge.to_string())
            .execute(&mut *tx)
            .await
            .map_err(db_err)?;
        tx.commit().await.map_err(db_err)?;
        // The stored text, so the returned event equals what a later read returns.
        event.reverted_at = Some(ts(&at)?);
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
                .fetch_all(&self.read)
                .await
                .map_err(db_err)?;
            return rows.iter().map(merge_row).collect();
        }
        let list = crate::any_list(entities);
        sqlx::query(crate::shared(
            &rememberstack_sql::entities::MERGES_OF_ENTITIES,
        ))
        .bind(&ns_s)
        .bind(&list)
        .bind(&list)
        .fetch_all(&self.read)
        .await
        .map_err(db_err)?
        .iter()
        .map(merge_row)
        .collect()
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use rememberstack_core::entities::{NewAlias, RESOLVER_VERSION};
    use rememberstack_core::store::traits::*;

    pub(crate) fn t(s: &str) -> Timestamp {
        rememberstack_core::time::parse_rfc3339(s).expect("timestamp")
    }

    /// The steps of each statement's plan that reach rows without an index on the
    /// statement's own column: a scan of a table, or a search narrowed only to the
    /// namespace. Each with the statement it belongs to.
    pub(crate) async fn plans_without_an_index(
        store: &SqliteStore,
        statements: &[String],
    ) -> Vec<String> {
        let mut bad = Vec::new();
        for statement in statements {
            let plan = sqlx::query(AssertSqlSafe(format!("EXPLAIN QUERY PLAN {statement}")))
                .fetch_all(&store.write)
                .await
                .expect("plan");
            for row in plan {
                let detail: String = row.get("detail");
                let scan = detail.starts_with("SCAN ") && !detail.starts_with("SCAN json_each");
                if scan || detail.ends_with("(namespace_id=?)") {
                    bad.push(format!("{detail}  <-  {statement}"));
                }
            }
        }
        bad
    }

    /// A fresh store in a temp dir with one namespace.
    pub(crate) async fn open() -> (tempfile::TempDir, SqliteStore, NamespaceId) {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = SqliteStore::open(dir.path().join("store").join("memory.db"))
            .await
            .expect("open");
        let ns = store
            .ensure_namespace("test", t("2024-01-01T00:00:00Z"))
            .await
            .expect("namespace")
            .id;
        (dir, store, ns)
    }

    fn decision(
        ns: NamespaceId,
        claim: ClaimId,
        ordinal: u32,
        entity: EntityId,
        name: &str,
    ) -> ResolutionDecision {
        ResolutionDecision {
            decision_id: DecisionId::new(),
            namespace_id: ns,
            claim_id: claim,
            document_id: DocumentId::new(),
            ordinal,
            name: name.to_string(),
            lemma: NewAlias::of(name).lemma,
            tier: "mint".into(),
            candidates: vec![],
            complete: true,
            t3_score: Some(0.25),
            t3_outcome: "no_candidates".into(),
            verdict: "new".into(),
            entity_id: entity,
            rationale: "no candidate".into(),
            model: None,
            resolver_version: RESOLVER_VERSION.into(),
            features: serde_json::json!({"k": 1}),
            created_at: t("2024-01-02T00:00:00Z"),
        }
    }

    fn mint_commit(ns: NamespaceId, claim: ClaimId, ordinal: u32, name: &str) -> ResolutionCommit {
        let d = decision(ns, claim, ordinal, EntityId::new(), name);
        let alias = NewAlias::of(name);
        ResolutionCommit {
            mint: Some((name.to_string(), alias.lemma.clone())),
            mention: Mention {
                claim_id: claim,
                start: Some(0),
                end: Some(name.len()),
                surface: name.to_string(),
            },
            aliases: vec![alias],
            exclusions: vec![],
            binding: None,
            decision: d,
        }
    }

    /// Mint an entity named `name` (with its alias and keys); returns its id.
    pub(crate) async fn mint(store: &SqliteStore, ns: NamespaceId, name: &str) -> EntityId {
        let c = mint_commit(ns, ClaimId::new(), 0, name);
        let id = c.decision.entity_id;
        store
            .commit_resolution(c, t("2024-01-02T00:00:00Z"))
            .await
            .expect("commit resolution");
        id
    }

    fn query(
        ns: NamespaceId,
        lemma: &str,
        trigrams: Vec<String>,
        phonetic: Vec<String>,
        limit: usize,
    ) -> BlockingQuery {
        BlockingQuery {
            namespace_id: ns,
            lemma: lemma.to_string(),
            trigrams,
            phonetic,
            limit,
        }
    }

    /// One tier by the ranking statement blocking used to run per tier (the
    /// reference): the `limit + 1` entities sharing most of `keys`, ties by id, then
    /// their matching alias lemmas; with the core key rule over the stored counts.
    async fn reference_tier(
        store: &SqliteStore,
        ns: NamespaceId,
        kind: &str,
        keys: &[String],
        limit: usize,
        via: BlockingTier,
    ) -> (Vec<rememberstack_core::entities::AliasHit>, bool) {
        let keys: Vec<String> = keys
            .iter()
            .filter(|k| !k.is_empty())
            .cloned()
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        if keys.is_empty() {
            return (vec![], false);
        }
        let mut counts: HashMap<String, u64> = HashMap::new();
        for k in &keys {
            let n: Option<i64> = sqlx::query_scalar(
                "SELECT n FROM entity_key_counts WHERE namespace_id = ? AND kind = ? AND key = ?",
            )
            .bind(ns.to_string())
            .bind(kind)
            .bind(k)
            .fetch_optional(&store.read)
            .await
            .unwrap();
            counts.insert(k.clone(), n.unwrap_or(0) as u64);
        }
        let (keys, pruned) = if kind == "lemma" {
            (keys, false)
        } else {
            rememberstack_core::entities::selective_keys(keys, |k| counts[k])
        };
        let list = (4..4 + keys.len())
            .map(|i| format!("?{i}"))
            .collect::<Vec<_>>()
            .join(",");
        let sql = format!(
            "WITH top AS (
                 SELECT entity_id, COUNT(DISTINCT key) AS shared FROM entity_keys
                 WHERE namespace_id = ?1 AND kind = ?2 AND key IN ({list})
                 GROUP BY entity_id ORDER BY shared DESC, entity_id LIMIT ?3)
             SELECT DISTINCT k.entity_id, k.alias_lemma, t.shared FROM top t
             JOIN entity_keys k ON k.namespace_id = ?1 AND k.kind = ?2
                  AND k.entity_id = t.entity_id AND k.key IN ({list})
             ORDER BY t.shared DESC, k.entity_id, k.alias_lemma"
        );
        let mut q = sqlx::query(AssertSqlSafe(sql))
            .bind(ns.to_string())
            .bind(kind)
            .bind(limit as i64 + 1);
        for k in &keys {
            q = q.bind(k);
        }
        let mut kept: Vec<(String, String)> = vec![];
        let mut entities: Vec<String> = vec![];
        let mut truncated = pruned;
        for r in q.fetch_all(&store.read).await.unwrap() {
            let entity: String = r.get("entity_id");
            if entities.last() != Some(&entity) {
                entities.push(entity.clone());
            }
            if entities.len() > limit {
                truncated = true;
                break;
            }
            kept.push((entity, r.get("alias_lemma")));
        }
        kept.sort();
        let hits = kept
            .into_iter()
            .map(|(e, alias_lemma)| rememberstack_core::entities::AliasHit {
                entity_id: parse_id(&e).unwrap(),
                alias_lemma,
                via,
            })
            .collect();
        (hits, truncated)
    }

    /// A blocking key's rows are read through the table's primary key, which
    /// begins (namespace, kind, key) and covers the read: the schema keeps no
    /// second index for it.
    #[tokio::test]
    async fn blocking_keys_are_read_through_their_primary_key() {
        let (_dir, store, _ns) = open().await;
        let plan: Vec<String> = sqlx::query(
            "EXPLAIN QUERY PLAN WITH wanted(kind, key) AS (VALUES (?, ?), (?, ?))
             SELECT k.kind, k.key, k.entity_id, k.alias_lemma FROM wanted w
             JOIN entity_keys k ON k.namespace_id = ? AND k.kind = w.kind AND k.key = w.key",
        )
        .fetch_all(&store.write)
        .await
        .expect("plan")
        .iter()
        .map(|r| r.get::<String, _>("detail"))
        .collect();
        assert!(
            plan.iter().any(|d| d.contains(
                "COVERING INDEX sqlite_autoindex_entity_keys_1 (namespace_id=? AND kind=? AND key=?)"
            )),
            "{}",
            plan.join("\n")
        );
    }

    #[tokio::test]
    async fn one_statement_blocking_matches_the_per_tier_ranking() {
        let (_dir, store, ns) = open().await;
        let first = [
            "Jon", "John", "Jonathan", "Joan", "Johanna", "Ann", "Anna", "Hannah",
        ];
        let last = ["Smith", "Smyth", "Schmidt", "Smithson", ""];
        for f in first {
            for l in last {
                mint(&store, ns, format!("{f} {l}").trim()).await;
            }
        }
        // Same lemma, several entities; and keys common enough to be skipped.
        for _ in 0..3 {
            mint(&store, ns, "Acme").await;
        }
        for i in 0..205 {
            mint(&store, ns, &format!("Person{i}")).await;
        }
        let probes = [
            "Jon Smith",
            "Johnathan Smithe",
            "Anne Schmit",
            "Acme",
            "Hanna",
            "Person7",
            "Personne Smyth",
            "Zed",
            "",
        ];
        // Every trigram of these keys is common: the rarest are read separately.
        let common: Vec<String> = NewAlias::of("Person1")
            .trigrams
            .into_iter()
            .filter(|g| NewAlias::of("Person2").trigrams.contains(g))
            .collect();
        let mut cases: Vec<(String, Vec<String>, Vec<String>)> = probes
            .iter()
            .map(|name| {
                let a = NewAlias::of(name);
                (a.lemma, a.trigrams, a.phonetic)
            })
            .collect();
        cases.push((String::new(), common, vec![]));
        let mut compared = 0;
        for (lemma, trigrams, phonetic) in cases {
            for limit in [1, 3, 50] {
                let got = store
                    .block_entities(&query(
                        ns,
                        &lemma,
                        trigrams.clone(),
                        phonetic.clone(),
                        limit,
                    ))
                    .await
                    .unwrap();
                let mut want = BlockingResult::default();
                for (kind, keys, via) in [
                    ("lemma", vec![lemma.clone()], BlockingTier::T0),
                    ("tri", trigrams.clone(), BlockingTier::T1),
                    ("dm", phonetic.clone(), BlockingTier::T2),
                ] {
                    let (hits, truncated) =
                        reference_tier(&store, ns, kind, &keys, limit, via).await;
                    want.hits.extend(hits);
                    want.truncated |= truncated;
                }
                assert_eq!(got, want, "`{lemma}` {trigrams:?} with limit {limit}");
                compared += usize::from(!want.hits.is_empty());
            }
        }
        assert!(compared >= 20, "the probes must find something: {compared}");
    }

    #[tokio::test]
    async fn cached_blocking_keys_follow_every_writer_of_the_file() {
        let (dir, store, ns) = open().await;
        let alias = NewAlias::of("Jonathan Smith");
        let q = query(
            ns,
            &alias.lemma,
            alias.trigrams.clone(),
            alias.phonetic.clone(),
            10,
        );
        let first = mint(&store, ns, "Jonathan Smith").await;
        let seen = store.block_entities(&q).await.unwrap();
        assert!(seen.hits.iter().all(|h| h.entity_id == first), "{seen:?}");
        // This process's own write is seen at once (the cache moves with it).
        let second = mint(&store, ns, "Jonathan Smith").await;
        let seen = store.block_entities(&q).await.unwrap();
        assert!(seen.hits.iter().any(|h| h.entity_id == second), "{seen:?}");
        // Another process writing the same file moves the stamp: its key rows are seen.
        let other = SqliteStore::open(dir.path().join("store").join("memory.db"))
            .await
            .unwrap();
        let third = mint(&other, ns, "Jonathan Smyth").await;
        let seen = store.block_entities(&q).await.unwrap();
        assert!(seen.hits.iter().any(|h| h.entity_id == third), "{seen:?}");
        // Removed key rows (a forget, an unmerge) are gone from blocking too.
        sqlx::query("DELETE FROM entity_keys WHERE entity_id = ?")
            .bind(first.to_string())
            .execute(&other.write)
            .await
            .unwrap();
        let seen = store.block_entities(&q).await.unwrap();
        assert!(seen.hits.iter().all(|h| h.entity_id != first), "{seen:?}");
        // The cached answer is the uncached one.
        let fresh = SqliteStore::open(dir.path().join("store").join("memory.db"))
            .await
            .unwrap();
        assert_eq!(fresh.block_entities(&q).await.unwrap(), seen);
    }
}
