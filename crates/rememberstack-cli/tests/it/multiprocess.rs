//! Several `remember` processes on one PostgreSQL database (issue 8): workers
//! sharing a ledger, a worker killed mid-stage, and concurrent ingests of the same
//! bytes. Each test runs when `DATABASE_URL` is set (skipped, saying so, otherwise)
//! and works in a PostgreSQL schema of its own (`REMEMBERSTACK_PG_SCHEMA`), dropped
//! at the end: a `remember worker` claims work from every namespace of its schema,
//! so no other test's worker can take these tests' items.
//!
//! The embedder is an OpenAI-compatible endpoint served by the test ([`FakeEmbedder`]):
//! it answers every input with a vector derived from the text and keeps every
//! request, so the provider calls of all processes can be counted in one place, and
//! it can hold its answers so that a worker stays inside its embed stage.

use serde_json::{Value, json};
use sqlx::Executor;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use tokio::runtime::Runtime;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

/// `DATABASE_URL`, or `None` after saying that `test` is skipped.
fn database_url(test: &str) -> Option<String> {
    let url = std::env::var("DATABASE_URL")
        .ok()
        .filter(|u| !u.trim().is_empty());
    if url.is_none() {
        eprintln!("{test}: skipped, DATABASE_URL is not set");
    }
    url
}

/// The fake embedder's vector dimension.
const DIMENSION: usize = 8;

/// A vector that depends only on the text (FNV-1a, one seed per dimension).
fn fake_vector(text: &str) -> Vec<f32> {
    (0..DIMENSION as u64)
        .map(|j| {
            let mut h: u64 = 0xcbf2_9ce4_8422_2325 ^ j.wrapping_mul(0x9e37_79b9);
            for b in text.bytes() {
                h ^= u64::from(b);
                h = h.wrapping_mul(0x0100_0000_01b3);
            }
            ((h % 1000) as f32 + 1.0) / 1000.0
        })
        .collect()
}

struct Answer {
    hold: Arc<AtomicBool>,
}

impl Respond for Answer {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let Ok(body) = request.body_json::<Value>() else {
            return ResponseTemplate::new(400);
        };
        let data: Vec<Value> = body["input"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default()
            .iter()
            .enumerate()
            .map(|(i, t)| {
                json!({
                    "object": "embedding",
                    "index": i,
                    "embedding": fake_vector(t.as_str().unwrap_or_default()),
                })
            })
            .collect();
        let answer = ResponseTemplate::new(200)
            .set_body_json(json!({ "object": "list", "model": "fake", "data": data }));
        if self.hold.load(Ordering::SeqCst) {
            // Long past any test's deadline: the caller waits inside its stage.
            answer.set_delay(Duration::from_secs(3600))
        } else {
            answer
        }
    }
}

/// An OpenAI-compatible `/embeddings` endpoint on 127.0.0.1 (its own thread).
struct FakeEmbedder {
    server: MockServer,
    hold: Arc<AtomicBool>,
}

impl FakeEmbedder {
    fn start(rt: &Runtime) -> Self {
        let hold = Arc::new(AtomicBool::new(false));
        let server = rt.block_on(async {
            let server = MockServer::builder().start().await;
            Mock::given(method("POST"))
                .and(path("/embeddings"))
                .respond_with(Answer { hold: hold.clone() })
                .mount(&server)
                .await;
            server
        });
        FakeEmbedder { server, hold }
    }

    /// Hold (`true`) or answer (`false`) the requests that arrive from now on.
    fn hold(&self, hold: bool) {
        self.hold.store(hold, Ordering::SeqCst);
    }

