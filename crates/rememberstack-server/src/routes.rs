//! The `/v1` routes and the operational endpoints. Every handler is a thin call
//! into the facade; the perimeter has already named the caller.

use crate::AppState;
use crate::auth::{Principal, Scope};
use crate::error::{ApiError, ApiResult};
use axum::Json;
use axum::body::Bytes;
use axum::extract::{Extension, Path, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use rememberstack::defaults;
use rememberstack::{
    ChunkId, ClaimId, Conversation, DocumentId, DocumentQuery, EntityId, ExportSelection, FactId,
    FeedbackInput, IngestOptions, IngestReceipt, IngestRequest, Memory, MergeId, Message,
    NoteInput, ReceiptId, SearchRequest, SectionRole, Timestamp, VersionId, VersioningMode,
    WorkStatus,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

pub(crate) fn router() -> axum::Router<AppState> {
    let ns = axum::Router::new()
        .route("/documents", post(ingest_document).get(list_documents))
        .route("/documents/search", post(search_documents))
        .route(
            "/documents/{id}",
            get(show_document).delete(delete_document),
        )
        .route("/documents/{id}/forget", post(forget_document))
        .route("/conversations", post(ingest_conversation))
        .route(
            "/messages",
            post(append_messages).get(conversation_messages),
        )
        .route("/notes", post(remember_note).get(list_notes))
        .route("/notes/policy", post(note_policy))
        .route("/notes/{version}/promote", post(promote_note))
        .route("/notes/{version}/archive", post(archive_note))
        .route("/notes/{version}/revoke", post(revoke_note))
        .route("/notes/{id}/forget", post(forget_note))
        .route("/operations/{name}", post(run_operation))
        .route("/search", post(search))
        .route("/chunks/{id}/adjacent", get(adjacent_chunks))
        .route("/facts", get(list_facts))
        .route("/facts/{id}/trace", get(trace))
        .route("/facts/{id}/invalidate", post(invalidate_fact))
        .route("/facts/{id}/correct", post(correct_fact))
        .route("/claims/{id}/retract", post(retract_claim))
        .route("/entities", get(list_entities))
        .route("/entities/merge", post(merge_entities))
        .route("/entities/merges/{id}/unmerge", post(unmerge_entities))
        .route("/entities/proposals", get(merge_proposals))
        .route("/entities/proposals/accept", post(accept_merge_proposal))
        .route("/entities/proposals/reject", post(reject_merge_proposal))
        .route("/entities/{name_or_id}", get(show_entity))
        .route("/receipts/{id}", get(resolve_receipt))
        .route("/receipts/{id}/inspect", get(inspect_receipt))
        .route("/feedback", post(feedback).get(list_feedback))
        .route("/export", post(export))
        .route("/status", get(status));
    axum::Router::new()
        .route("/health", get(health))
        .route("/ready", get(ready))
        .route("/metrics", get(metrics))
        .route("/openapi.json", get(openapi))
        .route("/v1/operations", get(operations))
        .route("/v1/namespaces", get(namespaces))
        .nest("/v1/namespaces/{ns}", ns)
}

/// The caller's handle on `ns`, if it may make the call named `call` there (its
/// scope is the operation table's, [`rememberstack::ops`]).
fn memory(state: &AppState, principal: &Principal, ns: &str, call: &str) -> ApiResult<Memory> {
    principal.require(ns, rememberstack::ops::scope(call))?;
    Ok(state.0.memory.with_namespace(ns)?)
}

fn parse_time(field: &str, value: Option<&str>) -> ApiResult<Option<Timestamp>> {
    Ok(value
        .map(|t| rememberstack::time::parse_instant(field, t))
        .transpose()?)
}

fn parse_id<T: std::str::FromStr<Err = rememberstack::Error>>(s: &str) -> ApiResult<T> {
    Ok(s.parse::<T>()?)
}

// ---------------------------------------------------------------- operational

async fn health() -> Json<Value> {
    Json(json!({"status": "ok"}))
}

/// Whether the server can serve: the store answers (one cheap read) and no
/// namespace is closed by a forget that cannot finish. Without a credential while
/// keys exist, the answer is the status code and the count of closed namespaces
/// only; with one, the closed namespaces it may see are named with the command
/// that resumes each. Store errors are never shown (the log has them under the
/// request id).
async fn ready(
    State(state): State<AppState>,
    Extension(request_id): Extension<crate::RequestId>,
    headers: HeaderMap,
) -> Response {
    let memory = &state.0.memory;
    let started = Instant::now();
    let checked = async {
        let namespaces = memory.namespaces().await?.len();
        let pending = memory.pending_forgets().await?;
        Ok::<_, rememberstack::Error>((namespaces, pending))
    }
    .await;
    let store_ms = started.elapsed().as_millis() as u64;
    let authorization = headers
        .get(header::AUTHORIZATION)
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
    let principal =
        crate::auth::authenticate(&state.0.memory, state.0.loopback, authorization.as_deref())
            .await
            .ok()
            .filter(|p| match p {
                // An open server details itself only to a loopback host name (DNS
                // rebinding reads nothing here either).
                Principal::Open => crate::perimeter::host_allowed(
                    headers.get(header::HOST).and_then(|v| v.to_str().ok()),
                    &state.0.config.perimeter.allowed_hosts,
                ),
                Principal::Key(_) => true,
            });
    let not_ready = |message: String, mut body: Value| {
        body["code"] = json!("not_ready");
        body["message"] = json!(message);
        body["request_id"] = json!(request_id.0);
        body["ready"] = json!(false);
        let mut response = (StatusCode::SERVICE_UNAVAILABLE, Json(body)).into_response();
        response.extensions_mut().insert(crate::CompleteErrorBody);
        response.headers_mut().insert(
            header::RETRY_AFTER,
            axum::http::HeaderValue::from_static("5"),
        );
        response
    };
    let (namespaces, pending) = match checked {
        Ok(c) => c,
        Err(e) => {
            tracing::error!(request_id = %request_id.0, error = %e, "readiness: the store failed");
            let checks = json!({"store": {"ok": false, "millis": store_ms}});
            return not_ready(
                format!(
                    "the store is not reachable; the server log has the detail under `{}`",
                    request_id.0
                ),
                if principal.is_some() {
                    json!({"checks": checks})
                } else {
                    json!({})
                },
            );
        }
    };
    let closed = pending.len();
    let Some(principal) = principal else {
        let body = json!({"incomplete_forgets": closed});
        if closed > 0 {
            return not_ready(
                format!("{closed} namespace(s) are closed by an incomplete forget"),
                body,
            );
        }
        let mut body = body;
        body["ready"] = json!(true);
        return Json(body).into_response();
    };
    let visible: Vec<Value> = pending
        .iter()
        .filter(|p| principal.sees(&p.namespace))
        .map(|p| {
            json!({"namespace": p.namespace, "document_id": p.document_id,
                   "started_at": p.started_at,
                   "stopped": if p.last_error.is_some() { "failed" } else { "interrupted" },
                   "resume_with": p.resume_with})
        })
        .collect();
    let checks = json!({
        "store": {"ok": true, "kind": memory.store_kind(), "millis": store_ms, "namespaces": namespaces},
        "migrations": {"ok": true, "detail": "applied when the store opened"},
        "forget_manifests": {"ok": closed == 0, "incomplete_namespaces": closed,
                             "pending": visible},
    });
    if closed > 0 {
        return not_ready(
            format!(
                "{closed} namespace(s) are closed by an incomplete forget (`remember doctor` says why)"
            ),
            json!({"checks": checks}),
        );
    }
    Json(json!({"ready": true, "checks": checks})).into_response()
}

async fn metrics(State(state): State<AppState>) -> Response {
    let mut out = String::new();
    state.0.metrics.render(&mut out);
    if let Ok(counts) = state.0.memory.work_counts().await {
        out.push_str("# HELP rememberstack_ledger_items Work items by stage and status.\n# TYPE rememberstack_ledger_items gauge\n");
        let mut dead = 0;
        for c in &counts {
            if c.status == WorkStatus::DeadLetter {
                dead += c.count;
            }
            out.push_str(&format!(
                "rememberstack_ledger_items{{stage=\"{}\",status=\"{}\"}} {}\n",
                c.stage.as_str(),
                c.status.as_str(),
                c.count
            ));
        }
        out.push_str(&format!(
            "# HELP rememberstack_dead_letters Work items that exhausted their attempts.\n# TYPE rememberstack_dead_letters gauge\nrememberstack_dead_letters {dead}\n"
        ));
    }
    let usage = state.0.memory.provider_usage();
    out.push_str("# HELP rememberstack_provider_calls_total Provider calls by provider, seat, model and outcome.\n# TYPE rememberstack_provider_calls_total counter\n");
    for u in &usage {
        let labels = format!(
            "provider=\"{}\",seat=\"{}\",model=\"{}\"",
            u.provider,
            u.seat,
            crate::metrics::escape(&u.model)
        );
        out.push_str(&format!(
            "rememberstack_provider_calls_total{{{labels},outcome=\"ok\"}} {}\nrememberstack_provider_calls_total{{{labels},outcome=\"error\"}} {}\n",
            u.calls, u.failures
        ));
    }
    out.push_str("# HELP rememberstack_provider_texts_total Texts embedded.\n# TYPE rememberstack_provider_texts_total counter\n");
    for u in usage.iter().filter(|u| u.provider == "embedder") {
        out.push_str(&format!(
            "rememberstack_provider_texts_total{{seat=\"{}\",model=\"{}\"}} {}\n",
            u.seat,
            crate::metrics::escape(&u.model),
            u.texts
        ));
    }
    out.push_str("# HELP rememberstack_provider_tokens_total Chat tokens the providers reported.\n# TYPE rememberstack_provider_tokens_total counter\n");
    for u in usage.iter().filter(|u| u.provider == "chat") {
        let m = crate::metrics::escape(&u.model);
        out.push_str(&format!(
            "rememberstack_provider_tokens_total{{seat=\"{}\",model=\"{m}\",kind=\"prompt\"}} {}\nrememberstack_provider_tokens_total{{seat=\"{}\",model=\"{m}\",kind=\"completion\"}} {}\n",
            u.seat, u.prompt_tokens, u.seat, u.completion_tokens
        ));
    }
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], out).into_response()
}

