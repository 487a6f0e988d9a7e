//! Crash equivalence (issue 30): `remember process` killed with SIGKILL at many
//! points of a run and resumed each time leaves the same memory as one
//! uninterrupted run of the same input: documents, versions, chunks, claims with
//! their currency, entities, facts with their windows and evidence, and the
//! ledger's terminal states, compared as a canonical digest (ids and wall-clock
//! times, which legitimately differ, are left out or replaced by what they name).
//!
//! The kill points come from a seeded schedule: each killed run is let through one
//! or two batches (the processes log each batch) and then a random few
//! milliseconds into the next, so every resume makes progress and no item is
//! killed often enough to be dead-lettered. Batches are kept small so that the
//! kills spread over the whole run, every stage included. On both stores the
//! resume takes the dead process's leases at once (owner liveness: a file lock on
//! the embedded store, a session advisory lock on PostgreSQL), never by waiting
//! out the 300 s lease. PostgreSQL runs when `DATABASE_URL` is set. The corpus
//! makes about 2,200 claims.

use serde_json::Value;
use sqlx::{Executor, Row};
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Kills per interrupted run, at least.
const KILLS: usize = 20;

/// A small deterministic generator (SplitMix64): the schedule and the corpus
/// depend on the seed alone.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len() as u64) as usize]
    }
}

const FIRST: &[&str] = &[
    "Maria", "Joao", "Alice", "Bruno", "Chiara", "Dmitri", "Elena", "Farid", "Greta", "Hiro",
    "Ines", "Jonas", "Keiko", "Lars", "Mona", "Nadia", "Omar", "Paula", "Quentin", "Rosa",
];
const LAST: &[&str] = &[
    "Costa", "Silva", "Novak", "Berg", "Rossi", "Tanaka", "Weber", "Haddad", "Lund", "Moreau",
];
const COMPANIES: &[&str] = &[
    "Northwind",
    "Globex",
    "Initech",
    "Umbrella Labs",
    "Hooli",
    "Vandelay Industries",
    "Stark Foods",
    "Acme Robotics",
    "Wayne Shipping",
    "Tyrell Systems",
];
const CITIES: &[&str] = &[
    "Lisbon", "Berlin", "Oslo", "Kyoto", "Porto", "Vienna", "Madrid", "Dublin", "Prague", "Turin",
];
const MONTHS: &[&str] = &["January", "March", "April", "June", "September", "November"];
const CHATTER: &[&str] = &[
    "The nightly backup failed again on Saturday.",
    "I raised the storage quota to two terabytes.",
    "We should move the runners to the new rack next week.",
    "The quarterly report is due on Friday afternoon.",
    "The team lunch moved to the Italian place downstairs.",
    "The release candidate passed every integration test.",
    "I finished reading the book about the history of bridges.",
    "The garden needs watering twice a week in summer.",
];

/// A person's full name.
fn person(rng: &mut Rng) -> String {
    format!("{} {}", rng.pick(FIRST), rng.pick(LAST))
}

/// One message of a session: a statement the offline extractor turns into claims
/// and facts (employment, places, foundings), or small talk.
fn message(rng: &mut Rng) -> String {
    let year = 2015 + rng.below(9);
    match rng.below(7) {
        0 => format!("{} works for {}.", person(rng), rng.pick(COMPANIES)),
        1 => format!(
            "{} moved to {} in {} {year}.",
            person(rng),
            rng.pick(CITIES),
            rng.pick(MONTHS)
        ),
        2 => format!("{} joined {} in {year}.", person(rng), rng.pick(COMPANIES)),
        3 => format!(
            "{} is headquartered in {}.",
            rng.pick(COMPANIES),
            rng.pick(CITIES)
        ),
        4 => format!("{} founded {} in {year}.", person(rng), rng.pick(COMPANIES)),
        5 => format!("{} lives in {}.", person(rng), rng.pick(CITIES)),
        _ => rng.pick(CHATTER).to_string(),
    }
}

