//! `types.d.ts`: the TypeScript declarations of what every `Memory` method
//! resolves to, rendered from the JSON Schemas of the Rust result types
//! (`rememberstack::calls::result_schemas`).
//!
//! `the_committed_declarations_are_the_rendering` fails when the committed file
//! differs from the rendering of the current types; run it with `UPDATE_TYPES=1`
//! to rewrite the file. `every_call_returns_what_its_schema_declares` runs calls
//! on a real store and checks their JSON against the same schemas.

use std::collections::BTreeMap;
use std::path::PathBuf;

use rememberstack::calls::{self, ResultSchemas};
use rememberstack::{Envelope, Field};
use schemars::generate::SchemaSettings;
use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde_json::{Map, Value, json};

/// The type parameter of a generic declaration (`Envelope<R>`).
struct R;

impl JsonSchema for R {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "R".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        Schema::default()
    }
}

const HEADER: &str = "\
// Generated from the Rust result types (rememberstack::calls::result_schemas) by
// `cargo test -p rememberstack-node --test types`; do not edit. Regenerate with
// `UPDATE_TYPES=1 cargo test -p rememberstack-node --test types`.
//
// The JSON every Memory method resolves to: the facade's serde JSON, field names in
// snake_case, ids as UUID strings, instants as RFC 3339 strings.

export type Uuid = string
/** An RFC 3339 instant, e.g. \"2026-05-01T09:30:00Z\". */
export type Instant = string
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue }
export type JsonObject = { [key: string]: JsonValue }
";

/// The generic types and their one parameter's name.
const GENERICS: &[(&str, &str)] = &[("Envelope", "R"), ("Field", "T")];

#[derive(Clone)]
struct Renderer {
    definitions: Map<String, Value>,
    /// A generic parameter bound to a type (checking an instance).
    binding: Option<(String, String)>,
}

fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\\', "\\\\").replace('\'', "\\'"))
}

fn doc(description: Option<&Value>, indent: &str) -> String {
    let Some(text) = description.and_then(Value::as_str) else {
        return String::new();
    };
    let text = text.replace("*/", "*\\/");
    let lines: Vec<&str> = text.lines().collect();
    if lines.len() == 1 {
        return format!("{indent}/** {} */\n", lines[0]);
    }
    let mut out = format!("{indent}/**\n");
    for line in lines {
        if line.is_empty() {
            out.push_str(&format!("{indent} *\n"));
        } else {
            out.push_str(&format!("{indent} * {line}\n"));
        }
    }
    out.push_str(&format!("{indent} */\n"));
    out
}

fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Parenthesised when it is a union or intersection, for `[]` and `&`.
fn atom(ts: String) -> String {
    let mut depth = 0i32;
    for c in ts.chars() {
        match c {
            '{' | '(' | '<' | '[' => depth += 1,
            '}' | ')' | '>' | ']' => depth -= 1,
            '|' | '&' if depth == 0 => return format!("({ts})"),
            _ => {}
        }
    }
    ts
}

fn union(parts: Vec<String>) -> String {
    let mut seen = Vec::new();
    for p in parts
        .into_iter()
        .map(|p| if p.contains(" & ") { atom(p) } else { p })
    {
        if !seen.contains(&p) {
            seen.push(p);
        }
    }
    seen.join(" | ")
}

impl Renderer {
    /// The TypeScript name of a definition: `Envelope_for_ChunkResult` is
    /// `Envelope<ChunkResult>`.
    fn name(&self, def: &str) -> String {
        if let Some((param, ts)) = &self.binding
            && param == def
        {
            return ts.clone();
        }
        match def.split_once("_for_") {
            Some((generic, arg)) => format!("{generic}<{}>", self.argument(arg)),
            None => def.to_string(),
        }
    }

    /// A generic argument as schemars names it.
    fn argument(&self, arg: &str) -> String {
        if let Some(item) = arg.strip_prefix("Array_of_") {
            return format!("{}[]", atom(self.argument(item)));
        }
        match arg {
            "string" => "string".into(),
            "DateTime" | "date-time" => "Instant".into(),
            "R" | "T" => arg.into(),
            def if self.definitions.contains_key(def) => self.name(def),
            other => panic!("no TypeScript for the generic argument `{other}`"),
        }
    }