async fn openapi(State(state): State<AppState>) -> Json<Value> {
    Json(crate::openapi::document(&state.0.memory.operations()))
}

async fn operations(State(state): State<AppState>) -> Json<Value> {
    Json(json!({"operations": state.0.memory.operations()}))
}

async fn namespaces(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
) -> ApiResult<Json<Value>> {
    let all = state.0.memory.namespaces().await?;
    let visible: Vec<Value> = all
        .iter()
        .filter(|n| principal.sees(&n.slug))
        .map(|n| json!({"namespace": n.slug, "created_at": n.created_at}))
        .collect();
    Ok(Json(json!({"namespaces": visible})))
}

// ---------------------------------------------------------------- sources

#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct IngestQuery {
    source_ref: Option<String>,
    kind: Option<String>,
    source_time: Option<String>,
    mode: Option<String>,
    file_name: Option<String>,
    thread_ref: Option<String>,
    wait: Option<bool>,
    wait_secs: Option<u64>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct IngestJson {
    text: String,
    source_ref: String,
    kind: Option<String>,
    source_time: Option<String>,
    mode: Option<String>,
    file_name: Option<String>,
    thread_ref: Option<String>,
}

#[derive(Debug, Serialize)]
struct IngestResponse {
    #[serde(flatten)]
    receipt: IngestReceipt,
    /// `done` when the namespace's pipeline had nothing left when answered,
    /// `pending` otherwise.
    processing: &'static str,
    /// Where to watch the namespace's pipeline.
    status_url: String,
}

fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(|v| {
            let v = v.trim().to_ascii_lowercase();
            v.starts_with("application/json") || v.ends_with("+json")
        })
        .unwrap_or(false)
}

/// The ingest principal a request asserts (D101) in `X-Ingest-Principal-Kind` and
/// `X-Ingest-Principal-Ref`: honoured only from a caller with full `write`
/// authority (otherwise ignored, not refused: nothing forged is recorded either
/// way); from such a caller a malformed one is `422` and nothing is written.
fn ingest_principal(
    headers: &HeaderMap,
    principal: &Principal,
) -> ApiResult<Option<rememberstack::IngestPrincipal>> {
    let kind = headers.get("x-ingest-principal-kind");
    let external_ref = headers.get("x-ingest-principal-ref");
    if (kind.is_none() && external_ref.is_none()) || !principal.holds(Scope::Write) {
        return Ok(None);
    }
    let unprocessable =
        |message: String| ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid_input", message);
    let (Some(kind), Some(external_ref)) = (kind, external_ref) else {
        return Err(unprocessable(
            "send both X-Ingest-Principal-Kind and X-Ingest-Principal-Ref".into(),
        ));
    };
    let kind = kind
        .to_str()
        .ok()
        .and_then(|k| rememberstack::PrincipalKind::parse(k).ok())
        .ok_or_else(|| {
            unprocessable("X-Ingest-Principal-Kind is user, api_credential or service".into())
        })?;
    let external_ref = std::str::from_utf8(external_ref.as_bytes())
        .map_err(|_| unprocessable("X-Ingest-Principal-Ref is printable ASCII".into()))?;
    rememberstack::IngestPrincipal::new(kind, external_ref)
        .map(Some)
        .map_err(|e| unprocessable(e.to_string()))
}

