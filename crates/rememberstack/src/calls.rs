//! The facade as JSON calls, shared by the language bindings (Python and Node): a
//! method name and its JSON input (snake_case fields; the Python layer passes its
//! keyword arguments, the JavaScript wrapper its camelCase options converted) in,
//! the JSON the facade's result serializes to out — the same JSON the CLI prints
//! with `--json` and the HTTP API returns. Listings are wrapped as the CLI and HTTP
//! wrap them (`{"documents": [...]}`). Every input is parsed strictly (unknown
//! fields, wrong types and malformed ids are `invalid_input`; an operation's own
//! input, as the registry refuses it, `invalid_parameter`) before the facade is
//! called, so bad input changes nothing. One layer for every binding keeps them
//! thin and identical.

use crate::{
    ChunkId, ClaimId, ClaimsAndSourcesInput, CombinedContextInput, Config, Conversation,
    DocumentFilter, DocumentId, DocumentQuery, EntityId, Error, ErrorCode, ExportSelection, FactId,
    FactQuery, FactsContextInput, FeedbackInput, IngestOptions, Memory, MergeId,
    NeighborhoodRequest, NoteInput, ReceiptId, RecordRef, ResolveEntityInput, Result,
    SearchRequest, SectionRole, Timestamp, VersionId,
};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use std::path::PathBuf;

/// Every method [`call`] answers: the names of the operation table
/// ([`crate::ops::OPERATIONS`]), in its order.
pub fn methods() -> Vec<&'static str> {
    crate::ops::names().collect()
}

/// Parse `input` as `T`, naming the method in the error.
fn parse<T: DeserializeOwned>(method: &str, input: Value) -> Result<T> {
    // An omitted options object arrives as `null`: read it as no fields.
    let input = if input.is_null() { json!({}) } else { input };
    serde_json::from_value(input).map_err(|e| Error::invalid_input(format!("{method}: {e}")))
}

/// Parse the input of one of the registry's operations: refused as
/// `invalid_parameter`, as the registry (`run_operation`) refuses it.
fn parse_operation<T: DeserializeOwned>(name: &str, input: Value) -> Result<T> {
    let input = if input.is_null() { json!({}) } else { input };
    serde_json::from_value(input)
        .map_err(|e| Error::new(ErrorCode::InvalidParameter, format!("{name}: {e}")))
}

fn to_json(value: &impl serde::Serialize) -> Result<String> {
    serde_json::to_string(value).map_err(|e| Error::internal(format!("serializing a result: {e}")))
}

fn parse_time(field: &str, value: Option<&str>) -> Result<Option<Timestamp>> {
    value
        .map(|t| crate::time::parse_instant(field, t))
        .transpose()
}

fn parse_id<T: std::str::FromStr<Err = Error>>(s: &str) -> Result<T> {
    s.parse::<T>()
}

/// What opening a memory takes.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OpenInput {
    /// The database path or PostgreSQL URL (default: `REMEMBERSTACK_DB`, else the
    /// user's data directory).
    pub path: Option<String>,
    /// The handle's namespace (default `default`).
    pub namespace: Option<String>,
    /// The configuration file (default: `REMEMBERSTACK_CONFIG`); the
    /// `REMEMBERSTACK_*` variables apply on top of it, as in the CLI.
    pub config_file: Option<String>,
    /// Overrides on top of that, in the file's shape, section by section:
    /// `embedder` and `chat` replace the section whole, other sections are merged
    /// key by key. A string is read as `config_file`.
    pub config: Option<Value>,
    /// Only a PostgreSQL URL is accepted (`Memory.connect`).
    #[serde(default)]
    pub require_postgres: bool,
}

fn is_postgres(s: &str) -> bool {
    s.starts_with("postgres://") || s.starts_with("postgresql://")
}

