//! The operation table: every call the shells serve, declared once — its name
//! (the JSON call the bindings make, [`crate::calls::call`]), what it does, the
//! scope a key needs, its HTTP route, its MCP tool and its CLI command. The shells
//! read it rather than restate it: the HTTP handlers take their scope from it and
//! the OpenAPI document its routes, scopes and summaries; the MCP catalogue is its
//! tools (descriptions, input schemas, `readOnlyHint`, scopes) and MCP tool calls
//! run through the JSON call layer; the bindings' method list is its names. Tests
//! check the rest against it: the HTTP router serves exactly its routes, the CLI
//! has each of its commands, and every surface refuses the same bad input with
//! the same code.
//!
//! Adding a call: a facade method on [`crate::Memory`], a row here, its arm in
//! [`crate::calls::call`] (input type and defaults from [`crate::defaults`]), and
//! where it has them its HTTP handler and CLI command; see `CONTRIBUTING.md`.

use crate::KeyScope;
use serde_json::{Value, json};

/// One call of the facade as the shells serve it.
#[derive(Clone, Copy, Debug)]
pub struct Operation {
    /// The call's name: the bindings' method and [`crate::calls::call`]'s method.
    pub name: &'static str,
    /// What it does, in a line (the OpenAPI summary).
    pub summary: &'static str,
    /// The scope a key needs to make it (over HTTP and MCP).
    pub scope: KeyScope,
    /// Its HTTP route, if it has one.
    pub http: Option<Route>,
    /// Its MCP tool, if it is one.
    pub mcp: Option<Tool>,
    /// Its CLI command (`"notes list"`), if it has one.
    pub cli: Option<&'static str>,
}

impl Operation {
    /// Whether it only reads (MCP's `readOnlyHint`).
    pub fn read_only(&self) -> bool {
        self.scope == KeyScope::Read
    }
}

/// An HTTP route: method and path template (`{name}` for a path parameter).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Route {
    /// `GET`, `POST` or `DELETE`.
    pub method: &'static str,
    /// The path, from the root (`/v1/namespaces/{ns}/...`).
    pub path: &'static str,
}

/// An MCP tool.
#[derive(Clone, Copy, Debug)]
pub enum Tool {
    /// One of the operation registry's assured operations: its name, description
    /// and input schema are the registry's (`Memory::operations`).
    Registry,
    /// A tool of its own.
    Own {
        /// The tool's name (usually the call's).
        name: &'static str,
        /// When an agent should use it.
        description: &'static str,
        /// Its JSON input schema.
        input_schema: fn() -> Value,
    },
}

macro_rules! ns {
    ($p:literal) => {
        concat!("/v1/namespaces/{ns}", $p)
    };
}

const fn get(path: &'static str) -> Option<Route> {
    Some(Route {
        method: "GET",
        path,
    })
}

const fn post(path: &'static str) -> Option<Route> {
    Some(Route {
        method: "POST",
        path,
    })
}

const fn delete(path: &'static str) -> Option<Route> {
    Some(Route {
        method: "DELETE",
        path,
    })
}

const fn op(
    name: &'static str,
    scope: KeyScope,
    summary: &'static str,
    http: Option<Route>,
    cli: Option<&'static str>,
) -> Operation {
    Operation {
        name,
        summary,
        scope,
        http,
        mcp: None,
        cli,
    }
}

impl Operation {
    const fn tool(
        mut self,
        name: &'static str,
        description: &'static str,
        input_schema: fn() -> Value,
    ) -> Self {
        self.mcp = Some(Tool::Own {
            name,
            description,
            input_schema,
        });
        self
    }

    const fn registry(mut self) -> Self {
        self.mcp = Some(Tool::Registry);
        self
    }
}

use KeyScope::{Admin, Ingest, Read, Write};