    fn ts(&self, schema: &Value, indent: &str) -> String {
        let Value::Object(k) = schema else {
            return match schema {
                Value::Bool(false) => "never".into(),
                _ => "JsonValue".into(),
            };
        };
        // A reference, possibly with its own properties beside it (a variant of an
        // internally tagged enum: the tag and the referenced type together).
        let mut parts = Vec::new();
        let reference = k.get("$ref").and_then(Value::as_str).map(|r| {
            let def = r.strip_prefix("#/$defs/").expect("a local definition");
            self.name(def)
        });
        if let Some(Value::Array(all)) = k.get("allOf") {
            parts.extend(all.iter().map(|s| atom(self.ts(s, indent))));
        }
        for key in ["oneOf", "anyOf"] {
            if let Some(Value::Array(options)) = k.get(key) {
                let options = options.iter().map(|s| self.ts(s, indent)).collect();
                parts.push(atom(union(options)));
            }
        }
        if let Some(c) = k.get("const") {
            parts.push(literal(c));
        } else if let Some(Value::Array(options)) = k.get("enum") {
            parts.push(atom(union(options.iter().map(literal).collect())));
        } else if let Some(types) = k.get("type") {
            let types: Vec<&str> = match types {
                Value::String(t) => vec![t.as_str()],
                Value::Array(ts) => ts.iter().filter_map(Value::as_str).collect(),
                _ => vec![],
            };
            let rendered = types.iter().map(|t| self.typed(t, k, indent)).collect();
            parts.push(atom(union(rendered)));
        } else if k.contains_key("properties") {
            parts.push(self.typed("object", k, indent));
        }
        parts.extend(reference);
        match parts.len() {
            0 => "JsonValue".into(),
            1 => {
                let only = parts.pop().unwrap_or_default();
                // A lone union keeps no parentheses.
                if only.starts_with('(')
                    && only.ends_with(')')
                    && atom(only[1..only.len() - 1].to_string()) == only
                {
                    only[1..only.len() - 1].to_string()
                } else {
                    only
                }
            }
            _ => parts.join(" & "),
        }
    }

    fn typed(&self, t: &str, k: &Map<String, Value>, indent: &str) -> String {
        match t {
            "string" => match k.get("format").and_then(Value::as_str) {
                Some("uuid") => "Uuid".into(),
                Some("date-time") => "Instant".into(),
                _ => "string".into(),
            },
            "integer" | "number" => "number".into(),
            "boolean" => "boolean".into(),
            "null" => "null".into(),
            "array" => match k.get("items") {
                Some(items) => format!("{}[]", atom(self.ts(items, indent))),
                None => "JsonValue[]".into(),
            },
            "object" => self.object(k, indent),
            other => panic!("no TypeScript for the JSON type `{other}`"),
        }
    }

    /// An inline object type: its properties, else a map, else any object.
    fn object(&self, k: &Map<String, Value>, indent: &str) -> String {
        match (
            k.get("properties").and_then(Value::as_object),
            k.get("additionalProperties"),
        ) {
            // A tag or a small record without documentation stays on one line.
            (Some(props), _)
                if props.len() <= 3 && props.values().all(|p| p.get("description").is_none()) =>
            {
                let members = self.members(props, k, "");
                format!("{{ {} }}", members.trim_end().replace('\n', "; "))
            }
            (Some(props), _) if !props.is_empty() => {
                let inner = format!("{indent}  ");
                format!("{{\n{}{indent}}}", self.members(props, k, &inner))
            }
            (_, Some(extra)) if extra.is_object() => {
                format!("{{ [key: string]: {} }}", self.ts(extra, indent))
            }
            _ => "JsonObject".into(),
        }
    }

    fn members(&self, props: &Map<String, Value>, k: &Map<String, Value>, indent: &str) -> String {
        let required: Vec<&str> = k
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let mut out = String::new();
        for (name, schema) in props {
            out.push_str(&doc(schema.get("description"), indent));
            let key = if is_identifier(name) {
                name.clone()
            } else {
                quote(name)
            };
            let optional = if required.contains(&name.as_str()) {
                ""
            } else {
                "?"
            };
            out.push_str(&format!(
                "{indent}{key}{optional}: {}\n",
                self.ts(schema, indent)
            ));
        }
        out
    }

    /// One `export` declaration.
    fn declaration(&self, def: &str, schema: &Value) -> String {
        let name = match def.split_once("_for_") {
            Some((generic, param)) => format!("{generic}<{param}>"),
            None => def.to_string(),
        };
        let keyword = if self.is_interface(schema) {
            "interface"
        } else {
            "type"
        };
        format!(
            "{}export {keyword} {name} {}\n",
            doc(schema.get("description"), ""),
            self.body(schema)
        )
    }

