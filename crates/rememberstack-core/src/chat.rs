//! The `ChatModel` port: structured JSON completion against a JSON schema.
//! Adapters live in `rememberstack-llm`; without a configured chat model the
//! engine runs its deterministic offline stages.
//!
//! This module also holds the pieces every adapter (and the scripted test model)
//! shares, so that they behave identically:
//!
//! * [`validate_json`] — a dependency-free validator for the JSON Schema subset the
//!   prompts use. Every answer is validated locally, whatever the provider promises.
//! * [`request_hash`] — the stable identity of a request, used to script answers in
//!   tests and to key transcripts.

use std::fmt;

use crate::embed::ProviderError;
use crate::hash::sha256_parts;
use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One structured completion request.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ChatRequest {
    /// A deterministic key naming the logical call (e.g. `selection`).
    pub call_key: String,
    /// The system prompt.
    pub system: String,
    /// The user prompt.
    pub user: String,
    /// The schema's name.
    pub schema_name: String,
    /// The JSON schema the answer must satisfy.
    pub schema: serde_json::Value,
    /// The sampling temperature; `None` leaves it to the adapter's configuration
    /// (and then to the provider). Not part of [`request_hash`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f32>,
    /// The most tokens the answer may use; `None` leaves it to the adapter's
    /// configuration (and then to the provider). Not part of [`request_hash`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
}

impl ChatRequest {
    /// A request without temperature or token limit.
    pub fn new(
        call_key: impl Into<String>,
        system: impl Into<String>,
        user: impl Into<String>,
        schema_name: impl Into<String>,
        schema: serde_json::Value,
    ) -> Self {
        Self {
            call_key: call_key.into(),
            system: system.into(),
            user: user.into(),
            schema_name: schema_name.into(),
            schema,
            temperature: None,
            max_tokens: None,
        }
    }

    /// This request's [`request_hash`].
    pub fn hash(&self) -> String {
        request_hash(self)
    }
}

/// Token usage of one call.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Prompt tokens.
    pub prompt_tokens: u64,
    /// Completion tokens.
    pub completion_tokens: u64,
}

/// How the provider was asked for structured output, as far as the answer goes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StructuredMode {
    /// `response_format: json_schema` with `strict: true`: the provider constrained
    /// decoding to the schema.
    #[default]
    JsonSchema,
    /// `response_format: json_object` with the schema in the system prompt: the
    /// provider only promised JSON; the schema was checked locally.
    JsonObject,
    /// A scripted answer from a test double; no provider was asked.
    Scripted,
}

/// A validated structured answer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ChatResponse {
    /// The answer, valid against the request's schema.
    pub value: serde_json::Value,
    /// The model that answered.
    pub model: String,
    /// Usage as the provider reported it.
    pub usage: Usage,
    /// The provider's id of the request (a request-id header or the completion
    /// id), for support tickets and transcripts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_request_id: Option<String>,
    /// Whether strict `json_schema` mode or the `json_object` fallback answered.
    #[serde(default)]
    pub mode: StructuredMode,
}

/// A chat model that answers with JSON matching a schema.
#[async_trait]
pub trait ChatModel: Send + Sync + std::fmt::Debug {
    /// The configured model name.
    fn model(&self) -> &str;
    /// Complete `request`. The answer is valid against `request.schema`
    /// ([`validate_json`]); an answer that is not fails with
    /// [`ProviderError::Malformed`].
    async fn complete_json(&self, request: &ChatRequest) -> Result<ChatResponse, ProviderError>;
}

/// The stable identity of a request: sha256 (lowercase hex) over the call key, the
/// system prompt, the user prompt, the schema name and the [`canonical_json`] of the
/// schema, each length-prefixed. `temperature` and `max_tokens` are not part of it.
pub fn request_hash(request: &ChatRequest) -> String {
    let schema = canonical_json(&request.schema);
    sha256_parts([
        request.call_key.as_bytes(),
        request.system.as_bytes(),
        request.user.as_bytes(),
        request.schema_name.as_bytes(),
        schema.as_bytes(),
    ])
}

/// `value` as compact JSON with object keys sorted (by their UTF-8 bytes) at every
/// level, so equal values always give the same text whatever order their keys were
/// inserted in.
pub fn canonical_json(value: &Value) -> String {
    let mut out = String::new();
    write_canonical(value, &mut out);
    out
}

fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
            out.push('{');
            for (i, (key, item)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                write_canonical(item, out);
            }
            out.push('}');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

/// Where and how a value breaks its schema.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SchemaViolation {
    /// A JSON pointer (RFC 6901) to the offending value, e.g. `/claims/0/text`;
    /// empty for the whole value. A missing required property is pointed at by
    /// the path it should have had.
    pub path: String,
    /// What is wrong there.
    pub message: String,
}