/// The configuration an open asks for: the CLI's (`file`, else
/// `REMEMBERSTACK_CONFIG`, then the `REMEMBERSTACK_*` variables), then `overlay`
/// section by section (`embedder` and `chat` whole, as they are tagged by
/// `provider`; other sections key by key).
pub fn load_config(file: Option<&str>, overlay: Option<Value>) -> Result<Config> {
    let config = Config::load(file.map(std::path::Path::new))?;
    let sections = match overlay {
        None | Some(Value::Null) => return Ok(config),
        Some(Value::Object(sections)) => sections,
        Some(other) => {
            return Err(Error::new(
                ErrorCode::Config,
                format!(
                    "the configuration must be an object of sections (engine, embedder, chat, store), not {other}"
                ),
            ));
        }
    };
    let config_err = |m: String| Error::new(ErrorCode::Config, m);
    let mut merged = serde_json::to_value(&config)
        .map_err(|e| Error::internal(format!("configuration: {e}")))?;
    for (section, value) in sections {
        if value.is_null() {
            continue;
        }
        match (&mut merged[&section], value) {
            (Value::Object(base), Value::Object(over))
                if section != "embedder" && section != "chat" =>
            {
                merge(base, over)
            }
            (slot, value) => *slot = value,
        }
    }
    let config: Config = serde_json::from_value(merged)
        .map_err(|e| config_err(format!("invalid configuration: {e}")))?;
    if config.engine.lease.is_zero() {
        return Err(config_err(
            "invalid configuration: [engine] lease must be a positive number of seconds".into(),
        ));
    }
    Ok(config)
}

fn merge(base: &mut serde_json::Map<String, Value>, over: serde_json::Map<String, Value>) {
    for (k, v) in over {
        match (base.get_mut(&k), v) {
            (Some(Value::Object(b)), Value::Object(o)) => merge(b, o),
            (_, v) => {
                base.insert(k, v);
            }
        }
    }
}

/// Open (or connect) a memory.
pub async fn open(input: Value) -> Result<Memory> {
    let input: OpenInput = parse("open", input)?;
    let path = match input.path {
        Some(p) if p.trim().is_empty() => {
            return Err(Error::invalid_input("the database path is empty"));
        }
        Some(p) => PathBuf::from(p),
        None => match std::env::var_os("REMEMBERSTACK_DB").filter(|v| !v.is_empty()) {
            Some(p) => PathBuf::from(p),
            None => crate::default_db_path()?,
        },
    };
    if input.require_postgres && !path.to_str().is_some_and(is_postgres) {
        return Err(Error::new(
            ErrorCode::Config,
            format!(
                "`{}` is not a PostgreSQL URL (postgres://user@host:port/database)",
                path.display()
            ),
        ));
    }
    let (file, overlay) = match input.config {
        Some(Value::String(path)) if input.config_file.is_none() => (Some(path), None),
        Some(Value::String(_)) => {
            return Err(Error::invalid_input(
                "give the configuration file as `config_file` or `config`, not both",
            ));
        }
        other => (input.config_file, other),
    };
    let config = load_config(file.as_deref(), overlay)?;
    let mut builder = Memory::builder().path(path).config(config);
    if let Some(ns) = input.namespace {
        builder = builder.namespace(ns);
    }
    builder.open().await
}

/// The ingest options every ingest takes, as fields of its input (serde's
/// `flatten` cannot be combined with `deny_unknown_fields`, hence the macro).
macro_rules! ingest_input {
    ($name:ident { $($field:ident: $ty:ty),* }) => {
        #[derive(Debug, Deserialize)]
        #[serde(deny_unknown_fields)]
        struct $name {
            $($field: $ty,)*
            source_ref: Option<String>,
            kind: Option<String>,
            source_time: Option<String>,
            mode: Option<String>,
            thread_ref: Option<String>,
        }

        impl $name {
            fn options(&self) -> Result<IngestOptions> {
                IngestOptions::from_fields(
                    self.source_ref.clone(),
                    self.kind.as_deref(),
                    self.source_time.as_deref(),
                    self.mode.as_deref(),
                    self.thread_ref.clone(),
                )
            }
        }
    };
}

