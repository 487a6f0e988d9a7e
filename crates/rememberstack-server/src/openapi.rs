//! The OpenAPI document, built from one route table ([`ROUTES`]). A test checks
//! that every route in the table is served and that the router serves nothing
//! the table leaves out, so the document cannot drift from the routes.

use serde_json::{Map, Value, json};

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
    /// The JSON body it takes, if any.
    pub body: Option<&'static str>,
}

const fn r(
    method: &'static str,
    path: &'static str,
    scope: &'static str,
    summary: &'static str,
    body: Option<&'static str>,
) -> RouteDoc {
    RouteDoc {
        method,
        path,
        scope,
        summary,
        body,
    }
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
        "The store is reachable, migrations are applied, forget manifests are honoured; semantic channel readiness.",
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
        Some("IngestText"),
    ),
    r("GET", ns!("/documents"), "read", "List documents.", None),
    r(
        "POST",
        ns!("/documents/search"),
        "read",
        "Search documents by metadata and title.",
        Some("DocumentQuery"),
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
        Some("ConversationIngest"),
    ),
    r(
        "POST",
        ns!("/messages"),
        "ingest",
        "Append messages to a conversation `{conversation_ref, messages, source_time?}`.",
        Some("AppendMessages"),
    ),
    r(
        "POST",
        ns!("/notes"),
        "write",
        "Remember a note `{request_id, source_key, source_revision, text, metadata?}`.",
        Some("NoteInput"),
    ),
    r(
        "GET",
        ns!("/notes"),
        "read",
        "List notes (`?cursor=&limit=`).",
        None,
    ),
    r(
        "POST",
        ns!("/notes/policy"),
        "admin",
        "Set how new notes start `{start_as: candidate|promoted}`.",
        Some("NotePolicy"),
    ),
    r(
        "POST",
        ns!("/notes/{version}/promote"),
        "write",
        "Promote a note `{expected_version}`.",
        Some("Transition"),
    ),
    r(
        "POST",
        ns!("/notes/{version}/archive"),
        "write",
        "Archive a note `{expected_version}`.",
        Some("Transition"),
    ),
    r(
        "POST",
        ns!("/notes/{version}/revoke"),
        "write",
        "Revoke a note `{expected_version}`.",
        Some("Transition"),
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
        Some("OperationInput"),
    ),
    r(
        "POST",
        ns!("/search"),
        "read",
        "Hybrid search `{query, k?, grain?: chunks|claims|facts, roles?, cursor?, include_retired?, entities?}`.",
        Some("Search"),
    ),
    r(
        "GET",
        ns!("/chunks/{id}/adjacent"),
        "read",
        "The chunks before and after a chunk (`?window=1|2`).",
        None,
    ),
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
        Some("Reason"),
    ),
    r(
        "POST",
        ns!("/facts/{id}/correct"),
        "admin",
        "Correct a fact `{statement, reason, request_id?}`.",
        Some("Correction"),
    ),
    r(
        "POST",
        ns!("/claims/{id}/retract"),
        "admin",
        "Retract a claim `{reason, request_id?}`.",
        Some("Reason"),
    ),
    r(
        "GET",
        ns!("/entities"),
        "read",
        "List entities (`?include_merged=&limit=`).",
        None,
    ),
    r(
        "POST",
        ns!("/entities/merge"),
        "admin",
        "Merge one entity into another `{from, into}`.",
        Some("Merge"),
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
        Some("FeedbackInput"),
    ),
    r(
        "GET",
        ns!("/feedback"),
        "read",
        "List feedback (`?receipt=&limit=`).",
        None,
    ),
    r(
        "POST",
        ns!("/export"),
        "read",
        "Export a pack `{entities?, documents?}`.",
        Some("ExportSelection"),
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

fn body_schema(name: &str) -> Value {
    match name {
        "IngestText" => json!({"type": "object", "required": ["text", "source_ref"],
            "properties": {"text": {"type": "string"}, "source_ref": {"type": "string"},
                "kind": {"type": "string", "enum": ["auto", "markdown", "text", "html", "json", "ndjson", "conversation"]},
                "source_time": {"type": "string", "format": "date-time"},
                "mode": {"type": "string", "enum": ["snapshot", "living"]},
                "file_name": {"type": "string"}, "thread_ref": {"type": "string"}}}),
        "Transition" => json!({"type": "object", "required": ["expected_version"],
            "properties": {"expected_version": {"type": "integer", "minimum": 0}}}),
        "Reason" => json!({"type": "object", "required": ["reason"],
            "properties": {"reason": {"type": "string"}, "request_id": {"type": "string"}}}),
        "Correction" => json!({"type": "object", "required": ["statement", "reason"],
            "properties": {"statement": {"type": "string"}, "reason": {"type": "string"},
                "request_id": {"type": "string"}}}),
        "Merge" => json!({"type": "object", "required": ["from", "into"],
            "properties": {"from": {"type": "string", "format": "uuid"},
                "into": {"type": "string", "format": "uuid"}}}),
        "Search" => json!({"type": "object", "required": ["query"],
            "properties": {"query": {"type": "string"}, "k": {"type": "integer", "minimum": 1},
                "grain": {"type": "string", "enum": ["chunks", "claims", "facts"]},
                "roles": {"type": "array", "items": {"type": "string"}},
                "cursor": {"type": "string"}, "include_retired": {"type": "boolean"},
                "entities": {"type": "array", "items": {"type": "string", "format": "uuid"}},
                "exact": {"type": "boolean"}}}),
        _ => json!({"type": "object"}),
    }
}

/// The OpenAPI 3.1 document.
pub fn document() -> Value {
    let mut paths: Map<String, Value> = Map::new();
    for route in ROUTES {
        let params: Vec<Value> = route
            .path
            .split('/')
            .filter_map(|seg| seg.strip_prefix('{').and_then(|s| s.strip_suffix('}')))
            .map(|name| json!({"name": name, "in": "path", "required": true, "schema": {"type": "string"}}))
            .collect();
        let mut op = json!({
            "summary": route.summary,
            "operationId": format!("{} {}", route.method, route.path),
            "x-scope": route.scope,
            "parameters": params,
            "responses": {
                "200": {"description": "Success (JSON)."},
                "400": {"description": "Invalid input.", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}},
                "401": {"description": "Missing or unknown key."},
                "403": {"description": "The key lacks the scope."},
                "404": {"description": "Not found (or not visible to this key)."},
                "409": {"description": "Conflict with the stored state."},
                "413": {"description": "Body too large."},
                "429": {"description": "Rate or in-flight limit; see Retry-After."},
                "503": {"description": "Forget in progress, store unavailable, or timeout."}
            }
        });
        if route.scope != "none" {
            op["security"] = json!([{"bearer": []}, {}]);
        }
        if let Some(body) = route.body {
            op["requestBody"] = json!({"required": true,
                "content": {"application/json": {"schema": body_schema(body)}}});
        }
        let entry = paths
            .entry(route.path.to_string())
            .or_insert_with(|| json!({}));
        entry[route.method.to_ascii_lowercase()] = op;
    }
    json!({
        "openapi": "3.1.0",
        "info": {"title": "RememberStack", "version": env!("CARGO_PKG_VERSION"),
                 "description": "Agent memory: sources, claims, entities, facts and context operations."},
        "paths": paths,
        "components": {
            "schemas": {"Error": error_schema()},
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}}
        },
        "x-namespace-prefix": NS,
    })
}