impl fmt::Display for SchemaViolation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            write!(f, "at the root: {}", self.message)
        } else {
            write!(f, "at {}: {}", self.path, self.message)
        }
    }
}

impl std::error::Error for SchemaViolation {}

/// How deep schema and value may nest together (also stops `$ref` cycles).
const MAX_VALIDATION_DEPTH: usize = 256;
/// How much of a schema fragment a violation message may quote.
const MAX_QUOTED_SCHEMA_CHARS: usize = 120;

/// Checks `value` against `schema`, returning the first violation found.
///
/// Supports the JSON Schema subset structured-output prompts use:
///
/// * `type` — `string`, `number`, `integer` (a number without fraction),
///   `boolean`, `object`, `array`, `null`, or an array of these;
/// * `properties`, `required`, `additionalProperties` (`false`, or a schema for the
///   extra properties);
/// * `items` (a schema for every element; an array of schemas checks elements
///   positionally), `minItems`, `maxItems`;
/// * `enum`, `const` (numbers compare by value: `1` equals `1.0`);
/// * `minLength`, `maxLength` (in Unicode scalar values);
/// * `minimum`, `maximum`, `exclusiveMinimum`, `exclusiveMaximum` (numeric form);
/// * `anyOf`, `allOf`, `oneOf`;
/// * `$ref` to a local pointer such as `#/$defs/claim` or `#/definitions/claim`
///   (its sibling keywords are applied too);
/// * the boolean schemas `true` and `false`.
///
/// Every other keyword (`description`, `format`, `pattern`, `title`, …) is ignored.
/// A `$ref` that does not resolve, and an unknown type name, are violations: the
/// schema is ours, so a broken one should fail loudly rather than accept anything.
pub fn validate_json(schema: &Value, value: &Value) -> Result<(), SchemaViolation> {
    let mut path = String::new();
    Validator { root: schema }.check(schema, value, &mut path, 0)
}

struct Validator<'s> {
    root: &'s Value,
}

fn violation(path: &str, message: impl Into<String>) -> SchemaViolation {
    SchemaViolation {
        path: path.to_owned(),
        message: message.into(),
    }
}

/// Appends one reference token, escaped per RFC 6901.
fn push_segment(path: &mut String, segment: &str) {
    path.push('/');
    for c in segment.chars() {
        match c {
            '~' => path.push_str("~0"),
            '/' => path.push_str("~1"),
            c => path.push(c),
        }
    }
}

impl<'s> Validator<'s> {
    fn check(
        &self,
        schema: &'s Value,
        value: &Value,
        path: &mut String,
        depth: usize,
    ) -> Result<(), SchemaViolation> {
        if depth > MAX_VALIDATION_DEPTH {
            return Err(violation(
                path,
                format!(
                    "schema and value nest deeper than {MAX_VALIDATION_DEPTH} levels \
                     (a $ref cycle?)"
                ),
            ));
        }
        let keywords = match schema {
            Value::Bool(true) => return Ok(()),
            Value::Bool(false) => {
                return Err(violation(path, "no value is allowed here"));
            }
            Value::Object(keywords) => keywords,
            // Not a schema: nothing to check.
            _ => return Ok(()),
        };

        if let Some(reference) = keywords.get("$ref") {
            let target = self.resolve(reference, path)?;
            self.check(target, value, path, depth + 1)?;
        }
        if let Some(types) = keywords.get("type") {
            check_type(types, value, path)?;
        }
        if let Some(expected) = keywords.get("const")
            && !json_eq(expected, value)
        {
            return Err(violation(
                path,
                format!("must equal {}", quote_schema(expected)),
            ));
        }
        if let Some(Value::Array(options)) = keywords.get("enum")
            && !options.iter().any(|option| json_eq(option, value))
        {
            return Err(violation(
                path,
                format!(
                    "must be one of {}",
                    quote_schema(&Value::Array(options.clone()))
                ),
            ));
        }

        match value {
            Value::String(text) => check_length(keywords, text, path)?,
            Value::Number(number) => {
                if let Some(n) = number.as_f64() {
                    check_range(keywords, n, path)?;
                }
            }
            Value::Array(items) => self.check_array(keywords, items, path, depth)?,
            Value::Object(map) => self.check_object(keywords, map, path, depth)?,
            Value::Null | Value::Bool(_) => {}
        }

        if let Some(Value::Array(all)) = keywords.get("allOf") {
            for branch in all {
                self.check(branch, value, path, depth + 1)?;
            }
        }
        if let Some(Value::Array(any)) = keywords.get("anyOf") {
            let mut errors = Vec::with_capacity(any.len());
            for branch in any {
                match self.check(branch, value, path, depth + 1) {
                    Ok(()) => {
                        errors.clear();
                        break;
                    }
                    Err(e) => errors.push(e),
                }
            }
            if !errors.is_empty() {
                return Err(no_alternative("anyOf", path, errors));
            }
        }
        if let Some(Value::Array(one)) = keywords.get("oneOf") {
            let mut errors = Vec::new();
            let mut matched = 0usize;
            for branch in one {
                match self.check(branch, value, path, depth + 1) {
                    Ok(()) => matched += 1,
                    Err(e) => errors.push(e),
                }
            }
            match matched {
                1 => {}
                0 if !one.is_empty() => return Err(no_alternative("oneOf", path, errors)),
                0 => {}
                n => {
                    return Err(violation(
                        path,
                        format!("matches {n} alternatives of oneOf, exactly one is allowed"),
                    ));
                }
            }
        }
        Ok(())
    }

