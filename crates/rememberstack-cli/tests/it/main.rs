//! The `remember` binary, end to end: the contract later checks rely on.

mod crash;
mod examples;
mod golden;
mod mcp;
mod multiprocess;

use serde_json::Value;
use std::path::PathBuf;
use std::process::{Command, Output};

/// `cmd` without the caller's REMEMBERSTACK_* settings, on the hashing embedder
/// (deterministic vectors, no model to load or download).
fn offline(cmd: &mut Command) {
    for (k, _) in std::env::vars() {
        if k.starts_with("REMEMBERSTACK_") {
            cmd.env_remove(k);
        }
    }
    cmd.env("REMEMBERSTACK_EMBEDDER", "hashing");
}

struct Cli {
    dir: tempfile::TempDir,
    /// Environment variables every command gets.
    env: Vec<(String, String)>,
}

impl Cli {
    fn new() -> Self {
        Cli {
            dir: tempfile::tempdir().unwrap(),
            env: Vec::new(),
        }
    }

    /// The same store, every command run with `env` set.
    fn with_env(mut self, env: Vec<(String, String)>) -> Self {
        self.env = env;
        self
    }

    fn db(&self) -> PathBuf {
        self.dir.path().join("db").join("memory.db")
    }

    fn write(&self, name: &str, contents: &str) -> PathBuf {
        let p = self.dir.path().join(name);
        std::fs::write(&p, contents).unwrap();
        p
    }

    /// `remember --db <this store> ARGS`, without the caller's REMEMBERSTACK_* settings
    /// (but with [`Cli::with_env`]'s).
    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_remember"));
        offline(&mut cmd);
        cmd.envs(self.env.iter().map(|(k, v)| (k, v)));
        cmd.arg("--db").arg(self.db()).args(args);
        cmd
    }

    fn run(&self, args: &[&str]) -> Output {
        self.command(args).output().unwrap()
    }

    fn ok_json(&self, args: &[&str]) -> Value {
        let out = self.run(args);
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
}

const GUIDE: &str = "# Gardening guide\n\nTomatoes need six hours of direct sunlight and deep watering twice a week.\n\n## Pests\n\nAphids on the roses can be washed off with soapy water.\n\n## References\n\n- Aphid control leaflet\n";
const HTML: &str = "<html><head><title>Volcano facts</title></head><body><h1>Volcano facts</h1><p>Mount Etna in Sicily is the most active volcano in Europe.</p></body></html>";
const CHAT: &str = r#"{"session_time": "2024-06-03T09:30:00Z", "messages": [
  {"event_id": "m1", "speaker": "Maria", "text": "The nightly backup failed again on Saturday."},
  {"event_id": "m2", "speaker": "Joao", "text": "The cold-storage bucket hit its quota, so I raised it to 2 TB."}
]}"#;

fn fixed_corpus(cli: &Cli) {
    for (name, body, source_ref) in [
        ("guide.md", GUIDE, "docs/guide.md"),
        ("volcano.html", HTML, "web/volcano"),
        ("standup.json", CHAT, "chat/standup"),
    ] {
        let path = cli.write(name, body);
        cli.ok_json(&[
            "ingest",
            path.to_str().unwrap(),
            "--source-ref",
            source_ref,
            "--source-time",
            "2024-06-01T12:00:00Z",
            "--json",
        ]);
    }
    let processed = cli.ok_json(&["process", "--json"]);
    let completed = processed["completed"].as_u64().unwrap();
    assert!(completed >= 9);
    // Every stage that ran says how many items it claimed, in how many batches and
    // how long it took; together they account for every completed item.
    let stages = processed["stages"].as_object().expect("per-stage report");
    for stage in ["e0.prepare", "e1.chunk", "e2.extract", "e3.normalize"] {
        let s = &stages[stage];
        assert!(s["items"].as_u64().unwrap() > 0, "{stage}: {s}");
        assert!(s["batches"].as_u64().unwrap() > 0, "{stage}: {s}");
        assert!(s["micros"].as_u64().is_some(), "{stage}: {s}");
    }
    let items: u64 = stages.values().map(|s| s["items"].as_u64().unwrap()).sum();
    assert!(
        items >= completed,
        "{items} items claimed, {completed} completed"
    );
}

#[test]
fn search_envelope_snapshot() {
    let cli = Cli::new();
    fixed_corpus(&cli);
    let env = cli.ok_json(&[
        "search",
        "why did the nightly backup fail",
        "--k",
        "2",
        "--json",
    ]);
    assert_eq!(
        env["results"][0]["event_ids"],
        serde_json::json!(["m1", "m2"])
    );
    insta::assert_json_snapshot!("search_envelope", env, {
        ".results[].chunk_id" => "[id]",
        ".results[].document_id" => "[id]",
        ".results[].version_id" => "[id]",
        // Signed with the store's own secret.
        ".truncation.continuation" => "[cursor]",
    });
}

#[test]
fn status_snapshot() {
    let cli = Cli::new();
    fixed_corpus(&cli);
    let parked = cli.write("scan.pdf", "%PDF-1.7 not really");
    cli.ok_json(&["ingest", parked.to_str().unwrap(), "--json"]);
    let status = cli.ok_json(&["status", "--json"]);
    insta::assert_json_snapshot!("status", status);
}

#[test]
fn documents_list_and_show() {
    let cli = Cli::new();
    fixed_corpus(&cli);
    let list = cli.ok_json(&["documents", "list", "--json"]);
    let docs = list["documents"].as_array().unwrap();
    assert_eq!(docs.len(), 3);
    for d in docs {
        for key in [
            "doc_id",
            "source_kind",
            "source_ref",
            "file_name",
            "title",
            "current_version_id",
            "status",
        ] {
            assert!(d.get(key).is_some(), "missing {key} in {d}");
        }
        assert_eq!(d["status"], "ready");
    }
    let volcano = docs
        .iter()
        .find(|d| d["source_ref"] == "web/volcano")
        .unwrap();
    assert_eq!(volcano["title"], "Volcano facts");
    assert_eq!(volcano["file_name"], "volcano.html");
    let id = volcano["doc_id"].as_str().unwrap();
    let shown = cli.ok_json(&["documents", "show", id, "--json"]);
    assert_eq!(shown["versions"].as_array().unwrap().len(), 1);
    assert_eq!(shown["chunk_count"], 1);
    assert_eq!(shown["sections"][0]["title"], "Volcano facts");
    let text = cli.run(&["documents", "show", id]);
    assert!(String::from_utf8_lossy(&text.stdout).contains("Volcano facts"));
}