/// `sessions` conversation files in `dir/sessions` and two Markdown notes in
/// `dir/notes`.
fn corpus(dir: &Path, seed: u64, sessions: usize, messages: usize) {
    let mut rng = Rng(seed);
    let chats = dir.join("sessions");
    std::fs::create_dir_all(&chats).unwrap();
    for s in 0..sessions {
        let speakers = [person(&mut rng), person(&mut rng)];
        let msgs: Vec<Value> = (0..messages)
            .map(|m| {
                serde_json::json!({
                    "event_id": format!("s{s}m{m}"),
                    "speaker": speakers[m % 2],
                    "text": message(&mut rng),
                })
            })
            .collect();
        let body = serde_json::json!({
            "session_time": format!("2024-{:02}-{:02}T09:30:00Z", 1 + s % 12, 1 + s % 28),
            "messages": msgs,
        });
        std::fs::write(chats.join(format!("session-{s:03}.json")), body.to_string()).unwrap();
    }
    let notes = dir.join("notes");
    std::fs::create_dir_all(&notes).unwrap();
    for n in 0..2 {
        let mut md = format!("# Team notes {n}\n\n");
        for p in 0..(messages / 2) {
            if p % 8 == 0 {
                md.push_str(&format!("## Part {p}\n\n"));
            }
            md.push_str(&format!("{} {}\n\n", message(&mut rng), message(&mut rng)));
        }
        std::fs::write(notes.join(format!("notes-{n}.md")), md).unwrap();
    }
}

/// Where a store lives.
enum Place {
    Sqlite(PathBuf),
    Postgres { url: String, schema: String },
}

/// One store and how to run `remember` on it.
struct Target {
    place: Place,
    config: PathBuf,
    env: Vec<(&'static str, String)>,
}

impl Target {
    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_remember"));
        for (k, _) in std::env::vars() {
            if k.starts_with("REMEMBERSTACK_") {
                cmd.env_remove(k);
            }
        }
        // Deterministic vectors, no model to load or download.
        cmd.env("REMEMBERSTACK_EMBEDDER", "hashing");
        cmd.envs(self.env.iter().map(|(k, v)| (k, v)));
        match &self.place {
            Place::Sqlite(db) => {
                cmd.arg("--db").arg(db);
            }
            Place::Postgres { url, schema } => {
                cmd.env("REMEMBERSTACK_PG_SCHEMA", schema)
                    .arg("--db")
                    .arg(url);
            }
        }
        cmd.arg("--config").arg(&self.config).args(args);
        cmd
    }

