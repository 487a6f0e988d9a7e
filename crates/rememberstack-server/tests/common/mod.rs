//! The test server: a real `serve_on` on a loopback port over a conformance store.
#![allow(dead_code)]

use rememberstack_conformance::Harness;
use rememberstack_server::{ServerConfig, serve_on};
use serde_json::Value;
use std::time::Duration;

pub struct Server {
    pub memory: rememberstack::Memory,
    pub base: String,
    pub client: reqwest::Client,
    pub bearer: Option<String>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    handle: Option<tokio::task::JoinHandle<rememberstack::Result<()>>>,
}

impl Server {
    pub async fn start(h: &Harness, config: ServerConfig) -> Server {
        Server::start_with(h.memory().await, config).await
    }

    /// A server over `memory`.
    pub async fn start_with(memory: rememberstack::Memory, config: ServerConfig) -> Server {
        // The server's warnings (a 5xx names its cause only in the log) go to the
        // test's captured output, printed when the test fails.
        let _ = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::new("warn"))
            .with_test_writer()
            .try_init();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let handle = tokio::spawn(serve_on(listener, memory.clone(), config, async move {
            let _ = rx.await;
        }));
        Server {
            memory,
            bearer: None,
            base,
            client: reqwest::Client::new(),
            stop: Some(tx),
            handle: Some(handle),
        }
    }

    pub async fn call(&self, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
        let url = format!("{}{path}", self.base);
        let mut req = self
            .client
            .request(reqwest::Method::from_bytes(method.as_bytes()).unwrap(), url);
        match body {
            Some(b) => req = req.json(&b),
            // A bodyless POST or DELETE says it is not a web page's simple
            // request, as every client that is not a browser may.
            None => req = req.header("x-remember-client", "tests"),
        }
        if let Some(key) = &self.bearer {
            req = req.bearer_auth(key);
        }
        let resp = req.send().await.unwrap();
        let status = resp.status().as_u16();
        let text = resp.text().await.unwrap();
        let value = serde_json::from_str(&text).unwrap_or(Value::String(text));
        (status, value)
    }

    /// A call that must succeed; returns the body.
    pub async fn ok(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        let (status, value) = self.call(method, path, body).await;
        assert!(
            (200..300).contains(&status),
            "{method} {path} -> {status}: {value}"
        );
        value
    }

    /// A call that must fail with `status` and `code`, with a request id.
    pub async fn err(
        &self,
        method: &str,
        path: &str,
        body: Option<Value>,
        status: u16,
        code: &str,
    ) -> Value {
        let (got, value) = self.call(method, path, body).await;
        assert_eq!(got, status, "{method} {path}: {value}");
        assert_eq!(value["code"], code, "{method} {path}: {value}");
        assert!(
            value["request_id"].as_str().is_some_and(|r| !r.is_empty()),
            "{value}"
        );
        assert!(value["message"].as_str().is_some_and(|m| !m.is_empty()));
        value
    }

    pub async fn stop(mut self) {
        let _ = self.stop.take().unwrap().send(());
        let handle = self.handle.take().unwrap();
        tokio::time::timeout(Duration::from_secs(30), handle)
            .await
            .expect("the server stops")
            .unwrap()
            .expect("the server ends cleanly");
    }
}

pub fn test_config() -> ServerConfig {
    ServerConfig {
        workers: 1,
        worker_poll: Duration::from_millis(50),
        body_limit: 64 * 1024,
        ..ServerConfig::default()
    }
}

impl Server {
    /// The same server, calling with `key`.
    pub fn with_key(&self, key: &str) -> Server {
        Server {
            memory: self.memory.clone(),
            base: self.base.clone(),
            client: self.client.clone(),
            bearer: Some(key.to_string()),
            stop: None,
            handle: None,
        }
    }
}