#[test]
fn any_call_runs_by_name_and_answers_as_its_command() {
    let cli = Cli::new();
    // An unknown call, or input that is not a JSON object, is refused before a
    // store is created.
    let out = cli.run(&["call", "no_such_call", "--json"]);
    assert!(!out.status.success());
    let body: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(body["code"], "invalid_input");
    let out = cli.run(&["call", "status", "--input", "[1]", "--json"]);
    assert_eq!(
        serde_json::from_slice::<Value>(&out.stdout).unwrap()["code"],
        "invalid_input"
    );
    assert!(!cli.db().exists());

    fixed_corpus(&cli);
    // The same answer as the command of the same call.
    let by_command = cli.ok_json(&["search", "nightly backup", "--k", "2", "--json"]);
    let by_call = cli.ok_json(&[
        "call",
        "search",
        "--input",
        r#"{"query": "nightly backup", "k": 2}"#,
    ]);
    assert_eq!(by_call["results"], by_command["results"]);
    assert_eq!(by_call["results"].as_array().unwrap().len(), 2);
    let notes = cli.ok_json(&["call", "list_notes"]);
    assert_eq!(notes, cli.ok_json(&["notes", "list", "--json"]));
    // Input read from stdin, and a bad field is the call's own typed error.
    let mut child = cli
        .command(&["call", "search", "--input", "-", "--json"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(
        child.stdin.as_mut().unwrap(),
        br#"{"query": "backup", "no_such_field": 1}"#,
    )
    .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(!out.status.success());
    let body: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(body["code"], "invalid_input");
    assert!(body["message"].as_str().unwrap().contains("no_such_field"));
    // `--list` names every call of the operation table.
    let out = cli.run(&["call", "--list"]);
    let listed: Vec<String> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    assert!(listed.len() >= 30 && listed.iter().any(|n| n == "facts_context"));
}

#[test]
fn errors_are_typed_and_change_nothing() {
    let cli = Cli::new();
    let missing = cli.dir.path().join("nope.md");
    let out = cli.run(&["ingest", missing.to_str().unwrap()]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(stderr.contains("not_found"), "{stderr}");

    let out = cli.run(&["ingest", missing.to_str().unwrap(), "--json"]);
    assert!(!out.status.success());
    let body: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(body["code"], "not_found");
    assert!(body["message"].as_str().unwrap().contains("nope.md"));

    let a = cli.write("a.md", "a");
    let b = cli.write("b.md", "b");
    let out = cli.run(&[
        "ingest",
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        "--source-ref",
        "x",
        "--json",
    ]);
    assert!(!out.status.success());
    assert_eq!(
        serde_json::from_slice::<Value>(&out.stdout).unwrap()["code"],
        "invalid_input"
    );

    let out = cli.run(&[
        "ingest",
        a.to_str().unwrap(),
        "--source-time",
        "yesterday",
        "--json",
    ]);
    assert_eq!(
        serde_json::from_slice::<Value>(&out.stdout).unwrap()["code"],
        "invalid_input"
    );

    let empty = cli.write("empty.md", "");
    let out = cli.run(&["ingest", empty.to_str().unwrap(), "--json"]);
    assert_eq!(
        serde_json::from_slice::<Value>(&out.stdout).unwrap()["code"],
        "empty_input"
    );

    let out = cli.run(&["documents", "show", "not-a-uuid", "--json"]);
    assert_eq!(
        serde_json::from_slice::<Value>(&out.stdout).unwrap()["code"],
        "invalid_input"
    );

    let out = cli.run(&["search", "   ", "--json"]);
    assert!(!out.status.success());

    // Nothing was written by any of the refusals.
    let list = cli.ok_json(&["documents", "list", "--json"]);
    assert_eq!(list["documents"].as_array().unwrap().len(), 0);
}

#[test]
fn namespaces_and_edits_through_the_cli() {
    let cli = Cli::new();
    let note = cli.write("note.md", "# Note\n\nThe launch code name is Bluebird.\n");
    let path = note.to_str().unwrap();
    let first = cli.ok_json(&["--namespace", "alpha", "ingest", path, "--wait", "--json"]);
    assert_eq!(first["ingested"][0]["outcome"], "created");
    let again = cli.ok_json(&["--namespace", "alpha", "ingest", path, "--json"]);
    assert_eq!(again["ingested"][0]["outcome"], "unchanged");
    std::fs::write(&note, "# Note\n\nThe launch code name is Redwing.\n").unwrap();
    let edited = cli.ok_json(&["--namespace", "alpha", "ingest", path, "--wait", "--json"]);
    assert_eq!(edited["ingested"][0]["outcome"], "created");
    assert_eq!(
        edited["ingested"][0]["document_id"],
        first["ingested"][0]["document_id"]
    );

    let hit = cli.ok_json(&[
        "--namespace",
        "alpha",
        "search",
        "launch code name",
        "--json",
    ]);
    assert!(
        hit["results"][0]["text"]
            .as_str()
            .unwrap()
            .contains("Redwing")
    );
    let miss = cli.ok_json(&[
        "--namespace",
        "beta",
        "search",
        "launch code name",
        "--json",
    ]);
    assert_eq!(miss["results"].as_array().unwrap().len(), 0);

    let retry = cli.ok_json(&["--namespace", "alpha", "retry", "--dead-letters", "--json"]);
    assert_eq!(retry["released"], 0);
}

#[test]
fn remembers_db_from_the_environment() {
    let cli = Cli::new();
    let db = cli.dir.path().join("env-db").join("memory.db");
    let note = cli.write("env.md", "The env var picks the store.");
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_remember"))
            .env("REMEMBERSTACK_DB", &db)
            .env("REMEMBERSTACK_EMBEDDER", "hashing")
            .args(args)
            .output()
            .unwrap()
    };
    assert!(
        run(&["ingest", note.to_str().unwrap(), "--wait"])
            .status
            .success()
    );
    assert!(db.exists(), "the store was created at $REMEMBERSTACK_DB");
    let out = run(&["search", "env var store", "--json"]);
    let env: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(env["results"].as_array().unwrap().len(), 1);
}

#[test]
fn a_directory_ingests_every_file_below_it() {
    let cli = Cli::new();
    let root = cli.dir.path().join("corpus");
    std::fs::create_dir_all(root.join("nested")).unwrap();
    std::fs::create_dir_all(root.join(".git")).unwrap();
    std::fs::write(root.join("a.md"), "# A\n\nAlpha notes.").unwrap();
    std::fs::write(root.join("nested").join("b.txt"), "Beta notes.").unwrap();
    std::fs::write(root.join(".git").join("config"), "ignored").unwrap();
    let out = cli.ok_json(&["ingest", root.to_str().unwrap(), "--wait", "--json"]);
    let names: Vec<&str> = out["ingested"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            r["source_ref"]
                .as_str()
                .unwrap()
                .rsplit('/')
                .next()
                .unwrap()
        })
        .collect();
    assert_eq!(names, vec!["a.md", "b.txt"]);
    let bad = cli.run(&[
        "ingest",
        root.to_str().unwrap(),
        "--source-ref",
        "x",
        "--json",
    ]);
    assert!(!bad.status.success());
}

#[test]
fn quickstart_runs_offline() {
    let out = Command::new(env!("CARGO_BIN_EXE_remember"))
        .arg("quickstart")
        .env_remove("REMEMBERSTACK_EMBEDDER")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("Maria Santos leads the platform team"),
        "{stdout}"
    );
    assert!(stdout.contains("The nightly backup failed"), "{stdout}");
    assert!(stdout.contains("claim search:"), "{stdout}");
    assert!(stdout.contains("Joao raised it to 2 TB"), "{stdout}");
}

