//! MCP (Model Context Protocol) over the official Rust SDK (rmcp): one tool
//! catalogue — the operation registry's four assured operations plus the write and
//! primitive tools (D136/D137) — served over stdio by `remember mcp` and over
//! Streamable HTTP at `/mcp` behind the server's perimeter.

use crate::auth::{Principal, Scope};
use crate::error::ApiError;
use rememberstack::{
    ChunkId, DocumentId, DocumentQuery, EntityId, FactId, Memory, Message, NoteInput,
};
use rmcp::ErrorData;
use rmcp::handler::server::ServerHandler;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, Implementation, JsonObject,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
    ToolAnnotations,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use serde::Deserialize;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The header that picks the namespace of an MCP session over HTTP (else the key's
/// only namespace, else `default`).
pub const NAMESPACE_HEADER: &str = "x-rememberstack-namespace";

/// One tool of the catalogue.
#[derive(Clone, Debug)]
pub struct ToolSpec {
    /// The tool name.
    pub name: String,
    /// When an agent should use it.
    pub description: String,
    /// Its JSON input schema.
    pub input_schema: Value,
    /// Whether it only reads.
    pub read_only: bool,
    /// The scope a key needs.
    pub scope: Scope,
}

/// The whole catalogue: the registry's operations first, then the primitives and
/// the writes.
pub fn catalogue(memory: &Memory) -> Vec<ToolSpec> {
    let mut tools: Vec<ToolSpec> = memory
        .operations()
        .into_iter()
        .map(|op| ToolSpec {
            name: op.name,
            description: op.description,
            input_schema: op.input_schema,
            read_only: true,
            scope: Scope::Read,
        })
        .collect();
    let read = |name: &str, description: &str, schema: Value| ToolSpec {
        name: name.into(),
        description: description.into(),
        input_schema: schema,
        read_only: true,
        scope: Scope::Read,
    };
    let write = |name: &str, description: &str, schema: Value, scope: Scope| ToolSpec {
        name: name.into(),
        description: description.into(),
        input_schema: schema,
        read_only: false,
        scope,
    };
    tools.push(read(
        "adjacent_chunks",
        "The passages just before and after a chunk of a document or conversation. Use it when a retrieved passage (its chunk_id) needs its surroundings: the question that came before an answer, the rest of a list.",
        json!({"type": "object", "additionalProperties": false, "required": ["chunk_id"],
               "properties": {"chunk_id": {"type": "string", "format": "uuid"},
                              "window": {"type": "integer", "minimum": 1, "maximum": 2}}}),
    ));
    tools.push(read(
        "search_documents",
        "Find documents by name, title, author, source time or content words. Use it to locate a file or conversation itself rather than what it says.",
        json!({"type": "object", "additionalProperties": false,
               "properties": {"query": {"type": "string"}, "file_name": {"type": "string"},
                              "title": {"type": "string"}, "author": {"type": "string"},
                              "from": {"type": "string", "format": "date-time"},
                              "to": {"type": "string", "format": "date-time"},
                              "k": {"type": "integer", "minimum": 1, "maximum": 100}}}),
    ));
    tools.push(read(
        "trace",
        "Why a fact is believed: its supporting and contradicting claims, their sources and the adjudication history. Use it before relying on a surprising fact (its fact_id).",
        json!({"type": "object", "additionalProperties": false, "required": ["fact_id"],
               "properties": {"fact_id": {"type": "string", "format": "uuid"}}}),
    ));
    tools.push(read(
        "pipeline_readiness",
        "Whether what was ingested has been processed: work pending, running and dead-lettered by stage, and semantic index readiness. Use it after an ingest before expecting its facts.",
        json!({"type": "object", "additionalProperties": false, "properties": {}}),
    ));
    tools.push(read(
        "merge_proposals",
        "Names that are probably one entity: each one-word name that abbreviates exactly one longer name in memory (`Marta` and `Marta Ilves`), with the rule, the reason and whether it will be merged automatically. Use it before treating two such names as different people or things.",
        json!({"type": "object", "additionalProperties": false, "properties": {}}),
    ));
    tools.push(write(
        "ingest",
        "Store a document (Markdown or plain text) in memory; it is processed into claims, entities and facts. Re-ingesting the same source_ref with new text makes a new version. Set wait to true to return after processing.",
        json!({"type": "object", "additionalProperties": false, "required": ["text", "source_ref"],
               "properties": {"text": {"type": "string", "minLength": 1},
                              "source_ref": {"type": "string", "minLength": 1, "description": "A stable name for the document (a path, a URL, a title)."},
                              "kind": {"type": "string", "enum": ["markdown", "text", "html", "json", "ndjson", "conversation"]},
                              "source_time": {"type": "string", "format": "date-time", "description": "When the source was written."},
                              "mode": {"type": "string", "enum": ["snapshot", "living"]},
                              "wait": {"type": "boolean"}}}),
        Scope::Ingest,
    ));
    tools.push(write(
        "remember_note",
        "Remember an explicit note (a preference, a decision, a correction) under a source key and revision. Use it for what the user asks you to remember.",
        json!({"type": "object", "additionalProperties": false,
               "required": ["request_id", "source_key", "source_revision", "text"],
               "properties": {"request_id": {"type": "string", "minLength": 1},
                              "source_key": {"type": "string", "minLength": 1},
                              "source_revision": {"type": "string", "minLength": 1},
                              "text": {"type": "string", "minLength": 1},
                              "metadata": {"type": "object"}}}),
        Scope::Write,
    ));
    tools.push(write(
        "append_messages",
        "Append messages to a conversation (created on first use). Use it to keep the memory of a dialogue current.",
        json!({"type": "object", "additionalProperties": false, "required": ["conversation_ref", "messages"],
               "properties": {"conversation_ref": {"type": "string", "minLength": 1},
                              "messages": {"type": "array", "minItems": 1, "items": {
                                  "type": "object", "required": ["speaker", "text"],
                                  "properties": {"event_id": {"type": "string"}, "speaker": {"type": "string"},
                                                 "text": {"type": "string"}, "time": {"type": "string", "format": "date-time"}}}},
                              "source_time": {"type": "string", "format": "date-time"}}}),
        Scope::Ingest,
    ));
    tools.push(write(
        "delete_document",
        "Delete a document (all its versions): its claims stop supporting facts. Use it when a source should no longer count.",
        json!({"type": "object", "additionalProperties": false, "required": ["document_id"],
               "properties": {"document_id": {"type": "string", "format": "uuid"}}}),
        Scope::Write,
    ));
    for (name, description) in [
        (
            "accept_merge_proposal",
            "Accept a merge proposal (its from and into entity ids): the short name becomes the longer one's, reversibly. Use it when the user confirms two names are one.",
        ),
        (
            "reject_merge_proposal",
            "Reject a merge proposal (its from and into entity ids): the two stay apart and are never proposed again. Use it when the user says two names are different.",
        ),
    ] {
        tools.push(write(
            name,
            description,
            json!({"type": "object", "additionalProperties": false, "required": ["from", "into"],
                   "properties": {"from": {"type": "string", "format": "uuid"},
                                  "into": {"type": "string", "format": "uuid"}}}),
            Scope::Admin,
        ));
    }
    tools
}

/// The MCP service over one engine.
#[derive(Clone)]
pub struct McpServer {
    memory: Memory,
    read_only: bool,
    tools: Arc<Vec<ToolSpec>>,
    /// The registry's operation names (run through `run_operation`).
    operations: Arc<Vec<String>>,
    max_wait: Duration,
    /// Over HTTP, the server whose perimeter named the caller: its in-flight
    /// limit and request timeout also bound tool calls, which run after the
    /// HTTP response (a stream) has started.
    http: Option<crate::AppState>,
}

impl McpServer {
    /// A service over `memory` (its namespace serves stdio sessions). With
    /// `read_only`, only the read tools are listed and callable.
    pub fn new(memory: Memory, read_only: bool) -> Self {
        let tools = Arc::new(catalogue(&memory));
        let operations = Arc::new(memory.operations().into_iter().map(|o| o.name).collect());
        Self {
            memory,
            read_only,
            tools,
            operations,
            max_wait: Duration::from_secs(60),
            http: None,
        }
    }

    /// The service behind `/mcp` of a server.
    pub(crate) fn over_http(state: crate::AppState) -> Self {
        let mut server = Self::new(state.0.memory.clone(), false);
        server.max_wait = state.0.config.max_wait;
        server.http = Some(state);
        server
    }

    /// The caller and namespace of a request (see [`caller_of`]).
    fn caller(&self, ctx: &RequestContext<RoleServer>) -> Result<(Principal, String), ApiError> {
        caller_of(
            self.http.is_some(),
            ctx.extensions.get::<axum::http::request::Parts>(),
            self.memory.namespace(),
        )
    }

    fn visible(&self, principal: &Principal) -> Vec<&ToolSpec> {
        self.tools
            .iter()
            .filter(|t| !self.read_only || t.read_only)
            .filter(|t| principal.holds(t.scope))
            .collect()
    }

    async fn run(&self, name: &str, args: Value, m: &Memory) -> Result<Value, ApiError> {
        let to_value = |v: Result<Value, serde_json::Error>| {
            v.map_err(|e| ApiError::from(rememberstack::Error::internal(e.to_string())))
        };
        if self.operations.iter().any(|o| o == name) {
            return Ok(m.run_operation(name, args).await?);
        }
        match name {
            "adjacent_chunks" => {
                let a: AdjacentArgs = parse(args)?;
                let chunk: ChunkId = a.chunk_id.parse()?;
                to_value(serde_json::to_value(
                    m.adjacent_chunks(
                        chunk,
                        a.window.unwrap_or(rememberstack::defaults::ADJACENT_WINDOW),
                    )
                    .await?,
                ))
            }
            "search_documents" => {
                let q: DocumentQuery = parse(args)?;
                to_value(serde_json::to_value(m.search_documents(q).await?))
            }
            "trace" => {
                let a: TraceArgs = parse(args)?;
                let fact: FactId = a.fact_id.parse()?;
                to_value(serde_json::to_value(m.trace(fact).await?))
            }
            "pipeline_readiness" => {
                let _: Empty = parse(args)?;
                to_value(serde_json::to_value(m.status().await?))
            }
            "ingest" => {
                let a: IngestArgs = parse(args)?;
                let options = rememberstack::IngestOptions::from_fields(
                    Some(a.source_ref),
                    a.kind.as_deref(),
                    a.source_time.as_deref(),
                    a.mode.as_deref(),
                    None,
                )?;
                let receipt = m.ingest_text(a.text, options).await?;
                let done = if a.wait.unwrap_or(false) {
                    crate::routes::wait_idle(m, self.max_wait).await?
                } else {
                    false
                };
                let mut v = to_value(serde_json::to_value(receipt))?;
                v["processing"] = json!(if done { "done" } else { "pending" });
                Ok(v)
            }
            "remember_note" => {
                let input: NoteInput = parse(args)?;
                to_value(serde_json::to_value(m.remember_note(input).await?))
            }
            "append_messages" => {
                let a: AppendArgs = parse(args)?;
                let receipt = match a.source_time.as_deref() {
                    None => m.append_messages(&a.conversation_ref, a.messages).await?,
                    Some(t) => {
                        let t = rememberstack::time::parse_instant("source_time", t)?;
                        m.append_messages_at(&a.conversation_ref, a.messages, t)
                            .await?
                    }
                };
                to_value(serde_json::to_value(receipt))
            }
            "delete_document" => {
                let a: DeleteArgs = parse(args)?;
                let doc: DocumentId = a.document_id.parse()?;
                to_value(serde_json::to_value(m.delete_document(doc).await?))
            }
            "merge_proposals" => {
                let _: Empty = parse(args)?;
                Ok(
                    json!({"proposals": to_value(serde_json::to_value(m.merge_proposals().await?))?}),
                )
            }
            "accept_merge_proposal" => {
                let a: ProposalArgs = parse(args)?;
                let (from, into): (EntityId, EntityId) = (a.from.parse()?, a.into.parse()?);
                to_value(serde_json::to_value(
                    m.accept_merge_proposal(from, into).await?,
                ))
            }
            "reject_merge_proposal" => {
                let a: ProposalArgs = parse(args)?;
                let (from, into): (EntityId, EntityId) = (a.from.parse()?, a.into.parse()?);
                to_value(serde_json::to_value(
                    m.reject_merge_proposal(from, into).await?,
                ))
            }
            other => Err(ApiError::new(
                axum::http::StatusCode::NOT_FOUND,
                "not_found",
                format!("no tool named `{other}`"),
            )),
        }
    }
}

/// The caller and namespace of a request: over stdio, this process's own (the
/// open principal: whoever runs the process owns the store); over HTTP, the
/// principal the perimeter attached and the namespace header. An HTTP request
/// with no principal attached is refused, never served as the open principal.
pub(crate) fn caller_of(
    over_http: bool,
    parts: Option<&axum::http::request::Parts>,
    own_namespace: &str,
) -> Result<(Principal, String), ApiError> {
    if !over_http {
        return Ok((Principal::Open, own_namespace.to_string()));
    }
    let principal = parts
        .and_then(|p| p.extensions.get::<Principal>())
        .cloned()
        .ok_or_else(|| {
            ApiError::unauthorized("this MCP request carries no authenticated caller")
        })?;
    let header = parts
        .and_then(|p| p.headers.get(NAMESPACE_HEADER))
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let ns = header.unwrap_or_else(|| match &principal {
        Principal::Key(k) if k.namespaces.len() == 1 => k.namespaces[0].clone(),
        _ => "default".to_string(),
    });
    Ok((principal, ns))
}

/// MCP sessions over HTTP, capped per caller: rmcp's session manager (which
/// closes a session idle for the configured time) plus who opened each session.
pub(crate) struct SessionCap {
    manager: Arc<LocalSessionManager>,
    per_key: usize,
    idle: Duration,
    /// Per caller: its open sessions' ids, and sessions being opened.
    held: Mutex<HashMap<String, (Vec<String>, usize)>>,
}

/// A place for one session being opened: bound to the session id the response
/// names, or given back when dropped (the request failed or opened none).
pub(crate) struct SessionSlot<'a> {
    cap: &'a SessionCap,
    key: String,
    bound: bool,
}

