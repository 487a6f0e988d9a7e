//! The HTTP and MCP reference pages of the documentation site
//! (`website/src/reference/http.md`, `website/src/reference/mcp.md`), rendered from
//! the OpenAPI document and the MCP catalogue the server serves, so the pages
//! cannot drift from them. The tests fail when a committed page differs from its
//! rendering; `UPDATE_DOCS=1 cargo test -p rememberstack-server --test reference`
//! rewrites them.

use rememberstack::{EmbedderConfig, Memory};
use rememberstack_server::{mcp, openapi};
use serde_json::{Map, Value};
use std::path::Path;

async fn memory(dir: &Path) -> Memory {
    let config = rememberstack::Config {
        embedder: EmbedderConfig::hashing(),
        ..Default::default()
    };
    Memory::builder()
        .path(dir.join("memory.db"))
        .config(config)
        .open()
        .await
        .expect("open")
}

fn cell(text: &str) -> String {
    text.replace('|', "\\|")
        .replace('\n', " ")
        .trim()
        .to_string()
}

/// A schema's type in words: `string`, `integer or null`, `array of Uuid`, `ContextInput`.
fn type_of(schema: &Value) -> String {
    if let Some(r) = schema.get("$ref").and_then(Value::as_str) {
        return r.rsplit('/').next().unwrap_or(r).to_string();
    }
    if let Some(values) = schema.get("enum").and_then(Value::as_array) {
        let names: Vec<String> = values.iter().map(|v| format!("`{v}`")).collect();
        return format!("one of {}", names.join(", "));
    }
    if let Some(c) = schema.get("const") {
        return format!("`{c}`");
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(options) = schema.get(key).and_then(Value::as_array) {
            let names: Vec<String> = options.iter().map(type_of).collect();
            return names.join(" or ");
        }
    }
    let one = |t: &str| match (t, schema.get("items")) {
        ("array", Some(items)) => format!("array of {}", type_of(items)),
        _ => t.to_string(),
    };
    match schema.get("type") {
        Some(Value::String(t)) => one(t),
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(Value::as_str)
            .map(one)
            .collect::<Vec<_>>()
            .join(" or "),
        _ => "any".to_string(),
    }
}

/// The fields of an object schema (a reference resolved among `definitions`) as a
/// table; empty when it has none.
fn fields(schema: &Value, definitions: &Map<String, Value>) -> String {
    let mut schema = schema;
    while let Some(name) = schema
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| r.rsplit('/').next())
    {
        match definitions.get(name) {
            Some(s) => schema = s,
            None => break,
        }
    }
    let Some(props) = schema.get("properties").and_then(Value::as_object) else {
        return String::new();
    };
    let required: Vec<&str> = schema["required"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let mut out = String::from("| field | type | required | meaning |\n|---|---|---|---|\n");
    for (name, prop) in props {
        out.push_str(&format!(
            "| `{name}` | {} | {} | {} |\n",
            cell(&type_of(prop)),
            if required.contains(&name.as_str()) {
                "yes"
            } else {
                ""
            },
            cell(
                prop.get("description")
                    .and_then(Value::as_str)
                    .unwrap_or("")
            )
        ));
    }
    out
}

