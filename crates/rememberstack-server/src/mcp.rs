//! MCP (Model Context Protocol) over the official Rust SDK (rmcp): one tool
//! catalogue — the operation registry's four assured operations plus the write and
//! primitive tools (D136/D137) — served over stdio by `remember mcp` and over
//! Streamable HTTP at `/mcp` behind the server's perimeter.

use crate::auth::{Principal, Scope};
use crate::error::ApiError;
use rememberstack::{Memory, ops};
use rmcp::ErrorData;
use rmcp::handler::server::ServerHandler;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, Implementation, JsonObject,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
    ToolAnnotations,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
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
    /// The JSON call it runs ([`rememberstack::calls::call`]); `None` for the
    /// registry's operations, run by name through `run_operation`.
    pub call: Option<&'static str>,
}

/// The whole catalogue: the registry's operations first, then the operation
/// table's tools ([`rememberstack::ops::OPERATIONS`]), reads before writes.
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
            call: None,
        })
        .collect();
    let own = |o: &&'static ops::Operation| match o.mcp {
        Some(ops::Tool::Own {
            name,
            description,
            input_schema,
        }) => Some(ToolSpec {
            name: name.into(),
            description: description.into(),
            input_schema: input_schema(),
            read_only: o.read_only(),
            scope: o.scope,
            call: Some(o.name),
        }),
        _ => None,
    };
    let (reads, writes): (Vec<_>, Vec<_>) = ops::OPERATIONS.iter().partition(|o| o.read_only());
    tools.extend(reads.iter().filter_map(own));
    tools.extend(writes.iter().filter_map(own));
    tools
}

/// The MCP service over one engine.
#[derive(Clone)]
pub struct McpServer {
    memory: Memory,
    read_only: bool,
    tools: Arc<Vec<ToolSpec>>,
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
        Self {
            memory,
            read_only,
            tools,
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

    /// Run a tool: a registry operation by name, any other tool through the
    /// JSON call layer the bindings use, so its input is read (and refused) as
    /// theirs is.
    async fn run(&self, spec: &ToolSpec, mut args: Value, m: &Memory) -> Result<Value, ApiError> {
        let Some(call) = spec.call else {
            return Ok(m.run_operation(&spec.name, args).await?);
        };
        // `ingest` alone may wait (bounded) for its processing.
        let wait = match args.as_object_mut().and_then(|a| a.remove("wait")) {
            None | Some(Value::Null) => false,
            Some(Value::Bool(wait)) if call == "ingest_text" => wait,
            Some(_) => {
                return Err(ApiError::new(
                    axum::http::StatusCode::BAD_REQUEST,
                    "invalid_input",
                    format!("{}: `wait` is a boolean of the ingest tool", spec.name),
                ));
            }
        };
        let out = rememberstack::calls::call(m, call, args).await?;
        let mut v: Value = serde_json::from_str(&out)
            .map_err(|e| ApiError::from(rememberstack::Error::internal(e.to_string())))?;
        if call == "ingest_text" {
            let done = wait && crate::routes::wait_idle(m, self.max_wait).await?;
            v["processing"] = json!(if done { "done" } else { "pending" });
        }
        Ok(v)
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
        let Some(spec) = self.tools.iter().find(|t| t.name == name).cloned() else {
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
            None => self.run(&spec, args, &memory).await,
            Some(state) => {
                let timeout = state.0.config.request_timeout;
                let _permit = match state.0.limiter.hold(&principal.limit_key(), timeout).await {
                    Ok(p) => p,
                    Err(e) => return Ok(tool_error(&e).into()),
                };
                match tokio::time::timeout(timeout, self.run(&spec, args, &memory)).await {
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
