//! The golden scenario (`tests/golden/`): one fixture driven through every surface
//! must give the same envelopes, modulo ids and the run's own timestamps. This
//! module holds the Rust side: the fixture, the steps (over any [`Surface`]), the
//! normalisation and the comparison with `tests/golden/expected.json`.
//!
//! The Python and Node tests apply the same steps and normalisation
//! (`tests/golden/README.md`) to the same files.

pub mod chat;

use async_trait::async_trait;
use rememberstack::{FactId, IngestOptions, Memory};
use serde_json::{Map, Value, json};
use std::collections::HashMap;
use std::path::PathBuf;

/// The directory holding `scenario.json` and `expected.json`.
pub fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../golden")
}

/// The fixture.
pub fn scenario() -> Value {
    let text =
        std::fs::read_to_string(dir().join("scenario.json")).expect("tests/golden/scenario.json");
    serde_json::from_str(&text).expect("scenario.json is JSON")
}

/// One way in: the operations the scenario needs, each returning the JSON the
/// surface gives back.
#[async_trait]
pub trait Surface: Send + Sync {
    /// Ingest a text document (`{source_ref, source_time, text}`).
    async fn ingest_text(&self, doc: &Value);
    /// Ingest a conversation (`{source_ref, source_time, conversation}`).
    async fn ingest_conversation(&self, conv: &Value);
    /// Process until the ledger is idle.
    async fn process(&self);
    /// Run a registry operation; the envelope (or bundle).
    async fn operation(&self, name: &str, input: &Value) -> Value;
    /// Correct a fact.
    async fn correct(&self, fact_id: &str, statement: &str, reason: &str, request_id: &str);
}

/// Drive the scenario through `surface`: the raw (unnormalised) output, one
/// envelope per read, keyed by operation name.
pub async fn drive(surface: &dyn Surface) -> Value {
    let s = scenario();
    for doc in s["documents"].as_array().expect("documents") {
        surface.ingest_text(doc).await;
    }
    surface.ingest_conversation(&s["conversation"]).await;
    surface.process().await;
    let c = &s["correction"];
    let found = surface
        .operation(
            c["find"]["operation"].as_str().expect("find.operation"),
            &c["find"]["input"],
        )
        .await;
    let fact_id = correction_target(&found, c["object_name"].as_str().expect("object_name"));
    surface
        .correct(
            &fact_id,
            c["statement"].as_str().expect("statement"),
            c["reason"].as_str().expect("reason"),
            c["request_id"].as_str().expect("request_id"),
        )
        .await;
    surface.process().await;
    let mut out = Map::new();
    for read in s["reads"].as_array().expect("reads") {
        let name = read["operation"].as_str().expect("operation");
        out.insert(
            name.to_string(),
            surface.operation(name, &read["input"]).await,
        );
    }
    Value::Object(out)
}

/// The first fact result whose object is `object_name`.
pub fn correction_target(envelope: &Value, object_name: &str) -> String {
    envelope["results"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|r| r["object_name"] == object_name)
        .and_then(|r| r["fact_id"].as_str())
        .unwrap_or_else(|| panic!("no fact about {object_name} in {envelope}"))
        .to_string()
}

/// Normalise an output: UUIDs become `<idN>` by first appearance (object keys in
/// sorted order), timestamps from 2025 on become `<now>`, a `continuation`
/// cursor becomes `<cursor>`, and floating-point
/// numbers are rounded to 9 significant digits (sums of scores are not
/// associative: the last bits may differ between runs).
pub fn normalize(mut v: Value) -> Value {
    fn walk(v: &mut Value, ids: &mut HashMap<String, String>) {
        match v {
            Value::String(s) if is_run_time(s) => *s = "<now>".to_string(),
            Value::String(s) if s.len() >= 36 => {
                // Every UUID, the whole string or inside one (`corrections/<fact id>`).
                let mut out = String::new();
                let mut rest = s.as_str();
                while let Some(i) = (0..=rest.len() - 36.min(rest.len()))
                    .find(|&i| rest.get(i..i + 36).is_some_and(is_uuid))
                {
                    let n = ids.len();
                    let p = ids
                        .entry(rest[i..i + 36].to_string())
                        .or_insert_with(|| format!("<id{n}>"));
                    out.push_str(&rest[..i]);
                    out.push_str(p);
                    rest = &rest[i + 36..];
                }
                out.push_str(rest);
                *s = out;
            }
            Value::Number(n) if n.is_f64() => {
                let x = n.as_f64().unwrap_or_default();
                let rounded: f64 = format!("{x:.8e}").parse().unwrap_or(x);
                *v = json!(rounded);
            }
            Value::Array(a) => a.iter_mut().for_each(|x| walk(x, ids)),
            Value::Object(o) => {
                let mut keys: Vec<String> = o.keys().cloned().collect();
                keys.sort();
                for k in keys {
                    match o.get_mut(&k) {
                        // Cursors are signed with each store's own secret.
                        Some(x @ Value::String(_)) if k == "continuation" => *x = json!("<cursor>"),
                        Some(x) => walk(x, ids),
                        None => {}
                    }
                }
            }
            _ => {}
        }
    }
    walk(&mut v, &mut HashMap::new());
    v
}