    fn ok(&self, args: &[&str]) -> Value {
        let out = self.command(args).output().unwrap();
        assert!(
            out.status.success(),
            "{args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap_or(Value::Null)
    }

    /// Ingest the corpus (the notes as living documents), then a second version of
    /// each note with a line gone and one added: the claims of the line retire.
    fn ingest(&self, corpus: &Path) {
        let time = "2024-06-01T12:00:00Z";
        let sessions = corpus.join("sessions");
        self.ok(&[
            "ingest",
            sessions.to_str().unwrap(),
            "--source-time",
            time,
            "--json",
        ]);
        let notes = corpus.join("notes");
        let living = ["--mode", "living", "--source-time", time, "--json"];
        self.ok(&[&["ingest", notes.to_str().unwrap()][..], &living[..]].concat());
        for (name, added) in [
            ("notes-0.md", "Greta Lund moved to Oslo in June 2023."),
            ("notes-1.md", "Hiro Tanaka works for Globex."),
        ] {
            let original = std::fs::read_to_string(notes.join(name)).unwrap();
            // The first paragraph after the title is replaced.
            let mut paragraphs: Vec<&str> = original.split("\n\n").collect();
            paragraphs[2] = added;
            let edited = corpus.join(format!("edited-{name}"));
            std::fs::write(&edited, paragraphs.join("\n\n")).unwrap();
            let source_ref = notes.join(name).canonicalize().unwrap();
            self.ok(&[
                "ingest",
                edited.to_str().unwrap(),
                "--source-ref",
                source_ref.to_str().unwrap(),
                "--mode",
                "living",
                "--source-time",
                "2024-07-01T12:00:00Z",
                "--json",
            ]);
            std::fs::remove_file(&edited).unwrap();
        }
    }

    /// One uninterrupted `remember process`; how long it took.
    fn process(&self) -> Duration {
        let started = Instant::now();
        self.ok(&["process", "--json"]);
        started.elapsed()
    }

    /// `remember process` killed with SIGKILL at the points of a seeded schedule
    /// spread over a run that takes `run` uninterrupted and finishes `items` work
    /// items, resumed after each, until a run ends on its own. Returns the kills made, how many of them left
    /// leased work and how many resumes released a killed process's leases, and
    /// per resume the seconds until its first batch finished.
    fn process_with_kills(
        &self,
        seed: u64,
        run: Duration,
        items: usize,
        wait_after_kill: Duration,
    ) -> (usize, usize, usize, Vec<f64>) {
        let mut rng = Rng(seed);
        // The first `KILLS` runs are killed, the next one finishes on its own:
        // each killed run lives a random share of the time the uninterrupted run
        // would still need (on average half of a share of one more than the kills
        // still to make, so work is left for the last), and at least until it
        // finished one batch, so every resume makes progress, the kills spread
        // over the whole run, and no item is killed often enough to be
        // dead-lettered. The time still needed is the smaller of two estimates:
        // the run's time less the killed processes' lives, and the run's time
        // times the share of items not done. Neither alone holds: a resume's
        // first batch can do more than its share of the clock, and the items of
        // the later stages take longer than the first ones.
        let mut lived = Duration::ZERO;
        let mut share = |kills: usize, done: usize, lived: Duration| {
            let by_items = 1.0 - (done as f64 / items.max(1) as f64).min(1.0);
            let by_clock = 1.0 - (lived.as_secs_f64() / run.as_secs_f64().max(1e-3)).min(1.0);
            let still = (KILLS - kills + 1) as f64;
            let ms = run.as_millis() as f64 * by_items.min(by_clock) / still;
            Duration::from_millis(rng.below((ms as u64).max(1)))
        };
        let mut kills = 0;
        let mut left_leases = 0;
        let mut released = 0;
        let mut first_batch = Vec::new();
        loop {
            let mut child = self
                .command(&["process", "--json"])
                .env("REMEMBERSTACK_LOG", "warn,rememberstack::work=debug")
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            let started = Instant::now();
            let stderr = child.stderr.take().unwrap();
            let (tx, rx) = mpsc::channel::<String>();
            let reader = std::thread::spawn(move || {
                for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                    let _ = tx.send(line);
                }
            });
            let done_at_start = self.done();
            let life = (kills < KILLS).then(|| share(kills, done_at_start, lived));
            // Nor does it do more than a share of the items left (one more share
            // than the kills still to make): a resume that would finish the run
            // inside its life is killed once it has done that many, so the run
            // cannot end before the last kill however fast the machine is.
            let cap = done_at_start
                + (items.saturating_sub(done_at_start) / (KILLS.saturating_sub(kills) + 1)).max(1);
            let mut log = Vec::new();
            let finished = loop {
                match rx.recv() {
                    Ok(line) => {
                        let batch = line.contains("batch ran");
                        log.push(line);
                        if batch {
                            break false;
                        }
                    }
                    Err(_) => break true,
                }
            };
            if kills > 0 && !finished {
                first_batch.push(started.elapsed().as_secs_f64());
            }
            if log
                .iter()
                .any(|l| l.contains("released the leases of a process"))
            {
                released += 1;
            }
            if let (false, Some(life)) = (finished, life) {
                let deadline = started + life;
                while child.try_wait().unwrap().is_none() {
                    let left = deadline.saturating_duration_since(Instant::now());
                    if left.is_zero() || self.done() >= cap {
                        break;
                    }
                    std::thread::sleep(left.min(Duration::from_millis(100)));
                }
                if child.try_wait().unwrap().is_none() {
                    child.kill().unwrap(); // SIGKILL
                    child.wait().unwrap();
                    lived += started.elapsed();
                    kills += 1;
                    if self.running() > 0 {
                        left_leases += 1;
                    }
                    drop(rx);
                    let _ = reader.join();
                    std::thread::sleep(wait_after_kill);
                    continue;
                }
            }
            let status = child.wait().unwrap();
            for line in rx.try_iter() {
                log.push(line);
            }
            let _ = reader.join();
            assert!(
                status.success(),
                "the resumed run failed:\n{}",
                log.join("\n")
            );
            return (kills, left_leases, released, first_batch);
        }
    }

