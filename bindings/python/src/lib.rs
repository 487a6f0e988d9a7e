//! The native half of the `remember` Python package: one handle on the
//! [`rememberstack::Memory`] facade, run on one Tokio runtime owned by the module.
//!
//! The boundary is deliberately narrow (a thin mirror, no logic the facade lacks):
//! Python calls [`NativeMemory::call`] with a method name and its arguments as a
//! JSON object; the arguments are parsed into the facade's own input types (the same
//! serde types the CLI and the HTTP server parse), the facade runs with the GIL
//! released, and the answer comes back as `("ok", json)` — exactly what serde
//! serializes for the facade's result, the JSON the CLI prints with `--json` — or as
//! `(code, message)` with the engine's error code. The pure-Python layer
//! (`python/remember/`) turns those into typed results and exception classes.
//! Panics are caught here and reported as `internal`: none crosses the FFI boundary.

use pyo3::prelude::*;
use rememberstack::{
    Admission, ChunkId, Config, DeclaredKind, DocumentFilter, DocumentId, DocumentQuery, EntityId,
    Error, ErrorCode, ExportSelection, FactId, FeedbackInput, IngestOptions, Memory, NoteInput,
    ReceiptId, SearchRequest, SectionRole, VersionId, VersioningMode,
};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::path::Path;
use std::sync::{Mutex, OnceLock};

/// The code reported for a call on a closed handle (not an engine code).
const CLOSED: &str = "closed";

/// The module's one Tokio runtime, shared by every handle.
fn runtime() -> Result<&'static tokio::runtime::Runtime, Error> {
    static RUNTIME: OnceLock<Result<tokio::runtime::Runtime, String>> = OnceLock::new();
    RUNTIME
        .get_or_init(|| {
            tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .thread_name("remember-engine")
                .build()
                .map_err(|e| e.to_string())
        })
        .as_ref()
        .map_err(|e| Error::internal(format!("cannot start the engine's runtime: {e}")))
}

/// What a call answers: `("ok", json)` or `(error code, message)`.
type Outcome = (String, String);

fn failure(e: &Error) -> Outcome {
    (e.code().as_str().to_string(), e.to_string())
}

fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".to_string())
}

/// Run `fut` to completion on the module's runtime with the GIL released; a panic
/// becomes an `internal` error.
fn block_on<T: Send>(
    py: Python<'_>,
    fut: impl Future<Output = Result<T, Error>> + Send,
) -> Result<T, Error> {
    let rt = runtime()?;
    py.detach(|| {
        std::panic::catch_unwind(AssertUnwindSafe(|| rt.block_on(fut))).unwrap_or_else(|p| {
            Err(Error::internal(format!(
                "the engine panicked: {}",
                panic_message(p.as_ref())
            )))
        })
    })
}

/// A handle on one memory (one engine and one namespace). Created by
/// `remember.Memory`; not for direct use.
#[pyclass(module = "remember._native", frozen)]
struct NativeMemory {
    memory: Mutex<Option<Memory>>,
    namespace: String,
}

#[pymethods]
impl NativeMemory {
    /// Open a memory: the embedded store at `path` (a PostgreSQL URL connects to
    /// PostgreSQL; `None`: `REMEMBERSTACK_DB`, else the user's data directory),
    /// with the configuration the CLI uses (`config_file`, else
    /// `REMEMBERSTACK_CONFIG`, then `REMEMBERSTACK_*`), overridden section by section
    /// by `config_json`. Returns `("ok", "", handle)` or `(code, message, None)`.
    #[staticmethod]
    #[pyo3(signature = (path, namespace, config_file=None, config_json=None))]
    fn open(
        py: Python<'_>,
        path: Option<String>,
        namespace: String,
        config_file: Option<String>,
        config_json: Option<String>,
    ) -> (String, String, Option<NativeMemory>) {
        let opened =
            load_config(config_file.as_deref(), config_json.as_deref()).and_then(|config| {
                let mut builder = Memory::builder()
                    .config(config)
                    .namespace(namespace.clone());
                if let Some(p) = path {
                    builder = builder.path(p);
                }
                block_on(py, builder.open())
            });
        match opened {
            Ok(memory) => (
                "ok".to_string(),
                String::new(),
                Some(NativeMemory {
                    memory: Mutex::new(Some(memory)),
                    namespace,
                }),
            ),
            Err(e) => {
                let (code, message) = failure(&e);
                (code, message, None)
            }
        }
    }

