//! The OpenAPI document, built from one route table ([`ROUTES`]) whose request
//! bodies and query strings are the JSON Schemas (schemars) of the very types the
//! handlers deserialize. A test checks that every route in the table is served
//! and that the router serves nothing the table leaves out, so the document
//! cannot drift from the routes.

use crate::routes::{
    AppendBody, ConversationBody, CorrectBody, EntitiesQuery, FactsQuery, FeedbackQuery,
    IngestJson, IngestQuery, MergeBody, PageQuery, PolicyBody, ReasonBody, SearchBody, Transition,
    WaitQuery, WindowQuery,
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

impl RouteDoc {
    const fn query(mut self, query: SchemaFn) -> Self {
        self.query = Some(query);
        self
    }
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

macro_rules! ns {
    ($p:literal) => {
        concat!("/v1/namespaces/{ns}", $p)
    };
}

/// Every route the server serves.
pub const ROUTES: &[RouteDoc] = &[
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
        "/v1/operations",
        "read",
        "The operation registry: names, descriptions, JSON input schemas, versions.",
        None,
    ),
    r(
        "GET",
        "/v1/namespaces",
        "read",
        "The namespaces this credential may use.",
        None,
    ),
    r(
        "POST",
        ns!("/documents"),
        "ingest",
        "Ingest a document: raw bytes (`?source_ref=&kind=&source_time=&mode=&file_name=`) or JSON `{text, source_ref, kind?, source_time?, mode?}`. `?wait=true[&wait_secs=N]` waits for processing (bounded).",
        Some(s::<IngestJson>),
    )
    .query(s::<IngestQuery>),
    r("GET", ns!("/documents"), "read", "List documents.", None),
    r(
        "POST",
        ns!("/documents/search"),
        "read",
        "Search documents by metadata and title.",
        Some(s::<rememberstack::DocumentQuery>),
    ),
    r(
        "GET",
        ns!("/documents/{id}"),
        "read",
        "Show a document: versions, names, sections.",
        None,
    ),
    r(
        "DELETE",
        ns!("/documents/{id}"),
        "write",
        "Delete a document (soft, lineage grain).",
        None,
    ),
    r(
        "POST",
        ns!("/documents/{id}/forget"),
        "admin",
        "Forget a document: hard, verified, and nothing comes back.",
        None,
    ),
    r(
        "POST",
        ns!("/conversations"),
        "ingest",
        "Ingest a conversation `{source_ref, conversation: {messages: [...]}, source_time?, mode?}`.",
        Some(s::<ConversationBody>),
    )
    .query(s::<WaitQuery>),
    r(
        "POST",
        ns!("/messages"),
        "ingest",
        "Append messages to a conversation `{conversation_ref, messages, source_time?}`.",
        Some(s::<AppendBody>),
    ),
    r(
        "POST",
        ns!("/notes"),
        "write",
        "Remember a note `{request_id, source_key, source_revision, text, metadata?}`.",
        Some(s::<rememberstack::NoteInput>),
    ),
    r(
        "GET",
        ns!("/notes"),
        "read",
        "List notes (`?cursor=&limit=`).",
        None,
    )
    .query(s::<PageQuery>),
    r(
        "POST",
        ns!("/notes/policy"),
        "admin",
        "Set how new notes start `{start_as: candidate|promoted}`.",
        Some(s::<PolicyBody>),
    ),
    r(
        "POST",
        ns!("/notes/{version}/promote"),
        "write",
        "Promote a note `{expected_version}`.",
        Some(s::<Transition>),
    ),
    r(
        "POST",
        ns!("/notes/{version}/archive"),
        "write",
        "Archive a note `{expected_version}`.",
        Some(s::<Transition>),
    ),
    r(
        "POST",
        ns!("/notes/{version}/revoke"),
        "write",
        "Revoke a note `{expected_version}`.",
        Some(s::<Transition>),
    ),
    r(
        "POST",
        ns!("/notes/{id}/forget"),
        "admin",
        "Forget a note (hard).",
        None,
    ),
    r(
        "POST",
        ns!("/operations/{name}"),
        "read",
        "Run a registry operation; the body is its input (see GET /v1/operations); the response is its envelope or ContextBundle/v2.",
        None,
    ),
    r(
        "POST",
        ns!("/search"),
        "read",
        "Hybrid search `{query, k?, grain?: chunks|claims|facts, roles?, cursor?, include_retired?, entities?}`.",
        Some(s::<SearchBody>),
    ),
    r(
        "GET",
        ns!("/chunks/{id}/adjacent"),
        "read",
        "The chunks before and after a chunk (`?window=1|2`).",
        None,
    )
    .query(s::<WindowQuery>),
    r(
        "GET",
        ns!("/facts"),
        "read",
        "List facts a page at a time (`?entity=&at=&history=&limit=&cursor=`; limit at most 1,000).",
        None,
    )
    .query(s::<FactsQuery>),
    r(
        "GET",
        ns!("/facts/{id}/trace"),
        "read",
        "A fact's evidence and adjudication history.",
        None,
    ),
    r(
        "POST",
        ns!("/facts/{id}/invalidate"),
        "admin",
        "Invalidate a fact `{reason, request_id?}`.",
        Some(s::<ReasonBody>),
    ),
    r(
        "POST",
        ns!("/facts/{id}/correct"),
        "admin",
        "Correct a fact `{statement, reason, request_id?}`.",
        Some(s::<CorrectBody>),
    ),
    r(
        "POST",
        ns!("/claims/{id}/retract"),
        "admin",
        "Retract a claim `{reason, request_id?}`.",
        Some(s::<ReasonBody>),
    ),
    r(
        "GET",
        ns!("/entities"),
        "read",
        "List entities (`?include_merged=&limit=`).",
        None,
    )
    .query(s::<EntitiesQuery>),
    r(
        "POST",
        ns!("/entities/merge"),
        "admin",
        "Merge one entity into another `{from, into}`.",
        Some(s::<MergeBody>),
    ),
    r(
        "POST",
        ns!("/entities/merges/{id}/unmerge"),
        "admin",
        "Undo a merge.",
        None,
    ),
    r(
        "GET",
        ns!("/entities/proposals"),
        "read",
        "The merges the namespace's names propose (`{proposals}`): one-word names that abbreviate exactly one longer name, with rule, reason and whether the idle pipeline merges it automatically.",
        None,
    ),
    r(
        "POST",
        ns!("/entities/proposals/accept"),
        "admin",
        "Accept a merge proposal `{from, into}`: a reversible merge recording its rule.",
        Some(s::<MergeBody>),
    ),
    r(
        "POST",
        ns!("/entities/proposals/reject"),
        "admin",
        "Reject a merge proposal `{from, into}`: the pair is never proposed again.",
        Some(s::<MergeBody>),
    ),
    r(
        "GET",
        ns!("/entities/{name_or_id}"),
        "read",
        "Show an entity by id or name.",
        None,
    ),
    r(
        "GET",
        ns!("/receipts/{id}"),
        "read",
        "Resolve a receipt: what it selected, as it is now.",
        None,
    ),
    r(
        "GET",
        ns!("/receipts/{id}/inspect"),
        "read",
        "The receipt as recorded.",
        None,
    ),
    r(
        "POST",
        ns!("/feedback"),
        "write",
        "Rate an item of a receipt `{receipt_id, item_ref, rating, comment?}`.",
        Some(s::<rememberstack::FeedbackInput>),
    ),
    r(
        "GET",
        ns!("/feedback"),
        "read",
        "List feedback (`?receipt=&limit=`).",
        None,
    )
    .query(s::<FeedbackQuery>),
    r(
        "POST",
        ns!("/export"),
        "read",
        "Export a pack `{entities?, documents?}`.",
        Some(s::<rememberstack::ExportSelection>),
    ),
    r(
        "GET",
        ns!("/status"),
        "read",
        "The namespace's pipeline: ledger depth by stage and status, dead letters, semantic readiness.",
        None,
    ),
];

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
    for route in ROUTES {
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
