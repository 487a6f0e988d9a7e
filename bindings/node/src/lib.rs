//! The Node.js binding of RememberStack (npm package `rememberstack`): the engine in
//! this process, not an HTTP client. This crate exports one N-API class,
//! `NativeMemory`, that the package's `index.js` wraps in the JavaScript `Memory`
//! class. Its surface is deliberately narrow and JSON-typed: `open(input)`,
//! `call(method, input)` and `close()`, where `input` is the JSON text of the
//! method's snake_case input and every Promise resolves to the JSON text of a frame,
//! `{"ok": <the facade's result JSON>}` or `{"error": {"code", "message"}}` — so the
//! JavaScript side sees exactly the JSON the CLI prints and the HTTP API returns,
//! and errors keep the engine's typed codes. The JSON layer is the facade's own
//! (`rememberstack::calls`, shared with the Python binding and unit-tested there).
//!
//! No Rust panic crosses the FFI boundary: every call runs as its own Tokio task and
//! a panic comes back as an `internal` error.

// The `#[napi]` macros expand to the `unsafe` N-API glue (raw `napi_env` and
// `napi_value` handling). The binding's own code has none.
#![allow(unsafe_code)]

use napi_derive::napi;
use rememberstack::Memory;
use rememberstack::calls as api;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex, MutexGuard};

/// Where a handle is in its life.
#[derive(Debug, Default)]
enum State {
    #[default]
    Unopened,
    Open(Memory),
    Closed,
}

/// An error on its way to JavaScript: the engine's code, or the binding's own
/// (`closed`, `internal`).
#[derive(Debug)]
struct Failure {
    code: String,
    message: String,
}

impl Failure {
    fn new(code: &str, message: impl Into<String>) -> Self {
        Failure {
            code: code.to_string(),
            message: message.into(),
        }
    }
}

impl From<rememberstack::Error> for Failure {
    fn from(e: rememberstack::Error) -> Self {
        Failure::new(e.code().as_str(), e.to_string())
    }
}

/// The JSON frame a Promise resolves to.
fn frame(result: Result<String, Failure>) -> String {
    match result {
        Ok(body) => format!("{{\"ok\":{body}}}"),
        Err(f) => json!({"error": {"code": f.code, "message": f.message}}).to_string(),
    }
}

fn parse_input(input: &str) -> Result<Value, Failure> {
    if input.trim().is_empty() {
        return Ok(Value::Null);
    }
    serde_json::from_str(input)
        .map_err(|e| Failure::new("invalid_input", format!("the input is not valid JSON: {e}")))
}

/// Run `fut` as its own task, so a panic in it is an `internal` error rather than
/// an abort of the Node process.
async fn guarded<F>(fut: F) -> Result<String, Failure>
where
    F: std::future::Future<Output = Result<String, Failure>> + Send + 'static,
{
    match tokio::spawn(fut).await {
        Ok(result) => result,
        Err(e) if e.is_panic() => Err(Failure::new(
            "internal",
            "the engine panicked while answering this call; the memory may need reopening",
        )),
        Err(e) => Err(Failure::new(
            "internal",
            format!("the call was cancelled: {e}"),
        )),
    }
}

/// A handle on one memory (an engine and a namespace). Use the `Memory` class of
/// the `rememberstack` package rather than this one.
#[napi]
pub struct NativeMemory {
    state: Arc<Mutex<State>>,
}

fn lock(state: &Mutex<State>) -> MutexGuard<'_, State> {
    // A poisoned lock only means a panic elsewhere while it was held; the state
    // itself is always whole.
    state.lock().unwrap_or_else(|e| e.into_inner())
}

impl Default for NativeMemory {
    fn default() -> Self {
        Self::new()
    }
}

#[napi]
impl NativeMemory {
    /// An unopened handle.
    #[napi(constructor)]
    pub fn new() -> Self {
        NativeMemory {
            state: Arc::new(Mutex::new(State::Unopened)),
        }
    }

    /// Open the memory: `input` is `{"path"?, "namespace"?, "config"?,
    /// "require_postgres"?}` as JSON. Resolves to a frame with the namespace.
    #[napi]
    pub async fn open(&self, input: String) -> napi::Result<String> {
        let state = self.state.clone();
        Ok(frame(
            guarded(async move {
                let input = parse_input(&input)?;
                if !matches!(*lock(&state), State::Unopened) {
                    return Err(Failure::new(
                        "invalid_input",
                        "this handle has already been opened",
                    ));
                }
                let memory = api::open(input).await?;
                let namespace = memory.namespace().to_string();
                let mut guard = lock(&state);
                match *guard {
                    State::Unopened => *guard = State::Open(memory),
                    _ => return Err(Failure::new("closed", "the memory was closed")),
                }
                Ok(json!({ "namespace": namespace }).to_string())
            })
            .await,
        ))
    }

    /// Run a facade method (`ingest_text`, `combined_context`, …) with its JSON
    /// input. Resolves to a frame with the method's result JSON.
    #[napi]
    pub async fn call(&self, method: String, input: String) -> napi::Result<String> {
        let state = self.state.clone();
        Ok(frame(
            guarded(async move {
                let input = parse_input(&input)?;
                let memory = match &*lock(&state) {
                    State::Open(m) => m.clone(),
                    State::Closed => {
                        return Err(Failure::new(
                            "closed",
                            format!("`{method}` on a closed memory: open it again"),
                        ));
                    }
                    State::Unopened => {
                        return Err(Failure::new(
                            "closed",
                            format!("`{method}` on a memory that was never opened"),
                        ));
                    }
                };
                Ok(api::call(&memory, &method, input).await?)
            })
            .await,
        ))
    }

    /// Make this unopened handle share `source`'s engine, reading and writing
    /// `namespace` (`Memory::with_namespace`). Returns a frame with the namespace.
    #[napi]
    pub fn share(&self, source: &NativeMemory, namespace: String) -> String {
        let result = (|| {
            let memory = match &*lock(&source.state) {
                State::Open(m) => m.with_namespace(namespace)?,
                _ => {
                    return Err(Failure::new(
                        "closed",
                        "withNamespace on a closed memory: open it again",
                    ));
                }
            };
            let mut guard = lock(&self.state);
            if !matches!(*guard, State::Unopened) {
                return Err(Failure::new(
                    "invalid_input",
                    "this handle has already been opened",
                ));
            }
            let body = json!({ "namespace": memory.namespace() }).to_string();
            *guard = State::Open(memory);
            Ok(body)
        })();
        frame(result)
    }

    /// Close the handle: later calls reject with `closed`; calls already running
    /// finish. The store closes when the last of them is done. True if it was open.
    #[napi]
    pub fn close(&self) -> bool {
        let previous = std::mem::replace(&mut *lock(&self.state), State::Closed);
        matches!(previous, State::Open(_))
    }

    /// The methods `call` answers.
    #[napi]
    pub fn methods() -> Vec<String> {
        api::methods().into_iter().map(str::to_string).collect()
    }
}
