-- BM25 for the three lexical channels (issue 31 §3), computed in SQL from term
-- statistics the store keeps, as SQLite's FTS5 `bm25()` computes them from its
-- index: no extension beyond pgvector is assumed.
--
-- Tokens. The lexical rows are re-derived with `rs_english`: Snowball English
-- stemming like `english`, but keeping stop words (FTS5's `porter unicode61`
-- keeps them, and they count in a row's length), and a hyphenated word indexed
-- as its parts only (`well-known` is `well`, `known`, as `unicode61` splits it;
-- `english` adds the whole word as a third token). Still unlike FTS5: no
-- diacritic folding (`unaccent` is not immutable), and numbers such as `3.5`,
-- e-mail addresses and URLs stay one token.
--
-- Statistics, per namespace and channel (`chunk`, `claim`, `fact`), so one
-- namespace's corpus never shapes another's ranking (SQLite keeps one FTS5 table
-- per namespace and channel for the same reason):
-- * each lexical row's length in tokens (`len`, generated beside `tsv`);
-- * `lexical_totals`: how many rows and how many tokens in all;
-- * `lexical_terms`: per term, how many rows hold it (the document frequency).
-- Statement-level triggers keep them in the writing transaction, whatever deletes
-- the rows (the store's statements, a forget's scrub, the foreign key's cascade).
-- A term no row holds any more is deleted, so a forgotten row's words do not stay
-- behind. Lock order: the namespace's `change_stamps` row first (every insert or
-- delete of a base row already holds it until commit, so the writers of one
-- namespace's statistics are serialised and never deadlock), then the totals row,
-- then the term rows in term order.
--
-- Ranking: `rs_bm25_weights` gives the query terms' IDFs and the average length,
-- from which the store's statements score each row as FTS5 does (k1 = 1.2,
-- b = 0.75, IDF = ln((N - df + 0.5) / (df + 0.5)), floored at 1e-6; the
-- expression is `BM25_SCORE` in `src/search.rs`): higher is better, the negation
-- of FTS5's `bm25()`.

CREATE TEXT SEARCH DICTIONARY rs_english_stem (TEMPLATE = snowball, Language = english);
CREATE TEXT SEARCH CONFIGURATION rs_english (COPY = pg_catalog.english);
ALTER TEXT SEARCH CONFIGURATION rs_english
    ALTER MAPPING FOR asciiword, word, hword_part, hword_asciipart WITH rs_english_stem;
ALTER TEXT SEARCH CONFIGURATION rs_english DROP MAPPING FOR asciihword, hword, numhword;

-- A row's length: its tokens (every position of every lexeme).
CREATE FUNCTION rs_lexical_length(tsv tsvector) RETURNS integer
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN (SELECT COALESCE(SUM(COALESCE(array_length(u.positions, 1), 1)), 0)::integer
              FROM unnest(tsv) AS u);

DROP INDEX chunk_lexical_tsv;
DROP INDEX claim_lexical_tsv;
DROP INDEX fact_lexical_tsv;
ALTER TABLE chunk_lexical DROP COLUMN tsv,
    ADD COLUMN tsv tsvector GENERATED ALWAYS AS (to_tsvector('rs_english'::regconfig, text)) STORED,
    ADD COLUMN len integer GENERATED ALWAYS AS
        (rs_lexical_length(to_tsvector('rs_english'::regconfig, text))) STORED;
ALTER TABLE claim_lexical DROP COLUMN tsv,
    ADD COLUMN tsv tsvector GENERATED ALWAYS AS (to_tsvector('rs_english'::regconfig, text)) STORED,
    ADD COLUMN len integer GENERATED ALWAYS AS
        (rs_lexical_length(to_tsvector('rs_english'::regconfig, text))) STORED;
ALTER TABLE fact_lexical DROP COLUMN tsv,
    ADD COLUMN tsv tsvector GENERATED ALWAYS AS (to_tsvector('rs_english'::regconfig, text)) STORED,
    ADD COLUMN len integer GENERATED ALWAYS AS
        (rs_lexical_length(to_tsvector('rs_english'::regconfig, text))) STORED;
CREATE INDEX chunk_lexical_tsv ON chunk_lexical USING gin (tsv);
CREATE INDEX claim_lexical_tsv ON claim_lexical USING gin (tsv);
CREATE INDEX fact_lexical_tsv ON fact_lexical USING gin (tsv);

CREATE TABLE lexical_totals (
    namespace_id text COLLATE "C" NOT NULL,
    channel      text NOT NULL,
    docs         bigint NOT NULL,
    tokens       bigint NOT NULL,
    PRIMARY KEY (namespace_id, channel)
);

CREATE TABLE lexical_terms (
    namespace_id text COLLATE "C" NOT NULL,
    channel      text NOT NULL,
    term         text COLLATE "C" NOT NULL,
    df           bigint NOT NULL,
    PRIMARY KEY (namespace_id, channel, term)
);

INSERT INTO lexical_totals (namespace_id, channel, docs, tokens)
    SELECT namespace_id, 'chunk', COUNT(*), SUM(len) FROM chunk_lexical GROUP BY namespace_id
    UNION ALL
    SELECT namespace_id, 'claim', COUNT(*), SUM(len) FROM claim_lexical GROUP BY namespace_id
    UNION ALL
    SELECT namespace_id, 'fact', COUNT(*), SUM(len) FROM fact_lexical GROUP BY namespace_id;
INSERT INTO lexical_terms (namespace_id, channel, term, df)
    SELECT l.namespace_id, 'chunk', u.lexeme COLLATE "C", COUNT(*)
      FROM chunk_lexical l, unnest(l.tsv) AS u GROUP BY l.namespace_id, u.lexeme
    UNION ALL
    SELECT l.namespace_id, 'claim', u.lexeme COLLATE "C", COUNT(*)
      FROM claim_lexical l, unnest(l.tsv) AS u GROUP BY l.namespace_id, u.lexeme
    UNION ALL
    SELECT l.namespace_id, 'fact', u.lexeme COLLATE "C", COUNT(*)
      FROM fact_lexical l, unnest(l.tsv) AS u GROUP BY l.namespace_id, u.lexeme;

-- Keeps `lexical_totals` and `lexical_terms` of channel TG_ARGV[0] in step with
-- the rows a statement removed (`old_rows`) and added (`new_rows`).
CREATE FUNCTION rs_lexical_statistics() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    ch text := TG_ARGV[0];
BEGIN
    IF TG_OP IN ('DELETE', 'UPDATE') THEN
        PERFORM 1 FROM change_stamps
          WHERE namespace_id IN (SELECT namespace_id FROM old_rows)
          ORDER BY namespace_id FOR NO KEY UPDATE;
        UPDATE lexical_totals t SET docs = t.docs - d.docs, tokens = t.tokens - d.tokens
          FROM (SELECT namespace_id, COUNT(*) AS docs, SUM(len) AS tokens
                  FROM old_rows GROUP BY namespace_id) d
         WHERE t.namespace_id = d.namespace_id AND t.channel = ch;
        PERFORM 1 FROM lexical_terms s
          WHERE s.channel = ch AND (s.namespace_id, s.term) IN
                (SELECT r.namespace_id, u.lexeme COLLATE "C" FROM old_rows r, unnest(r.tsv) AS u)
          ORDER BY s.namespace_id, s.term FOR NO KEY UPDATE;
        UPDATE lexical_terms s SET df = s.df - d.n
          FROM (SELECT r.namespace_id, u.lexeme COLLATE "C" AS term, COUNT(*) AS n
                  FROM old_rows r, unnest(r.tsv) AS u GROUP BY 1, 2) d
         WHERE s.namespace_id = d.namespace_id AND s.channel = ch AND s.term = d.term;
        DELETE FROM lexical_terms s
         WHERE s.channel = ch AND s.df <= 0 AND (s.namespace_id, s.term) IN
               (SELECT r.namespace_id, u.lexeme COLLATE "C" FROM old_rows r, unnest(r.tsv) AS u);
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        PERFORM 1 FROM change_stamps
          WHERE namespace_id IN (SELECT namespace_id FROM new_rows)
          ORDER BY namespace_id FOR NO KEY UPDATE;
        INSERT INTO lexical_totals (namespace_id, channel, docs, tokens)
            SELECT namespace_id, ch, COUNT(*), SUM(len) FROM new_rows
             GROUP BY namespace_id ORDER BY namespace_id
            ON CONFLICT (namespace_id, channel) DO UPDATE
               SET docs = lexical_totals.docs + EXCLUDED.docs,
                   tokens = lexical_totals.tokens + EXCLUDED.tokens;
        INSERT INTO lexical_terms (namespace_id, channel, term, df)
            SELECT r.namespace_id, ch, u.lexeme COLLATE "C", COUNT(*)
              FROM new_rows r, unnest(r.tsv) AS u
             GROUP BY 1, 3 ORDER BY 1, 3
            ON CONFLICT (namespace_id, channel, term) DO UPDATE
               SET df = lexical_terms.df + EXCLUDED.df;
    END IF;
    RETURN NULL;
END
$$;

DO $$
DECLARE
    ch text;
BEGIN
    FOREACH ch IN ARRAY ARRAY['chunk', 'claim', 'fact']
    LOOP
        EXECUTE format('CREATE TRIGGER %I AFTER INSERT ON %I REFERENCING NEW TABLE AS new_rows
                        FOR EACH STATEMENT EXECUTE FUNCTION rs_lexical_statistics(%L)',
                       ch || '_lexical_count_insert', ch || '_lexical', ch);
        EXECUTE format('CREATE TRIGGER %I AFTER DELETE ON %I REFERENCING OLD TABLE AS old_rows
                        FOR EACH STATEMENT EXECUTE FUNCTION rs_lexical_statistics(%L)',
                       ch || '_lexical_count_delete', ch || '_lexical', ch);
        EXECUTE format('CREATE TRIGGER %I AFTER UPDATE ON %I
                        REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
                        FOR EACH STATEMENT EXECUTE FUNCTION rs_lexical_statistics(%L)',
                       ch || '_lexical_count_update', ch || '_lexical', ch);
    END LOOP;
END
$$;

-- A query of `terms`: each term a phrase of its tokens, the phrases OR-ed (as the
-- SQLite store quotes each term as an FTS5 string and joins them with OR).
CREATE AGGREGATE rs_tsquery_any(tsquery) (SFUNC = tsquery_or, STYPE = tsquery);
CREATE FUNCTION rs_lexical_query(terms text[]) RETURNS tsquery
    LANGUAGE sql STABLE PARALLEL SAFE
    RETURN (SELECT rs_tsquery_any(phraseto_tsquery('rs_english'::regconfig, t))
              FROM unnest(terms) AS t);

-- The BM25 weights of a query in one namespace's channel: the query's lexemes
-- (a term's tokens, in term order; a lexeme two terms share counts twice, as two
-- FTS5 phrases do), each one's IDF, and the channel's average row length. No row
-- when the channel is empty or no lexeme occurs in it.
CREATE FUNCTION rs_bm25_weights(ns text, ch text, terms text[])
    RETURNS TABLE (lexemes text[], idfs double precision[], avgdl double precision)
    LANGUAGE sql STABLE PARALLEL SAFE ROWS 1
BEGIN ATOMIC
    SELECT array_agg(q.lexeme ORDER BY q.ord, q.lexeme),
           array_agg(CASE WHEN i.idf <= 0 THEN 1e-6 ELSE i.idf END ORDER BY q.ord, q.lexeme),
           t.tokens::float8 / t.docs
      FROM lexical_totals t
      CROSS JOIN LATERAL (
          SELECT u.ord, x.lexeme COLLATE "C" AS lexeme
            FROM unnest(terms) WITH ORDINALITY AS u(term, ord),
                 unnest(to_tsvector('rs_english'::regconfig, u.term)) AS x) q
      JOIN lexical_terms s
        ON s.namespace_id = t.namespace_id AND s.channel = t.channel AND s.term = q.lexeme
      CROSS JOIN LATERAL (
          SELECT ln((t.docs - s.df + 0.5)::float8 / (s.df + 0.5)::float8) AS idf) i
     WHERE t.namespace_id = ns AND t.channel = ch AND t.docs > 0
     GROUP BY t.docs, t.tokens;
END;