    fn is_interface(&self, schema: &Value) -> bool {
        schema.get("type") == Some(&json!("object"))
            && schema
                .get("properties")
                .and_then(Value::as_object)
                .is_some_and(|p| !p.is_empty())
            && !["$ref", "oneOf", "anyOf", "allOf"]
                .iter()
                .any(|key| schema.get(key).is_some())
    }

    /// What follows the declared name: `{ members }` or `= type`.
    fn body(&self, schema: &Value) -> String {
        match (self.is_interface(schema), schema.as_object()) {
            (true, Some(k)) => {
                let props = k.get("properties").and_then(Value::as_object);
                let members = props.map(|p| self.members(p, k, "  ")).unwrap_or_default();
                format!("{{\n{members}}}")
            }
            _ => format!("= {}", self.ts(schema, "")),
        }
    }
}

fn literal(v: &Value) -> String {
    match v {
        Value::String(s) => quote(s),
        other => other.to_string(),
    }
}

/// The schemas with the generic declarations (`Envelope_for_R`, `Field_for_T`)
/// added, each checked against its instances.
fn schemas() -> (ResultSchemas, Map<String, Value>) {
    let schemas = calls::result_schemas();
    let mut generator = SchemaSettings::draft2020_12()
        .for_serialize()
        .into_generator();
    generator.subschema_for::<Envelope<R>>();
    generator.subschema_for::<Field<R>>();
    let mut definitions = schemas.definitions.clone();
    for (name, schema) in generator.take_definitions(true) {
        match name.as_str() {
            "R" => {}
            "Envelope_for_R" => {
                definitions.insert(name, schema);
            }
            // The type parameter of `Field` is named T.
            "Field_for_R" => {
                let text = schema.to_string().replace("#/$defs/R\"", "#/$defs/T\"");
                definitions.insert("Field_for_T".into(), serde_json::from_str(&text).unwrap());
            }
            _ => assert_eq!(
                definitions.get(&name),
                Some(&schema),
                "the generic declarations' dependency `{name}` differs from the results'"
            ),
        }
    }
    (schemas, definitions)
}

fn render() -> String {
    let (schemas, definitions) = schemas();
    let renderer = Renderer {
        definitions,
        binding: None,
    };
    let mut out = String::from(HEADER);
    for (def, schema) in &renderer.definitions {
        if let Some((generic, arg)) = def.split_once("_for_") {
            let (_, param) = GENERICS
                .iter()
                .find(|(g, _)| *g == generic)
                .unwrap_or_else(|| panic!("`{def}`: `{generic}` is not a known generic type"));
            if arg != *param {
                // An instance: it must be the generic declaration with the
                // parameter bound, so `Envelope<ChunkResult>` means what it says.
                let generic_def = format!("{generic}_for_{param}");
                let bound = Renderer {
                    binding: Some((param.to_string(), renderer.argument(arg))),
                    ..renderer.clone()
                };
                assert_eq!(
                    renderer.body(schema),
                    bound.body(&renderer.definitions[&generic_def]),
                    "`{def}` is not `{generic}<{param}>` with {param} = {arg}"
                );
                continue;
            }
        }
        out.push('\n');
        out.push_str(&renderer.declaration(def, schema));
    }
    out.push_str("\n/** What each engine method resolves to, by its name (`Memory.methods()`). */\nexport interface Results {\n");
    for (method, schema) in &schemas.methods {
        out.push_str(&format!("  {method}: {}\n", renderer.ts(schema, "  ")));
    }
    out.push_str("}\n");
    out
}

fn committed_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("types.d.ts")
}

#[test]
fn the_committed_declarations_are_the_rendering() {
    let rendered = render();
    let path = committed_path();
    if std::env::var_os("UPDATE_TYPES").is_some() {
        std::fs::write(&path, &rendered).expect("writing types.d.ts");
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == rendered,
        "bindings/node/types.d.ts is not the rendering of the current Rust result types; \
         regenerate it with `UPDATE_TYPES=1 cargo test -p rememberstack-node --test types` \
         and review the diff"
    );
}