    /// The schema a local `$ref` points at.
    fn resolve(&self, reference: &Value, path: &str) -> Result<&'s Value, SchemaViolation> {
        let Value::String(reference) = reference else {
            return Err(violation(path, "the schema's $ref is not a string"));
        };
        let Some(pointer) = reference.strip_prefix('#') else {
            return Err(violation(
                path,
                format!(
                    "the schema's $ref {:?} is not local; only #/... references are supported",
                    truncate(reference, MAX_QUOTED_SCHEMA_CHARS)
                ),
            ));
        };
        self.root.pointer(pointer).ok_or_else(|| {
            violation(
                path,
                format!(
                    "the schema's $ref {:?} does not resolve",
                    truncate(reference, MAX_QUOTED_SCHEMA_CHARS)
                ),
            )
        })
    }

    fn check_array(
        &self,
        keywords: &'s serde_json::Map<String, Value>,
        items: &[Value],
        path: &mut String,
        depth: usize,
    ) -> Result<(), SchemaViolation> {
        let len = items.len() as u64;
        if let Some(min) = keywords.get("minItems").and_then(Value::as_u64)
            && len < min
        {
            return Err(violation(
                path,
                format!("has {len} items, at least {min} required"),
            ));
        }
        if let Some(max) = keywords.get("maxItems").and_then(Value::as_u64)
            && len > max
        {
            return Err(violation(
                path,
                format!("has {len} items, at most {max} allowed"),
            ));
        }
        match keywords.get("items") {
            Some(Value::Array(positional)) => {
                for (i, (item, schema)) in items.iter().zip(positional).enumerate() {
                    self.check_child(schema, item, path, &i.to_string(), depth)?;
                }
            }
            Some(schema) => {
                for (i, item) in items.iter().enumerate() {
                    self.check_child(schema, item, path, &i.to_string(), depth)?;
                }
            }
            None => {}
        }
        Ok(())
    }

    fn check_object(
        &self,
        keywords: &'s serde_json::Map<String, Value>,
        map: &serde_json::Map<String, Value>,
        path: &mut String,
        depth: usize,
    ) -> Result<(), SchemaViolation> {
        if let Some(Value::Array(required)) = keywords.get("required") {
            for name in required.iter().filter_map(Value::as_str) {
                if !map.contains_key(name) {
                    let mut missing = path.clone();
                    push_segment(&mut missing, name);
                    return Err(violation(&missing, "required property is missing"));
                }
            }
        }
        let properties = keywords.get("properties").and_then(Value::as_object);
        match keywords.get("additionalProperties") {
            None | Some(Value::Bool(true)) => {}
            Some(extra_schema) => {
                for (name, item) in map {
                    if properties.is_some_and(|p| p.contains_key(name)) {
                        continue;
                    }
                    if extra_schema == &Value::Bool(false) {
                        let mut extra = path.clone();
                        push_segment(&mut extra, name);
                        return Err(violation(
                            &extra,
                            "property is not allowed (additionalProperties is false)",
                        ));
                    }
                    self.check_child(extra_schema, item, path, name, depth)?;
                }
            }
        }
        if let Some(properties) = properties {
            for (name, schema) in properties {
                if let Some(item) = map.get(name) {
                    self.check_child(schema, item, path, name, depth)?;
                }
            }
        }
        Ok(())
    }

    /// Checks a member of the current value, extending `path` for the call.
    fn check_child(
        &self,
        schema: &'s Value,
        value: &Value,
        path: &mut String,
        segment: &str,
        depth: usize,
    ) -> Result<(), SchemaViolation> {
        let len = path.len();
        push_segment(path, segment);
        let result = self.check(schema, value, path, depth + 1);
        path.truncate(len);
        result
    }
}