#[test]
fn entities_facts_trace_and_merge_from_the_command_line() {
    let cli = Cli::new();
    for (name, body) in [
        (
            "a.md",
            "# HR\n\nAlice has worked for Acme since March 2024.\n",
        ),
        ("b.md", "# Travel\n\nAlicia Keyes lives in Lisbon.\n"),
    ] {
        let path = cli.write(name, body);
        cli.ok_json(&[
            "ingest",
            path.to_str().unwrap(),
            "--source-time",
            "2024-04-01T00:00:00Z",
            "--wait",
            "--json",
        ]);
    }
    let entities = cli.ok_json(&["entities", "list", "--json"]);
    let list = entities["entities"].as_array().unwrap();
    let id_of = |name: &str| {
        list.iter()
            .find(|e| e["canonical_name"] == name)
            .unwrap_or_else(|| panic!("no {name}: {list:?}"))["entity_id"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let (alice, alicia) = (id_of("Alice"), id_of("Alicia Keyes"));

    let facts = cli.ok_json(&["facts", "list", "--entity", &alice, "--json"]);
    let facts = facts["facts"].as_array().unwrap();
    let works = facts
        .iter()
        .find(|f| f["predicate"] == "works_for")
        .expect("works_for fact");
    assert_eq!(works["object_name"], "Acme");
    assert_eq!(works["evidence_count"], 1);
    let fact_id = works["fact_id"].as_str().unwrap();

    let trace = cli.ok_json(&["trace", fact_id, "--json"]);
    assert_eq!(trace["fact"]["fact_id"], fact_id);
    assert!(
        trace["evidence"][0]["claim"]["text"]
            .as_str()
            .unwrap()
            .contains("Acme")
    );
    assert_eq!(trace["adjudications"][0]["verdict"], "new");
    assert!(!trace["resolutions"].as_array().unwrap().is_empty());

    let found = cli.ok_json(&["search", "Alice Acme", "--target", "facts", "--json"]);
    assert_eq!(found["results"][0]["fact_id"], fact_id);

    // As of 2023 nothing held yet; the history has it.
    let then = cli.ok_json(&["facts", "list", "--at", "2023-01-01T00:00:00Z", "--json"]);
    assert!(
        then["facts"]
            .as_array()
            .unwrap()
            .iter()
            .all(|f| f["fact_id"] != fact_id)
    );

    // Merge, read through the redirect, unmerge.
    let merge = cli.ok_json(&["entities", "merge", &alicia, &alice, "--json"]);
    let shown = cli.ok_json(&["entities", "show", &alicia, "--json"]);
    assert_eq!(shown["entity"]["entity_id"], alice.as_str());
    assert_eq!(shown["redirected_from"], alicia.as_str());
    let merge_id = merge["merge_id"].as_str().unwrap();
    cli.ok_json(&["entities", "unmerge", merge_id, "--json"]);
    let shown = cli.ok_json(&["entities", "show", &alicia, "--json"]);
    assert_eq!(shown["entity"]["entity_id"], alicia.as_str());

    // Bad input: a clear error, nothing changed.
    let out = cli.run(&["trace", "not-a-uuid", "--json"]);
    assert!(!out.status.success());
    let err: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(err["code"], "invalid_input");
    let out = cli.run(&["facts", "list", "--at", "yesterday"]);
    assert!(!out.status.success());

    let preds = cli.ok_json(&["predicates", "--json"]);
    assert!(preds["predicates"].as_array().unwrap().len() >= 16);
}

#[test]
fn merge_proposals_from_the_command_line() {
    let cli = Cli::new();
    for (name, body) in [
        (
            "crew.md",
            "# Crew\n\nKofi Asante lives in Leeds.\n\nLena Vogt lives in Munich.\n",
        ),
        (
            "plan.md",
            "# Plan\n\nThe plan was approved by Asante.\n\nThe venue was booked by Vogt.\n",
        ),
    ] {
        let path = cli.write(name, body);
        cli.ok_json(&["ingest", path.to_str().unwrap(), "--wait", "--json"]);
    }
    let listed = cli.ok_json(&["entities", "proposals", "list", "--json"]);
    let proposals = listed["proposals"].as_array().unwrap();
    let pairs: Vec<(&str, &str)> = proposals
        .iter()
        .map(|p| {
            (
                p["from_name"].as_str().unwrap(),
                p["into_name"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(pairs, [("Asante", "Kofi Asante"), ("Vogt", "Lena Vogt")]);
    let ids = |p: &Value| {
        (
            p["from"].as_str().unwrap().to_string(),
            p["into"].as_str().unwrap().to_string(),
        )
    };
    let (from, into) = ids(&proposals[0]);
    let merge = cli.ok_json(&["entities", "proposals", "accept", &from, &into, "--json"]);
    assert_eq!(merge["snapshot"]["reason"]["rule"], "short_form_last_word");
    let shown = cli.ok_json(&["entities", "show", &from, "--json"]);
    assert_eq!(shown["entity"]["entity_id"], into.as_str());
    let (from, into) = ids(&proposals[1]);
    cli.ok_json(&["entities", "proposals", "reject", &from, &into, "--json"]);
    let listed = cli.ok_json(&["entities", "proposals", "list", "--json"]);
    assert_eq!(listed["proposals"].as_array().unwrap().len(), 0, "{listed}");
    // Deciding it again is refused: nothing proposes it any more.
    let out = cli.run(&["entities", "proposals", "accept", &from, &into, "--json"]);
    assert!(!out.status.success());
    let err: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(err["code"], "not_found");
    let out = cli.run(&["entities", "proposals", "reject", "nope", &into, "--json"]);
    assert!(!out.status.success());
}

#[test]
fn operations_and_ask_from_the_command_line() {
    let cli = Cli::new();
    let path = cli.write(
        "hr.md",
        "# HR\n\nAlice has worked for Acme since March 2024.\n",
    );
    cli.ok_json(&["ingest", path.to_str().unwrap(), "--wait", "--json"]);

    let ops = cli.ok_json(&["operations", "list", "--json"]);
    let names: Vec<&str> = ops["operations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "resolve_entity",
            "claims_and_sources_context",
            "facts_context",
            "combined_context"
        ]
    );
    assert!(ops["operations"][2]["input_schema"]["properties"]["temporal_scope"].is_object());

    let resolved = cli.ok_json(&[
        "operations",
        "run",
        "resolve_entity",
        "--input",
        r#"{"name": "Alice"}"#,
    ]);
    let alice = resolved["results"][0]["entity_id"]
        .as_str()
        .unwrap()
        .to_string();
    let input = format!(r#"{{"query": "Alice employer", "entity_ids": ["{alice}"]}}"#);
    let facts = cli.ok_json(&["operations", "run", "facts_context", "--input", &input]);
    assert_eq!(facts["grain"], "fact");
    assert_eq!(facts["temporal_scope"]["mode"], "current");
    assert_eq!(facts["results"][0]["object_name"], "Acme");
    let bundle = cli.ok_json(&["operations", "run", "combined_context", "--input", &input]);
    assert_eq!(bundle["contract"], "ContextBundle/v2");

    // Receipts.
    let with_receipt = r#"{"query": "Alice employer", "record_receipt": true}"#;
    let env = cli.ok_json(&[
        "operations",
        "run",
        "facts_context",
        "--input",
        with_receipt,
    ]);
    let receipt = env["receipt_id"].as_str().expect("receipt_id").to_string();
    let inspected = cli.ok_json(&["receipts", "inspect", &receipt, "--json"]);
    assert_eq!(inspected["operation"], "facts_context");
    assert!(!inspected.to_string().contains("Acme"));
    let resolved = cli.ok_json(&["receipts", "resolve", &receipt, "--json"]);
    assert_eq!(resolved["status"], "resolved");
    assert!(
        resolved["records"][0]["text"]
            .as_str()
            .unwrap()
            .contains("Acme")
    );

    // Bad input: typed errors.
    let out = cli.run(&[
        "operations",
        "run",
        "facts_context",
        "--input",
        "{not json",
        "--json",
    ]);
    assert!(!out.status.success());
    let err: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(err["code"], "invalid_parameter");

    // The answer sheet.
    let out = cli.run(&["ask", "where does Alice work?", "--entity", "Alice"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let sheet = String::from_utf8_lossy(&out.stdout);
    assert!(
        sheet.contains("Facts:") && sheet.contains("Alice works for Acme"),
        "{sheet}"
    );
    assert!(
        sheet.contains("Evidence:") && sheet.contains("[HR, said"),
        "{sheet}"
    );
    let out = cli.run(&["ask", "who?", "--entity", "Nobody Atall"]);
    assert!(!out.status.success());
}

#[test]
fn search_targets_entities_and_documents_and_scopes_by_document() {
    let cli = Cli::new();
    fixed_corpus(&cli);
    // Document filters scope chunk, claim and fact search before the cut.
    let scoped = cli.ok_json(&["search", "water", "--title", "gardening", "--json"]);
    let results = scoped["results"].as_array().unwrap();
    assert!(!results.is_empty());
    assert!(
        results.iter().all(|r| r["source_ref"] == "docs/guide.md"),
        "{scoped}"
    );
    let elsewhere = cli.ok_json(&[
        "search", "water", "--title", "volcano", "--target", "claims", "--json",
    ]);
    assert!(
        elsewhere["results"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["source_ref"] == "web/volcano"),
        "{elsewhere}"
    );
    // Hydrate a claim: the claim itself and the chunk it occurs in.
    let claim_id = elsewhere["results"][0]["claim_id"]
        .as_str()
        .unwrap()
        .to_string();
    let hydrated = cli.ok_json(&["hydrate", &format!("claim:{claim_id}"), "--json"]);
    assert_eq!(
        hydrated["results"][0]["record"],
        format!("claim:{claim_id}")
    );
    assert_eq!(
        hydrated["results"][0]["sources"][0]["source_ref"],
        "web/volcano"
    );
    let out = cli.run(&["hydrate", "entity:nope"]);
    assert!(!out.status.success());
    // Documents as a search target.
    let docs = cli.ok_json(&["search", "Etna", "--target", "documents", "--json"]);
    assert_eq!(docs["operation"]["name"], "search_documents");
    assert_eq!(docs["results"][0]["source_ref"], "web/volcano");
    // Entities as a search target: ranked by name, never a silent guess.
    let entities = cli.ok_json(&["search", "Maria", "--target", "entities", "--json"]);
    assert_eq!(entities["operation"]["name"], "resolve_entity");
    assert_eq!(
        entities["results"][0]["canonical_name"], "Maria",
        "{entities}"
    );
    // Bad filters are typed errors.
    let out = cli.run(&["search", "water", "--from", "soon", "--json"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("invalid_parameter"));
    let out = cli.run(&["search", "Maria", "--target", "entities", "--title", "x"]);
    assert!(!out.status.success());
}

#[test]
fn documents_delete_reports_counts_and_a_repeat_is_document_not_found() {
    let cli = Cli::new();
    fixed_corpus(&cli);
    let docs = cli.ok_json(&["documents", "list", "--json"]);
    let guide = docs["documents"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["source_ref"] == "docs/guide.md")
        .expect("the guide is listed");
    let id = guide["doc_id"].as_str().unwrap().to_string();
    let deleted = cli.ok_json(&["documents", "delete", &id, "--json"]);
    assert_eq!(deleted["doc_id"], id.as_str());
    assert!(deleted["claims_retired"].as_u64().unwrap() > 0, "{deleted}");
    for key in ["deleted_at", "relations_closed", "observations_closed"] {
        assert!(!deleted[key].is_null(), "{key}: {deleted}");
    }
    let docs = cli.ok_json(&["documents", "list", "--json"]);
    assert!(
        docs["documents"]
            .as_array()
            .unwrap()
            .iter()
            .all(|d| d["doc_id"] != id.as_str()),
        "{docs}"
    );
    let shown = cli.ok_json(&["documents", "show", &id, "--json"]);
    assert_eq!(shown["status"], "deleted");
    let out = cli.run(&["documents", "delete", &id, "--json"]);
    assert!(!out.status.success());
    let body: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(body["code"], "document_not_found", "{body}");
}

#[test]
fn claims_retract_and_facts_invalidate_record_their_reasons() {
    let cli = Cli::new();
    fixed_corpus(&cli);
    let claims = cli.ok_json(&["claims", "list", "--json"]);
    let claim = claims["claims"][0]["claim_id"]
        .as_str()
        .unwrap()
        .to_string();
    let r = cli.ok_json(&[
        "claims",
        "retract",
        &claim,
        "--reason",
        "wrong transcript",
        "--request-id",
        "req-9",
        "--json",
    ]);
    assert_eq!(r["claim_id"], claim.as_str());
    assert_eq!(r["reason"], "wrong transcript");
    assert_eq!(r["was_current"], true);
    let out = cli.run(&[
        "claims",
        "retract",
        &claim,
        "--reason",
        "other",
        "--request-id",
        "req-9",
        "--json",
    ]);
    assert!(!out.status.success());
    let body: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(body["code"], "request_conflict", "{body}");

    let facts = cli.ok_json(&["facts", "list", "--json"]);
    let fact = facts["facts"][0]["fact_id"].as_str().unwrap().to_string();
    let r = cli.ok_json(&[
        "facts",
        "invalidate",
        &fact,
        "--reason",
        "outdated",
        "--json",
    ]);
    assert_eq!(r["closed_reason"], "invalidated");
    let trace = cli.ok_json(&["trace", &fact, "--json"]);
    assert_eq!(trace["events"][0]["event"], "invalidated", "{trace}");
    assert_eq!(trace["events"][0]["reason"], "outdated");
    let out = cli.run(&["facts", "invalidate", &fact, "--reason", "again", "--json"]);
    let body: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(body["code"], "conflict", "{body}");
}

#[test]
fn conversations_append_is_idempotent_and_refuses_a_changed_event() {
    let cli = Cli::new();
    let first = cli.write(
        "first.json",
        r#"{"messages": [
            {"event_id": "e1", "speaker": "Ana", "text": "The release moved to Friday."},
            {"event_id": "e2", "speaker": "Ben", "text": "I will tell the support team."}
        ]}"#,
    );
    let a = cli.ok_json(&[
        "conversations",
        "append",
        "--ref",
        "chat/release",
        first.to_str().unwrap(),
        "--wait",
        "--json",
    ]);
    assert_eq!(a["appended"]["outcome"], "created");
    assert_eq!(a["appended"]["appended"], 2);
    let again = cli.ok_json(&[
        "conversations",
        "append",
        "--ref",
        "chat/release",
        first.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(again["appended"]["outcome"], "unchanged");
    assert_eq!(again["appended"]["already_present"], 2);
    let changed = cli.write(
        "changed.json",
        r#"[{"event_id": "e2", "speaker": "Ben", "text": "I will not tell anyone."}]"#,
    );
    let out = cli.run(&[
        "conversations",
        "append",
        "--ref",
        "chat/release",
        changed.to_str().unwrap(),
        "--json",
    ]);
    assert!(!out.status.success());
    let body: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(body["code"], "conflict", "{body}");
    // The conversation reads back as it was appended, the refused change left out.
    let shown = cli.ok_json(&["conversations", "show", "--ref", "chat/release", "--json"]);
    let texts: Vec<&str> = shown["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["text"].as_str().unwrap())
        .collect();
    assert_eq!(
        texts,
        [
            "The release moved to Friday.",
            "I will tell the support team."
        ]
    );
    let out = cli.run(&["conversations", "show", "--ref", "chat/release"]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.starts_with("[e1] "), "{text}");
    assert!(
        text.contains("Ben: I will tell the support team."),
        "{text}"
    );
    let out = cli.run(&["conversations", "show", "--ref", "chat/none", "--json"]);
    assert_eq!(
        serde_json::from_slice::<Value>(&out.stdout).unwrap()["code"],
        "document_not_found"
    );
}

#[test]
fn export_writes_a_pack_and_feedback_rates_a_receipt_item() {
    let cli = Cli::new();
    fixed_corpus(&cli);
    let out = cli.dir.path().join("pack.json");
    let written = cli.ok_json(&["export", "--out", out.to_str().unwrap(), "--json"]);
    assert!(written["facts"].as_u64().unwrap() > 0, "{written}");
    let pack: Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    assert_eq!(pack["format"], "rememberstack.pack/v1");
    assert_eq!(pack["digest"], written["digest"]);

    let env = cli.ok_json(&[
        "operations",
        "run",
        "claims_and_sources_context",
        "--input",
        r#"{"query": "nightly backup", "record_receipt": true}"#,
        "--json",
    ]);
    let receipt = env["receipt_id"].as_str().expect("a receipt").to_string();
    let inspected = cli.ok_json(&["receipts", "inspect", &receipt, "--json"]);
    let s = &inspected["selections"][0];
    let item = format!(
        "{}:{}",
        s["kind"].as_str().unwrap(),
        s["id"].as_str().unwrap()
    );
    let f = cli.ok_json(&["feedback", "add", &receipt, &item, "useful", "--json"]);
    assert_eq!(f["rating"], "useful");
    let listed = cli.ok_json(&["feedback", "list", "--json"]);
    assert_eq!(listed["feedback"].as_array().unwrap().len(), 1);
    let out = cli.run(&["feedback", "add", &receipt, &item, "meh", "--json"]);
    let body: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(body["code"], "invalid_parameter", "{body}");
}

#[test]
fn notes_add_promote_and_list_with_typed_conflicts() {
    let cli = Cli::new();
    cli.ok_json(&["notes", "policy", "candidate", "--json"]);
    let add = |request: &str, text: &str| {
        cli.run(&[
            "notes",
            "add",
            "--key",
            "prefs/editor",
            "--revision",
            "1",
            "--request-id",
            request,
            text,
            "--json",
        ])
    };
    let out = add("req-1", "Ana prefers vim.");
    assert!(out.status.success());
    let note: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(note["lifecycle"], "candidate");
    let version = note["version_id"].as_str().unwrap().to_string();
    for (request, text, code) in [
        ("req-1", "Ana prefers emacs.", "request_conflict"),
        ("req-2", "Ana prefers emacs.", "revision_conflict"),
    ] {
        let out = add(request, text);
        assert!(!out.status.success());
        let body: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(body["code"], code, "{body}");
    }
    let out = cli.run(&[
        "notes",
        "promote",
        &version,
        "--expected-version",
        "7",
        "--json",
    ]);
    let body: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(body["code"], "conflict", "{body}");
    let promoted = cli.ok_json(&[
        "notes",
        "promote",
        &version,
        "--expected-version",
        "1",
        "--json",
    ]);
    assert_eq!(promoted["lifecycle"], "promoted");
    assert_eq!(promoted["lifecycle_version"], 2);
    let listed = cli.ok_json(&["notes", "list", "--json"]);
    assert_eq!(listed["notes"][0]["lifecycle"], "promoted");
    assert!(!listed.to_string().contains("vim"), "{listed}");
}

#[test]
fn forget_erases_a_document_and_refuses_its_bytes_with_a_custom_manifest_root() {
    let cli = Cli::new();
    let root = cli.dir.path().join("forget-manifests");
    let root_s = root.to_str().unwrap().to_string();
    let secret = cli.write("secret.md", "# Secret\n\nQwzmarker works for Zentrix.\n");
    let ingested = cli.ok_json(&[
        "ingest",
        secret.to_str().unwrap(),
        "--wait",
        "--json",
        "--manifest-root",
        &root_s,
    ]);
    let id = ingested["ingested"][0]["document_id"]
        .as_str()
        .unwrap_or_else(|| panic!("{ingested}"))
        .to_string();
    let report = cli.ok_json(&["forget", &id, "--json", "--manifest-root", &root_s]);
    assert_eq!(report["doc_id"], id.as_str());
    assert!(report["claims"].as_u64().unwrap() >= 1, "{report}");
    assert!(
        report["verification"]
            .as_array()
            .unwrap()
            .iter()
            .all(|c| c["remaining"] == 0),
        "{report}"
    );
    // The manifest is in the configured root, and holds no text.
    let manifests: Vec<_> = std::fs::read_dir(&root).unwrap().collect();
    assert_eq!(manifests.len(), 1);
    let body = std::fs::read_to_string(manifests[0].as_ref().unwrap().path()).unwrap();
    assert!(
        body.contains(&id) && !body.to_lowercase().contains("qwzmarker"),
        "{body}"
    );
    for (args, code) in [
        (vec!["forget", id.as_str(), "--json"], "document_not_found"),
        (
            vec!["ingest", secret.to_str().unwrap(), "--json"],
            "forgotten_content",
        ),
    ] {
        let out = cli.run(&args);
        assert!(!out.status.success());
        let body: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(body["code"], code, "{body}");
    }
}

#[test]
fn notes_revoke_and_forget_from_the_command_line() {
    let cli = Cli::new();
    let add = |key: &str, request: &str, text: &str| {
        cli.ok_json(&[
            "notes",
            "add",
            "--key",
            key,
            "--revision",
            "1",
            "--request-id",
            request,
            text,
            "--json",
        ])
    };
    let note = add("prefs/editor", "req-1", "Ana prefers vim.");
    let version = note["version_id"].as_str().unwrap().to_string();
    let out = cli.run(&[
        "notes",
        "revoke",
        &version,
        "--expected-version",
        "3",
        "--json",
    ]);
    let body: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(body["code"], "conflict", "{body}");
    let revoked = cli.ok_json(&[
        "notes",
        "revoke",
        &version,
        "--expected-version",
        "1",
        "--json",
    ]);
    assert_eq!(revoked["lifecycle"], "revoked");
    let out = cli.run(&[
        "notes",
        "add",
        "--key",
        "prefs/editor",
        "--revision",
        "1",
        "--request-id",
        "req-2",
        "Ana prefers vim.",
        "--json",
    ]);
    let body: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(body["code"], "revoked", "{body}");

    let other = add("prefs/shell", "req-3", "Ana uses fish.");
    let note_id = other["note_id"].as_str().unwrap().to_string();
    let report = cli.ok_json(&["notes", "forget", &note_id, "--json"]);
    assert_eq!(report["versions"], 1, "{report}");
    let listed = cli.ok_json(&["notes", "list", "--json"]);
    assert_eq!(listed["notes"].as_array().unwrap().len(), 1, "{listed}");
}

/// `REMEMBERSTACK_PG_SCHEMA` names a PostgreSQL schema: with the embedded store it
/// is refused, saying so, before anything is created; a lease that is not a
/// positive number of seconds is refused too.
#[test]
fn a_store_schema_or_a_bad_lease_is_a_config_error() {
    let cli = Cli::new();
    for (var, value) in [
        ("REMEMBERSTACK_PG_SCHEMA", "memory"),
        ("REMEMBERSTACK_LEASE_SECS", "0"),
        ("REMEMBERSTACK_LEASE_SECS", "soon"),
    ] {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_remember"));
        for (k, _) in std::env::vars() {
            if k.starts_with("REMEMBERSTACK_") {
                cmd.env_remove(k);
            }
        }
        // Deterministic vectors, no model to load or download.
        cmd.env("REMEMBERSTACK_EMBEDDER", "hashing");
        let out = cmd
            .env(var, value)
            .arg("--db")
            .arg(cli.db())
            .args(["status", "--json"])
            .output()
            .unwrap();
        assert!(!out.status.success(), "{var}={value}");
        let err: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(err["code"], "config", "{err}");
        assert!(err["message"].as_str().unwrap().contains(var), "{err}");
        assert!(!cli.db().exists(), "{var}={value} created the store");
    }
}

/// `--db postgres://…` runs every command on the PostgreSQL store (when
/// `DATABASE_URL` is set; skipped, saying so, otherwise). Each run uses a
/// namespace of its own in the database's default schema.
#[test]
fn postgres_url_as_db() {
    let Some(url) = std::env::var("DATABASE_URL")
        .ok()
        .filter(|u| !u.trim().is_empty())
    else {
        eprintln!("postgres_url_as_db: skipped, DATABASE_URL is not set");
        return;
    };
    let cli = Cli::new();
    let ns = format!("cli-{}", uuid::Uuid::new_v4().simple());
    let manifests = cli.dir.path().join("manifests");
    let run = |args: &[&str]| -> Value {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_remember"));
        for (k, _) in std::env::vars() {
            if k.starts_with("REMEMBERSTACK_") {
                cmd.env_remove(k);
            }
        }
        // Deterministic vectors, no model to load or download.
        cmd.env("REMEMBERSTACK_EMBEDDER", "hashing");
        let out = cmd
            .arg("--db")
            .arg(&url)
            .arg("--namespace")
            .arg(&ns)
            .arg("--manifest-root")
            .arg(&manifests)
            .args(args)
            .arg("--json")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    };
    assert_eq!(run(&["migrate"])["store"], "postgres");
    let chat = cli.write("standup.json", CHAT);
    let ingested = run(&[
        "ingest",
        chat.to_str().unwrap(),
        "--source-ref",
        "chat/standup",
    ]);
    assert_eq!(ingested["ingested"][0]["outcome"], "created");
    let processed = run(&["process"]);
    assert!(processed["completed"].as_u64().unwrap() > 0, "{processed}");
    let env = run(&["search", "why did the nightly backup fail", "--k", "2"]);
    assert_eq!(
        env["results"][0]["event_ids"],
        serde_json::json!(["m1", "m2"]),
        "{env}"
    );
    // The same bytes again change nothing.
    let again = run(&[
        "ingest",
        chat.to_str().unwrap(),
        "--source-ref",
        "chat/standup",
    ]);
    assert_eq!(again["ingested"][0]["outcome"], "unchanged");
    // Hard forget works on PostgreSQL too, and the bytes are refused afterwards.
    let doc = ingested["ingested"][0]["document_id"]
        .as_str()
        .unwrap()
        .to_string();
    let forgot = run(&["forget", &doc]);
    assert!(forgot["chunks"].as_u64().unwrap() > 0, "{forgot}");
    let env = run(&["search", "nightly backup", "--k", "2"]);
    assert_eq!(env["results"], serde_json::json!([]), "{env}");
}

/// `remember worker` drains the ledger continuously and stops cleanly on SIGTERM,
/// finishing what it leased; `remember migrate` says which store it migrated.
#[test]
fn worker_runs_until_sigterm_and_migrate_reports_the_store() {
    let cli = Cli::new();
    let migrated = cli.ok_json(&["migrate", "--json"]);
    assert_eq!(migrated["store"], "sqlite");
    // The schema version is the number of the latest migration shipped.
    let latest = std::fs::read_dir(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../rememberstack-sqlite/migrations"
    ))
    .unwrap()
    .filter_map(|e| {
        e.unwrap()
            .file_name()
            .to_str()?
            .get(..4)?
            .parse::<i64>()
            .ok()
    })
    .max();
    assert_eq!(migrated["schema_version"].as_i64(), latest);
    let chat = cli.write("standup.json", CHAT);
    cli.ok_json(&[
        "ingest",
        chat.to_str().unwrap(),
        "--source-ref",
        "chat/standup",
        "--json",
    ]);
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_remember"));
    for (k, _) in std::env::vars() {
        if k.starts_with("REMEMBERSTACK_") {
            cmd.env_remove(k);
        }
    }
    // Deterministic vectors, no model to load or download.
    cmd.env("REMEMBERSTACK_EMBEDDER", "hashing");
    let worker = cmd
        .arg("--db")
        .arg(cli.db())
        .args(["worker", "--concurrency", "2", "--poll-ms", "50", "--json"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The worker, not this test, processes the conversation.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    loop {
        let env = cli.ok_json(&["search", "why did the nightly backup fail", "--json"]);
        if env["results"].as_array().is_some_and(|r| !r.is_empty()) {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the worker did not process the conversation"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
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
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(report["completed"].as_u64().unwrap() > 0, "{report}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("stopping"));
    // Nothing it leased is left running (what it never claimed stays pending).
    let status = cli.ok_json(&["status", "--json"]);
    for (stage, counts) in status["ledger"].as_object().unwrap() {
        assert_eq!(
            counts["running"].as_u64().unwrap_or(0),
            0,
            "{stage}: {status}"
        );
    }
    cli.ok_json(&["process", "--json"]);
}

/// `remember keys`: create prints the secret once, list never shows it, revoke
/// marks the key; `--json` shapes; bad input is a typed error that writes nothing.
#[test]
fn keys_create_list_revoke() {
    let cli = Cli::new();
    let created = cli.ok_json(&[
        "keys",
        "create",
        "--namespace",
        "team-a",
        "--namespace",
        "team-b",
        "--scope",
        "read",
        "--scope",
        "write",
        "--name",
        "ci bot",
        "--json",
    ]);
    let secret = created["secret"].as_str().unwrap().to_string();
    assert!(
        secret.starts_with("rsk_") && secret.len() == 47,
        "{created}"
    );
    let key = &created["key"];
    let id = key["id"].as_str().unwrap().to_string();
    assert!(id.starts_with("key_"), "{created}");
    assert_eq!(key["namespaces"], serde_json::json!(["team-a", "team-b"]));
    assert_eq!(key["scopes"], serde_json::json!(["read", "write"]));
    assert_eq!(key["name"], "ci bot");
    assert_eq!(key["prefix"], &secret[..12]);
    assert_eq!(key["revoked_at"], Value::Null);
    let mut fields: Vec<&str> = created
        .as_object()
        .unwrap()
        .keys()
        .map(|k| k.as_str())
        .collect();
    fields.sort();
    assert_eq!(fields, ["key", "secret"]);
    let mut fields: Vec<&str> = key
        .as_object()
        .unwrap()
        .keys()
        .map(|k| k.as_str())
        .collect();
    fields.sort();
    assert_eq!(
        fields,
        [
            "created_at",
            "id",
            "name",
            "namespaces",
            "prefix",
            "revoked_at",
            "scopes"
        ]
    );

    // The human form prints the secret once, with the warning.
    let out = cli.run(&[
        "keys",
        "create",
        "--namespace",
        "team-a",
        "--scope",
        "admin",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let second = text
        .lines()
        .find_map(|l| l.strip_prefix("secret: "))
        .unwrap_or_else(|| panic!("no secret line: {text}"))
        .to_string();
    assert!(second.starts_with("rsk_"), "{text}");
    assert!(text.contains("shown once"), "{text}");

    // Listings: both keys, oldest first, no secret and no hash.
    let listed = cli.ok_json(&["keys", "list", "--json"]);
    let keys = listed["keys"].as_array().unwrap();
    assert_eq!(keys.len(), 2, "{listed}");
    assert_eq!(keys[0], *key);
    assert_eq!(keys[1]["scopes"], serde_json::json!(["admin"]));
    let listed_text = listed.to_string();
    let table = String::from_utf8_lossy(&cli.run(&["keys", "list"]).stdout).to_string();
    for s in [&secret, &second] {
        assert!(!listed_text.contains(s.as_str()), "{listed_text}");
        assert!(!table.contains(s.as_str()), "{table}");
        assert!(!listed_text.contains(&s[12..]), "{listed_text}");
    }
    assert!(table.contains(&id) && table.contains("ci bot"), "{table}");
    assert_eq!(table.matches("active").count(), 2, "{table}");

    // Revoke: the key is listed as revoked; revoking again keeps the first time.
    let revoked = cli.ok_json(&["keys", "revoke", &id, "--json"]);
    let at = revoked["key"]["revoked_at"].as_str().unwrap().to_string();
    assert_eq!(revoked["key"]["id"], id.as_str());
    let again = cli.ok_json(&["keys", "revoke", &id, "--json"]);
    assert_eq!(again["key"]["revoked_at"], at.as_str());
    let listed = cli.ok_json(&["keys", "list", "--json"]);
    assert_eq!(listed["keys"][0]["revoked_at"], at.as_str(), "{listed}");
    assert_eq!(listed["keys"][1]["revoked_at"], Value::Null, "{listed}");
    let table = String::from_utf8_lossy(&cli.run(&["keys", "list"]).stdout).to_string();
    // The table writes milliseconds always; JSON leaves out a zero fraction.
    let at_ms = rememberstack::time::to_rfc3339(&rememberstack::time::parse_rfc3339(&at).unwrap());
    assert!(table.contains(&format!("revoked={at_ms}")), "{table}");
    assert_eq!(table.matches("active").count(), 1, "{table}");
}

#[test]
fn keys_bad_input_is_a_typed_error_and_writes_nothing() {
    let cli = Cli::new();
    // A bad scope is refused before the store is even opened.
    let out = cli.run(&["keys", "create", "--namespace", "a", "--scope", "owner"]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("invalid_input") && stderr.contains("owner"),
        "{stderr}"
    );
    assert!(out.stdout.is_empty());
    assert!(!cli.db().exists(), "a refused key opened the store");
    for args in [
        &[
            "keys",
            "create",
            "--namespace",
            "a",
            "--scope",
            "owner",
            "--json",
        ][..],
        &["keys", "create", "--scope", "read", "--json"],
        &["keys", "create", "--namespace", "a", "--json"],
        &[
            "keys",
            "create",
            "--namespace",
            "Not Valid",
            "--scope",
            "read",
            "--json",
        ],
        &[
            "keys",
            "create",
            "--namespace",
            "a",
            "--scope",
            "read",
            "--name",
            "",
            "--json",
        ],
    ] {
        let out = cli.run(args);
        assert!(!out.status.success(), "{args:?}");
        let body: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(body["code"], "invalid_input", "{args:?}: {body}");
    }
    let out = cli.run(&["keys", "revoke", "key_missing", "--json"]);
    assert!(!out.status.success());
    let body: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(body["code"], "not_found", "{body}");
    let listed = cli.ok_json(&["keys", "list", "--json"]);
    assert_eq!(listed["keys"], serde_json::json!([]), "{listed}");
    // Other commands still read exactly one namespace.
    let out = cli.run(&["--namespace", "a", "--namespace", "b", "status", "--json"]);
    assert!(!out.status.success());
    let body: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(body["code"], "invalid_input", "{body}");
}

/// `remember keys` on PostgreSQL (`--db postgres://…`; when `DATABASE_URL` is set,
/// skipped otherwise): a key created by one process is listed and revoked by others.
#[test]
fn postgres_keys() {
    let Some(url) = std::env::var("DATABASE_URL")
        .ok()
        .filter(|u| !u.trim().is_empty())
    else {
        eprintln!("postgres_keys: skipped, DATABASE_URL is not set");
        return;
    };
    let cli = Cli::new();
    let ns = format!("cli-{}", uuid::Uuid::new_v4().simple());
    let manifests = cli.dir.path().join("manifests");
    let run = |args: &[&str]| -> Value {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_remember"));
        for (k, _) in std::env::vars() {
            if k.starts_with("REMEMBERSTACK_") {
                cmd.env_remove(k);
            }
        }
        // Deterministic vectors, no model to load or download.
        cmd.env("REMEMBERSTACK_EMBEDDER", "hashing");
        let out = cmd
            .arg("--db")
            .arg(&url)
            .arg("--manifest-root")
            .arg(&manifests)
            .args(args)
            .arg("--json")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let created = run(&["keys", "create", "--namespace", &ns, "--scope", "ingest"]);
    let id = created["key"]["id"].as_str().unwrap().to_string();
    let secret = created["secret"].as_str().unwrap().to_string();
    let find = |listed: &Value| -> Value {
        listed["keys"]
            .as_array()
            .unwrap()
            .iter()
            .find(|k| k["id"] == id.as_str())
            .cloned()
            .unwrap_or_else(|| panic!("{id} not listed"))
    };
    let listed = run(&["keys", "list"]);
    assert!(!listed.to_string().contains(&secret));
    assert_eq!(find(&listed), created["key"]);
    run(&["keys", "revoke", &id]);
    assert!(find(&run(&["keys", "list"]))["revoked_at"].is_string());
}

/// One HTTP/1.1 request over a plain socket; returns (status, body).
fn http(port: u16, method: &str, path: &str, body: Option<&str>) -> (u16, String) {
    use std::io::{Read, Write as _};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    let body = body.unwrap_or("");
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    let status = out
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let body = out.split("\r\n\r\n").nth(1).unwrap_or("").to_string();
    (status, body)
}

/// `remember serve` answers HTTP on loopback, processes what it ingests with its
/// workers, refuses a public address without keys, and stops cleanly on SIGTERM.
#[test]
fn serve_answers_http_and_stops_on_sigterm() {
    let cli = Cli::new();
    let free_port = || {
        std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port()
    };
    // Without keys a non-loopback address is refused.
    let out = cli.run(&["serve", "--listen", "0.0.0.0:0", "--json"]);
    assert!(!out.status.success());
    let err: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(err["code"], "config", "{err}");

    let port = free_port();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_remember"));
    for (k, _) in std::env::vars() {
        if k.starts_with("REMEMBERSTACK_") {
            cmd.env_remove(k);
        }
    }
    // Deterministic vectors, no model to load or download.
    cmd.env("REMEMBERSTACK_EMBEDDER", "hashing");
    let server = cmd
        .arg("--db")
        .arg(cli.db())
        .args([
            "serve",
            "--listen",
            &format!("127.0.0.1:{port}"),
            "--workers",
            "1",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            std::time::Instant::now() < deadline,
            "the server did not start"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let (status, body) = http(port, "GET", "/health", None);
    assert_eq!((status, body.as_str()), (200, r#"{"status":"ok"}"#));
    let (status, body) = http(
        port,
        "POST",
        "/v1/namespaces/default/documents?wait=true",
        Some(
            r##"{"text": "# HR\n\nAlice has worked for Acme since March 2024.", "source_ref": "hr"}"##,
        ),
    );
    assert_eq!(status, 200, "{body}");
    let (status, body) = http(
        port,
        "POST",
        "/v1/namespaces/default/operations/facts_context",
        Some(r#"{"query": "Alice employer"}"#),
    );
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("Acme"), "{body}");
    let (status, body) = http(port, "GET", "/v1/namespaces/default/documents/nope", None);
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("\"request_id\""), "{body}");

    let status = Command::new("kill")
        .args(["-TERM", &server.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let out = server.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "serve exit: {stderr}");
    assert!(stderr.contains("stopped"), "{stderr}");
    assert!(out.stdout.is_empty(), "nothing on stdout");
    // The CLI reads what the server wrote.
    let listed = cli.ok_json(&["documents", "list", "--json"]);
    assert_eq!(listed["documents"].as_array().unwrap().len(), 1, "{listed}");
}

/// The default all-MiniLM-L6-v2 files (`REMEMBERSTACK_TEST_MODEL_DIR`, else the
/// model cache), as the model's own tests find them.
fn real_model_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("REMEMBERSTACK_TEST_MODEL_DIR").filter(|d| !d.is_empty()) {
        return PathBuf::from(dir);
    }
    let dir = rememberstack::models::cache_dir()
        .unwrap()
        .join(rememberstack::models::DEFAULT_MODEL);
    assert!(
        rememberstack::models::is_complete(&dir),
        "no all-MiniLM-L6-v2 model in {}: run scripts/fetch-model.sh",
        dir.display()
    );
    dir
}

/// With no model to be had, the store opens on the hashing embedder and says so
/// everywhere; `models import` then installs one, and the next open uses it.
#[test]
fn without_a_model_the_store_says_so_until_one_is_imported() {
    let cache = tempfile::tempdir().unwrap();
    let env = |k: &str, v: &str| (k.to_string(), v.to_string());
    let cli = Cli::new().with_env(vec![
        env("REMEMBERSTACK_EMBEDDER", "local"),
        env("REMEMBERSTACK_MODELS_DIR", cache.path().to_str().unwrap()),
        env("REMEMBERSTACK_OFFLINE", "1"),
    ]);
    let note = cli.write("n.md", "# Crew\n\nMarta navigates the boat at night.\n");
    let out = cli.run(&["ingest", note.to_str().unwrap(), "--wait"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("warning: no semantic embedding model") && stderr.contains("models pull"),
        "{stderr}"
    );
    let status = cli.ok_json(&["status", "--json"]);
    assert_eq!(
        status["semantic"]["degraded"], "lexical embedder",
        "{status}"
    );
    assert!(
        status["embedder_fallback"]
            .as_str()
            .unwrap()
            .contains("downloads are off"),
        "{status}"
    );
    let found = cli.ok_json(&["search", "who steers the boat", "--json"]);
    assert_eq!(
        found["freshness"]["semantic"]["degraded"],
        "lexical embedder"
    );
    let doctor = cli.run(&["doctor", "--json"]);
    assert!(!doctor.status.success());
    let report: Value = serde_json::from_slice(&doctor.stdout).unwrap();
    let check = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "embedder")
        .unwrap()
        .clone();
    assert_eq!(check["ok"], false, "{check}");

    // An incomplete directory is refused and installs nothing.
    let partial = tempfile::tempdir().unwrap();
    std::fs::write(partial.path().join("config.json"), "{}").unwrap();
    let out = cli.run(&[
        "models",
        "import",
        partial.path().to_str().unwrap(),
        "--json",
    ]);
    assert!(!out.status.success());
    let err: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(err["code"], "config", "{err}");
    assert_eq!(
        cli.ok_json(&["models", "list", "--json"])["cached"],
        serde_json::json!([])
    );

    // The real model, imported under the default name: the next open uses it, and
    // processing re-embeds what the hashing embedder had embedded.
    let installed = cli.ok_json(&[
        "models",
        "import",
        real_model_dir().to_str().unwrap(),
        "--json",
    ]);
    assert!(
        installed["installed"]
            .as_str()
            .unwrap()
            .ends_with("all-MiniLM-L6-v2")
    );
    let listed = cli.ok_json(&["models", "list", "--json"]);
    assert_eq!(listed["cached"][0]["name"], "all-MiniLM-L6-v2", "{listed}");
    assert_eq!(listed["cached"][0]["complete"], true);
    assert_eq!(listed["cached"][0]["default"], true);
    let out = cli.run(&["process"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!String::from_utf8_lossy(&out.stderr).contains("warning"));
    let status = cli.ok_json(&["status", "--json"]);
    assert!(
        status["embedder"]
            .as_str()
            .unwrap()
            .starts_with("local/all-MiniLM-L6-v2/d384/"),
        "{status}"
    );
    assert!(status.get("embedder_fallback").is_none(), "{status}");
    assert!(status["semantic"].get("degraded").is_none(), "{status}");
    assert_eq!(status["semantic"]["ready"], true, "{status}");
    let found = cli.ok_json(&["search", "who steers the boat", "--json"]);
    assert!(found["freshness"]["semantic"].get("degraded").is_none());
    assert!(
        found["results"][0]["text"]
            .as_str()
            .unwrap()
            .contains("Marta navigates"),
        "{found}"
    );
}