#[test]
fn every_method_has_a_result_type() {
    let (schemas, _) = schemas();
    let methods: Vec<&str> = schemas.methods.iter().map(|(m, _)| *m).collect();
    assert_eq!(methods, calls::methods());
    let rendered = render();
    for m in calls::methods() {
        assert!(
            rendered.contains(&format!("\n  {m}: ")),
            "Results lacks {m}"
        );
    }
    // The names the class's declarations rely on are declared.
    for name in [
        "interface ClaimResult",
        "type EvidenceResult",
        "interface Envelope<R>",
        "interface ContextBundle",
        "type FactId = Uuid",
    ] {
        assert!(
            rendered.contains(&format!("export {name}")),
            "types.d.ts lacks `{name}`"
        );
    }
}

/// Check `value` against the method's schema, the definitions at the root.
fn check(schemas: &ResultSchemas, method: &str, value: &Value) {
    let schema = &schemas
        .methods
        .iter()
        .find(|(m, _)| *m == method)
        .unwrap_or_else(|| panic!("no schema for {method}"))
        .1;
    let mut root = schema.as_object().cloned().unwrap_or_default();
    root.insert("$defs".into(), Value::Object(schemas.definitions.clone()));
    if let Err(e) = rememberstack_core::chat::validate_json(&Value::Object(root), value) {
        panic!("{method} returned JSON its schema refuses: {e:?}\n{value:#}");
    }
}