    /// Work items finished now.
    fn done(&self) -> usize {
        self.query("SELECT CAST(COUNT(*) AS TEXT) FROM processing_state WHERE status = 'done'")[0]
            [0]
        .parse()
        .unwrap()
    }

    /// Work items leased now.
    fn running(&self) -> usize {
        self.query("SELECT CAST(COUNT(*) AS TEXT) FROM processing_state WHERE status = 'running'")
            [0][0]
            .parse()
            .unwrap()
    }

    /// The rows of `sql`, every column read as text.
    fn query(&self, sql: &'static str) -> Vec<Vec<String>> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let mut out = Vec::new();
            match &self.place {
                Place::Sqlite(db) => {
                    let opts = sqlx::sqlite::SqliteConnectOptions::new()
                        .filename(db)
                        .read_only(true);
                    let pool = sqlx::sqlite::SqlitePoolOptions::new()
                        .max_connections(1)
                        .connect_with(opts)
                        .await
                        .unwrap();
                    for row in sqlx::query(sql).fetch_all(&pool).await.unwrap() {
                        out.push(
                            (0..row.len())
                                .map(|i| row.get::<Option<String>, _>(i).unwrap_or_default())
                                .collect(),
                        );
                    }
                    pool.close().await;
                }
                Place::Postgres { url, schema } => {
                    let pool = pg_pool(url, schema).await;
                    for row in sqlx::query(sql).fetch_all(&pool).await.unwrap() {
                        out.push(
                            (0..row.len())
                                .map(|i| row.get::<Option<String>, _>(i).unwrap_or_default())
                                .collect(),
                        );
                    }
                    pool.close().await;
                }
            }
            out
        })
    }

    /// The canonical digest: one line per record, sorted.
    fn digest(&self) -> Vec<String> {
        let mut lines: Vec<String> = DIGEST
            .iter()
            .flat_map(|(name, sql)| {
                self.query(sql)
                    .into_iter()
                    .map(move |cols| format!("{name}\t{}", cols.join("\t")))
            })
            .collect();
        lines.sort();
        lines
    }
}

async fn pg_pool(url: &str, schema: &str) -> sqlx::PgPool {
    let in_schema = format!("SET search_path TO \"{schema}\", public");
    sqlx::postgres::PgPoolOptions::new()
        .max_connections(1)
        .after_connect(move |conn, _| {
            let sql = in_schema.clone();
            Box::pin(async move {
                conn.execute(sqlx::AssertSqlSafe(sql)).await?;
                Ok(())
            })
        })
        .connect(url)
        .await
        .expect("connect to DATABASE_URL")
}