impl SessionCap {
    pub(crate) fn new(per_key: usize, idle: Duration) -> Self {
        let mut manager = LocalSessionManager::default();
        manager.session_config.keep_alive = Some(idle);
        Self {
            manager: Arc::new(manager),
            per_key: per_key.max(1),
            idle,
            held: Mutex::new(HashMap::new()),
        }
    }

    pub(crate) fn manager(&self) -> Arc<LocalSessionManager> {
        self.manager.clone()
    }

    /// Reserve a place for a new session of `key`, or refuse (`429`) when `key`
    /// already holds its cap of live sessions.
    pub(crate) async fn reserve(&self, key: &str) -> Result<SessionSlot<'_>, ApiError> {
        let live = self.manager.sessions.read().await;
        let mut held = self
            .held
            .lock()
            .map_err(|_| ApiError::from(rememberstack::Error::internal("session cap poisoned")))?;
        let (ids, opening) = held.entry(key.to_string()).or_default();
        // Sessions rmcp closed (idle, deleted, ended) free their places.
        ids.retain(|id| live.contains_key(id.as_str()));
        if ids.len() + *opening >= self.per_key {
            return Err(ApiError::rate_limited(
                format!(
                    "this credential holds {} open MCP sessions, the most it may: close one                      (DELETE /mcp with its Mcp-Session-Id) or let one sit idle for {} s",
                    self.per_key,
                    self.idle.as_secs()
                ),
                self.idle.as_secs().max(1),
            ));
        }
        *opening += 1;
        Ok(SessionSlot {
            cap: self,
            key: key.to_string(),
            bound: false,
        })
    }

    fn settle(&self, key: &str, id: Option<&str>) {
        let Ok(mut held) = self.held.lock() else {
            return;
        };
        if let Some((ids, opening)) = held.get_mut(key) {
            *opening = opening.saturating_sub(1);
            if let Some(id) = id {
                ids.push(id.to_string());
            }
            if ids.is_empty() && *opening == 0 {
                held.remove(key);
            }
        }
    }
}

