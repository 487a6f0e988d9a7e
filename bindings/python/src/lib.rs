//! The native half of the `remember` Python package: one handle on the
//! [`rememberstack::Memory`] facade, run on one Tokio runtime owned by the module.
//!
//! The boundary is deliberately narrow (a thin mirror, no logic the facade lacks):
//! Python calls [`NativeMemory::call`] with a method name and its arguments as a
//! JSON object; [`rememberstack::calls`] (the JSON layer the Node binding shares)
//! parses them into the facade's own input types and runs the facade, with the GIL
//! released, and the answer comes back as `("ok", json)` — exactly what serde
//! serializes for the facade's result, the JSON the CLI prints with `--json` — or as
//! `(code, message)` with the engine's error code. The pure-Python layer
//! (`python/remember/`) turns those into typed results and exception classes.
//! Panics are caught here and reported as `internal`: none crosses the FFI boundary.

use pyo3::prelude::*;
use rememberstack::{Error, ErrorCode, Memory};
use serde_json::Value;
use std::future::Future;
use std::panic::AssertUnwindSafe;
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
        let input = match config_json.as_deref().map(serde_json::from_str::<Value>) {
            Some(Err(e)) => Err(Error::new(
                ErrorCode::Config,
                format!("the configuration is not JSON: {e}"),
            )),
            overlay => Ok(serde_json::json!({
                "path": path,
                "namespace": namespace.clone(),
                "config_file": config_file,
                "config": overlay.and_then(Result::ok),
            })),
        };
        let opened = input.and_then(|input| block_on(py, rememberstack::calls::open(input)));
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
        let call = async move { rememberstack::calls::call(&memory, method, args).await };
        match block_on(py, call) {
            Ok(json) => ("ok".to_string(), json),
            Err(e) => failure(&e),
        }
    }

    /// The names of every call [`NativeMemory::call`] answers (the operation table's).
    #[staticmethod]
    fn methods() -> Vec<String> {
        rememberstack::calls::methods()
            .into_iter()
            .map(str::to_string)
            .collect()
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