    /// Every input text of every `/embeddings` request received so far, one
    /// entry per request.
    fn requests(&self, rt: &Runtime) -> Vec<Vec<String>> {
        rt.block_on(self.server.received_requests())
            .unwrap_or_default()
            .iter()
            .filter(|r| r.url.path() == "/embeddings")
            .map(|r| {
                let body: Value = r.body_json().unwrap_or(Value::Null);
                body["input"]
                    .as_array()
                    .map(Vec::as_slice)
                    .unwrap_or_default()
                    .iter()
                    .map(|t| t.as_str().unwrap_or_default().to_string())
                    .collect()
            })
            .collect()
    }

    /// How many times each input text was sent, over every request.
    fn inputs(&self, rt: &Runtime) -> BTreeMap<String, usize> {
        let mut counts = BTreeMap::new();
        for text in self.requests(rt).into_iter().flatten() {
            *counts.entry(text).or_insert(0) += 1;
        }
        counts
    }
}

/// One deployment: a schema of its own in the test database, a namespace, a
/// manifest root, and (optionally) the fake embedder. The schema is dropped when
/// the deployment is.
struct Deployment<'a> {
    rt: &'a Runtime,
    url: String,
    schema: String,
    dir: tempfile::TempDir,
    embedder: Option<String>,
    pool: sqlx::PgPool,
}

impl<'a> Deployment<'a> {
    fn new(rt: &'a Runtime, url: &str, embedder: Option<&FakeEmbedder>) -> Self {
        let schema = format!("rs_cli_{}", uuid::Uuid::new_v4().simple());
        let in_schema = format!("SET search_path TO \"{schema}\", public");
        let pool = rt
            .block_on(
                sqlx::postgres::PgPoolOptions::new()
                    .max_connections(2)
                    .after_connect(move |conn, _| {
                        let sql = in_schema.clone();
                        Box::pin(async move {
                            conn.execute(sqlx::AssertSqlSafe(sql)).await?;
                            Ok(())
                        })
                    })
                    .connect(url),
            )
            .expect("connect to DATABASE_URL");
        let d = Deployment {
            rt,
            url: url.to_string(),
            schema,
            dir: tempfile::tempdir().unwrap(),
            embedder: embedder.map(|e| e.server.uri()),
            pool,
        };
        // One process creates the schema and applies the migrations before several
        // start at once.
        assert_eq!(d.ok_json(&["migrate", "--json"])["store"], "postgres");
        d
    }

    fn write(&self, name: &str, contents: &str) -> PathBuf {
        let p = self.dir.path().join(name);
        std::fs::write(&p, contents).unwrap();
        p
    }

    /// `remember --db URL … args` in this deployment, with nothing inherited from
    /// the test's own `REMEMBERSTACK_*` environment.
    fn remember(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_remember"));
        for (k, _) in std::env::vars() {
            if k.starts_with("REMEMBERSTACK_") {
                cmd.env_remove(k);
            }
        }
        // Deterministic vectors, no model to load or download.
        cmd.env("REMEMBERSTACK_EMBEDDER", "hashing");
        cmd.env("REMEMBERSTACK_PG_SCHEMA", &self.schema);
        if let Some(uri) = &self.embedder {
            cmd.env("REMEMBERSTACK_EMBEDDER", "openai")
                .env("REMEMBERSTACK_EMBEDDER_BASE_URL", uri)
                .env("REMEMBERSTACK_EMBEDDER_MODEL", "fake")
                .env("REMEMBERSTACK_EMBEDDER_DIMENSION", DIMENSION.to_string());
        }
        cmd.arg("--db")
            .arg(&self.url)
            .arg("--namespace")
            .arg("mp")
            .arg("--manifest-root")
            .arg(self.dir.path().join("manifests"))
            .args(args);
        cmd
    }