fn http_page(doc: &Value) -> String {
    let definitions = doc["components"]["schemas"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    let mut out = String::from(
        "<!-- Generated from the server's OpenAPI document by `cargo test -p \
         rememberstack-server --test reference`; do not edit. Regenerate with \
         UPDATE_DOCS=1. -->\n\n# HTTP reference\n\n\
         Every route `remember serve` answers, with the scope a key needs (`none`: no \
         key). The server also serves this as an OpenAPI 3.1 document at \
         `/openapi.json`. Errors are `{\"code\", \"message\", \"request_id\"}` with the \
         engine's code.\n\n| method | path | scope | what it does |\n|---|---|---|---|\n",
    );
    let mut sections = String::new();
    for (path, methods) in doc["paths"].as_object().into_iter().flatten() {
        for (method, op) in methods.as_object().into_iter().flatten() {
            let method = method.to_ascii_uppercase();
            let summary = op["summary"].as_str().unwrap_or("");
            let scope = op["x-scope"].as_str().unwrap_or("");
            out.push_str(&format!(
                "| {method} | `{}` | `{scope}` | {} |\n",
                cell(path),
                cell(summary)
            ));
            sections.push_str(&format!(
                "\n## {method} `{path}`\n\n{summary}\n\nScope: `{scope}`.\n"
            ));
            let params: Vec<&Value> = op["parameters"].as_array().into_iter().flatten().collect();
            if !params.is_empty() {
                sections.push_str(
                    "\n| parameter | in | type | required | meaning |\n|---|---|---|---|---|\n",
                );
                for p in params {
                    sections.push_str(&format!(
                        "| `{}` | {} | {} | {} | {} |\n",
                        p["name"].as_str().unwrap_or(""),
                        p["in"].as_str().unwrap_or(""),
                        cell(&type_of(&p["schema"])),
                        if p["required"] == true { "yes" } else { "" },
                        cell(p.get("description").and_then(Value::as_str).unwrap_or(""))
                    ));
                }
            }
            let body = &op["requestBody"]["content"]["application/json"]["schema"];
            if !body.is_null() {
                let table = fields(body, &definitions);
                if table.is_empty() {
                    sections.push_str(&format!("\nBody: {}.\n", cell(&type_of(body))));
                } else {
                    sections.push_str(&format!("\nBody ({}):\n\n{table}", cell(&type_of(body))));
                }
            }
        }
    }
    out.push_str(&sections);
    out
}

fn mcp_page(tools: &[mcp::ToolSpec]) -> String {
    let mut out = String::from(
        "<!-- Generated from the MCP catalogue by `cargo test -p rememberstack-server \
         --test reference`; do not edit. Regenerate with UPDATE_DOCS=1. -->\n\n\
         # MCP reference\n\n\
         The tools `remember mcp` (stdio) and the server's `/mcp` endpoint offer, in \
         the order an agent sees them. A read-only tool carries `readOnlyHint`; \
         `remember mcp --read-only` offers only those.\n\n\
         | tool | read-only | scope |\n|---|---|---|\n",
    );
    let mut sections = String::new();
    for tool in tools {
        out.push_str(&format!(
            "| `{}` | {} | `{}` |\n",
            tool.name,
            if tool.read_only { "yes" } else { "no" },
            tool.scope.as_str()
        ));
        let definitions = tool
            .input_schema
            .get("$defs")
            .or(tool.input_schema.get("definitions"))
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        sections.push_str(&format!(
            "\n## `{}`\n\n{}\n\n{}",
            tool.name,
            tool.description.trim(),
            fields(&tool.input_schema, &definitions)
        ));
    }
    out.push_str(&sections);
    out
}

fn check(page: &str, rendered: &str) {
    rememberstack_conformance::check_generated_page(
        page,
        rendered,
        "cargo test -p rememberstack-server --test reference",
    );
}

#[tokio::test]
async fn the_http_reference_page_is_the_rendering_of_the_openapi_document() {
    let dir = tempfile::tempdir().unwrap();
    let memory = memory(dir.path()).await;
    let doc = openapi::document(&memory.operations());
    let page = http_page(&doc);
    assert!(
        page.contains("## POST `/v1/namespaces/{ns}/search`"),
        "{page}"
    );
    check("website/src/reference/http.md", &page);
}

#[tokio::test]
async fn the_mcp_reference_page_is_the_rendering_of_the_catalogue() {
    let dir = tempfile::tempdir().unwrap();
    let memory = memory(dir.path()).await;
    let tools = mcp::catalogue(&memory);
    let page = mcp_page(&tools);
    assert!(
        page.contains("## `facts_context`") && page.contains("## `remember_note`"),
        "{page}"
    );
    check("website/src/reference/mcp.md", &page);
}
