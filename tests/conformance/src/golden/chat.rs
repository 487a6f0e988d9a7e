//! The golden scenario's chat model: a fake OpenAI-compatible endpoint
//! (`POST /v1/chat/completions`) answering from `tests/golden/chat.json`.
//!
//! The script names the model the adjudicate seat uses (the other seats run
//! offline) and its rules: a rule matches an adjudication request whose incoming
//! assertion is `incoming` and whose candidates include `candidate`; its answer
//! names that candidate's handle (`F1`, `F2`, …) as `fact`. A request no rule
//! matches gets the script's `default` answer. The Python and Node golden tests
//! serve the same script the same way.
//!
//! The server is plain `std::net` on a thread of its own (a thread per
//! connection), so it answers whatever runtime, or process, calls it.

use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// The script (`tests/golden/chat.json`).
pub fn script() -> Value {
    let text =
        std::fs::read_to_string(super::dir().join("chat.json")).expect("tests/golden/chat.json");
    serde_json::from_str(&text).expect("chat.json is JSON")
}

/// The handle of the candidate whose statement is `statement` in an adjudication
/// prompt: candidates are listed as a `[F<n>] …` line followed by
/// `  Statement: <statement>`.
fn candidate_handle<'a>(user: &'a str, statement: &str) -> Option<&'a str> {
    let mut handle = None;
    for line in user.lines() {
        if let Some(rest) = line.strip_prefix('[') {
            handle = rest.split_once(']').map(|(h, _)| h);
        } else if line.strip_prefix("  Statement: ") == Some(statement) {
            return handle;
        }
    }
    None
}

/// The answer (the message content, as JSON) the script gives to the user prompt
/// `user`, and the index of the rule that matched.
pub fn scripted_answer(script: &Value, user: &str) -> (Value, Option<usize>) {
    let rules = script["rules"].as_array().map(Vec::as_slice).unwrap_or(&[]);
    for (i, rule) in rules.iter().enumerate() {
        let incoming = format!("Statement: {}", rule["incoming"].as_str().unwrap_or(""));
        if !user.lines().any(|l| l == incoming) {
            continue;
        }
        if let Some(handle) = candidate_handle(user, rule["candidate"].as_str().unwrap_or("")) {
            let mut answer = rule["answer"].clone();
            answer["fact"] = json!(handle);
            return (answer, Some(i));
        }
    }
    (script["default"].clone(), None)
}

/// One request the fake answered.
#[derive(Clone, Debug)]
pub struct Served {
    /// The request's user prompt.
    pub user: String,
    /// The rule that matched (`None`: the default answer).
    pub rule: Option<usize>,
}

/// The answer to one request body: `(status, body)`.
fn respond(script: &Value, body: &[u8], served: &Mutex<Vec<Served>>) -> (u16, Value) {
    let error = |status: u16, message: String| (status, json!({"error": {"message": message}}));
    let Ok(request) = serde_json::from_slice::<Value>(body) else {
        return error(400, "the body is not JSON".into());
    };
    let model = request["model"].as_str().unwrap_or_default();
    let scripted = script["config"]["model"].as_str().unwrap_or_default();
    if model != scripted {
        return error(
            404,
            format!("the golden chat script serves model `{scripted}` only, not `{model}`"),
        );
    }
    let user = request["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .rfind(|m| m["role"] == "user")
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default();
    let (answer, rule) = scripted_answer(script, user);
    served
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(Served {
            user: user.to_string(),
            rule,
        });
    (200, completion(model, &answer))
}

/// An OpenAI chat completion whose message content is `answer` as a string.
pub fn completion(model: &str, answer: &Value) -> Value {
    json!({
        "id": "golden-chat",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": answer.to_string()},
            "finish_reason": "stop"
        }],
        "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
    })
}

/// The fake endpoint, serving until dropped.
pub struct FakeChat {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    served: Arc<Mutex<Vec<Served>>>,
    script: Value,
}