    fn ok_json(&self, args: &[&str]) -> Value {
        let out = self.remember(args).output().unwrap();
        assert!(
            out.status.success(),
            "{args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!(
                "{args:?}: not JSON ({e}): {}",
                String::from_utf8_lossy(&out.stdout)
            )
        })
    }

    /// A `remember worker` (one worker in the process) with `env` added.
    fn worker(&self, env: &[(&str, &str)]) -> Child {
        let mut cmd = self.remember(&["worker", "--concurrency", "1", "--poll-ms", "50", "--json"]);
        for (k, v) in env {
            cmd.env(k, v);
        }
        cmd.stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    }

    fn count(&self, sql: &str) -> i64 {
        self.rt
            .block_on(
                sqlx::query_scalar::<_, i64>(sqlx::AssertSqlSafe(sql.to_string()))
                    .fetch_one(&self.pool),
            )
            .unwrap_or_else(|e| panic!("{sql}: {e}"))
    }

    /// The first column of every row, as text, sorted.
    fn texts(&self, sql: &str) -> Vec<String> {
        let mut v = self
            .rt
            .block_on(
                sqlx::query_scalar::<_, String>(sqlx::AssertSqlSafe(sql.to_string()))
                    .fetch_all(&self.pool),
            )
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
        v.sort();
        v
    }

    /// Wait until every work item of the ledger is done.
    fn wait_drained(&self, what: &str) {
        let deadline = Instant::now() + Duration::from_secs(240);
        loop {
            let open = self.count("SELECT COUNT(*) FROM processing_state WHERE status <> 'done'");
            let total = self.count("SELECT COUNT(*) FROM processing_state");
            if total > 0 && open == 0 {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "{what} did not drain the ledger ({open} of {total} open): {:?}",
                self.texts(
                    "SELECT stage || ' ' || status || ' ' || COALESCE(last_error, '')
                     FROM processing_state WHERE status <> 'done'"
                )
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// What the pipeline made, comparable between deployments: the claims, the
    /// entities, the live facts, and which records lack a vector.
    fn outcome(&self) -> Outcome {
        Outcome {
            documents: self.count("SELECT COUNT(*) FROM documents"),
            chunks: self.texts("SELECT text FROM chunks"),
            claims: self.texts("SELECT text FROM claims"),
            entities: self.texts("SELECT canonical_name FROM entities WHERE merged_into IS NULL"),
            facts: self.texts(
                "SELECT statement FROM facts WHERE invalidated_at IS NULL AND superseded_by IS NULL",
            ),
            without_vectors: self.texts(
                "SELECT k FROM (SELECT embedding_key AS k FROM chunks
                                UNION SELECT embedding_key FROM claims
                                UNION SELECT embedding_key FROM facts) keys
                 WHERE k NOT IN (SELECT embedding_key FROM vectors)",
            ),
        }
    }

    /// Every work item: done, and begun `attempts` times (by id).
    fn attempts(&self) -> BTreeMap<String, i64> {
        self.rt
            .block_on(
                sqlx::query_as::<_, (String, i32)>("SELECT id, attempts FROM processing_state")
                    .fetch_all(&self.pool),
            )
            .unwrap()
            .into_iter()
            .map(|(id, n)| (id, i64::from(n)))
            .collect()
    }
}

impl Drop for Deployment<'_> {
    fn drop(&mut self) {
        let sql = format!("DROP SCHEMA IF EXISTS \"{}\" CASCADE", self.schema);
        let _ = self
            .rt
            .block_on(sqlx::query(sqlx::AssertSqlSafe(sql)).execute(&self.pool));
    }
}

#[derive(Debug, PartialEq)]
struct Outcome {
    documents: i64,
    chunks: Vec<String>,
    claims: Vec<String>,
    entities: Vec<String>,
    facts: Vec<String>,
    without_vectors: Vec<String>,
}

/// The embedder's inputs of one run, told apart by what asked for them (`sent`:
/// how often each text reached the provider, from [`FakeEmbedder::inputs`]).
#[derive(Debug)]
struct ProviderCalls {
    /// The texts of work items (chunks, claims, fact labels: e1/e2/e3.embed):
    /// text → (times sent, work items embedding it).
    items: BTreeMap<String, (usize, usize)>,
    /// Entity profiles, refreshed by adjudication (e3.adjudicate): text → times
    /// sent. Which intermediate profiles an entity gets depends on the order its
    /// units run in, so these are not comparable between runs.
    profiles: BTreeMap<String, usize>,
}