/// Every call, in the order the README lists them.
pub const OPERATIONS: &[Operation] = &[
    op(
        "ingest_file",
        Ingest,
        "Ingest a file by path (its kind from its name and bytes).",
        None,
        Some("ingest"),
    ),
    op(
        "ingest_text",
        Ingest,
        "Ingest a document: raw bytes (`?source_ref=&kind=&source_time=&mode=&file_name=`) or JSON `{text, source_ref, kind?, source_time?, mode?}`. `?wait=true[&wait_secs=N]` waits for processing (bounded).",
        post(ns!("/documents")),
        Some("ingest"),
    )
    .tool(
        "ingest",
        "Store a document (Markdown or plain text) in memory; it is processed into claims, entities and facts. Re-ingesting the same source_ref with new text makes a new version. Set wait to true to return after processing.",
        schema::ingest,
    ),
    op(
        "ingest_conversation",
        Ingest,
        "Ingest a conversation `{source_ref, conversation: {messages: [...]}, source_time?, mode?}`.",
        post(ns!("/conversations")),
        Some("ingest"),
    ),
    op(
        "append_messages",
        Ingest,
        "Append messages to a conversation `{conversation_ref, messages, source_time?}`.",
        post(ns!("/messages")),
        Some("conversations append"),
    )
    .tool(
        "append_messages",
        "Append messages to a conversation (created on first use). Use it to keep the memory of a dialogue current.",
        schema::append_messages,
    ),
    op(
        "conversation_messages",
        Read,
        "The messages of a conversation (`?conversation_ref=`), in order, as ingested and appended.",
        get(ns!("/messages")),
        Some("conversations show"),
    )
    .tool(
        "conversation_messages",
        "The messages of a conversation, in order, exactly as they were ingested and appended. Use it to re-read a dialogue verbatim; use the context operations to find what was said.",
        schema::conversation_messages,
    ),
    op(
        "remember_note",
        Write,
        "Remember a note `{request_id, source_key, source_revision, text, metadata?}`.",
        post(ns!("/notes")),
        Some("notes add"),
    )
    .tool(
        "remember_note",
        "Remember an explicit note (a preference, a decision, a correction) under a source key and revision. Use it for what the user asks you to remember.",
        schema::remember_note,
    ),
    op(
        "promote_note",
        Write,
        "Promote a note `{expected_version}`.",
        post(ns!("/notes/{version}/promote")),
        Some("notes promote"),
    ),
    op(
        "archive_note",
        Write,
        "Archive a note `{expected_version}`.",
        post(ns!("/notes/{version}/archive")),
        Some("notes archive"),
    ),
    op(
        "revoke_note",
        Write,
        "Revoke a note `{expected_version}`.",
        post(ns!("/notes/{version}/revoke")),
        Some("notes revoke"),
    ),
    op(
        "list_notes",
        Read,
        "List notes (`?cursor=&limit=`).",
        get(ns!("/notes")),
        Some("notes list"),
    ),
    op(
        "set_note_policy",
        Admin,
        "Set how new notes start `{start_as: candidate|promoted}`.",
        post(ns!("/notes/policy")),
        Some("notes policy"),
    ),
    op(
        "process_until_idle",
        Ingest,
        "Run the pipeline in this process until no work is left.",
        None,
        Some("process"),
    ),
    op(
        "search",
        Read,
        "Hybrid search `{query, k?, grain?: chunks|claims|facts, roles?, cursor?, include_retired?, entities?}`.",
        post(ns!("/search")),
        Some("search"),
    ),
    op(
        "resolve_entity",
        Read,
        "The entities a name may mean, ranked, with the evidence for each.",
        None,
        Some("operations run"),
    )
    .registry(),
    op(
        "claims_and_sources_context",
        Read,
        "The claims and passages that answer a question, with their sources.",
        None,
        Some("operations run"),
    )
    .registry(),
    op(
        "facts_context",
        Read,
        "The adjudicated facts that answer a question, with their windows.",
        None,
        Some("operations run"),
    )
    .registry(),
    op(
        "combined_context",
        Read,
        "Facts, claims and passages for a question in one bundle.",
        None,
        Some("operations run"),
    )
    .registry(),
    op(
        "run_operation",
        Read,
        "Run a registry operation; the body is its input (see GET /v1/operations); the response is its envelope or ContextBundle/v2.",
        post(ns!("/operations/{name}")),
        Some("operations run"),
    ),
    op(
        "operations",
        Read,
        "The operation registry: names, descriptions, JSON input schemas, versions.",
        get("/v1/operations"),
        Some("operations list"),
    ),
    op(
        "adjacent_chunks",
        Read,
        "The chunks before and after a chunk (`?window=1|2`).",
        get(ns!("/chunks/{id}/adjacent")),
        Some("adjacent"),
    )
    .tool(
        "adjacent_chunks",
        "The passages just before and after a chunk of a document or conversation. Use it when a retrieved passage (its chunk_id) needs its surroundings: the question that came before an answer, the rest of a list.",
        schema::adjacent_chunks,
    ),
    op(
        "search_documents",
        Read,
        "Search documents by metadata and title.",
        post(ns!("/documents/search")),
        Some("documents search"),
    )
    .tool(
        "search_documents",
        "Find documents by name, title, author, source time or content words. Use it to locate a file or conversation itself rather than what it says.",
        schema::search_documents,
    ),
    op(
        "trace",
        Read,
        "A fact's evidence and adjudication history.",
        get(ns!("/facts/{id}/trace")),
        Some("trace"),
    )
    .tool(
        "trace",
        "Why a fact is believed: its supporting and contradicting claims, their sources and the adjudication history. Use it before relying on a surprising fact (its fact_id).",
        schema::trace,
    ),
    op(
        "resolve_receipt",
        Read,
        "Resolve a receipt: what it selected, as it is now.",
        get(ns!("/receipts/{id}")),
        Some("receipts resolve"),
    ),
    op(
        "inspect_receipt",
        Read,
        "The receipt as recorded.",
        get(ns!("/receipts/{id}/inspect")),
        Some("receipts inspect"),
    ),
    op(
        "delete_document",
        Write,
        "Delete a document (soft, lineage grain).",
        delete(ns!("/documents/{id}")),
        Some("documents delete"),
    )
    .tool(
        "delete_document",
        "Delete a document (all its versions): its claims stop supporting facts. Use it when a source should no longer count.",
        schema::delete_document,
    ),
    op(
        "forget_document",
        Admin,
        "Forget a document: hard, verified, and nothing comes back.",
        post(ns!("/documents/{id}/forget")),
        Some("forget"),
    ),
    op(
        "forget_note",
        Admin,
        "Forget a note (hard).",
        post(ns!("/notes/{id}/forget")),
        Some("notes forget"),
    ),
    op(
        "export",
        Read,
        "Export a pack `{entities?, documents?}`.",
        post(ns!("/export")),
        Some("export"),
    ),
    op(
        "feedback",
        Write,
        "Rate an item of a receipt `{receipt_id, item_ref, rating, comment?}`.",
        post(ns!("/feedback")),
        Some("feedback add"),
    ),
    op(
        "list_feedback",
        Read,
        "List feedback (`?receipt=&limit=`).",
        get(ns!("/feedback")),
        Some("feedback list"),
    ),
    op(
        "documents",
        Read,
        "List documents.",
        get(ns!("/documents")),
        Some("documents list"),
    ),
    op(
        "document",
        Read,
        "Show a document: versions, names, sections.",
        get(ns!("/documents/{id}")),
        Some("documents show"),
    ),
    op(
        "entities",
        Read,
        "List entities (`?include_merged=&limit=`).",
        get(ns!("/entities")),
        Some("entities list"),
    ),
    op(
        "entity",
        Read,
        "Show an entity by id or name.",
        get(ns!("/entities/{name_or_id}")),
        Some("entities show"),
    ),
    op(
        "retract_claim",
        Admin,
        "Retract a claim `{reason, request_id?}`.",
        post(ns!("/claims/{id}/retract")),
        Some("claims retract"),
    ),
    op(
        "invalidate_fact",
        Admin,
        "Invalidate a fact `{reason, request_id?}`.",
        post(ns!("/facts/{id}/invalidate")),
        Some("facts invalidate"),
    ),
    op(
        "correct_fact",
        Admin,
        "Correct a fact `{statement, reason, request_id?}`.",
        post(ns!("/facts/{id}/correct")),
        Some("facts correct"),
    ),
    op(
        "merge_entities",
        Admin,
        "Merge one entity into another `{from, into}`.",
        post(ns!("/entities/merge")),
        Some("entities merge"),
    ),
    op(
        "unmerge_entities",
        Admin,
        "Undo a merge.",
        post(ns!("/entities/merges/{id}/unmerge")),
        Some("entities unmerge"),
    ),
    op(
        "merge_proposals",
        Read,
        "The merges the namespace's names propose (`{proposals}`): one-word names that abbreviate exactly one longer name, with rule, reason and whether the idle pipeline merges it automatically.",
        get(ns!("/entities/proposals")),
        Some("entities proposals list"),
    )
    .tool(
        "merge_proposals",
        "Names that are probably one entity: each one-word name that abbreviates exactly one longer name in memory (`Marta` and `Marta Ilves`), with the rule, the reason and whether it will be merged automatically. Use it before treating two such names as different people or things.",
        schema::empty,
    ),
    op(
        "accept_merge_proposal",
        Admin,
        "Accept a merge proposal `{from, into}`: a reversible merge recording its rule.",
        post(ns!("/entities/proposals/accept")),
        Some("entities proposals accept"),
    )
    .tool(
        "accept_merge_proposal",
        "Accept a merge proposal (its from and into entity ids): the short name becomes the longer one's, reversibly. Use it when the user confirms two names are one.",
        schema::proposal,
    ),
    op(
        "reject_merge_proposal",
        Admin,
        "Reject a merge proposal `{from, into}`: the pair is never proposed again.",
        post(ns!("/entities/proposals/reject")),
        Some("entities proposals reject"),
    )
    .tool(
        "reject_merge_proposal",
        "Reject a merge proposal (its from and into entity ids): the two stay apart and are never proposed again. Use it when the user says two names are different.",
        schema::proposal,
    ),
    op(
        "claims",
        Read,
        "List claims (of a document, retired ones on request).",
        None,
        Some("claims list"),
    ),
    op(
        "claim_decisions",
        Read,
        "The adjudication decisions about a claim.",
        None,
        Some("claims decisions"),
    ),
    op(
        "facts",
        Read,
        "List facts a page at a time (`?entity=&at=&history=&limit=&cursor=`; limit at most 1,000).",
        get(ns!("/facts")),
        Some("facts list"),
    ),
    op(
        "predicates",
        Read,
        "The predicate registry.",
        None,
        Some("predicates"),
    ),
    op(
        "neighborhood",
        Read,
        "Paths between entities through facts.",
        None,
        Some("neighborhood"),
    ),
    op(
        "hydrate",
        Read,
        "Records by reference, as they are now.",
        None,
        Some("hydrate"),
    ),
    op(
        "status",
        Read,
        "The namespace's pipeline: ledger depth by stage and status, dead letters, semantic readiness.",
        get(ns!("/status")),
        Some("status"),
    )
    .tool(
        "pipeline_readiness",
        "Whether what was ingested has been processed: work pending, running and dead-lettered by stage, and semantic index readiness. Use it after an ingest before expecting its facts.",
        schema::empty,
    ),
    op(
        "doctor",
        Read,
        "Check the store and its configuration and say what to fix.",
        None,
        Some("doctor"),
    ),
];