fn is_uuid(s: &str) -> bool {
    s.len() == 36 && uuid::Uuid::parse_str(s).is_ok()
}

fn is_run_time(s: &str) -> bool {
    s.len() >= 20
        && s.as_bytes()[4] == b'-'
        && s.as_bytes()[10] == b'T'
        && chrono::DateTime::parse_from_rfc3339(s).is_ok()
        && s[..4] >= *"2025"
}

/// Compare `output` (raw) with `expected.json`; with `GOLDEN_BLESS=1` (and only
/// from the Rust facade) write it instead.
pub fn assert_golden(surface: &str, output: &Value) {
    let got = normalize(output.clone());
    let path = dir().join("expected.json");
    if surface == "facade" && std::env::var("GOLDEN_BLESS").is_ok_and(|v| v == "1") {
        let text = serde_json::to_string_pretty(&got).expect("JSON") + "\n";
        std::fs::write(&path, text).expect("write expected.json");
        return;
    }
    let expected: Value =
        serde_json::from_str(&std::fs::read_to_string(&path).expect("tests/golden/expected.json"))
            .expect("expected.json is JSON");
    if got != expected {
        let got_text = serde_json::to_string_pretty(&got).unwrap_or_default();
        let out = std::env::temp_dir().join(format!("golden-{surface}.json"));
        let _ = std::fs::write(&out, &got_text);
        panic!(
            "the {surface} surface's envelopes differ from tests/golden/expected.json \
             (its normalised output is in {})",
            out.display()
        );
    }
}

/// The Rust facade as a surface.
pub struct Facade(pub Memory);

#[async_trait]
impl Surface for Facade {
    async fn ingest_text(&self, doc: &Value) {
        let mut opts = IngestOptions::new(doc["source_ref"].as_str().expect("source_ref"));
        if let Some(t) = doc["source_time"].as_str() {
            opts = opts.source_time(t.parse().expect("source_time"));
        }
        self.0
            .ingest_text(doc["text"].as_str().expect("text"), opts)
            .await
            .expect("ingest_text");
    }

    async fn ingest_conversation(&self, conv: &Value) {
        let mut opts = IngestOptions::new(conv["source_ref"].as_str().expect("source_ref"));
        if let Some(t) = conv["source_time"].as_str() {
            opts = opts.source_time(t.parse().expect("source_time"));
        }
        let conversation: rememberstack::Conversation =
            serde_json::from_value(conv["conversation"].clone()).expect("a conversation");
        self.0
            .ingest_conversation(&conversation, opts)
            .await
            .expect("ingest_conversation");
    }

    async fn process(&self) {
        self.0.process_until_idle().await.expect("process");
    }

    async fn operation(&self, name: &str, input: &Value) -> Value {
        self.0
            .run_operation(name, input.clone())
            .await
            .unwrap_or_else(|e| panic!("{name}: {e}"))
    }

    async fn correct(&self, fact_id: &str, statement: &str, reason: &str, request_id: &str) {
        let id: FactId = fact_id.parse().expect("fact id");
        self.0
            .correct_fact(id, statement, reason, Some(request_id))
            .await
            .expect("correct_fact");
    }
}

/// The scenario's namespace.
pub fn namespace() -> String {
    scenario()["namespace"]
        .as_str()
        .unwrap_or("golden")
        .to_string()
}

/// A JSON body for HTTP-like surfaces: the document's fields as they are.
pub fn text_body(doc: &Value) -> Value {
    json!({"text": doc["text"], "source_ref": doc["source_ref"], "source_time": doc["source_time"]})
}