fn parse_mode(mode: Option<&str>) -> ApiResult<Option<VersioningMode>> {
    Ok(mode.map(VersioningMode::parse).transpose()?)
}

async fn ingest_document(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    Path(ns): Path<String>,
    Query(q): Query<IngestQuery>,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult<Response> {
    let m = memory(&state, &principal, &ns, "ingest_text")?;
    let attributed = ingest_principal(&headers, &principal)?;
    let mut req = if is_json(&headers) {
        let j: IngestJson = serde_json::from_slice(&body)
            .map_err(|e| ApiError::invalid(format!("ingest body: {e}")))?;
        if q.source_ref.is_some() || q.kind.is_some() || q.source_time.is_some() {
            return Err(ApiError::invalid(
                "a JSON ingest carries its fields in the body, not the query string",
            ));
        }
        let o = IngestOptions::from_fields(
            None,
            j.kind.as_deref(),
            j.source_time.as_deref(),
            j.mode.as_deref(),
            j.thread_ref,
        )?;
        let mut r = IngestRequest::new(&ns, "text", j.source_ref, j.text.into_bytes());
        r.kind = o.text_kind();
        r.source_time = o.source_time;
        r.mode = o.mode;
        r.file_name = j.file_name;
        r.thread_ref = o.thread_ref;
        r
    } else {
        let source_ref = q.source_ref.clone().ok_or_else(|| {
            ApiError::invalid(
                "raw ingest needs `?source_ref=` naming the lineage (or send JSON {text, source_ref})",
            )
        })?;
        let o = IngestOptions::from_fields(
            None,
            q.kind.as_deref(),
            q.source_time.as_deref(),
            q.mode.as_deref(),
            q.thread_ref.clone(),
        )?;
        let mut r = IngestRequest::new(&ns, "file", source_ref, body.to_vec());
        r.kind = o.kind;
        r.source_time = o.source_time;
        r.mode = o.mode;
        r.file_name = q.file_name.clone();
        r.thread_ref = o.thread_ref;
        r
    };
    req.namespace = ns.clone();
    req.principal = attributed;
    let receipt = m.ingest(req).await?;
    respond_ingest(&state, &m, receipt, q.wait, q.wait_secs).await
}

async fn respond_ingest(
    state: &AppState,
    m: &Memory,
    receipt: IngestReceipt,
    wait: Option<bool>,
    wait_secs: Option<u64>,
) -> ApiResult<Response> {
    let done = if wait.unwrap_or(false) {
        let bound = wait_secs
            .map(Duration::from_secs)
            .unwrap_or(state.0.config.max_wait)
            .min(state.0.config.max_wait);
        wait_idle(m, bound).await?
    } else {
        false
    };
    let status_url = format!("/v1/namespaces/{}/status", m.namespace());
    let status = if done {
        StatusCode::OK
    } else {
        StatusCode::ACCEPTED
    };
    let mut response = (
        status,
        Json(IngestResponse {
            receipt,
            processing: if done { "done" } else { "pending" },
            status_url: status_url.clone(),
        }),
    )
        .into_response();
    if let Ok(v) = header::HeaderValue::from_str(&status_url) {
        response.headers_mut().insert(header::LOCATION, v);
    }
    Ok(response)
}

/// Wait until the namespace's ledger has nothing pending, running or awaiting a
/// retry, or `bound` passes. True when it drained.
pub(crate) async fn wait_idle(m: &Memory, bound: Duration) -> ApiResult<bool> {
    let deadline = Instant::now() + bound;
    loop {
        if m.status().await?.open_work() == 0 {
            return Ok(true);
        }
        if Instant::now() >= deadline {
            return Ok(false);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct WaitQuery {
    wait: Option<bool>,
    wait_secs: Option<u64>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ConversationBody {
    source_ref: String,
    /// Read by `calls::conversation`, as every surface reads a conversation.
    #[schemars(with = "Conversation")]
    conversation: Value,
    source_time: Option<String>,
    mode: Option<String>,
}

async fn ingest_conversation(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    Path(ns): Path<String>,
    Query(q): Query<WaitQuery>,
    headers: HeaderMap,
    Json(body): Json<ConversationBody>,
) -> ApiResult<Response> {
    let m = memory(&state, &principal, &ns, "ingest_conversation")?;
    let mut options = IngestOptions::new(body.source_ref);
    options.principal = ingest_principal(&headers, &principal)?;
    options.source_time = parse_time("source_time", body.source_time.as_deref())?;
    options.mode = parse_mode(body.mode.as_deref())?;
    let conversation = rememberstack::calls::conversation(body.conversation)?;
    let receipt = m.ingest_conversation(&conversation, options).await?;
    respond_ingest(&state, &m, receipt, q.wait, q.wait_secs).await
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct AppendBody {
    conversation_ref: String,
    /// Read by `calls::messages`, as every surface reads messages.
    #[schemars(with = "Vec<Message>")]
    messages: Value,
    source_time: Option<String>,
}

async fn append_messages(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    Path(ns): Path<String>,
    Json(body): Json<AppendBody>,
) -> ApiResult<Json<Value>> {
    let m = memory(&state, &principal, &ns, "append_messages")?;
    let messages = rememberstack::calls::messages(body.messages)?;
    let receipt = match parse_time("source_time", body.source_time.as_deref())? {
        Some(t) => {
            m.append_messages_at(&body.conversation_ref, messages, t)
                .await?
        }
        None => m.append_messages(&body.conversation_ref, messages).await?,
    };
    Ok(Json(serde_json::to_value(receipt).map_err(internal)?))
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ConversationQuery {
    /// The conversation's reference, as it was ingested or appended under.
    conversation_ref: String,
}

async fn conversation_messages(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    Path(ns): Path<String>,
    Query(q): Query<ConversationQuery>,
) -> ApiResult<Json<Value>> {
    let m = memory(&state, &principal, &ns, "conversation_messages")?;
    let messages = m.conversation_messages(&q.conversation_ref).await?;
    Ok(Json(serde_json::to_value(messages).map_err(internal)?))
}

async fn list_documents(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    Path(ns): Path<String>,
) -> ApiResult<Json<Value>> {
    let m = memory(&state, &principal, &ns, "documents")?;
    Ok(Json(json!({"documents": m.documents().await?})))
}

async fn show_document(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    Path((ns, id)): Path<(String, String)>,
) -> ApiResult<Json<Value>> {
    let m = memory(&state, &principal, &ns, "document")?;
    let detail = m.document(parse_id::<DocumentId>(&id)?).await?;
    Ok(Json(serde_json::to_value(detail).map_err(internal)?))
}

async fn delete_document(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    Path((ns, id)): Path<(String, String)>,
) -> ApiResult<Json<Value>> {
    let m = memory(&state, &principal, &ns, "delete_document")?;
    let deletion = m.delete_document(parse_id::<DocumentId>(&id)?).await?;
    Ok(Json(serde_json::to_value(deletion).map_err(internal)?))
}

async fn forget_document(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    Path((ns, id)): Path<(String, String)>,
) -> ApiResult<Json<Value>> {
    let m = memory(&state, &principal, &ns, "forget_document")?;
    let report = m.forget_document(parse_id::<DocumentId>(&id)?).await?;
    Ok(Json(serde_json::to_value(report).map_err(internal)?))
}

async fn search_documents(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    Path(ns): Path<String>,
    Json(query): Json<DocumentQuery>,
) -> ApiResult<Json<Value>> {
    let m = memory(&state, &principal, &ns, "search_documents")?;
    Ok(Json(
        serde_json::to_value(m.search_documents(query).await?).map_err(internal)?,
    ))
}

// ---------------------------------------------------------------- notes

async fn remember_note(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    Path(ns): Path<String>,
    Json(input): Json<NoteInput>,
) -> ApiResult<Response> {
    let m = memory(&state, &principal, &ns, "remember_note")?;
    let note = m.remember_note(input).await?;
    Ok((StatusCode::CREATED, Json(note)).into_response())
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct PageQuery {
    cursor: Option<String>,
    limit: Option<u32>,
}

async fn list_notes(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    Path(ns): Path<String>,
    Query(q): Query<PageQuery>,
) -> ApiResult<Json<Value>> {
    let m = memory(&state, &principal, &ns, "list_notes")?;
    let page = m
        .list_notes(q.cursor.as_deref(), q.limit.unwrap_or(defaults::NOTES_PAGE))
        .await?;
    Ok(Json(serde_json::to_value(page).map_err(internal)?))
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct PolicyBody {
    start_as: String,
}

async fn note_policy(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    Path(ns): Path<String>,
    Json(body): Json<PolicyBody>,
) -> ApiResult<Json<Value>> {
    let m = memory(&state, &principal, &ns, "set_note_policy")?;
    let start_as = rememberstack::Admission::parse(&body.start_as)?;
    m.set_note_policy(start_as).await?;
    Ok(Json(json!({"start_as": start_as.as_str()})))
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Transition {
    expected_version: u32,
}

async fn promote_note(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    Path((ns, version)): Path<(String, String)>,
    Json(t): Json<Transition>,
) -> ApiResult<Json<Value>> {
    let m = memory(&state, &principal, &ns, "promote_note")?;
    let note = m
        .promote_note(parse_id::<VersionId>(&version)?, t.expected_version)
        .await?;
    Ok(Json(serde_json::to_value(note).map_err(internal)?))
}

async fn archive_note(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    Path((ns, version)): Path<(String, String)>,
    Json(t): Json<Transition>,
) -> ApiResult<Json<Value>> {
    let m = memory(&state, &principal, &ns, "archive_note")?;
    let note = m
        .archive_note(parse_id::<VersionId>(&version)?, t.expected_version)
        .await?;
    Ok(Json(serde_json::to_value(note).map_err(internal)?))
}

async fn revoke_note(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    Path((ns, version)): Path<(String, String)>,
    Json(t): Json<Transition>,
) -> ApiResult<Json<Value>> {
    let m = memory(&state, &principal, &ns, "revoke_note")?;
    let note = m
        .revoke_note(parse_id::<VersionId>(&version)?, t.expected_version)
        .await?;
    Ok(Json(serde_json::to_value(note).map_err(internal)?))
}

async fn forget_note(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    Path((ns, id)): Path<(String, String)>,
) -> ApiResult<Json<Value>> {
    let m = memory(&state, &principal, &ns, "forget_note")?;
    let report = m.forget_note(parse_id::<DocumentId>(&id)?).await?;
    Ok(Json(serde_json::to_value(report).map_err(internal)?))
}

// ---------------------------------------------------------------- reads

async fn run_operation(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    Path((ns, name)): Path<(String, String)>,
    Json(input): Json<Value>,
) -> ApiResult<Json<Value>> {
    let m = memory(&state, &principal, &ns, "run_operation")?;
    Ok(Json(m.run_operation(&name, input).await?))
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct SearchBody {
    query: String,
    #[serde(default)]
    k: Option<usize>,
    /// `chunks` (default), `claims` or `facts`.
    #[serde(default)]
    grain: Option<String>,
    #[serde(default)]
    roles: Option<Vec<String>>,
    #[serde(default)]
    cursor: Option<String>,
    #[serde(default)]
    include_retired: bool,
    #[serde(default)]
    entities: Vec<EntityId>,
    /// Chunks: an exact vector scan even where the store has an approximate index.
    #[serde(default)]
    exact: bool,
}

async fn search(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    Path(ns): Path<String>,
    Json(body): Json<SearchBody>,
) -> ApiResult<Json<Value>> {
    let m = memory(&state, &principal, &ns, "search")?;
    let mut req = SearchRequest::new(&ns, body.query, body.k.unwrap_or(defaults::SEARCH_K));
    req.cursor = body.cursor;
    req.include_retired = body.include_retired;
    req.entities = body.entities;
    req.exact = body.exact;
    if let Some(roles) = body.roles {
        rememberstack::limits::check_list_len("roles", roles.len())?;
        let mut parsed = Vec::with_capacity(roles.len());
        for r in roles {
            parsed.push(
                SectionRole::parse(&r)
                    .ok_or_else(|| ApiError::invalid(format!("unknown section role `{r}`")))?,
            );
        }
        req.roles = Some(parsed);
    }
    let value = match body.grain.as_deref().unwrap_or("chunks") {
        "chunks" => serde_json::to_value(m.search_with(req).await?),
        "claims" => serde_json::to_value(m.search_claims_with(req).await?),
        "facts" => serde_json::to_value(m.search_facts_with(req).await?),
        other => {
            return Err(ApiError::invalid(format!(
                "unknown grain `{other}` (chunks, claims or facts)"
            )));
        }
    };
    Ok(Json(value.map_err(internal)?))
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct WindowQuery {
    window: Option<usize>,
}

async fn adjacent_chunks(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    Path((ns, id)): Path<(String, String)>,
    Query(q): Query<WindowQuery>,
) -> ApiResult<Json<Value>> {
    let m = memory(&state, &principal, &ns, "adjacent_chunks")?;
    let env = m
        .adjacent_chunks(
            parse_id::<ChunkId>(&id)?,
            q.window.unwrap_or(defaults::ADJACENT_WINDOW),
        )
        .await?;
    Ok(Json(serde_json::to_value(env).map_err(internal)?))
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct FactsQuery {
    /// Only facts of this entity (merges are followed).
    entity: Option<String>,
    /// Facts holding at this instant (RFC 3339).
    at: Option<String>,
    /// Every fact, closed and superseded ones included.
    history: Option<bool>,
    /// At most this many a page (default 100, at most 1,000).
    limit: Option<u32>,
    /// The previous page's cursor, with the same query.
    cursor: Option<String>,
}

async fn list_facts(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    Path(ns): Path<String>,
    Query(q): Query<FactsQuery>,
) -> ApiResult<Json<Value>> {
    let m = memory(&state, &principal, &ns, "facts")?;
    let query = rememberstack::FactQuery {
        entity: q.entity.as_deref().map(parse_id::<EntityId>).transpose()?,
        at: parse_time("at", q.at.as_deref())?,
        history: q.history.unwrap_or(false),
        limit: q.limit.unwrap_or(defaults::FACTS_PAGE),
    };
    let page = m.facts_page(&query, q.cursor.as_deref()).await?;
    Ok(Json(serde_json::to_value(page).map_err(internal)?))
}

async fn trace(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    Path((ns, id)): Path<(String, String)>,
) -> ApiResult<Json<Value>> {
    let m = memory(&state, &principal, &ns, "trace")?;
    let t = m.trace(parse_id::<FactId>(&id)?).await?;
    Ok(Json(serde_json::to_value(t).map_err(internal)?))
}

async fn resolve_receipt(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    Path((ns, id)): Path<(String, String)>,
) -> ApiResult<Json<Value>> {
    let m = memory(&state, &principal, &ns, "resolve_receipt")?;
    let r = m.resolve_receipt(parse_id::<ReceiptId>(&id)?).await?;
    Ok(Json(serde_json::to_value(r).map_err(internal)?))
}

async fn inspect_receipt(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    Path((ns, id)): Path<(String, String)>,
) -> ApiResult<Json<Value>> {
    let m = memory(&state, &principal, &ns, "inspect_receipt")?;
    let r = m.inspect_receipt(parse_id::<ReceiptId>(&id)?).await?;
    Ok(Json(serde_json::to_value(r).map_err(internal)?))
}

async fn feedback(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    Path(ns): Path<String>,
    Json(input): Json<FeedbackInput>,
) -> ApiResult<Response> {
    let m = memory(&state, &principal, &ns, "feedback")?;
    let record = m.feedback(input).await?;
    Ok((StatusCode::CREATED, Json(record)).into_response())
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct FeedbackQuery {
    receipt: Option<String>,
    limit: Option<u32>,
}

async fn list_feedback(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    Path(ns): Path<String>,
    Query(q): Query<FeedbackQuery>,
) -> ApiResult<Json<Value>> {
    let m = memory(&state, &principal, &ns, "list_feedback")?;
    let receipt = q
        .receipt
        .as_deref()
        .map(parse_id::<ReceiptId>)
        .transpose()?;
    let records = m
        .list_feedback(receipt, q.limit.unwrap_or(defaults::FEEDBACK_PAGE))
        .await?;
    Ok(Json(json!({"feedback": records})))
}

async fn export(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    Path(ns): Path<String>,
    Json(selection): Json<ExportSelection>,
) -> ApiResult<Json<Value>> {
    let m = memory(&state, &principal, &ns, "export")?;
    Ok(Json(m.export_pack(&selection).await?))
}

async fn status(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    Path(ns): Path<String>,
) -> ApiResult<Json<Value>> {
    let m = memory(&state, &principal, &ns, "status")?;
    Ok(Json(
        serde_json::to_value(m.status().await?).map_err(internal)?,
    ))
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct EntitiesQuery {
    include_merged: Option<bool>,
    limit: Option<u32>,
}

async fn list_entities(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    Path(ns): Path<String>,
    Query(q): Query<EntitiesQuery>,
) -> ApiResult<Json<Value>> {
    let m = memory(&state, &principal, &ns, "entities")?;
    let list = m
        .entities(
            q.include_merged.unwrap_or(false),
            q.limit.unwrap_or(defaults::ENTITIES_PAGE),
        )
        .await?;
    Ok(Json(json!({"entities": list})))
}

async fn show_entity(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    Path((ns, name_or_id)): Path<(String, String)>,
) -> ApiResult<Json<Value>> {
    let m = memory(&state, &principal, &ns, "entity")?;
    Ok(Json(
        serde_json::to_value(m.entity(&name_or_id).await?).map_err(internal)?,
    ))
}

// ---------------------------------------------------------------- facts admin

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct MergeBody {
    from: EntityId,
    into: EntityId,
}

async fn merge_entities(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    Path(ns): Path<String>,
    Json(body): Json<MergeBody>,
) -> ApiResult<Json<Value>> {
    let m = memory(&state, &principal, &ns, "merge_entities")?;
    let event = m.merge_entities(body.from, body.into).await?;
    Ok(Json(serde_json::to_value(event).map_err(internal)?))
}

async fn merge_proposals(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    Path(ns): Path<String>,
) -> ApiResult<Json<Value>> {
    let m = memory(&state, &principal, &ns, "merge_proposals")?;
    Ok(Json(json!({"proposals": m.merge_proposals().await?})))
}

async fn accept_merge_proposal(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    Path(ns): Path<String>,
    Json(body): Json<MergeBody>,
) -> ApiResult<Json<Value>> {
    let m = memory(&state, &principal, &ns, "accept_merge_proposal")?;
    let event = m.accept_merge_proposal(body.from, body.into).await?;
    Ok(Json(serde_json::to_value(event).map_err(internal)?))
}

async fn reject_merge_proposal(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    Path(ns): Path<String>,
    Json(body): Json<MergeBody>,
) -> ApiResult<Json<Value>> {
    let m = memory(&state, &principal, &ns, "reject_merge_proposal")?;
    let p = m.reject_merge_proposal(body.from, body.into).await?;
    Ok(Json(serde_json::to_value(p).map_err(internal)?))
}

async fn unmerge_entities(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    Path((ns, id)): Path<(String, String)>,
) -> ApiResult<Json<Value>> {
    let m = memory(&state, &principal, &ns, "unmerge_entities")?;
    let event = m.unmerge_entities(parse_id::<MergeId>(&id)?).await?;
    Ok(Json(serde_json::to_value(event).map_err(internal)?))
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ReasonBody {
    reason: String,
    request_id: Option<String>,
}

async fn retract_claim(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    Path((ns, id)): Path<(String, String)>,
    Json(body): Json<ReasonBody>,
) -> ApiResult<Json<Value>> {
    let m = memory(&state, &principal, &ns, "retract_claim")?;
    let r = m
        .retract_claim(
            parse_id::<ClaimId>(&id)?,
            &body.reason,
            body.request_id.as_deref(),
        )
        .await?;
    Ok(Json(serde_json::to_value(r).map_err(internal)?))
}

async fn invalidate_fact(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    Path((ns, id)): Path<(String, String)>,
    Json(body): Json<ReasonBody>,
) -> ApiResult<Json<Value>> {
    let m = memory(&state, &principal, &ns, "invalidate_fact")?;
    let r = m
        .invalidate_fact(
            parse_id::<FactId>(&id)?,
            &body.reason,
            body.request_id.as_deref(),
        )
        .await?;
    Ok(Json(serde_json::to_value(r).map_err(internal)?))
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct CorrectBody {
    statement: String,
    reason: String,
    request_id: Option<String>,
}

async fn correct_fact(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    Path((ns, id)): Path<(String, String)>,
    Json(body): Json<CorrectBody>,
) -> ApiResult<Json<Value>> {
    let m = memory(&state, &principal, &ns, "correct_fact")?;
    let r = m
        .correct_fact(
            parse_id::<FactId>(&id)?,
            &body.statement,
            &body.reason,
            body.request_id.as_deref(),
        )
        .await?;
    Ok(Json(serde_json::to_value(r).map_err(internal)?))
}

fn internal(e: serde_json::Error) -> ApiError {
    ApiError::from(rememberstack::Error::internal(format!(
        "serializing a response: {e}"
    )))
}