/// The row of the call named `name`.
pub fn operation(name: &str) -> Option<&'static Operation> {
    OPERATIONS.iter().find(|o| o.name == name)
}

/// Every call's name, in table order.
pub fn names() -> impl Iterator<Item = &'static str> {
    OPERATIONS.iter().map(|o| o.name)
}

/// The scope a key needs to make `name`. An unknown name needs the widest scope,
/// so a handler that names a call the table lacks refuses every key but admin.
pub fn scope(name: &str) -> KeyScope {
    operation(name).map_or(KeyScope::Admin, |o| o.scope)
}

/// The MCP tools' input schemas, written for agents: each names its fields,
/// bounds and formats as the call's input type reads them.
mod schema {
    use super::*;

    pub(super) fn ingest() -> Value {
        json!({"type": "object", "additionalProperties": false, "required": ["text", "source_ref"],
               "properties": {"text": {"type": "string", "minLength": 1},
                              "source_ref": {"type": "string", "minLength": 1, "description": "A stable name for the document (a path, a URL, a title)."},
                              "kind": {"type": "string", "enum": ["markdown", "text", "html", "json", "ndjson", "conversation"]},
                              "source_time": {"type": "string", "format": "date-time", "description": "When the source was written."},
                              "mode": {"type": "string", "enum": ["snapshot", "living"]},
                              "wait": {"type": "boolean"}}})
    }