impl ProviderCalls {
    fn of(d: &Deployment, sent: &BTreeMap<String, usize>) -> Self {
        // Work items per text: claims and facts embed their own text; a chunk its
        // document title and section path above its text (every chunk of the
        // corpus starts with the title `Team notes N`).
        let mut per_text: BTreeMap<String, usize> = BTreeMap::new();
        for t in d
            .texts("SELECT text FROM claims")
            .into_iter()
            .chain(d.texts("SELECT statement FROM facts"))
        {
            *per_text.entry(t).or_insert(0) += 1;
        }
        let chunks = d.count("SELECT COUNT(*) FROM chunks") as usize;
        let names = d.texts("SELECT canonical_name FROM entities");
        let mut calls = ProviderCalls {
            items: per_text.iter().map(|(t, n)| (t.clone(), (0, *n))).collect(),
            profiles: BTreeMap::new(),
        };
        let mut chunk_texts = 0;
        for (text, n) in sent {
            if let Some(entry) = calls.items.get_mut(text) {
                entry.0 = *n;
            } else if text.starts_with("Team notes ") {
                chunk_texts += 1;
                calls.items.insert(text.clone(), (*n, 1));
            } else {
                assert!(
                    names.iter().any(|e| text.starts_with(&format!("{e}."))
                        || text.starts_with(&format!("{e} (also:"))),
                    "sent to the embedder, neither a work item's text nor a profile: {text:?}"
                );
                calls.profiles.insert(text.clone(), *n);
            }
        }
        assert_eq!(chunk_texts, chunks, "one input per chunk: {sent:#?}");
        calls
    }
}

/// Worker processes still running when a test fails are killed, not leaked.
struct Reap(Vec<Child>);