impl FakeChat {
    /// Serve `tests/golden/chat.json` on a loopback port.
    pub fn start() -> FakeChat {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
        let addr = listener.local_addr().expect("local address");
        let stop = Arc::new(AtomicBool::new(false));
        let served = Arc::new(Mutex::new(Vec::new()));
        let script = Arc::new(script());
        {
            let (stop, served, script) = (stop.clone(), served.clone(), script.clone());
            std::thread::spawn(move || {
                for stream in listener.incoming() {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    let Ok(stream) = stream else { continue };
                    let (served, script) = (served.clone(), script.clone());
                    std::thread::spawn(move || serve(stream, &script, &served));
                }
            });
        }
        FakeChat {
            addr,
            stop,
            served,
            script: Arc::unwrap_or_clone(script),
        }
    }

    /// The API base URL (`http://127.0.0.1:<port>/v1`).
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// The `chat` configuration section (JSON) pointing at this endpoint: the
    /// script's `config` with `provider` and `base_url`.
    pub fn config_json(&self) -> Value {
        let mut config = self.script["config"].clone();
        config["provider"] = json!("openai");
        config["base_url"] = json!(self.base_url());
        config
    }

    /// [`FakeChat::config_json`] as a [`rememberstack::ChatConfig`].
    pub fn config(&self) -> rememberstack::ChatConfig {
        serde_json::from_value(self.config_json()).expect("a chat configuration")
    }

    /// The configuration as `REMEMBERSTACK_CHAT*` environment variables.
    pub fn env(&self) -> Vec<(String, String)> {
        let c = &self.script["config"];
        let mut out = vec![
            ("REMEMBERSTACK_CHAT".to_string(), "openai".to_string()),
            ("REMEMBERSTACK_CHAT_BASE_URL".to_string(), self.base_url()),
        ];
        for (key, field) in [("MODEL", "model"), ("API_KEY_ENV", "api_key_env")] {
            if let Some(v) = c[field].as_str() {
                out.push((format!("REMEMBERSTACK_CHAT_{key}"), v.to_string()));
            }
        }
        for (seat, model) in c["seats"].as_object().into_iter().flatten() {
            out.push((
                format!("REMEMBERSTACK_CHAT_{}_MODEL", seat.to_ascii_uppercase()),
                model.as_str().unwrap_or_default().to_string(),
            ));
        }
        out
    }

    /// Every request answered so far, in order.
    pub fn served(&self) -> Vec<Served> {
        self.served
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Panics unless every rule of the script matched a request: a rule that
    /// never fires means the prompt it was written against has changed.
    pub fn assert_every_rule_fired(&self) {
        let served = self.served();
        let rules = self.script["rules"].as_array().map_or(0, Vec::len);
        for i in 0..rules {
            assert!(
                served.iter().any(|s| s.rule == Some(i)),
                "rule {i} of tests/golden/chat.json matched none of the {} adjudication \
                 requests; their prompts:\n{}",
                served.len(),
                served
                    .iter()
                    .map(|s| s.user.as_str())
                    .collect::<Vec<_>>()
                    .join("\n---\n")
            );
        }
    }
}

impl Drop for FakeChat {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the accepting thread so it sees the flag.
        let _ = TcpStream::connect(self.addr);
    }
}

