//! MCP (Model Context Protocol) over the official Rust SDK (rmcp): one tool
//! catalogue — the operation registry's four assured operations plus the write and
//! primitive tools (D136/D137) — served over stdio by `remember mcp` and over
//! Streamable HTTP at `/mcp` behind the server's perimeter.

use crate::auth::{Principal, Scope};
use crate::error::ApiError;
use rememberstack::{
    ChunkId, DeclaredKind, DocumentId, DocumentQuery, FactId, IngestRequest, Memory, Message,
    NoteInput, VersioningMode,
};
use rmcp::ErrorData;
use rmcp::handler::server::ServerHandler;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, Implementation, JsonObject,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
    ToolAnnotations,
};
use rmcp::service::{RequestContext, RoleServer};
use serde::Deserialize;
use serde_json::{Value, json};
use std::sync::Arc;
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
        }
    }

    /// The caller and namespace of a request: over HTTP, the perimeter's principal
    /// and the namespace header; over stdio, this process's own.
    fn caller(&self, ctx: &RequestContext<RoleServer>) -> (Principal, String) {
        let Some(parts) = ctx.extensions.get::<axum::http::request::Parts>() else {
            return (Principal::Open, self.memory.namespace().to_string());
        };
        let principal = parts
            .extensions
            .get::<Principal>()
            .cloned()
            .unwrap_or(Principal::Open);
        let header = parts
            .headers
            .get(NAMESPACE_HEADER)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let ns = header.unwrap_or_else(|| match &principal {
            Principal::Key(k) if k.namespaces.len() == 1 => k.namespaces[0].clone(),
            _ => "default".to_string(),
        });
        (principal, ns)
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
                    m.adjacent_chunks(chunk, a.window.unwrap_or(1)).await?,
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
                let mut req =
                    IngestRequest::new(m.namespace(), "text", a.source_ref, a.text.into_bytes());
                req.kind = match a.kind.as_deref() {
                    None => DeclaredKind::Format(rememberstack::SourceFormat::Markdown),
                    Some(k) => DeclaredKind::parse(k)?,
                };
                req.source_time = match a.source_time.as_deref() {
                    None => None,
                    Some(t) => Some(rememberstack::time::parse_instant("source_time", t)?),
                };
                req.mode = a.mode.as_deref().map(VersioningMode::parse).transpose()?;
                let receipt = m.ingest(req).await?;
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
            other => Err(ApiError::new(
                axum::http::StatusCode::NOT_FOUND,
                "not_found",
                format!("no tool named `{other}`"),
            )),
        }
    }
}

fn parse<T: for<'de> Deserialize<'de>>(args: Value) -> Result<T, ApiError> {
    serde_json::from_value(args).map_err(|e| {
        ApiError::new(
            axum::http::StatusCode::BAD_REQUEST,
            "invalid_parameter",
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

fn tool_error(e: &ApiError) -> CallToolResult {
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
        let (principal, _) = self.caller(&ctx);
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
        let (principal, ns) = self.caller(&ctx);
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
        let result = self.run(&name, args, &memory).await;
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
