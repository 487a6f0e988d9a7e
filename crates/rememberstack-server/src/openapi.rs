//! The OpenAPI document, built from the route table ([`routes`]: the operation
//! table's routes, scopes and summaries) whose request bodies and query strings
//! are the JSON Schemas (schemars) of the very types the handlers deserialize. A test checks that every route in the table is served
//! and that the router serves nothing the table leaves out, so the document
//! cannot drift from the routes.

use crate::routes::{
    AppendBody, ConversationBody, ConversationQuery, CorrectBody, EntitiesQuery, FactsQuery,
    FeedbackQuery, IngestJson, IngestQuery, MergeBody, PageQuery, PolicyBody, ReasonBody,
    SearchBody, Transition, WaitQuery, WindowQuery,
};
use rememberstack::OperationDescriptor;
use schemars::generate::SchemaSettings;
use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde_json::{Map, Value, json};

/// A request type's JSON Schema, registered with the generator (named types
/// become `#/components/schemas/...`).
pub type SchemaFn = fn(&mut SchemaGenerator) -> Schema;

/// One documented route.
#[derive(Clone, Copy, Debug)]
pub struct RouteDoc {
    /// `GET`, `POST`, `DELETE`.
    pub method: &'static str,
    /// The path template, `{name}` for a path parameter.
    pub path: &'static str,
    /// The scope a key needs (`none` for the operational endpoints).
    pub scope: &'static str,
    /// What it does.
    pub summary: &'static str,
    /// The JSON body it takes, if any: the very type its handler deserializes.
    pub body: Option<SchemaFn>,
    /// The query string it takes, if any: the very type its handler deserializes.
    pub query: Option<SchemaFn>,
}

const fn r(
    method: &'static str,
    path: &'static str,
    scope: &'static str,
    summary: &'static str,
    body: Option<SchemaFn>,
) -> RouteDoc {
    RouteDoc {
        method,
        path,
        scope,
        summary,
        body,
        query: None,
    }
}

fn s<T: JsonSchema>(generator: &mut SchemaGenerator) -> Schema {
    generator.subschema_for::<T>()
}

const NS: &str = "/v1/namespaces/{ns}";

/// The routes outside the operation table: the process's own endpoints.
const OPERATIONAL: &[RouteDoc] = &[
    r("GET", "/health", "none", "The process is up.", None),
    r(
        "GET",
        "/ready",
        "none",
        "The store answers and no namespace is closed by an incomplete forget; without a key (when keys exist) only the status and a count.",
        None,
    ),
    r(
        "GET",
        "/metrics",
        "none",
        "Prometheus text: requests, latencies, ledger depth by stage and status, dead letters.",
        None,
    ),
    r("GET", "/openapi.json", "none", "This document.", None),
    r(
        "GET",
        "/v1/namespaces",
        "read",
        "The namespaces this credential may use.",
        None,
    ),
];

/// The JSON body and query string the handler of the call `name` deserializes.
fn request_types(name: &str) -> (Option<SchemaFn>, Option<SchemaFn>) {
    match name {
        "ingest_text" => (Some(s::<IngestJson>), Some(s::<IngestQuery>)),
        "ingest_conversation" => (Some(s::<ConversationBody>), Some(s::<WaitQuery>)),
        "append_messages" => (Some(s::<AppendBody>), None),
        "conversation_messages" => (None, Some(s::<ConversationQuery>)),
        "remember_note" => (Some(s::<rememberstack::NoteInput>), None),
        "list_notes" => (None, Some(s::<PageQuery>)),
        "set_note_policy" => (Some(s::<PolicyBody>), None),
        "promote_note" | "archive_note" | "revoke_note" => (Some(s::<Transition>), None),
        "search_documents" => (Some(s::<rememberstack::DocumentQuery>), None),
        "search" => (Some(s::<SearchBody>), None),
        "adjacent_chunks" => (None, Some(s::<WindowQuery>)),
        "facts" => (None, Some(s::<FactsQuery>)),
        "invalidate_fact" | "retract_claim" => (Some(s::<ReasonBody>), None),
        "correct_fact" => (Some(s::<CorrectBody>), None),
        "entities" => (None, Some(s::<EntitiesQuery>)),
        "merge_entities" | "accept_merge_proposal" | "reject_merge_proposal" => {
            (Some(s::<MergeBody>), None)
        }
        "feedback" => (Some(s::<rememberstack::FeedbackInput>), None),
        "list_feedback" => (None, Some(s::<FeedbackQuery>)),
        "export" => (Some(s::<rememberstack::ExportSelection>), None),
        _ => (None, None),
    }
}