impl SessionSlot<'_> {
    /// The request opened session `id`.
    pub(crate) fn bind(mut self, id: &str) {
        self.bound = true;
        self.cap.settle(&self.key, Some(id));
    }
}

impl Drop for SessionSlot<'_> {
    fn drop(&mut self) {
        if !self.bound {
            self.cap.settle(&self.key, None);
        }
    }
}

/// A tool's arguments that do not parse (unknown fields, wrong types, missing
/// ones) are `invalid_input`, as the same request over HTTP or the bindings
/// (`rememberstack::calls`); what the registry's operations refuse of their own
/// input stays `invalid_parameter` on every surface.
fn parse<T: for<'de> Deserialize<'de>>(args: Value) -> Result<T, ApiError> {
    serde_json::from_value(args).map_err(|e| {
        ApiError::new(
            axum::http::StatusCode::BAD_REQUEST,
            "invalid_input",
            format!("tool arguments: {e}"),
        )
    })
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Empty {}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AdjacentArgs {
    chunk_id: String,
    window: Option<usize>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TraceArgs {
    fact_id: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ProposalArgs {
    from: String,
    into: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DeleteArgs {
    document_id: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct IngestArgs {
    text: String,
    source_ref: String,
    kind: Option<String>,
    source_time: Option<String>,
    mode: Option<String>,
    wait: Option<bool>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AppendArgs {
    conversation_ref: String,
    messages: Vec<Message>,
    source_time: Option<String>,
}

/// A refused or failed call as a tool error `{code, message}`; an internal error's
/// detail goes to the log under a correlation id instead.
fn tool_error(e: &ApiError) -> CallToolResult {
    let e = if e.is_internal() {
        e.public(&format!("err_{}", uuid::Uuid::new_v4().simple()))
    } else {
        e.clone()
    };
    CallToolResult::structured_error(json!({"code": e.code, "message": e.message}))
}

impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new(
                "rememberstack",
                env!("CARGO_PKG_VERSION"),
            ))
            .with_instructions(
                "RememberStack is this agent's memory. Before answering, ask it: what sources said \
                 → claims_and_sources_context; what is or was true → facts_context; both → \
                 combined_context; an ambiguous name → resolve_entity (then pass entity_ids). \
                 Every result carries its provenance; say when memory has nothing.",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let (principal, _) = self.caller(&ctx).map_err(|e| {
            ErrorData::invalid_request(e.message.clone(), Some(json!({"code": e.code})))
        })?;
        let tools = self
            .visible(&principal)
            .into_iter()
            .map(|t| {
                let schema: JsonObject = match &t.input_schema {
                    Value::Object(o) => o.clone(),
                    _ => JsonObject::new(),
                };
                let mut annotations = ToolAnnotations::new().read_only(t.read_only);
                if t.name == "delete_document" {
                    annotations = annotations.destructive(true);
                }
                Tool::new(t.name.clone(), t.description.clone(), Arc::new(schema))
                    .with_annotations(annotations)
            })
            .collect();
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let (principal, ns) = match self.caller(&ctx) {
            Ok(c) => c,
            Err(e) => return Ok(tool_error(&e).into()),
        };
        let name = request.name.to_string();
        let Some(spec) = self.tools.iter().find(|t| t.name == name) else {
            return Err(ErrorData::invalid_params(
                format!("no tool named `{name}`"),
                None,
            ));
        };
        if self.read_only && !spec.read_only {
            return Ok(tool_error(&ApiError::forbidden(format!(
                "this MCP server is read-only: `{name}` writes"
            )))
            .into());
        }
        if let Err(e) = principal.require(&ns, spec.scope) {
            return Ok(tool_error(&e).into());
        }
        let memory = match self.memory.with_namespace(&ns) {
            Ok(m) => m,
            Err(e) => return Ok(tool_error(&ApiError::from(e)).into()),
        };
        let args = Value::Object(request.arguments.unwrap_or_default());
        let started = std::time::Instant::now();
        let result = match &self.http {
            None => self.run(&name, args, &memory).await,
            Some(state) => {
                let timeout = state.0.config.request_timeout;
                let _permit = match state.0.limiter.hold(&principal.limit_key(), timeout).await {
                    Ok(p) => p,
                    Err(e) => return Ok(tool_error(&e).into()),
                };
                match tokio::time::timeout(timeout, self.run(&name, args, &memory)).await {
                    Ok(result) => result,
                    Err(_) => Err(ApiError::new(
                        axum::http::StatusCode::SERVICE_UNAVAILABLE,
                        "timeout",
                        format!(
                            "the tool call did not finish within {} s",
                            timeout.as_secs()
                        ),
                    )),
                }
            }
        };
        tracing::info!(
            tool = %name,
            ok = result.is_ok(),
            millis = started.elapsed().as_millis() as u64,
            "mcp tool call"
        );
        Ok(match result {
            Ok(v) => CallToolResult::structured(v),
            Err(e) => tool_error(&e),
        }
        .into())
    }
}

/// Serve MCP over this process's stdin and stdout (JSON-RPC only on stdout) until
/// the client closes the stream or `shutdown` resolves, with `workers` ledger
/// workers in the background so what is ingested gets processed.
pub async fn serve_stdio(
    memory: Memory,
    read_only: bool,
    workers: usize,
    shutdown: impl std::future::Future<Output = ()> + Send,
) -> rememberstack::Result<()> {
    use rmcp::ServiceExt;
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let pool = (workers > 0).then(|| {
        let memory = memory.clone();
        tokio::spawn(async move {
            memory
                .run_workers(workers, Duration::from_millis(200), stop_rx)
                .await
        })
    });
    let service = McpServer::new(memory, read_only)
        .serve(rmcp::transport::stdio())
        .await
        .map_err(|e| rememberstack::Error::internal(format!("MCP initialization failed: {e}")));
    let result = match service {
        Ok(running) => {
            let token = running.cancellation_token();
            tokio::select! {
                done = running.waiting() => done
                    .map(|_| ())
                    .map_err(|e| rememberstack::Error::internal(format!("MCP session: {e}"))),
                _ = shutdown => {
                    token.cancel();
                    Ok(())
                }
            }
        }
        Err(e) => Err(e),
    };
    let _ = stop_tx.send(true);
    if let Some(pool) = pool {
        match pool.await {
            Ok(Err(e)) => tracing::warn!(error = %e, "workers stopped with an error"),
            Err(e) => tracing::warn!(error = %e, "a worker task failed"),
            Ok(Ok(_)) => {}
        }
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_http_request_without_a_principal_is_refused() {
        let (parts, _) = axum::http::Request::new(()).into_parts();
        for parts in [None, Some(&parts)] {
            let e = caller_of(true, parts, "default").unwrap_err();
            assert_eq!((e.status.as_u16(), e.code), (401, "unauthorized"));
        }
        let mut req = axum::http::Request::new(());
        req.extensions_mut().insert(Principal::Open);
        req.headers_mut()
            .insert(NAMESPACE_HEADER, "crew".parse().unwrap());
        let (parts, _) = req.into_parts();
        let (p, ns) = caller_of(true, Some(&parts), "default").unwrap();
        assert!(matches!(p, Principal::Open));
        assert_eq!(ns, "crew");
        // Over stdio the process's own namespace, as its owner.
        let (p, ns) = caller_of(false, None, "mine").unwrap();
        assert!(matches!(p, Principal::Open));
        assert_eq!(ns, "mine");
    }
}