    /// Call facade method `method` with its arguments as a JSON object.
    fn call(&self, py: Python<'_>, method: &str, args: &str) -> Outcome {
        let Some(memory) = self.handle() else {
            return (
                CLOSED.to_string(),
                "this Memory is closed: open a new one".to_string(),
            );
        };
        let args: Value = match serde_json::from_str(args) {
            Ok(v) => v,
            Err(e) => {
                return failure(&Error::invalid_input(format!(
                    "{method}: arguments are not JSON: {e}"
                )));
            }
        };
        match block_on(py, dispatch(memory, method.to_string(), args)) {
            Ok(json) => ("ok".to_string(), json),
            Err(e) => failure(&e),
        }
    }

    /// The same memory (one engine, one store) in another namespace: `("ok", "",
    /// handle)` or `(code, message, None)`.
    fn share(&self, namespace: String) -> (String, String, Option<NativeMemory>) {
        let Some(memory) = self.handle() else {
            return (
                CLOSED.to_string(),
                "this Memory is closed: open a new one".to_string(),
                None,
            );
        };
        match memory.with_namespace(namespace.clone()) {
            Ok(shared) => (
                "ok".to_string(),
                String::new(),
                Some(NativeMemory {
                    memory: Mutex::new(Some(shared)),
                    namespace,
                }),
            ),
            Err(e) => {
                let (code, message) = failure(&e);
                (code, message, None)
            }
        }
    }

    /// Close the handle: later calls answer `closed`. Calls already running finish.
    fn close(&self, py: Python<'_>) {
        let taken = match self.memory.lock() {
            Ok(mut guard) => guard.take(),
            Err(poisoned) => poisoned.into_inner().take(),
        };
        if let (Some(memory), Ok(rt)) = (taken, runtime()) {
            // The store's connections are closed from inside the runtime.
            py.detach(|| {
                let _guard = rt.enter();
                drop(memory);
            });
        }
    }

    /// Whether [`NativeMemory::close`] was called.
    #[getter]
    fn closed(&self) -> bool {
        self.handle().is_none()
    }

    /// The handle's namespace.
    #[getter]
    fn namespace(&self) -> &str {
        &self.namespace
    }
}