    pub(super) fn append_messages() -> Value {
        json!({"type": "object", "additionalProperties": false, "required": ["conversation_ref", "messages"],
               "properties": {"conversation_ref": {"type": "string", "minLength": 1},
                              "messages": {"type": "array", "minItems": 1, "items": {
                                  "type": "object", "required": ["speaker", "text"],
                                  "properties": {"event_id": {"type": "string"}, "speaker": {"type": "string"},
                                                 "text": {"type": "string"}, "timestamp": {"type": "string", "format": "date-time"}}}},
                              "source_time": {"type": "string", "format": "date-time"}}})
    }

    pub(super) fn conversation_messages() -> Value {
        json!({"type": "object", "additionalProperties": false, "required": ["conversation_ref"],
               "properties": {"conversation_ref": {"type": "string", "minLength": 1,
                                                   "description": "The conversation's reference, as it was ingested or appended under."}}})
    }

    pub(super) fn remember_note() -> Value {
        json!({"type": "object", "additionalProperties": false,
               "required": ["request_id", "source_key", "source_revision", "text"],
               "properties": {"request_id": {"type": "string", "minLength": 1},
                              "source_key": {"type": "string", "minLength": 1},
                              "source_revision": {"type": "string", "minLength": 1},
                              "text": {"type": "string", "minLength": 1},
                              "metadata": {"type": "object"}}})
    }