ingest_input!(IngestFileInput { path: String });
ingest_input!(IngestTextInput { text: String });
ingest_input!(IngestConversationInput {
    conversation: Value
});

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ConversationRefInput {
    conversation_ref: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct AppendInput {
    conversation_ref: String,
    messages: Value,
    source_time: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TransitionInput {
    version_id: String,
    expected_version: u32,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PageInput {
    cursor: Option<String>,
    limit: Option<u32>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PolicyInput {
    start_as: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SearchInput {
    query: String,
    k: Option<usize>,
    /// `chunks` (default), `claims` or `facts`.
    grain: Option<String>,
    roles: Option<Vec<String>>,
    cursor: Option<String>,
    #[serde(default)]
    include_retired: bool,
    #[serde(default)]
    entities: Vec<String>,
    #[serde(default)]
    exact: bool,
    documents: Option<DocumentFilter>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct OperationInput {
    name: String,
    #[serde(default)]
    input: Value,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ChunkInput {
    chunk_id: String,
    window: Option<usize>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FactIdInput {
    fact_id: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ReceiptInput {
    receipt_id: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct DocumentInput {
    document_id: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct NoteIdInput {
    note_id: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FeedbackListInput {
    receipt_id: Option<String>,
    limit: Option<u32>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct EntitiesInput {
    #[serde(default)]
    include_merged: bool,
    limit: Option<u32>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct EntityInput {
    name_or_id: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ReasonInput {
    id: String,
    reason: String,
    request_id: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CorrectInput {
    fact_id: String,
    statement: String,
    reason: String,
    request_id: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct MergeInput {
    from: String,
    into: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct MergeIdInput {
    merge_id: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct NoInput {}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ClaimsInput {
    document_id: Option<String>,
    #[serde(default)]
    include_retired: bool,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FactsInput {
    entity_id: Option<String>,
    at: Option<String>,
    #[serde(default)]
    history: bool,
    limit: Option<u32>,
    cursor: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct HydrateInput {
    records: Vec<String>,
}

/// A conversation given as `{session_time?, messages}` or a bare array of
/// messages; one that does not parse is `invalid_conversation` on every surface
/// (the HTTP routes read theirs with it too).
pub fn conversation(value: Value) -> Result<Conversation> {
    let value = match value {
        Value::Array(messages) => json!({ "messages": messages }),
        v => v,
    };
    serde_json::from_value(value).map_err(|e| {
        Error::new(
            ErrorCode::InvalidConversation,
            format!(
                "a conversation is {{\"session_time\"?, \"messages\": [{{\"event_id\"?, \"speaker\", \"text\", \"timestamp\"?}}]}} or an array of messages: {e}"
            ),
        )
    })
}

/// A conversation's messages, as [`conversation`] reads them.
pub fn messages(value: Value) -> Result<Vec<crate::Message>> {
    Ok(conversation(json!({ "messages": value }))?.messages)
}

/// Run `method` with its JSON `input` on `m`; the result as JSON text.
pub async fn call(m: &Memory, method: &str, input: Value) -> Result<String> {
    match method {
        "ingest_file" => {
            let i: IngestFileInput = parse(method, input)?;
            to_json(&m.ingest_file(&i.path, i.options()?).await?)
        }
        "ingest_text" => {
            let i: IngestTextInput = parse(method, input)?;
            let options = i.options()?;
            to_json(&m.ingest_text(i.text, options).await?)
        }
        "ingest_conversation" => {
            let i: IngestConversationInput = parse(method, input)?;
            let options = i.options()?;
            let c = conversation(i.conversation)?;
            to_json(&m.ingest_conversation(&c, options).await?)
        }
        "conversation_messages" => {
            let i: ConversationRefInput = parse(method, input)?;
            to_json(&m.conversation_messages(&i.conversation_ref).await?)
        }
        "append_messages" => {
            let i: AppendInput = parse(method, input)?;
            let messages = messages(i.messages)?;
            let receipt = match parse_time("source_time", i.source_time.as_deref())? {
                Some(t) => {
                    m.append_messages_at(&i.conversation_ref, messages, t)
                        .await?
                }
                None => m.append_messages(&i.conversation_ref, messages).await?,
            };
            to_json(&receipt)
        }
        "remember_note" => {
            let i: NoteInput = parse(method, input)?;
            to_json(&m.remember_note(i).await?)
        }
        "promote_note" | "archive_note" | "revoke_note" => {
            let i: TransitionInput = parse(method, input)?;
            let v = parse_id::<VersionId>(&i.version_id)?;
            let note = match method {
                "promote_note" => m.promote_note(v, i.expected_version).await?,
                "archive_note" => m.archive_note(v, i.expected_version).await?,
                _ => m.revoke_note(v, i.expected_version).await?,
            };
            to_json(&note)
        }
        "list_notes" => {
            let i: PageInput = parse(method, input)?;
            to_json(
                &m.list_notes(
                    i.cursor.as_deref(),
                    i.limit.unwrap_or(crate::defaults::NOTES_PAGE),
                )
                .await?,
            )
        }
        "set_note_policy" => {
            let i: PolicyInput = parse(method, input)?;
            let start_as = crate::Admission::parse(&i.start_as)?;
            m.set_note_policy(start_as).await?;
            to_json(&json!({ "start_as": start_as.as_str() }))
        }
        "process_until_idle" => {
            let _: NoInput = parse(method, input)?;
            to_json(&m.process_until_idle().await?)
        }
        "search" => {
            let i: SearchInput = parse(method, input)?;
            // The list caps apply before any item is parsed.
            crate::limits::check_list_len("entities", i.entities.len())?;
            if let Some(roles) = &i.roles {
                crate::limits::check_list_len("roles", roles.len())?;
            }
            let mut req = SearchRequest::new(
                m.namespace(),
                i.query,
                i.k.unwrap_or(crate::defaults::SEARCH_K),
            );
            req.cursor = i.cursor;
            req.include_retired = i.include_retired;
            req.entities = i
                .entities
                .iter()
                .map(|e| parse_id::<EntityId>(e))
                .collect::<Result<_>>()?;
            req.exact = i.exact;
            req.documents = i.documents;
            if let Some(roles) = i.roles {
                let mut parsed = Vec::with_capacity(roles.len());
                for r in roles {
                    parsed.push(SectionRole::parse(&r).ok_or_else(|| {
                        Error::invalid_input(format!("unknown section role `{r}`"))
                    })?);
                }
                req.roles = Some(parsed);
            }
            match i.grain.as_deref().unwrap_or("chunks") {
                "chunks" => to_json(&m.search_with(req).await?),
                "claims" => to_json(&m.search_claims_with(req).await?),
                "facts" => to_json(&m.search_facts_with(req).await?),
                other => Err(Error::invalid_input(format!(
                    "unknown grain `{other}` (chunks, claims or facts)"
                ))),
            }
        }
        "resolve_entity" => {
            let i: ResolveEntityInput = parse_operation(method, input)?;
            to_json(&m.resolve_entity(&i.name, i.k).await?)
        }
        "claims_and_sources_context" => {
            let i: ClaimsAndSourcesInput = parse_operation(method, input)?;
            to_json(&m.claims_and_sources_context(i).await?)
        }
        "facts_context" => {
            let i: FactsContextInput = parse_operation(method, input)?;
            to_json(&m.facts_context(i).await?)
        }
        "combined_context" => {
            let i: CombinedContextInput = parse_operation(method, input)?;
            to_json(&m.combined_context(i).await?)
        }
        "run_operation" => {
            let i: OperationInput = parse(method, input)?;
            to_json(&m.run_operation(&i.name, i.input).await?)
        }
        "operations" => {
            let _: NoInput = parse(method, input)?;
            to_json(&json!({ "operations": m.operations() }))
        }
        "adjacent_chunks" => {
            let i: ChunkInput = parse(method, input)?;
            let chunk = parse_id::<ChunkId>(&i.chunk_id)?;
            to_json(
                &m.adjacent_chunks(chunk, i.window.unwrap_or(crate::defaults::ADJACENT_WINDOW))
                    .await?,
            )
        }
        "search_documents" => {
            let i: DocumentQuery = parse(method, input)?;
            to_json(&m.search_documents(i).await?)
        }
        "trace" => {
            let i: FactIdInput = parse(method, input)?;
            to_json(&m.trace(parse_id::<FactId>(&i.fact_id)?).await?)
        }
        "resolve_receipt" => {
            let i: ReceiptInput = parse(method, input)?;
            to_json(
                &m.resolve_receipt(parse_id::<ReceiptId>(&i.receipt_id)?)
                    .await?,
            )
        }
        "inspect_receipt" => {
            let i: ReceiptInput = parse(method, input)?;
            to_json(
                &m.inspect_receipt(parse_id::<ReceiptId>(&i.receipt_id)?)
                    .await?,
            )
        }
        "delete_document" => {
            let i: DocumentInput = parse(method, input)?;
            to_json(
                &m.delete_document(parse_id::<DocumentId>(&i.document_id)?)
                    .await?,
            )
        }
        "forget_document" => {
            let i: DocumentInput = parse(method, input)?;
            to_json(
                &m.forget_document(parse_id::<DocumentId>(&i.document_id)?)
                    .await?,
            )
        }
        "forget_note" => {
            let i: NoteIdInput = parse(method, input)?;
            to_json(&m.forget_note(parse_id::<DocumentId>(&i.note_id)?).await?)
        }
        "export" => {
            let i: ExportSelection = parse(method, input)?;
            to_json(&m.export_pack(&i).await?)
        }
        "feedback" => {
            let i: FeedbackInput = parse(method, input)?;
            to_json(&m.feedback(i).await?)
        }
        "list_feedback" => {
            let i: FeedbackListInput = parse(method, input)?;
            let receipt = i
                .receipt_id
                .as_deref()
                .map(parse_id::<ReceiptId>)
                .transpose()?;
            let list = m
                .list_feedback(receipt, i.limit.unwrap_or(crate::defaults::FEEDBACK_PAGE))
                .await?;
            to_json(&json!({ "feedback": list }))
        }
        "documents" => {
            let _: NoInput = parse(method, input)?;
            to_json(&json!({ "documents": m.documents().await? }))
        }
        "document" => {
            let i: DocumentInput = parse(method, input)?;
            to_json(&m.document(parse_id::<DocumentId>(&i.document_id)?).await?)
        }
        "entities" => {
            let i: EntitiesInput = parse(method, input)?;
            let list = m
                .entities(
                    i.include_merged,
                    i.limit.unwrap_or(crate::defaults::ENTITIES_PAGE),
                )
                .await?;
            to_json(&json!({ "entities": list }))
        }
        "entity" => {
            let i: EntityInput = parse(method, input)?;
            to_json(&m.entity(&i.name_or_id).await?)
        }
        "retract_claim" => {
            let i: ReasonInput = parse(method, input)?;
            let id = parse_id::<ClaimId>(&i.id)?;
            to_json(
                &m.retract_claim(id, &i.reason, i.request_id.as_deref())
                    .await?,
            )
        }
        "invalidate_fact" => {
            let i: ReasonInput = parse(method, input)?;
            let id = parse_id::<FactId>(&i.id)?;
            to_json(
                &m.invalidate_fact(id, &i.reason, i.request_id.as_deref())
                    .await?,
            )
        }
        "correct_fact" => {
            let i: CorrectInput = parse(method, input)?;
            let id = parse_id::<FactId>(&i.fact_id)?;
            to_json(
                &m.correct_fact(id, &i.statement, &i.reason, i.request_id.as_deref())
                    .await?,
            )
        }
        "merge_entities" => {
            let i: MergeInput = parse(method, input)?;
            let (from, into) = (
                parse_id::<EntityId>(&i.from)?,
                parse_id::<EntityId>(&i.into)?,
            );
            to_json(&m.merge_entities(from, into).await?)
        }
        "unmerge_entities" => {
            let i: MergeIdInput = parse(method, input)?;
            to_json(
                &m.unmerge_entities(parse_id::<MergeId>(&i.merge_id)?)
                    .await?,
            )
        }
        "merge_proposals" => {
            let _: NoInput = parse(method, input)?;
            to_json(&json!({ "proposals": m.merge_proposals().await? }))
        }
        "accept_merge_proposal" | "reject_merge_proposal" => {
            let i: MergeInput = parse(method, input)?;
            let (from, into) = (
                parse_id::<EntityId>(&i.from)?,
                parse_id::<EntityId>(&i.into)?,
            );
            if method == "accept_merge_proposal" {
                to_json(&m.accept_merge_proposal(from, into).await?)
            } else {
                to_json(&m.reject_merge_proposal(from, into).await?)
            }
        }
        "claims" => {
            let i: ClaimsInput = parse(method, input)?;
            let doc = i
                .document_id
                .as_deref()
                .map(parse_id::<DocumentId>)
                .transpose()?;
            to_json(&json!({ "claims": m.claims(doc, i.include_retired).await? }))
        }
        "claim_decisions" => {
            let i: DocumentInput = parse(method, input)?;
            let doc = parse_id::<DocumentId>(&i.document_id)?;
            to_json(&json!({ "decisions": m.claim_decisions(doc).await? }))
        }
        "facts" => {
            let i: FactsInput = parse(method, input)?;
            let query = FactQuery {
                entity: i
                    .entity_id
                    .as_deref()
                    .map(parse_id::<EntityId>)
                    .transpose()?,
                at: parse_time("at", i.at.as_deref())?,
                history: i.history,
                limit: i.limit.unwrap_or(crate::defaults::FACTS_PAGE),
            };
            to_json(&m.facts_page(&query, i.cursor.as_deref()).await?)
        }
        "predicates" => {
            let _: NoInput = parse(method, input)?;
            to_json(&json!({ "predicates": m.predicates().await? }))
        }
        "neighborhood" => {
            let request: NeighborhoodRequest = parse(method, input)?;
            to_json(&m.neighborhood(request).await?)
        }
        "hydrate" => {
            let i: HydrateInput = parse(method, input)?;
            let records = i
                .records
                .iter()
                .map(|r| r.parse::<RecordRef>())
                .collect::<Result<Vec<_>>>()?;
            to_json(&m.hydrate(&records).await?)
        }
        "status" => {
            let _: NoInput = parse(method, input)?;
            to_json(&m.status().await?)
        }
        "doctor" => {
            let _: NoInput = parse(method, input)?;
            to_json(&m.doctor().await)
        }
        other => Err(Error::invalid_input(format!(
            "unknown method `{other}` (one of: {})",
            methods().join(", ")
        ))),
    }
}

/// The JSON Schemas of what [`call`] returns, one per method of [`methods`], with
/// the definitions they refer to — derived from the facade's own result types, so
/// the bindings' declared types cannot drift from what a call serializes (the Node
/// package's `types.d.ts` is rendered from these).
#[cfg(feature = "schema")]
pub struct ResultSchemas {
    /// `(method, schema)` in [`methods`] order; a schema is usually a `$ref` into
    /// `definitions`.
    pub methods: Vec<(&'static str, serde_json::Value)>,
    /// The named types, by schema name.
    pub definitions: serde_json::Map<String, Value>,
}

/// The schemas of every method's result ([`ResultSchemas`]).
#[cfg(feature = "schema")]
pub fn result_schemas() -> ResultSchemas {
    use crate::ChunkResult;
    use crate::{
        AppendReceipt, ClaimRecord, ClaimResult, ClaimRetraction, ContextBundle,
        ConversationMessages, DecisionRecord, DoctorReport, DocumentDeletion, DocumentDetail,
        DocumentResult, DocumentSummary, DrainReport, EntityDetail, EntityRecord, EntityResult,
        Envelope, EvidenceResult, FactCorrection, FactInvalidation, FactPage, FactResult,
        FactTrace, FeedbackRecord, ForgetReport, HydratedRecord, IngestReceipt, MergeEvent,
        MergeProposal, NotePage, NoteRecord, OperationDescriptor, PathResult, PredicateRow,
        Receipt, ReceiptResolution, StatusReport,
    };
    use schemars::{JsonSchema, SchemaGenerator, generate::SchemaSettings};

    // What a result serializes to: a field is required unless serde may skip it.
    let mut generator = SchemaSettings::draft2020_12()
        .for_serialize()
        .into_generator();
    fn of<T: JsonSchema>(g: &mut SchemaGenerator) -> Value {
        g.subschema_for::<T>().to_value()
    }
    /// A listing as [`call`] wraps it: `{key: [T]}`.
    fn listing<T: JsonSchema>(g: &mut SchemaGenerator, key: &str) -> Value {
        json!({
            "type": "object",
            "properties": { key: { "type": "array", "items": of::<T>(g) } },
            "required": [key],
        })
    }
    let g = &mut generator;
    let object = json!({ "type": "object", "additionalProperties": true });
    let methods: Vec<(&'static str, Value)> = crate::ops::names()
        .map(|method| {
            let schema = match method {
                "ingest_file" | "ingest_text" | "ingest_conversation" => of::<IngestReceipt>(g),
                "append_messages" => of::<AppendReceipt>(g),
                "conversation_messages" => of::<ConversationMessages>(g),
                "remember_note" | "promote_note" | "archive_note" | "revoke_note" => {
                    of::<NoteRecord>(g)
                }
                "list_notes" => of::<NotePage>(g),
                "set_note_policy" => json!({
                    "type": "object",
                    "properties": { "start_as": { "type": "string", "enum": ["promoted", "candidate"] } },
                    "required": ["start_as"],
                }),
                "process_until_idle" => of::<DrainReport>(g),
                // The grain chooses the result type: chunks, claims or facts.
                "search" => json!({ "anyOf": [
                    of::<Envelope<ChunkResult>>(g),
                    of::<Envelope<ClaimResult>>(g),
                    of::<Envelope<FactResult>>(g),
                ]}),
                "resolve_entity" => of::<Envelope<EntityResult>>(g),
                "claims_and_sources_context" => of::<Envelope<EvidenceResult>>(g),
                "facts_context" => of::<Envelope<FactResult>>(g),
                "combined_context" => of::<ContextBundle>(g),
                // An operation's envelope, as JSON (the registry's output).
                "run_operation" | "export" => object.clone(),
                "operations" => listing::<OperationDescriptor>(g, "operations"),
                "adjacent_chunks" => of::<Envelope<ChunkResult>>(g),
                "search_documents" => of::<Envelope<DocumentResult>>(g),
                "trace" => of::<FactTrace>(g),
                "resolve_receipt" => of::<ReceiptResolution>(g),
                "inspect_receipt" => of::<Receipt>(g),
                "delete_document" => of::<DocumentDeletion>(g),
                "forget_document" | "forget_note" => of::<ForgetReport>(g),
                "feedback" => of::<FeedbackRecord>(g),
                "list_feedback" => listing::<FeedbackRecord>(g, "feedback"),
                "documents" => listing::<DocumentSummary>(g, "documents"),
                "document" => of::<DocumentDetail>(g),
                "entities" => listing::<EntityRecord>(g, "entities"),
                "entity" => of::<EntityDetail>(g),
                "retract_claim" => of::<ClaimRetraction>(g),
                "invalidate_fact" => of::<FactInvalidation>(g),
                "correct_fact" => of::<FactCorrection>(g),
                "merge_entities" | "unmerge_entities" => of::<MergeEvent>(g),
                "merge_proposals" => listing::<MergeProposal>(g, "proposals"),
                "accept_merge_proposal" => of::<MergeEvent>(g),
                "reject_merge_proposal" => of::<MergeProposal>(g),
                "claims" => listing::<ClaimRecord>(g, "claims"),
                "claim_decisions" => listing::<DecisionRecord>(g, "decisions"),
                "facts" => of::<FactPage>(g),
                "predicates" => listing::<PredicateRow>(g, "predicates"),
                "neighborhood" => of::<Envelope<PathResult>>(g),
                "hydrate" => of::<Envelope<HydratedRecord>>(g),
                "status" => of::<StatusReport>(g),
                "doctor" => of::<DoctorReport>(g),
                other => unreachable!("the operation table lists `{other}` without a result schema"),
            };
            (method, schema)
        })
        .collect();
    let definitions = generator
        .take_definitions(true)
        .into_iter()
        .collect::<serde_json::Map<_, _>>();
    ResultSchemas {
        methods,
        definitions,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_configuration_overlays_the_clis_section_by_section() {
        let c = load_config(
            None,
            Some(json!({"engine": {"lease": 7}, "embedder": {"provider": "hashing"}})),
        )
        .unwrap();
        assert_eq!(c.engine.lease.as_secs_f64(), 7.0);
        // Other engine settings keep their values.
        assert_eq!(
            c.engine.max_source_bytes,
            Config::default().engine.max_source_bytes
        );
        for bad in [
            json!({"engine": {"no_such_key": 1}}),
            json!({"engine": {"lease": 0}}),
            json!(["not", "sections"]),
        ] {
            let err = load_config(None, Some(bad.clone())).unwrap_err();
            assert_eq!(err.code(), ErrorCode::Config, "{bad}: {err}");
        }
    }

    async fn memory(dir: &tempfile::TempDir) -> Memory {
        open(json!({
            "path": dir.path().join("m.db"),
            "config": {"embedder": {"provider": "hashing"}}
        }))
        .await
        .unwrap()
    }

    #[tokio::test]
    async fn every_listed_method_is_dispatched() {
        let dir = tempfile::tempdir().unwrap();
        let m = memory(&dir).await;
        for method in methods() {
            // Wrong input: refused as invalid input by the method itself, never
            // as an unknown method.
            let err = call(&m, method, json!({ "no_such_field": 1 }))
                .await
                .unwrap_err();
            assert!(
                !err.to_string().contains("unknown method"),
                "{method}: {err}"
            );
            let expected = match method {
                "resolve_entity"
                | "claims_and_sources_context"
                | "facts_context"
                | "combined_context" => ErrorCode::InvalidParameter,
                _ => ErrorCode::InvalidInput,
            };
            assert_eq!(err.code(), expected, "{method}: {err}");
        }
        let err = call(&m, "drop_tables", Value::Null).await.unwrap_err();
        assert_eq!(err.code(), ErrorCode::InvalidInput);
        assert!(err.to_string().contains("unknown method `drop_tables`"));
    }

    #[tokio::test]
    async fn results_are_the_facade_json() {
        let dir = tempfile::tempdir().unwrap();
        let m = memory(&dir).await;
        let out = call(
            &m,
            "ingest_text",
            json!({"text": "Ada Lovelace wrote the first program.", "source_ref": "notes/ada"}),
        )
        .await
        .unwrap();
        let receipt: Value = serde_json::from_str(&out).unwrap();
        let docs = m.documents().await.unwrap();
        assert_eq!(docs.len(), 1);
        assert_eq!(receipt["document_id"], json!(docs[0].doc_id.to_string()));
        let listed = call(&m, "documents", Value::Null).await.unwrap();
        assert_eq!(listed, json!({ "documents": docs }).to_string());
    }

    #[tokio::test]
    async fn bad_options_are_typed_and_change_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let m = memory(&dir).await;
        let bad = [
            json!({"text": "x", "source_ref": "a", "kind": "pdf"}),
            json!({"text": "x", "source_ref": "a", "mode": "forever"}),
            json!({"text": "x", "source_ref": "a", "source_time": "yesterday"}),
            json!({"text": 5, "source_ref": "a"}),
        ];
        for input in bad {
            let err = call(&m, "ingest_text", input.clone()).await.unwrap_err();
            assert_eq!(err.code(), ErrorCode::InvalidInput, "{input}: {err}");
        }
        assert!(m.documents().await.unwrap().is_empty());
        let err = call(&m, "document", json!({"document_id": "nope"}))
            .await
            .unwrap_err();
        assert_eq!(err.code(), ErrorCode::InvalidInput);
        let err = call(
            &m,
            "document",
            json!({"document_id": "123e4567-e89b-12d3-a456-426614174000"}),
        )
        .await
        .unwrap_err();
        assert_eq!(err.code(), ErrorCode::DocumentNotFound);
    }

    #[tokio::test]
    async fn config_objects_are_validated_like_files() {
        let dir = tempfile::tempdir().unwrap();
        let err =
            open(json!({"path": dir.path().join("m.db"), "config": {"engine": {"bogus": 1}}}))
                .await
                .unwrap_err();
        assert_eq!(err.code(), ErrorCode::Config);
        let err = open(json!({"path": dir.path().join("m.db"), "require_postgres": true}))
            .await
            .unwrap_err();
        assert_eq!(err.code(), ErrorCode::Config);
    }
}
