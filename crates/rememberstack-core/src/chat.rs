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
            n.is_i64()
                || n.is_u64()
                || n.as_f64()
                    .is_some_and(|f| f.is_finite() && f.fract() == 0.0)
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
        return Err(violation(
            path,
            format!("{n} is less than the minimum {min}"),
        ));
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
    if let Some(i) = deepest {
        let mut errors = errors;
        return errors.swap_remove(i);
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn fails_at(schema: &Value, value: &Value, path: &str) -> String {
        match validate_json(schema, value) {
            Err(v) => {
                assert_eq!(v.path, path, "{v}");
                v.message
            }
            Ok(()) => panic!("{value} should violate {schema}"),
        }
    }

    fn ok(schema: &Value, value: &Value) {
        if let Err(v) = validate_json(schema, value) {
            panic!("{value} should satisfy {schema}: {v}");
        }
    }

    #[test]
    fn types() {
        let cases = [
            ("string", json!("x"), json!(1)),
            ("number", json!(1.5), json!("1.5")),
            ("integer", json!(3), json!(3.5)),
            ("boolean", json!(true), json!(0)),
            ("object", json!({}), json!([])),
            ("array", json!([]), json!({})),
            ("null", json!(null), json!(false)),
        ];
        for (name, good, bad) in cases {
            let schema = json!({ "type": name });
            ok(&schema, &good);
            let msg = fails_at(&schema, &bad, "");
            assert!(msg.starts_with(&format!("expected {name}, got ")), "{msg}");
        }
        // Integers are numbers; integral floats are integers.
        ok(&json!({"type": "number"}), &json!(3));
        ok(&json!({"type": "integer"}), &json!(3.0));
        ok(&json!({"type": "integer"}), &json!(u64::MAX));
        ok(&json!({"type": "integer"}), &json!(-7));
        assert_eq!(
            fails_at(&json!({"type": "string"}), &json!(2.5), ""),
            "expected string, got number"
        );
        // Arrays of types.
        let nullable = json!({"type": ["string", "null"]});
        ok(&nullable, &json!("x"));
        ok(&nullable, &json!(null));
        assert_eq!(
            fails_at(&nullable, &json!(1), ""),
            "expected string or null, got integer"
        );
        // Unknown type names match nothing; a non-string type is ignored.
        fails_at(&json!({"type": "text"}), &json!("x"), "");
        ok(&json!({"type": 7}), &json!("x"));
    }

    #[test]
    fn properties_required_and_additional_properties_with_nested_paths() {
        let schema = json!({
            "type": "object",
            "properties": {
                "claims": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "text": {"type": "string"},
                            "confidence": {"type": "number"}
                        },
                        "required": ["text"],
                        "additionalProperties": false
                    }
                }
            },
            "required": ["claims"],
            "additionalProperties": false
        });
        ok(&schema, &json!({"claims": []}));
        ok(
            &schema,
            &json!({"claims": [{"text": "a"}, {"text": "b", "confidence": 0.5}]}),
        );
        assert_eq!(
            fails_at(&schema, &json!({}), "/claims"),
            "required property is missing"
        );
        assert_eq!(
            fails_at(
                &schema,
                &json!({"claims": [{"text": "a"}, {"text": 1}]}),
                "/claims/1/text"
            ),
            "expected string, got integer"
        );
        fails_at(
            &schema,
            &json!({"claims": [{"confidence": 1}]}),
            "/claims/0/text",
        );
        let msg = fails_at(
            &schema,
            &json!({"claims": [{"text": "a", "extra": true}]}),
            "/claims/0/extra",
        );
        assert!(msg.contains("additionalProperties"), "{msg}");
        fails_at(&schema, &json!({"claims": [], "other": 1}), "/other");
        // Non-objects are not checked by object keywords (only by `type`).
        ok(
            &json!({"required": ["a"], "additionalProperties": false}),
            &json!(5),
        );
    }

    #[test]
    fn additional_properties_schema_and_pointer_escaping() {
        let schema = json!({
            "type": "object",
            "properties": {"fixed": {"type": "string"}},
            "additionalProperties": {"type": "integer"}
        });
        ok(&schema, &json!({"fixed": "x", "a/b": 1, "c~d": 2}));
        fails_at(&schema, &json!({"a/b": "x"}), "/a~1b");
        fails_at(&schema, &json!({"c~d": "x"}), "/c~0d");
        fails_at(&schema, &json!({"fixed": 1}), "/fixed");
    }

    #[test]
    fn items_and_item_counts() {
        let schema =
            json!({"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 2});
        ok(&schema, &json!(["a"]));
        ok(&schema, &json!(["a", "b"]));
        assert_eq!(
            fails_at(&schema, &json!([]), ""),
            "has 0 items, at least 1 required"
        );
        assert_eq!(
            fails_at(&schema, &json!(["a", "b", "c"]), ""),
            "has 3 items, at most 2 allowed"
        );
        fails_at(&schema, &json!(["a", 2]), "/1");
        // Positional items (older drafts).
        let tuple = json!({"items": [{"type": "string"}, {"type": "integer"}]});
        ok(&tuple, &json!(["a", 1, null]));
        fails_at(&tuple, &json!([1]), "/0");
        // Nested arrays.
        let matrix = json!({"items": {"items": {"type": "number"}}});
        fails_at(&matrix, &json!([[1], [2, "x"]]), "/1/1");
    }

    #[test]
    fn enum_and_const() {
        let schema = json!({"enum": ["keep", "drop", 1]});
        ok(&schema, &json!("keep"));
        ok(&schema, &json!(1.0));
        let msg = fails_at(&schema, &json!("maybe"), "");
        assert_eq!(msg, r#"must be one of ["keep","drop",1]"#);
        let schema = json!({"properties": {"kind": {"const": "claim"}}});
        ok(&schema, &json!({"kind": "claim"}));
        assert_eq!(
            fails_at(&schema, &json!({"kind": "fact"}), "/kind"),
            r#"must equal "claim""#
        );
        ok(&json!({"const": {"a": [1, 2]}}), &json!({"a": [1.0, 2]}));
        fails_at(&json!({"const": {"a": [1, 2]}}), &json!({"a": [1]}), "");
        fails_at(&json!({"const": null}), &json!(false), "");
    }

    #[test]
    fn string_lengths_count_characters() {
        let schema = json!({"type": "string", "minLength": 2, "maxLength": 3});
        ok(&schema, &json!("ab"));
        ok(&schema, &json!("héé"));
        assert_eq!(
            fails_at(&schema, &json!("a"), ""),
            "is 1 characters long, at least 2 required"
        );
        assert_eq!(
            fails_at(&schema, &json!("abcd"), ""),
            "is 4 characters long, at most 3 allowed"
        );
        // Lengths do not apply to other types.
        ok(&json!({"maxLength": 1}), &json!([1, 2, 3]));
    }

    #[test]
    fn numeric_ranges() {
        let schema = json!({"type": "number", "minimum": 0, "maximum": 1});
        ok(&schema, &json!(0));
        ok(&schema, &json!(1.0));
        ok(&schema, &json!(0.5));
        assert_eq!(
            fails_at(&schema, &json!(-0.5), ""),
            "-0.5 is less than the minimum 0"
        );
        assert_eq!(
            fails_at(&schema, &json!(2), ""),
            "2 is greater than the maximum 1"
        );
        let exclusive = json!({"exclusiveMinimum": 0, "exclusiveMaximum": 1});
        ok(&exclusive, &json!(0.5));
        fails_at(&exclusive, &json!(0), "");
        fails_at(&exclusive, &json!(1), "");
        fails_at(
            &json!({"properties": {"score": {"maximum": 10}}}),
            &json!({"score": 11}),
            "/score",
        );
    }

    #[test]
    fn any_of_all_of_one_of() {
        let schema = json!({"anyOf": [{"type": "string"}, {"type": "null"}]});
        ok(&schema, &json!("x"));
        ok(&schema, &json!(null));
        let msg = fails_at(&schema, &json!(3), "");
        assert_eq!(
            msg,
            "matches none of the alternatives of anyOf (expected string, got integer; \
             expected null, got integer)"
        );
        // An alternative that got deeper explains the failure best.
        let schema = json!({
            "properties": {
                "span": {
                    "anyOf": [
                        {"type": "object", "properties": {"start": {"type": "integer"}},
                         "required": ["start"]},
                        {"type": "null"}
                    ]
                }
            }
        });
        ok(&schema, &json!({"span": null}));
        ok(&schema, &json!({"span": {"start": 3}}));
        assert_eq!(
            fails_at(&schema, &json!({"span": {"start": "3"}}), "/span/start"),
            "expected integer, got string"
        );
        fails_at(&schema, &json!({"span": {}}), "/span/start");

        let all = json!({"allOf": [{"minimum": 0}, {"maximum": 5}]});
        ok(&all, &json!(3));
        fails_at(&all, &json!(6), "");

        let one = json!({"oneOf": [{"type": "integer"}, {"type": "number"}]});
        ok(&one, &json!(1.5));
        let msg = fails_at(&one, &json!(1), "");
        assert!(msg.contains("matches 2 alternatives of oneOf"), "{msg}");
        fails_at(&one, &json!("x"), "");
    }

    #[test]
    fn refs_to_defs_and_definitions() {
        let schema = json!({
            "type": "object",
            "properties": {
                "claims": {"type": "array", "items": {"$ref": "#/$defs/claim"}},
                "old": {"$ref": "#/definitions/old"}
            },
            "$defs": {
                "claim": {
                    "type": "object",
                    "properties": {"text": {"type": "string"}, "sub": {"$ref": "#/$defs/claim"}},
                    "required": ["text"]
                }
            },
            "definitions": {"old": {"type": "boolean"}}
        });
        ok(
            &schema,
            &json!({"claims": [{"text": "a", "sub": {"text": "b"}}], "old": true}),
        );
        fails_at(
            &schema,
            &json!({"claims": [{"text": "a", "sub": {"text": 1}}]}),
            "/claims/0/sub/text",
        );
        fails_at(&schema, &json!({"old": "yes"}), "/old");

        let msg = fails_at(&json!({"$ref": "#/$defs/missing"}), &json!(1), "");
        assert!(msg.contains("does not resolve"), "{msg}");
        let msg = fails_at(&json!({"$ref": "https://x/schema.json"}), &json!(1), "");
        assert!(msg.contains("not local"), "{msg}");
        // A cycle that never consumes the value stops instead of overflowing.
        let msg = fails_at(&json!({"$ref": "#"}), &json!(1), "");
        assert!(msg.contains("deeper than"), "{msg}");
    }

    #[test]
    fn boolean_schemas_and_unknown_keywords() {
        ok(&json!(true), &json!({"anything": 1}));
        fails_at(&json!(false), &json!(1), "");
        fails_at(
            &json!({"properties": {"never": false}}),
            &json!({"never": 1}),
            "/never",
        );
        ok(
            &json!({"type": "string", "format": "date-time", "pattern": "^x$",
                    "description": "ignored", "title": "t", "x-custom": 1}),
            &json!("not a date"),
        );
    }

    #[test]
    fn violation_display() {
        let v = SchemaViolation {
            path: "/claims/0/text".into(),
            message: "expected string, got integer".into(),
        };
        assert_eq!(
            v.to_string(),
            "at /claims/0/text: expected string, got integer"
        );
        let root = SchemaViolation {
            path: String::new(),
            message: "m".into(),
        };
        assert_eq!(root.to_string(), "at the root: m");
    }

    #[test]
    fn canonical_json_sorts_keys() {
        let a: Value =
            serde_json::from_str(r#"{"b": 1, "a": {"y": [1, {"d": 2, "c": 3}], "x": "s\"q"}}"#)
                .unwrap();
        assert_eq!(
            canonical_json(&a),
            r#"{"a":{"x":"s\"q","y":[1,{"c":3,"d":2}]},"b":1}"#
        );
    }

    #[test]
    fn request_hash_is_stable_and_covers_the_prompt_fields() {
        let base = ChatRequest::new(
            "selection",
            "sys",
            "user",
            "answer",
            json!({"type": "object", "properties": {"a": {"type": "string"}}}),
        );
        let h = request_hash(&base);
        assert_eq!(h.len(), 64);
        assert_eq!(h, base.hash());
        // Key order in the schema does not matter; temperature and max_tokens do not either.
        let mut same = base.clone();
        same.schema =
            serde_json::from_str(r#"{"properties": {"a": {"type": "string"}}, "type": "object"}"#)
                .unwrap();
        same.temperature = Some(0.2);
        same.max_tokens = Some(10);
        assert_eq!(request_hash(&same), h);
        let variants = [
            ChatRequest {
                call_key: "claimify".into(),
                ..base.clone()
            },
            ChatRequest {
                system: "sys2".into(),
                ..base.clone()
            },
            ChatRequest {
                user: "user2".into(),
                ..base.clone()
            },
            ChatRequest {
                schema_name: "other".into(),
                ..base.clone()
            },
            ChatRequest {
                schema: json!({"type": "object"}),
                ..base.clone()
            },
        ];
        for v in variants {
            assert_ne!(request_hash(&v), h, "{v:?}");
        }
        // Field boundaries matter.
        let a = ChatRequest::new("ab", "c", "", "", json!(null));
        let b = ChatRequest::new("a", "bc", "", "", json!(null));
        assert_ne!(request_hash(&a), request_hash(&b));
    }

    #[test]
    fn serde_shapes_stay_compatible() {
        let old =
            json!({"call_key": "k", "system": "s", "user": "u", "schema_name": "n", "schema": {}});
        let r: ChatRequest = serde_json::from_value(old.clone()).unwrap();
        assert_eq!(r.temperature, None);
        assert_eq!(serde_json::to_value(&r).unwrap(), old);

        let resp: ChatResponse = serde_json::from_value(json!({
            "value": {"a": 1}, "model": "m", "usage": {"prompt_tokens": 1, "completion_tokens": 2}
        }))
        .unwrap();
        assert_eq!(resp.mode, StructuredMode::JsonSchema);
        assert_eq!(resp.provider_request_id, None);
        let mut resp = resp;
        resp.mode = StructuredMode::JsonObject;
        resp.provider_request_id = Some("req-1".into());
        let v = serde_json::to_value(&resp).unwrap();
        assert_eq!(v["mode"], "json_object");
        assert_eq!(v["provider_request_id"], "req-1");
    }
}