    pub(super) fn adjacent_chunks() -> Value {
        json!({"type": "object", "additionalProperties": false, "required": ["chunk_id"],
               "properties": {"chunk_id": {"type": "string", "format": "uuid"},
                              "window": {"type": "integer", "minimum": 1, "maximum": 2,
                                         "default": crate::defaults::ADJACENT_WINDOW}}})
    }

    pub(super) fn search_documents() -> Value {
        json!({"type": "object", "additionalProperties": false,
               "properties": {"query": {"type": "string"}, "file_name": {"type": "string"},
                              "title": {"type": "string"}, "author": {"type": "string"},
                              "from": {"type": "string", "format": "date-time"},
                              "to": {"type": "string", "format": "date-time"},
                              "k": {"type": "integer", "minimum": 1, "maximum": 100}}})
    }

    pub(super) fn trace() -> Value {
        json!({"type": "object", "additionalProperties": false, "required": ["fact_id"],
               "properties": {"fact_id": {"type": "string", "format": "uuid"}}})
    }

    pub(super) fn delete_document() -> Value {
        json!({"type": "object", "additionalProperties": false, "required": ["document_id"],
               "properties": {"document_id": {"type": "string", "format": "uuid"}}})
    }

    pub(super) fn proposal() -> Value {
        json!({"type": "object", "additionalProperties": false, "required": ["from", "into"],
               "properties": {"from": {"type": "string", "format": "uuid"},
                              "into": {"type": "string", "format": "uuid"}}})
    }

    pub(super) fn empty() -> Value {
        json!({"type": "object", "additionalProperties": false, "properties": {}})
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_routes_and_tools_are_each_declared_once() {
        let mut names = std::collections::BTreeSet::new();
        let mut routes = std::collections::BTreeSet::new();
        let mut tools = std::collections::BTreeSet::new();
        for o in OPERATIONS {
            assert!(names.insert(o.name), "`{}` is declared twice", o.name);
            if let Some(r) = o.http {
                assert!(
                    routes.insert((r.method, r.path)),
                    "{} {} serves two calls",
                    r.method,
                    r.path
                );
            }
            if let Some(Tool::Own {
                name, input_schema, ..
            }) = o.mcp
            {
                assert!(tools.insert(name), "tool `{name}` is declared twice");
                let schema = input_schema();
                assert_eq!(schema["type"], "object", "{name}");
                assert_eq!(schema["additionalProperties"], false, "{name}");
            }
        }
        assert_eq!(scope("forget_document"), KeyScope::Admin);
        assert_eq!(scope("no_such_call"), KeyScope::Admin);
        let readiness = OPERATIONS
            .iter()
            .find(|o| matches!(o.mcp, Some(Tool::Own { name, .. }) if name == "pipeline_readiness"))
            .unwrap();
        assert_eq!(readiness.name, "status");
    }
}