/// Every route the server serves: its own endpoints, then each call of the
/// operation table ([`rememberstack::ops::OPERATIONS`]) that has a route, with the
/// table's scope and summary.
pub fn routes() -> Vec<RouteDoc> {
    let mut routes = OPERATIONAL.to_vec();
    for op in rememberstack::ops::OPERATIONS {
        let Some(route) = op.http else { continue };
        let (body, query) = request_types(op.name);
        routes.push(RouteDoc {
            method: route.method,
            path: route.path,
            scope: op.scope.as_str(),
            summary: op.summary,
            body,
            query,
        });
    }
    routes
}

fn error_schema() -> Value {
    json!({"type": "object", "required": ["code", "message", "request_id"],
           "properties": {"code": {"type": "string"}, "message": {"type": "string"},
                          "request_id": {"type": "string"}}})
}

/// The query parameters of a query-string type: one parameter per property.
fn query_parameters(generator: &mut SchemaGenerator, query: SchemaFn) -> Vec<Value> {
    let schema = query(generator);
    let mut schema = schema.to_value();
    // A named type is a reference: look it up among the definitions.
    if let Some(name) = schema
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| r.rsplit('/').next())
    {
        schema = generator
            .definitions()
            .get(name)
            .cloned()
            .unwrap_or(Value::Null);
    }
    let required: Vec<&str> = schema["required"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    schema["properties"]
        .as_object()
        .into_iter()
        .flatten()
        .map(|(name, prop)| {
            let mut p = json!({"name": name, "in": "query",
                               "required": required.contains(&name.as_str()),
                               "schema": prop});
            if let Some(d) = prop.get("description") {
                p["description"] = d.clone();
            }
            p
        })
        .collect()
}

/// The OpenAPI 3.1 document. Request bodies and query strings are the JSON
/// Schemas of the types the handlers deserialize; an operation's body is the
/// registry's input schema for that operation (`operations`).
pub fn document(operations: &[OperationDescriptor]) -> Value {
    let mut generator = SchemaSettings::draft2020_12()
        .with(|s| s.definitions_path = "#/components/schemas/".into())
        .into_generator();
    let mut paths: Map<String, Value> = Map::new();
    for route in routes() {
        let mut params: Vec<Value> = route
            .path
            .split('/')
            .filter_map(|seg| seg.strip_prefix('{').and_then(|s| s.strip_suffix('}')))
            .map(|name| json!({"name": name, "in": "path", "required": true, "schema": {"type": "string"}}))
            .collect();
        if let Some(query) = route.query {
            params.extend(query_parameters(&mut generator, query));
        }
        let mut op = json!({
            "summary": route.summary,
            "operationId": format!("{} {}", route.method, route.path),
            "x-scope": route.scope,
            "parameters": params,
            "responses": {
                "200": {"description": "Success (JSON)."},
                "400": {"description": "Invalid input.", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}},
                "401": {"description": "Missing or unknown key."},
                "403": {"description": "The key lacks the scope, or the browser Origin is not allowed."},
                "404": {"description": "Not found (or not visible to this key)."},
                "409": {"description": "Conflict with the stored state."},
                "413": {"description": "Body too large."},
                "415": {"description": "An unsafe method without a JSON or octet-stream body type or a client header."},
                "421": {"description": "A keyless server answers only loopback or --allowed-host host names."},
                "429": {"description": "Rate or in-flight limit; see Retry-After."},
                "503": {"description": "Forget in progress, store unavailable, not ready, or timeout; see Retry-After."}
            }
        });
        if route.scope != "none" {
            op["security"] = json!([{"bearer": []}, {}]);
        }
        let body = match route.body {
            Some(body) => Some(body(&mut generator).to_value()),
            None if route.path.ends_with("/operations/{name}") => Some(json!({
                "oneOf": operations.iter().map(|o| {
                    let mut schema = o.input_schema.clone();
                    schema["title"] = json!(o.name);
                    schema
                }).collect::<Vec<_>>()
            })),
            None => None,
        };
        if let Some(schema) = body {
            op["requestBody"] = json!({"required": true,
                "content": {"application/json": {"schema": schema}}});
        }
        let entry = paths
            .entry(route.path.to_string())
            .or_insert_with(|| json!({}));
        entry[route.method.to_ascii_lowercase()] = op;
    }
    let mut schemas: Map<String, Value> = generator.take_definitions(true).into_iter().collect();
    schemas.insert("Error".into(), error_schema());
    json!({
        "openapi": "3.1.0",
        "info": {"title": "RememberStack", "version": env!("CARGO_PKG_VERSION"),
                 "description": "Agent memory: sources, claims, entities, facts and context operations."},
        "paths": paths,
        "components": {
            "schemas": schemas,
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}}
        },
        "x-namespace-prefix": NS,
    })
}