/// The digest's queries (the same SQL on both stores): every column text, no id
/// and no wall-clock time; records that refer to others name them by content.
const DIGEST: &[(&str, &str)] = &[
    (
        "document",
        "SELECT d.source_kind, d.source_ref, d.mode, CAST(d.version_count AS TEXT),
                CAST(cv.ordinal AS TEXT), CAST(lv.ordinal AS TEXT)
         FROM documents d
         LEFT JOIN document_versions cv ON cv.namespace_id = d.namespace_id AND cv.id = d.current_version_id
         LEFT JOIN document_versions lv ON lv.namespace_id = d.namespace_id AND lv.id = d.latest_version_id",
    ),
    (
        "version",
        "SELECT d.source_ref, CAST(v.ordinal AS TEXT), v.content_sha256, v.format,
                CAST(v.source_modified_at AS TEXT)
         FROM document_versions v
         JOIN documents d ON d.namespace_id = v.namespace_id AND d.id = v.document_id",
    ),
    (
        "chunk",
        "SELECT d.source_ref, CAST(v.ordinal AS TEXT), CAST(c.ordinal AS TEXT), c.content_hash
         FROM chunks c
         JOIN document_versions v ON v.namespace_id = c.namespace_id AND v.id = c.version_id
         JOIN documents d ON d.namespace_id = c.namespace_id AND d.id = c.document_id",
    ),
    (
        "claim",
        "SELECT d.source_ref, c.claim_key, c.text,
                CASE WHEN c.is_current THEN 'current' ELSE 'not current' END,
                CAST(c.valid_from AS TEXT), CAST(c.valid_until AS TEXT),
                CAST((SELECT COUNT(*) FROM chunk_claims cc
                      WHERE cc.namespace_id = c.namespace_id AND cc.claim_id = c.id) AS TEXT)
         FROM claims c
         JOIN documents d ON d.namespace_id = c.namespace_id AND d.id = c.document_id",
    ),
    (
        "entity",
        "SELECT e.canonical_name, e.lemma, COALESCE(m.canonical_name, ''),
                CAST((SELECT COUNT(*) FROM entity_mentions x
                      WHERE x.namespace_id = e.namespace_id AND x.entity_id = e.id) AS TEXT)
         FROM entities e
         LEFT JOIN entities m ON m.namespace_id = e.namespace_id AND m.id = e.merged_into",
    ),
    (
        "fact",
        "SELECT s.canonical_name, f.kind, COALESCE(f.predicate, ''), COALESCE(o.canonical_name, ''),
                f.statement, CAST(f.valid_from AS TEXT), CAST(f.valid_until AS TEXT),
                f.valid_precision, f.validity_kind,
                CASE WHEN f.invalidated_at IS NULL THEN 'open' ELSE 'closed' END,
                COALESCE((SELECT x.statement FROM facts x
                          WHERE x.namespace_id = f.namespace_id AND x.id = f.superseded_by), ''),
                CASE WHEN f.contradiction_group IS NULL THEN '' ELSE 'contradiction' END,
                CAST((SELECT COUNT(DISTINCT c.document_id) FROM fact_evidence e
                      JOIN claims c ON c.namespace_id = e.namespace_id AND c.id = e.claim_id
                      WHERE e.namespace_id = f.namespace_id AND e.fact_id = f.id
                        AND e.stance = 'support' AND c.is_current) AS TEXT),
                CAST((SELECT COUNT(*) FROM fact_evidence e
                      WHERE e.namespace_id = f.namespace_id AND e.fact_id = f.id) AS TEXT)
         FROM facts f
         JOIN entities s ON s.namespace_id = f.namespace_id AND s.id = f.subject_id
         LEFT JOIN entities o ON o.namespace_id = f.namespace_id AND o.id = f.object_id",
    ),
    (
        "ledger",
        "SELECT stage, status, CAST(COUNT(*) AS TEXT) FROM processing_state GROUP BY stage, status",
    ),
];

/// Lines in one digest and not in the other (each at most `limit`).
fn difference(a: &[String], b: &[String], limit: usize) -> String {
    let mut counts: BTreeMap<&str, i64> = BTreeMap::new();
    for l in a {
        *counts.entry(l).or_default() += 1;
    }
    for l in b {
        *counts.entry(l).or_default() -= 1;
    }
    let only_a: Vec<&str> = counts
        .iter()
        .filter(|(_, n)| **n > 0)
        .map(|(l, _)| *l)
        .collect();
    let only_b: Vec<&str> = counts
        .iter()
        .filter(|(_, n)| **n < 0)
        .map(|(l, _)| *l)
        .collect();
    format!(
        "{} lines only in the uninterrupted run, {} only in the resumed one\n< {}\n> {}",
        only_a.len(),
        only_b.len(),
        only_a
            .iter()
            .take(limit)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n< "),
        only_b
            .iter()
            .take(limit)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n> "),
    )
}