/// Serve one connection: HTTP/1.1 requests with a `Content-Length` body, kept
/// alive until the client closes.
fn serve(stream: TcpStream, script: &Value, served: &Mutex<Vec<Served>>) {
    let Ok(mut out) = stream.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(stream);
    loop {
        let mut request_line = String::new();
        match reader.read_line(&mut request_line) {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        let mut length = 0usize;
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            if let Some((name, value)) = line.split_once(':')
                && name.eq_ignore_ascii_case("content-length")
            {
                length = value.trim().parse().unwrap_or(0);
            }
        }
        let mut body = vec![0; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        let (status, answer) = if request_line.starts_with("POST /v1/chat/completions ") {
            respond(script, &body, served)
        } else {
            (
                404,
                json!({"error": {"message": format!("no such endpoint: {}", request_line.trim())}}),
            )
        };
        let text = answer.to_string();
        let head = format!(
            "HTTP/1.1 {status} {}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
            if status == 200 { "OK" } else { "Error" },
            text.len()
        );
        if out.write_all(head.as_bytes()).is_err() || out.write_all(text.as_bytes()).is_err() {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An adjudication prompt as the engine renders it (abridged).
    const PROMPT: &str = "INCOMING ASSERTION\nKind: relation\nSubject: Alice\n\
        Predicate: located_in\nObject: Madrid\nStatement: Alice is located in Madrid.\n\
        Window: unknown\nClaim: Alice lives in Madrid.\n\nCANDIDATE FACTS\n\
        [F1] relation: Alice works_for Acme\n  Statement: Alice works for Acme.\n  Window: unknown\n\
        [F2] relation: Alice located_in Lisbon\n  Statement: Alice is located in Lisbon.\n\
        \x20 Window: unknown\n\nReturn exactly one verdict. Valid fact handles: F1, F2.";

    #[test]
    fn a_rule_names_its_candidates_handle_and_anything_else_is_new() {
        let script = script();
        let (answer, rule) = scripted_answer(&script, PROMPT);
        assert_eq!(rule, Some(0));
        assert_eq!(answer["verdict"], "contradict");
        assert_eq!(answer["fact"], "F2");
        // The incoming line must be the assertion's, not a candidate's.
        let swapped = PROMPT
            .replace(
                "Statement: Alice is located in Madrid.",
                "Statement: Alice is located in Porto.",
            )
            .replace("Alice is located in Lisbon.", "Alice is located in Madrid.");
        assert_eq!(
            scripted_answer(&script, &swapped),
            (script["default"].clone(), None)
        );
        let no_candidate =
            PROMPT.replace("  Statement: Alice is located in Lisbon.", "  Statement: x");
        assert_eq!(scripted_answer(&script, &no_candidate).1, None);
    }

    /// One raw HTTP/1.1 POST to the fake: the status line and the body.
    fn post(fake: &FakeChat, path: &str, body: &Value) -> (String, Value) {
        let mut stream = TcpStream::connect(fake.addr).unwrap();
        let body = body.to_string();
        write!(
            stream,
            "POST {path} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n\
             content-length: {}\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        stream.shutdown(std::net::Shutdown::Write).unwrap();
        let mut text = String::new();
        stream.read_to_string(&mut text).unwrap();
        let (head, body) = text.split_once("\r\n\r\n").unwrap();
        (
            head.lines().next().unwrap().to_string(),
            serde_json::from_str(body).unwrap(),
        )
    }

    #[test]
    fn the_endpoint_answers_chat_completions() {
        let fake = FakeChat::start();
        let model = script()["config"]["model"].clone();
        let body = json!({"model": model, "messages": [
            {"role": "system", "content": "s"}, {"role": "user", "content": PROMPT}]});
        let (status, answer) = post(&fake, "/v1/chat/completions", &body);
        assert_eq!(status, "HTTP/1.1 200 OK");
        assert_eq!(answer["model"], model);
        let content: Value =
            serde_json::from_str(answer["choices"][0]["message"]["content"].as_str().unwrap())
                .unwrap();
        assert_eq!(content["verdict"], "contradict");
        assert_eq!(content["fact"], "F2");
        // Another model or path is refused loudly.
        let other = json!({"model": "gpt-4o", "messages": []});
        let (status, answer) = post(&fake, "/v1/chat/completions", &other);
        assert!(status.contains("404"), "{status}");
        assert!(
            answer["error"]["message"]
                .as_str()
                .unwrap()
                .contains("gpt-4o")
        );
        assert!(post(&fake, "/v1/embeddings", &body).0.contains("404"));
        let served = fake.served();
        assert_eq!(served.len(), 1);
        assert_eq!(served[0].rule, Some(0));
        fake.assert_every_rule_fired();
        let rememberstack::ChatConfig::Openai {
            base_url, seats, ..
        } = fake.config()
        else {
            panic!("an OpenAI-compatible configuration")
        };
        assert_eq!(base_url, fake.base_url());
        assert_eq!(seats.get("resolve").map(String::as_str), Some("offline"));
        assert!(fake.env().contains(&(
            "REMEMBERSTACK_CHAT_NORMALIZE_MODEL".to_string(),
            "offline".to_string()
        )));
    }
}