impl Drop for Reap {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Stop a worker with SIGTERM; it must exit cleanly. Returns its JSON report.
fn stop(worker: Child) -> Value {
    stop_with_log(worker).0
}

/// Stop a worker: its JSON report and what it logged (warnings: failed stages,
/// lost leases).
fn stop_with_log(worker: Child) -> (Value, String) {
    let status = Command::new("kill")
        .args(["-TERM", &worker.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let out = worker.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "worker exit: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    (
        serde_json::from_slice(&out.stdout).unwrap(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A corpus whose documents name the same people, so units of work of several
/// documents resolve and adjudicate the same entities at the same time.
fn team_corpus(d: &Deployment) -> Vec<PathBuf> {
    (0..6)
        .map(|i| {
            d.write(
                &format!("team{i}.md"),
                &format!(
                    "# Team notes {i}\n\nMaria Costa works at Initech. Joao Silva lives in Lisbon.\n\n\
                     Maria Costa met Joao Silva in Porto in May 2024. Ana Lima works at Globex.\n\n\
                     Note {i}: the backup job failed on Saturday and Joao Silva fixed it.\n"
                ),
            )
        })
        .collect()
}

fn ingest_all(d: &Deployment, paths: &[PathBuf]) -> Value {
    let mut args = vec!["ingest", "--json"];
    for p in paths {
        args.push(p.to_str().unwrap());
    }
    d.ok_json(&args)
}

/// Two processes ingesting the same bytes at the same time make one version: both
/// succeed and name the same document and version, one creating it and the other
/// finding it unchanged — for a new lineage and for a new version of an existing one.
#[test]
fn postgres_concurrent_ingest_of_the_same_bytes_makes_one_version() {
    let Some(url) = database_url("postgres_concurrent_ingest_of_the_same_bytes_makes_one_version")
    else {
        return;
    };
    let rt = Runtime::new().unwrap();
    let d = Deployment::new(&rt, &url, None);
    let rounds = 10;
    for round in 0..rounds {
        // A new lineage every round, and a new version of one shared lineage.
        let fresh = d.write(
            &format!("fresh{round}.md"),
            &format!("# Fresh {round}\n\nRound {round} brings a new page.\n"),
        );
        let shared = d.write(
            "shared.md",
            &format!("# Shared\n\nRound {round} rewrites the shared page.\n"),
        );
        let args = [
            "ingest",
            "--json",
            fresh.to_str().unwrap(),
            shared.to_str().unwrap(),
        ];
        let both: Vec<Child> = (0..2)
            .map(|_| {
                d.remember(&args)
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        let reports: Vec<Value> = both
            .into_iter()
            .map(|c| {
                let out = c.wait_with_output().unwrap();
                assert!(
                    out.status.success(),
                    "round {round}: {}{}",
                    String::from_utf8_lossy(&out.stdout),
                    String::from_utf8_lossy(&out.stderr)
                );
                serde_json::from_slice(&out.stdout).unwrap()
            })
            .collect();
        for file in 0..2 {
            let (a, b) = (&reports[0]["ingested"][file], &reports[1]["ingested"][file]);
            assert_eq!(
                a["document_id"], b["document_id"],
                "round {round}: {reports:?}"
            );
            assert_eq!(
                a["version_id"], b["version_id"],
                "round {round}: {reports:?}"
            );
            assert!(a["version_id"].is_string(), "{a}");
            let mut outcomes = [
                a["outcome"].as_str().unwrap_or_default(),
                b["outcome"].as_str().unwrap_or_default(),
            ];
            outcomes.sort();
            assert_eq!(
                outcomes,
                ["created", "unchanged"],
                "round {round}: {reports:?}"
            );
        }
    }
    // One lineage per path, one version per distinct bytes.
    let listed = d.ok_json(&["documents", "list", "--json"]);
    let docs = listed["documents"].as_array().unwrap();
    assert_eq!(docs.len(), rounds + 1, "{listed}");
    let mut versions = BTreeMap::new();
    for doc in docs {
        let id = doc["doc_id"].as_str().unwrap();
        let shown = d.ok_json(&["documents", "show", id, "--json"]);
        let title = doc["title"].as_str().unwrap_or_default().to_string();
        versions.insert(title, shown["versions"].as_array().unwrap().len());
    }
    let mut expected: BTreeMap<String, usize> =
        (0..rounds).map(|r| (format!("Fresh {r}"), 1)).collect();
    expected.insert("Shared".into(), rounds);
    assert_eq!(versions, expected);
    assert_eq!(
        d.count("SELECT COUNT(*) FROM document_versions"),
        2 * rounds as i64
    );
    assert_eq!(
        d.count("SELECT COUNT(*) FROM content_objects"),
        2 * rounds as i64
    );
}

/// A worker killed with SIGKILL while it is inside a stage loses nothing: the items
/// it leased stay `running` until their lease (3 s, `REMEMBERSTACK_LEASE_SECS`)
/// expires, then a second worker claims them again and finishes; every item ends
/// `done`, none dead-lettered, and the store holds exactly what an uninterrupted
/// run makes of the same corpus.
///
/// Deterministic: the fake embedder holds its answers, so the first worker is
/// known to be inside an embed stage, holding its leases, when it is killed; the
/// second worker starts only after the kill, once the embedder answers again.
#[test]
fn postgres_worker_killed_mid_stage_loses_nothing() {
    let Some(url) = database_url("postgres_worker_killed_mid_stage_loses_nothing") else {
        return;
    };
    let rt = Runtime::new().unwrap();
    let embedder = FakeEmbedder::start(&rt);
    // What an uninterrupted run makes of the corpus.
    let reference = {
        let d = Deployment::new(&rt, &url, Some(&embedder));
        ingest_all(&d, &team_corpus(&d));
        d.ok_json(&["process", "--json"]);
        d.outcome()
    };
    assert!(
        !reference.claims.is_empty() && !reference.facts.is_empty(),
        "{reference:?}"
    );
    assert!(reference.without_vectors.is_empty(), "{reference:?}");

    let d = Deployment::new(&rt, &url, Some(&embedder));
    ingest_all(&d, &team_corpus(&d));
    embedder.hold(true);
    let sent_before = embedder.requests(&rt).len();
    let mut workers = Reap(vec![d.worker(&[("REMEMBERSTACK_LEASE_SECS", "3")])]);
    // Inside a stage: its embed request reached the provider (which holds it), and
    // the items of its batch are running under its lease.
    let deadline = Instant::now() + Duration::from_secs(120);
    while embedder.requests(&rt).len() == sent_before {
        assert!(
            Instant::now() < deadline,
            "the first worker never called the embedder"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let running = d.texts("SELECT id FROM processing_state WHERE status = 'running'");
    assert!(!running.is_empty());
    let status = d.ok_json(&["status", "--json"]);
    let running_by_stage: BTreeMap<String, u64> = status["ledger"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(stage, c)| (stage.clone(), c["running"].as_u64().unwrap_or(0)))
        .filter(|(_, n)| *n > 0)
        .collect();
    assert_eq!(
        running_by_stage.values().sum::<u64>(),
        running.len() as u64,
        "{status}"
    );
    // (Stages are claimed in pipeline order: every prepare and chunk item is done
    // before the first embed batch, so the one waiting on the provider is e1.embed.)
    assert_eq!(
        running_by_stage.keys().collect::<Vec<_>>(),
        ["e1.embed"],
        "{status}"
    );
    // The short lease is the one the worker took.
    let lease_left_ms = d.count(
        "SELECT MAX(lease_expires_at) - (EXTRACT(EPOCH FROM clock_timestamp()) * 1000)::bigint
         FROM processing_state WHERE status = 'running'",
    );
    assert!(lease_left_ms <= 3_000, "lease ends in {lease_left_ms} ms");

    let mut first = workers.0.pop().unwrap();
    first.kill().unwrap(); // SIGKILL
    first.wait().unwrap();
    // Its items are still leased to a process that no longer exists.
    assert_eq!(
        d.texts("SELECT id FROM processing_state WHERE status = 'running'"),
        running
    );

    embedder.hold(false);
    workers.0.push(d.worker(&[]));
    d.wait_drained("the second worker");
    let report = stop(workers.0.pop().unwrap());
    assert!(
        report["completed"].as_u64().unwrap() >= running.len() as u64,
        "{report}"
    );
    // Every item ran once, except the killed worker's: begun by it, then again by
    // the second worker after the lease expired.
    for (id, attempts) in d.attempts() {
        let expected = if running.contains(&id) { 2 } else { 1 };
        assert_eq!(attempts, expected, "work item {id}");
    }
    let status = d.ok_json(&["status", "--json"]);
    assert_eq!(status["dead_letters"], json!([]), "{status}");
    assert_eq!(d.outcome(), reference);
}

/// Three `remember worker` processes drain one ledger over a shared corpus: they
/// share the work and finish all of it; every work item is begun once; no claim,
/// entity or fact is recorded twice; the store holds what one process makes of the
/// same corpus; and the provider calls (counted at the fake embedder, across the
/// processes) embed every work item's text once, as one process does.
#[test]
fn postgres_three_worker_processes_run_every_stage_once() {
    let Some(url) = database_url("postgres_three_worker_processes_run_every_stage_once") else {
        return;
    };
    let rt = Runtime::new().unwrap();
    // One process.
    let alone = FakeEmbedder::start(&rt);
    let (reference, calls_alone) = {
        let d = Deployment::new(&rt, &url, Some(&alone));
        ingest_all(&d, &team_corpus(&d));
        d.ok_json(&["process", "--json"]);
        assert!(d.attempts().values().all(|n| *n == 1));
        (d.outcome(), ProviderCalls::of(&d, &alone.inputs(&rt)))
    };
    for (text, (sent, _)) in &calls_alone.items {
        assert_eq!(*sent, 1, "one process embeds {text:?} once");
    }

    // Three processes.
    let shared = FakeEmbedder::start(&rt);
    let d = Deployment::new(&rt, &url, Some(&shared));
    ingest_all(&d, &team_corpus(&d));
    let mut workers = Reap((0..3).map(|_| d.worker(&[])).collect());
    d.wait_drained("the three workers");
    let (completed, logs): (Vec<u64>, Vec<String>) = std::mem::take(&mut workers.0)
        .into_iter()
        .map(|w| {
            let (report, log) = stop_with_log(w);
            (report["completed"].as_u64().unwrap(), log)
        })
        .unzip();
    let failures: Vec<&str> = logs
        .iter()
        .flat_map(|l| l.lines())
        .filter(|l| l.contains("stage failed") || l.contains("lease lost"))
        .collect();
    // The work was shared among the processes, and all of it is done, each item
    // begun once (a second claim of an item would count a second attempt).
    assert!(
        completed.iter().filter(|c| **c > 0).count() >= 2,
        "{completed:?}"
    );
    let attempts = d.attempts();
    let retried = d.texts(
        "SELECT stage || ': ' || COALESCE(last_error, '(no error recorded)') FROM processing_state
         WHERE attempts > 1 ORDER BY stage",
    );
    assert_eq!(completed.iter().sum::<u64>(), attempts.len() as u64);
    for (id, n) in &attempts {
        assert_eq!(
            *n, 1,
            "work item {id}; begun again: {retried:?}; the workers logged: {failures:#?}"
        );
    }
    // Nothing recorded twice: one claim per document and claim key, one entity per
    // name, one live fact per statement.
    assert_eq!(
        d.count("SELECT COUNT(*) - COUNT(DISTINCT (document_id, claim_key)) FROM claims"),
        0
    );
    assert_eq!(
        d.count("SELECT COUNT(*) - COUNT(DISTINCT lemma) FROM entities WHERE merged_into IS NULL"),
        0
    );
    assert_eq!(
        d.count(
            "SELECT COUNT(*) - COUNT(DISTINCT (subject_id, statement)) FROM facts
             WHERE invalidated_at IS NULL AND superseded_by IS NULL"
        ),
        0
    );
    assert_eq!(d.outcome(), reference);

    // Provider calls, counted at the provider over all three processes. The same
    // texts were embedded as by one process. A text of one work item was sent
    // exactly once (a stage run twice would send it again). A text several work
    // items share (the same sentence in several documents) was sent at least once
    // and at most once per item: the vector is reused once stored, but two
    // processes embedding such items at the same moment may both ask for it.
    let calls = ProviderCalls::of(&d, &shared.inputs(&rt));
    assert_eq!(
        calls.items.keys().collect::<Vec<_>>(),
        calls_alone.items.keys().collect::<Vec<_>>()
    );
    let chunks = d.count("SELECT COUNT(*) FROM chunks") as usize;
    let mut once = 0;
    for (text, (sent, items)) in &calls.items {
        if *items == 1 {
            assert_eq!(*sent, 1, "{text:?} sent {sent} times");
            once += 1;
        } else {
            assert!((1..=*items).contains(sent), "{text:?} sent {sent} times");
        }
    }
    assert!(once >= chunks, "every chunk's text is its own: {calls:#?}");
    // Every entity's current profile reached the provider.
    for profile in d.texts("SELECT profile_summary FROM entities WHERE profile_summary IS NOT NULL")
    {
        assert!(
            calls.profiles.contains_key(&profile),
            "{profile:?}: {calls:#?}"
        );
    }
}