/// The seed of the kill schedule (`REMEMBERSTACK_TEST_CRASH_SEED` to explore others).
fn seed() -> u64 {
    std::env::var("REMEMBERSTACK_TEST_CRASH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(30)
}

/// A configuration of small batches, so that the kills spread over every stage.
fn small_batches(dir: &Path) -> PathBuf {
    let path = dir.join("config.toml");
    std::fs::write(
        &path,
        "[engine]\nclaim_limit = 8\ngrouped_claim_limit = 48\n",
    )
    .unwrap();
    path
}

/// Check equivalence on two stores made by `make` (an uninterrupted one, an
/// interrupted one), over a corpus of `sessions` conversations that makes at least
/// `min_claims` claims.
fn equivalence(
    make: impl Fn(&str) -> Target,
    sessions: usize,
    min_claims: usize,
    wait_after_kill: Duration,
) {
    let dir = tempfile::tempdir().unwrap();
    let corpus_dir = dir.path().join("corpus");
    corpus(&corpus_dir, 7, sessions, 44);
    let whole = make("whole");
    whole.ingest(&corpus_dir);
    let run = whole.process();
    let items = whole.done();
    let expected = whole.digest();
    let claims = expected.iter().filter(|l| l.starts_with("claim\t")).count();
    let facts = expected.iter().filter(|l| l.starts_with("fact\t")).count();
    assert!(claims >= min_claims, "{claims} claims");
    assert!(facts > 100, "{facts} facts");
    assert!(
        expected
            .iter()
            .any(|l| l.starts_with("claim\t") && l.contains("\tnot current\t")),
        "the second versions retire testimony"
    );

    let killed = make("killed");
    killed.ingest(&corpus_dir);
    let (kills, left_leases, released, first_batch) =
        killed.process_with_kills(seed(), run, items, wait_after_kill);
    assert!(kills >= KILLS, "only {kills} kills: the run ended first");
    // Every kill that left leased work is followed by a resume that released it
    // itself, not by the passing of time (the lease is 300 s).
    assert!(left_leases > 0, "no kill landed inside a batch");
    assert_eq!(
        released, left_leases,
        "{left_leases} kills left leased work, {released} resumes released it"
    );
    eprintln!(
        "{kills} kills over a run of {run:.1?} ({released} resumes released a killed \
         process's leases); seconds from each resume's start until its first batch \
         finished: {first_batch:.2?}"
    );
    let got = killed.digest();
    assert!(
        got == expected,
        "the resumed memory differs from the uninterrupted one ({} claims): {}",
        claims,
        difference(&expected, &got, 20)
    );
}

#[test]
fn processing_killed_at_twenty_points_and_resumed_equals_an_uninterrupted_run() {
    let dir = tempfile::tempdir().unwrap();
    let config = small_batches(dir.path());
    equivalence(
        |name| Target {
            place: Place::Sqlite(dir.path().join(name).join("memory.db")),
            config: config.clone(),
            env: vec![],
        },
        48,
        2000,
        Duration::ZERO,
    );
}

#[test]
fn postgres_processing_killed_at_twenty_points_and_resumed_equals_an_uninterrupted_run() {
    let Some(url) = std::env::var("DATABASE_URL")
        .ok()
        .filter(|u| !u.trim().is_empty())
    else {
        eprintln!("postgres crash equivalence: skipped, DATABASE_URL is not set");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let config = small_batches(dir.path());
    let schemas = Schemas {
        url: url.clone(),
        names: std::sync::Mutex::new(Vec::new()),
    };
    equivalence(
        |_| {
            let schema = format!("rs_crash_{}", uuid::Uuid::new_v4().simple());
            schemas.names.lock().unwrap().push(schema.clone());
            Target {
                place: Place::Postgres {
                    url: url.clone(),
                    schema,
                },
                config: config.clone(),
                env: vec![],
            }
        },
        48,
        2000,
        // The server ends a killed client's session when it reads the closed
        // socket, a moment after the kill: the resume starts after that moment.
        Duration::from_millis(300),
    );
}

/// The test's PostgreSQL schemas, dropped at the end whatever the outcome.
struct Schemas {
    url: String,
    names: std::sync::Mutex<Vec<String>>,
}

impl Drop for Schemas {
    fn drop(&mut self) {
        let Ok(rt) = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
        else {
            return;
        };
        let names = std::mem::take(&mut *self.names.lock().unwrap_or_else(|p| p.into_inner()));
        rt.block_on(async {
            let Ok(pool) = sqlx::PgPool::connect(&self.url).await else {
                return;
            };
            for schema in names {
                let _ = pool
                    .execute(sqlx::AssertSqlSafe(format!(
                        "DROP SCHEMA IF EXISTS \"{schema}\" CASCADE"
                    )))
                    .await;
            }
            pool.close().await;
        });
    }
}