#[tokio::test]
async fn every_call_returns_what_its_schema_declares() {
    let dir = tempfile::tempdir().unwrap();
    let memory = calls::open(json!({
        "path": dir.path().join("memory.db").to_str().unwrap(),
        "namespace": "types",
    }))
    .await
    .unwrap();
    let schemas = calls::result_schemas();
    let mut seen = BTreeMap::new();
    let mut run = async |method: &str, input: Value| -> Value {
        // Boxed: each call's state lives on the heap, so this long test's future
        // (one slot per await) stays far below a test thread's stack.
        let answer = Box::pin(calls::call(&memory, method, input)).await;
        let out: Value = serde_json::from_str(&answer.unwrap()).unwrap();
        check(&schemas, method, &out);
        seen.insert(method.to_string(), ());
        out
    };
    let doc = run(
        "ingest_text",
        json!({"text": "# HR\n\nAlice has worked for Acme since March 2024. Alice lives in Lisbon.\n", "source_ref": "hr", "source_time": "2024-04-01T00:00:00Z"}),
    )
    .await;
    let document_id = doc["document_id"].as_str().unwrap().to_string();
    run(
        "ingest_conversation",
        json!({"conversation": [{"event_id": "m1", "speaker": "Bob", "text": "Carol reviewed the audit on Friday."}], "source_ref": "chat-1"}),
    )
    .await;
    run(
        "append_messages",
        json!({"conversation_ref": "chat-1", "messages": [{"event_id": "m2", "speaker": "Alice", "text": "Thanks Bob."}]}),
    )
    .await;
    run(
        "conversation_messages",
        json!({"conversation_ref": "chat-1"}),
    )
    .await;
    let note = run(
        "remember_note",
        json!({"request_id": "r1", "source_key": "prefs", "source_revision": "1", "text": "Alice prefers tea."}),
    )
    .await;
    run("list_notes", json!({})).await;
    run("set_note_policy", json!({"start_as": "candidate"})).await;
    run("process_until_idle", json!({})).await;
    for grain in ["chunks", "claims", "facts"] {
        run("search", json!({"query": "Alice", "grain": grain})).await;
    }
    run("resolve_entity", json!({"name": "Alice"})).await;
    let evidence = run(
        "claims_and_sources_context",
        json!({"query": "Where does Alice live?", "record_receipt": true}),
    )
    .await;
    let facts = run("facts_context", json!({"query": "Where does Alice work?"})).await;
    run("combined_context", json!({"query": "Alice Acme"})).await;
    run("operations", json!({})).await;
    run("documents", json!({})).await;
    run("document", json!({"document_id": document_id})).await;
    run("entities", json!({})).await;
    run("entity", json!({"name_or_id": "Alice"})).await;
    run("claims", json!({})).await;
    run("claim_decisions", json!({"document_id": document_id})).await;
    run("facts", json!({})).await;
    run("predicates", json!({})).await;
    run("status", json!({})).await;
    run("doctor", json!({})).await;
    let chunk = evidence["results"]
        .as_array()
        .unwrap()
        .iter()
        .find_map(|r| r["chunk_id"].as_str())
        .unwrap()
        .to_string();
    run("adjacent_chunks", json!({"chunk_id": chunk})).await;
    run("search_documents", json!({"query": "HR"})).await;
    let receipt = evidence["receipt_id"].as_str().unwrap().to_string();
    run("resolve_receipt", json!({"receipt_id": receipt})).await;
    run("inspect_receipt", json!({"receipt_id": receipt})).await;
    let claim_ref = evidence["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["kind"] == "claim")
        .map(|r| format!("claim:{}", r["claim_id"].as_str().unwrap()))
        .unwrap();
    run(
        "feedback",
        json!({"receipt_id": receipt, "item_ref": claim_ref, "rating": "useful"}),
    )
    .await;
    run("list_feedback", json!({})).await;
    run("hydrate", json!({"records": [claim_ref]})).await;
    let fact = facts["results"][0]["fact_id"].as_str().unwrap().to_string();
    let subject = facts["results"][0]["subject"].as_str().unwrap().to_string();
    run("trace", json!({"fact_id": fact})).await;
    run("neighborhood", json!({"entity_ids": [subject]})).await;
    run(
        "correct_fact",
        json!({"fact_id": fact, "statement": "Alice works for Globex.", "reason": "wrong"}),
    )
    .await;
    let claim = claim_ref.trim_start_matches("claim:").to_string();
    run("retract_claim", json!({"id": claim, "reason": "misread"})).await;
    run("export", json!({})).await;
    run("process_until_idle", json!({})).await;
    let facts = run("facts", json!({})).await;
    if let Some(open) = facts["facts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["invalidated_at"].is_null())
    {
        run(
            "invalidate_fact",
            json!({"id": open["fact_id"], "reason": "stale"}),
        )
        .await;
    }
    let file = dir.path().join("notes.md");
    std::fs::write(&file, "# Notes\n\nDana lives in Porto.\n").unwrap();
    run("ingest_file", json!({"path": file.to_str().unwrap()})).await;
    let candidate = run(
        "remember_note",
        json!({"request_id": "r2", "source_key": "todo", "source_revision": "1", "text": "Call Dana."}),
    )
    .await;
    let promoted = run(
        "promote_note",
        json!({"version_id": candidate["version_id"], "expected_version": candidate["lifecycle_version"]}),
    )
    .await;
    run(
        "archive_note",
        json!({"version_id": promoted["version_id"], "expected_version": promoted["lifecycle_version"]}),
    )
    .await;
    let unwanted = run(
        "remember_note",
        json!({"request_id": "r3", "source_key": "draft", "source_revision": "1", "text": "Maybe call Erin."}),
    )
    .await;
    run(
        "revoke_note",
        json!({"version_id": unwanted["version_id"], "expected_version": unwanted["lifecycle_version"]}),
    )
    .await;
    run(
        "run_operation",
        json!({"name": "facts_context", "input": {"query": "Where does Alice live?"}}),
    )
    .await;
    run("process_until_idle", json!({})).await;
    let entities = run("entities", json!({})).await;
    let ids: Vec<&str> = entities["entities"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["entity_id"].as_str())
        .collect();
    assert!(ids.len() >= 2, "{entities:#}");
    let merge = run("merge_entities", json!({"from": ids[0], "into": ids[1]})).await;
    run("unmerge_entities", json!({"merge_id": merge["merge_id"]})).await;
    run("delete_document", json!({"document_id": document_id})).await;
    run("forget_document", json!({"document_id": document_id})).await;
    run("forget_note", json!({"note_id": note["note_id"]})).await;
    // Two family names, each the last word of one longer name in another
    // document: proposed, not merged automatically.
    run(
        "ingest_text",
        json!({"text": "# Crew\n\nKofi Asante lives in Leeds.\n\nLena Vogt lives in Munich.\n", "source_ref": "crew"}),
    )
    .await;
    run(
        "ingest_text",
        json!({"text": "# Plan\n\nThe plan was approved by Asante.\n\nThe venue was booked by Vogt.\n", "source_ref": "plan"}),
    )
    .await;
    run("process_until_idle", json!({})).await;
    let proposals = run("merge_proposals", json!({})).await;
    let list = proposals["proposals"].as_array().unwrap().clone();
    assert!(list.len() >= 2, "{proposals:#}");
    run(
        "accept_merge_proposal",
        json!({"from": list[0]["from"], "into": list[0]["into"]}),
    )
    .await;
    run(
        "reject_merge_proposal",
        json!({"from": list[1]["from"], "into": list[1]["into"]}),
    )
    .await;
    let _ = run;
    let missed: Vec<&str> = calls::methods()
        .into_iter()
        .filter(|m| !seen.contains_key(*m))
        .collect();
    assert!(missed.is_empty(), "no result checked for {missed:?}");
}