impl NativeMemory {
    fn handle(&self) -> Option<Memory> {
        match self.memory.lock() {
            Ok(guard) => guard.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }
}

/// The configuration: the CLI's (`Config::load`), then each section of `overlay` (a
/// JSON object in the configuration file's shape). `embedder` and `chat` replace
/// the loaded section whole (they are tagged by `provider`); other sections are
/// merged key by key.
fn load_config(file: Option<&str>, overlay: Option<&str>) -> Result<Config, Error> {
    let config = Config::load(file.map(Path::new))?;
    let Some(overlay) = overlay else {
        return Ok(config);
    };
    let config_err = |m: String| Error::new(ErrorCode::Config, m);
    let overlay: Value = serde_json::from_str(overlay)
        .map_err(|e| config_err(format!("the configuration is not JSON: {e}")))?;
    let Value::Object(sections) = overlay else {
        return Err(config_err(
            "the configuration must be a dict of sections (engine, embedder, chat, store)".into(),
        ));
    };
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

/// Parse a method's arguments into its input type: a missing, extra or mistyped
/// argument is `invalid_input` (the operation registry's own inputs, passed on by
/// `run_operation`, are checked by the engine: `invalid_parameter`).
fn args<T: DeserializeOwned>(method: &str, args: Value) -> Result<T, Error> {
    serde_json::from_value(args).map_err(|e| Error::invalid_input(format!("{method}: {e}")))
}

fn json(value: &impl serde::Serialize) -> Result<String, Error> {
    serde_json::to_string(value).map_err(|e| Error::internal(format!("serializing: {e}")))
}

fn id<T: std::str::FromStr<Err = Error>>(s: &str) -> Result<T, Error> {
    s.parse()
}

fn instant(name: &str, s: Option<&str>) -> Result<Option<rememberstack::Timestamp>, Error> {
    s.map(|s| {
        rememberstack::time::parse_rfc3339(s.trim()).ok_or_else(|| {
            Error::invalid_input(format!(
                "{name} `{s}` is not RFC 3339 (e.g. 2024-06-03T09:30:00Z)"
            ))
        })
    })
    .transpose()
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Ingest {
    #[serde(default)]
    path: Option<String>,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    conversation: Option<Value>,
    #[serde(default)]
    source_ref: Option<String>,
    #[serde(default)]
    kind: Option<String>,
    #[serde(default)]
    source_time: Option<String>,
    #[serde(default)]
    mode: Option<String>,
    #[serde(default)]
    thread_ref: Option<String>,
}

impl Ingest {
    fn options(&self) -> Result<IngestOptions, Error> {
        Ok(IngestOptions {
            source_ref: self.source_ref.clone(),
            kind: match self.kind.as_deref() {
                None => DeclaredKind::Auto,
                Some(k) => DeclaredKind::parse(k)?,
            },
            source_time: instant("source_time", self.source_time.as_deref())?,
            mode: self
                .mode
                .as_deref()
                .map(VersioningMode::parse)
                .transpose()?,
            thread_ref: self.thread_ref.clone(),
            ..Default::default()
        })
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Append {
    conversation_ref: String,
    messages: Value,
    #[serde(default)]
    source_time: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Transition {
    version_id: String,
    expected_version: u32,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Page {
    #[serde(default)]
    cursor: Option<String>,
    #[serde(default)]
    limit: Option<u32>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Policy {
    start_as: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NoArgs {}

/// `search`: the HTTP search body plus the CLI's document scope.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Search {
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
    #[serde(default)]
    exact: bool,
    #[serde(default)]
    document_ids: Option<Vec<DocumentId>>,
    #[serde(default)]
    file_name: Option<String>,
    #[serde(default)]
    title: Option<String>,
    #[serde(default)]
    author: Option<String>,
    #[serde(default)]
    from: Option<String>,
    #[serde(default)]
    to: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Operation {
    name: String,
    input: Value,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Adjacent {
    chunk_id: String,
    #[serde(default)]
    window: Option<usize>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ById {
    id: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FeedbackList {
    #[serde(default)]
    receipt_id: Option<String>,
    #[serde(default)]
    limit: Option<u32>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EntityList {
    #[serde(default)]
    include_merged: bool,
    #[serde(default)]
    limit: Option<u32>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ClaimList {
    #[serde(default)]
    document_id: Option<String>,
    #[serde(default)]
    include_retired: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Reasoned {
    id: String,
    reason: String,
    #[serde(default)]
    statement: Option<String>,
    #[serde(default)]
    request_id: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Merge {
    from_id: String,
    into_id: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FactList {
    #[serde(default)]
    entity_id: Option<String>,
    #[serde(default)]
    at: Option<String>,
    #[serde(default)]
    history: bool,
    #[serde(default)]
    limit: Option<u32>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Hydrate {
    records: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Empty {}

/// Call one facade method. Every argument is parsed before the facade is called, so
/// bad input changes nothing.
async fn dispatch(m: Memory, method: String, a: Value) -> Result<String, Error> {
    let method = method.as_str();
    match method {
        "ingest_file" => {
            let i: Ingest = args(method, a)?;
            let path = i
                .path
                .clone()
                .ok_or_else(|| Error::invalid_input("ingest_file needs a path"))?;
            json(&m.ingest_file(path, i.options()?).await?)
        }
        "ingest_text" => {
            let i: Ingest = args(method, a)?;
            let text = i
                .text
                .clone()
                .ok_or_else(|| Error::invalid_input("ingest_text needs a text"))?;
            json(&m.ingest_text(text, i.options()?).await?)
        }
        "ingest_conversation" => {
            let i: Ingest = args(method, a)?;
            if i.kind.is_some() {
                return Err(Error::invalid_input(
                    "ingest_conversation takes no kind: it is a conversation",
                ));
            }
            // The CLI's conversation parser: a {"session_time"?, "messages"} object
            // or a bare array of messages.
            let bytes = json(&i.conversation.clone().unwrap_or(Value::Null))?;
            let conversation = rememberstack::text::parse_conversation(bytes.as_bytes())?;
            json(&m.ingest_conversation(&conversation, i.options()?).await?)
        }
        "append_messages" => {
            let i: Append = args(method, a)?;
            let at = instant("source_time", i.source_time.as_deref())?;
            let bytes = json(&i.messages)?;
            let messages = match &i.messages {
                Value::Array(_) => rememberstack::text::parse_conversation(bytes.as_bytes())?,
                _ => {
                    return Err(Error::new(
                        ErrorCode::InvalidConversation,
                        "messages must be a list of {speaker, text, event_id} objects",
                    ));
                }
            }
            .messages;
            let receipt = match at {
                Some(t) => {
                    m.append_messages_at(&i.conversation_ref, messages, t)
                        .await?
                }
                None => m.append_messages(&i.conversation_ref, messages).await?,
            };
            json(&receipt)
        }
        "remember_note" => json(&m.remember_note(args::<NoteInput>(method, a)?).await?),
        "promote_note" | "archive_note" | "revoke_note" => {
            let t: Transition = args(method, a)?;
            let v: VersionId = id(&t.version_id)?;
            let note = match method {
                "promote_note" => m.promote_note(v, t.expected_version).await?,
                "archive_note" => m.archive_note(v, t.expected_version).await?,
                _ => m.revoke_note(v, t.expected_version).await?,
            };
            json(&note)
        }
        "list_notes" => {
            let p: Page = args(method, a)?;
            json(
                &m.list_notes(p.cursor.as_deref(), p.limit.unwrap_or(50))
                    .await?,
            )
        }
        "set_note_policy" => {
            let p: Policy = args(method, a)?;
            let state = Admission::parse(&p.start_as)?;
            m.set_note_policy(state).await?;
            json(&serde_json::json!({ "start_as": state }))
        }
        "process_until_idle" => {
            args::<NoArgs>(method, a)?;
            json(&m.process_until_idle().await?)
        }
        "search" => search(&m, args(method, a)?).await,
        "operations" => {
            args::<NoArgs>(method, a)?;
            json(&m.operations())
        }
        "run_operation" => {
            let o: Operation = args(method, a)?;
            json(&m.run_operation(&o.name, o.input).await?)
        }
        "adjacent_chunks" => {
            let i: Adjacent = args(method, a)?;
            let chunk: ChunkId = id(&i.chunk_id)?;
            json(&m.adjacent_chunks(chunk, i.window.unwrap_or(1)).await?)
        }
        "search_documents" => json(
            &m.search_documents(args::<DocumentQuery>(method, a)?)
                .await?,
        ),
        "trace" => json(&m.trace(id::<FactId>(&args::<ById>(method, a)?.id)?).await?),
        "resolve_receipt" => json(
            &m.resolve_receipt(id::<ReceiptId>(&args::<ById>(method, a)?.id)?)
                .await?,
        ),
        "inspect_receipt" => json(
            &m.inspect_receipt(id::<ReceiptId>(&args::<ById>(method, a)?.id)?)
                .await?,
        ),
        "document" => json(
            &m.document(id::<DocumentId>(&args::<ById>(method, a)?.id)?)
                .await?,
        ),
        "delete_document" => json(
            &m.delete_document(id::<DocumentId>(&args::<ById>(method, a)?.id)?)
                .await?,
        ),
        "forget_document" => json(
            &m.forget_document(id::<DocumentId>(&args::<ById>(method, a)?.id)?)
                .await?,
        ),
        "forget_note" => json(
            &m.forget_note(id::<DocumentId>(&args::<ById>(method, a)?.id)?)
                .await?,
        ),
        "documents" => {
            args::<NoArgs>(method, a)?;
            json(&m.documents().await?)
        }
        "status" => {
            args::<NoArgs>(method, a)?;
            json(&m.status().await?)
        }
        "doctor" => {
            args::<NoArgs>(method, a)?;
            json(&m.doctor().await)
        }
        "export" => json(&m.export_pack(&args::<ExportSelection>(method, a)?).await?),
        "feedback" => json(&m.feedback(args::<FeedbackInput>(method, a)?).await?),
        "list_feedback" => {
            let f: FeedbackList = args(method, a)?;
            let receipt = f.receipt_id.as_deref().map(id::<ReceiptId>).transpose()?;
            json(&m.list_feedback(receipt, f.limit.unwrap_or(100)).await?)
        }
        "entities" => {
            let e: EntityList = args(method, a)?;
            json(&m.entities(e.include_merged, e.limit.unwrap_or(100)).await?)
        }
        "entity" => json(&m.entity(&args::<ById>(method, a)?.id).await?),
        "claims" => {
            let c: ClaimList = args(method, a)?;
            let doc = c.document_id.as_deref().map(id::<DocumentId>).transpose()?;
            json(&m.claims(doc, c.include_retired).await?)
        }
        "retract_claim" => {
            let r: Reasoned = args(method, a)?;
            json(
                &m.retract_claim(id(&r.id)?, &r.reason, r.request_id.as_deref())
                    .await?,
            )
        }
        "invalidate_fact" => {
            let r: Reasoned = args(method, a)?;
            json(
                &m.invalidate_fact(id(&r.id)?, &r.reason, r.request_id.as_deref())
                    .await?,
            )
        }
        "correct_fact" => {
            let r: Reasoned = args(method, a)?;
            let statement = r
                .statement
                .as_deref()
                .ok_or_else(|| Error::invalid_input("correct_fact needs a statement"))?;
            json(
                &m.correct_fact(id(&r.id)?, statement, &r.reason, r.request_id.as_deref())
                    .await?,
            )
        }
        "merge_entities" => {
            let g: Merge = args(method, a)?;
            json(&m.merge_entities(id(&g.from_id)?, id(&g.into_id)?).await?)
        }
        "unmerge_entities" => json(
            &m.unmerge_entities(id(&args::<ById>(method, a)?.id)?)
                .await?,
        ),
        "facts" => {
            let f: FactList = args(method, a)?;
            let query = rememberstack::FactQuery {
                entity: f.entity_id.as_deref().map(id::<EntityId>).transpose()?,
                at: instant("at", f.at.as_deref())?,
                history: f.history,
                limit: f.limit.unwrap_or(100),
            };
            json(&m.facts(&query).await?)
        }
        "predicates" => {
            let _: Empty = args(method, a)?;
            json(&m.predicates().await?)
        }
        "claim_decisions" => json(&m.claim_decisions(id(&args::<ById>(method, a)?.id)?).await?),
        "neighborhood" => json(
            &m.neighborhood(args::<rememberstack::NeighborhoodRequest>(method, a)?)
                .await?,
        ),
        "hydrate" => {
            let h: Hydrate = args(method, a)?;
            let records = h
                .records
                .iter()
                .map(|r| r.parse::<rememberstack::RecordRef>())
                .collect::<Result<Vec<_>, _>>()?;
            json(&m.hydrate(&records).await?)
        }
        other => Err(Error::invalid_input(format!(
            "the native module has no method `{other}`"
        ))),
    }
}

async fn search(m: &Memory, s: Search) -> Result<String, Error> {
    let roles = s
        .roles
        .map(|list| {
            list.iter()
                .map(|r| {
                    SectionRole::parse(r.trim()).ok_or_else(|| {
                        Error::invalid_input(format!(
                            "unknown role `{r}`: use body, references, nav, boilerplate or legal"
                        ))
                    })
                })
                .collect::<Result<Vec<_>, _>>()
        })
        .transpose()?;
    let filter = DocumentFilter {
        document_ids: s.document_ids,
        file_name: s.file_name,
        title: s.title,
        author: s.author,
        from: s.from,
        to: s.to,
    };
    let mut request = SearchRequest::new(m.namespace(), &s.query, s.k.unwrap_or(10));
    request.roles = roles;
    request.cursor = s.cursor;
    request.include_retired = s.include_retired;
    request.entities = s.entities;
    request.exact = s.exact;
    request.documents = (!filter.is_empty()).then_some(filter);
    match s.grain.as_deref().unwrap_or("chunks") {
        "chunks" => json(&m.search_with(request).await?),
        "claims" => json(&m.search_claims_with(request).await?),
        "facts" => json(&m.search_facts_with(request).await?),
        other => Err(Error::invalid_input(format!(
            "unknown grain `{other}` (chunks, claims or facts)"
        ))),
    }
}

/// The `remember._native` extension module.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<NativeMemory>()?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}

impl Drop for NativeMemory {
    fn drop(&mut self) {
        // Dropped by Python's garbage collector without `close()`: release the store
        // from inside the runtime all the same.
        let taken = match self.memory.get_mut() {
            Ok(slot) => slot.take(),
            Err(poisoned) => poisoned.into_inner().take(),
        };
        if let (Some(memory), Ok(rt)) = (taken, runtime()) {
            let _guard = rt.enter();
            drop(memory);
        }
    }
}