fn check_type(types: &Value, value: &Value, path: &str) -> Result<(), SchemaViolation> {
    let names: Vec<&str> = match types {
        Value::String(name) => vec![name.as_str()],
        Value::Array(names) => names.iter().filter_map(Value::as_str).collect(),
        // Not a type constraint we understand: ignored, like unknown keywords.
        _ => return Ok(()),
    };
    if names.is_empty() || names.iter().any(|name| type_matches(name, value)) {
        return Ok(());
    }
    Err(violation(
        path,
        format!("expected {}, got {}", names.join(" or "), type_name(value)),
    ))
}

fn type_matches(name: &str, value: &Value) -> bool {
    match name {
        "string" => value.is_string(),
        "number" => value.is_number(),
        "integer" => is_integer(value),
        "boolean" => value.is_boolean(),
        "object" => value.is_object(),
        "array" => value.is_array(),
        "null" => value.is_null(),
        _ => false,
    }
}

fn is_integer(value: &Value) -> bool {
    match value {
        Value::Number(n) => {
            n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.is_finite() && f.fract() == 0.0)
        }
        _ => false,
    }
}

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) if is_integer(value) => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn check_length(
    keywords: &serde_json::Map<String, Value>,
    text: &str,
    path: &str,
) -> Result<(), SchemaViolation> {
    let min = keywords.get("minLength").and_then(Value::as_u64);
    let max = keywords.get("maxLength").and_then(Value::as_u64);
    if min.is_none() && max.is_none() {
        return Ok(());
    }
    let len = text.chars().count() as u64;
    if let Some(min) = min
        && len < min
    {
        return Err(violation(
            path,
            format!("is {len} characters long, at least {min} required"),
        ));
    }
    if let Some(max) = max
        && len > max
    {
        return Err(violation(
            path,
            format!("is {len} characters long, at most {max} allowed"),
        ));
    }
    Ok(())
}

fn check_range(
    keywords: &serde_json::Map<String, Value>,
    n: f64,
    path: &str,
) -> Result<(), SchemaViolation> {
    let bound = |name: &str| keywords.get(name).and_then(Value::as_f64);
    if let Some(min) = bound("minimum")
        && n < min
    {
        return Err(violation(path, format!("{n} is less than the minimum {min}")));
    }
    if let Some(max) = bound("maximum")
        && n > max
    {
        return Err(violation(
            path,
            format!("{n} is greater than the maximum {max}"),
        ));
    }
    if let Some(min) = bound("exclusiveMinimum")
        && n <= min
    {
        return Err(violation(
            path,
            format!("{n} is not greater than the exclusive minimum {min}"),
        ));
    }
    if let Some(max) = bound("exclusiveMaximum")
        && n >= max
    {
        return Err(violation(
            path,
            format!("{n} is not less than the exclusive maximum {max}"),
        ));
    }
    Ok(())
}

/// The violation for a value no alternative of `anyOf`/`oneOf` accepts. When some
/// alternative got past the current value (its violation is deeper), that one is
/// the most telling and is returned; otherwise the alternatives' complaints are
/// listed.
fn no_alternative(keyword: &str, path: &str, errors: Vec<SchemaViolation>) -> SchemaViolation {
    let deepest = errors
        .iter()
        .enumerate()
        .filter(|(_, e)| e.path.len() > path.len())
        .max_by_key(|(i, e)| (e.path.len(), std::cmp::Reverse(*i)))
        .map(|(i, _)| i);
    if let Some(i) = deepest
        && let Some(error) = errors.into_iter().nth(i)
    {
        return error;
    }
    let reasons: Vec<String> = errors.iter().map(|e| e.message.clone()).collect();
    violation(
        path,
        truncate(
            &format!(
                "matches none of the alternatives of {keyword} ({})",
                reasons.join("; ")
            ),
            400,
        ),
    )
}

/// JSON equality where numbers compare by value (`1 == 1.0`).
fn json_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            if let (Some(x), Some(y)) = (x.as_i64(), y.as_i64()) {
                x == y
            } else if let (Some(x), Some(y)) = (x.as_u64(), y.as_u64()) {
                x == y
            } else {
                match (x.as_f64(), y.as_f64()) {
                    (Some(x), Some(y)) => x == y,
                    _ => false,
                }
            }
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| json_eq(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|other| json_eq(v, other)))
        }
        _ => a == b,
    }
}

/// A schema fragment for a message, shortened.
fn quote_schema(value: &Value) -> String {
    truncate(&value.to_string(), MAX_QUOTED_SCHEMA_CHARS)
}

fn truncate(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        None => text.to_owned(),
        Some((cut, _)) => format!("{}…", &text[..cut]),
    }
}
