//! Conversion of source bytes to the canonical Markdown representation.
//!
//! Every format becomes one Markdown text (the coordinate system of every
//! later span). Conversations additionally get a turn map. Conversion is pure
//! and deterministic: no IO, no clock.

use super::blockize::markdown_options;
use super::sections::plain_text;
use super::{Conversation, Message, Representation, SourceFormat, TurnSpan};
use crate::error::{Error, ErrorCode};
use crate::limits::{
    JSON_RENDER_FACTOR, MAX_CONVERSATION_MESSAGES, MAX_CONVERSATION_SPEAKERS, MAX_JSON_DEPTH,
    MAX_JSON_KEY_PATH_BYTES, json_nesting_exceeds, json_render_limit, too_large,
};
use crate::time::{Timestamp, parse_rfc3339};
use pulldown_cmark::{Event, HeadingLevel, Parser, Tag, TagEnd};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::{HashMap, HashSet};
use std::rc::Rc;
use std::sync::{Arc, Mutex};

/// Version of the converters' behaviour; bump it when any output changes.
pub const CONVERTER_VERSION: &str = "convert-v2";

/// What a source declares about itself.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ExtractedMetadata {
    /// The declared title: Markdown's (and Text's) first level-1 heading (else first
    /// heading), HTML's `<title>` (else first level-1 heading), a JSON
    /// object's top-level `title`/`name` string. None for conversations.
    pub title: Option<String>,
    /// Authors: for conversations, the distinct speakers in order of first appearance.
    pub authors: Vec<String>,
    /// Creation time: for conversations, the session time, else the first message timestamp.
    pub created_at: Option<Timestamp>,
    /// Language tag, from HTML's `<html lang>`.
    pub language: Option<String>,
}

/// The result of [`convert`].
#[derive(Clone, Debug, PartialEq)]
pub struct Converted {
    /// The Markdown (and, for conversations, the turn map).
    pub representation: Representation,
    /// What the source declares about itself.
    pub metadata: ExtractedMetadata,
}

fn err(code: ErrorCode, message: impl Into<String>) -> Error {
    Error::new(code, message)
}

/// Decode a text format: valid UTF-8, leading BOM stripped, CRLF/CR → LF,
/// non-empty after trimming.
fn decode_text(bytes: &[u8], what: &str) -> Result<String, Error> {
    let text = std::str::from_utf8(bytes).map_err(|e| {
        err(
            ErrorCode::InvalidUtf8,
            format!(
                "{what} is not valid UTF-8 (invalid byte sequence at byte {})",
                e.valid_up_to()
            ),
        )
    })?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let text = normalize_newlines(&no_nul(text));
    if text.trim().is_empty() {
        return Err(err(ErrorCode::EmptyInput, format!("{what} is empty")));
    }
    Ok(text)
}

/// NUL becomes U+FFFD: no text column (PostgreSQL's least of all) stores it, and
/// it carries no meaning in text.
fn no_nul(text: &str) -> std::borrow::Cow<'_, str> {
    if text.contains('\0') {
        std::borrow::Cow::Owned(text.replace('\0', "\u{fffd}"))
    } else {
        std::borrow::Cow::Borrowed(text)
    }
}

/// CRLF and lone CR become LF.
fn normalize_newlines(text: &str) -> String {
    if !text.contains('\r') {
        return text.to_string();
    }
    text.replace("\r\n", "\n").replace('\r', "\n")
}

fn non_empty(markdown: String, what: &str) -> Result<String, Error> {
    if markdown.trim().is_empty() {
        Err(err(
            ErrorCode::EmptyInput,
            format!("{what} has no text content"),
        ))
    } else {
        Ok(markdown)
    }
}

// ---------------------------------------------------------------------------
// Conversations
// ---------------------------------------------------------------------------

fn conv_err(message: impl Into<String>) -> Error {
    err(ErrorCode::InvalidConversation, message)
}

fn parse_time(value: Option<&Value>, what: &str) -> Result<Option<Timestamp>, Error> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => parse_rfc3339(s).map(Some).ok_or_else(|| {
            conv_err(format!(
                "{what} {s:?} is not an RFC 3339 timestamp (e.g. 2024-05-01T12:00:00Z)"
            ))
        }),
        Some(other) => Err(conv_err(format!(
            "{what} must be an RFC 3339 string, not {}",
            json_type(other)
        ))),
    }
}

fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn parse_message(index: usize, value: &Value) -> Result<Message, Error> {
    let at = format!("message {} (messages[{index}])", index + 1);
    let Value::Object(obj) = value else {
        return Err(conv_err(format!(
            "{at} must be an object, not {}",
            json_type(value)
        )));
    };
    let speaker = match obj.get("speaker") {
        None | Some(Value::Null) => return Err(conv_err(format!("{at} has no speaker"))),
        Some(Value::String(s)) => no_nul(s).split_whitespace().collect::<Vec<_>>().join(" "),
        Some(other) => {
            return Err(conv_err(format!(
                "{at}: speaker must be a string, not {}",
                json_type(other)
            )));
        }
    };
    if speaker.is_empty() {
        return Err(conv_err(format!("{at} has an empty speaker")));
    }
    let text = match obj.get("text") {
        None | Some(Value::Null) => return Err(conv_err(format!("{at} has no text"))),
        Some(Value::String(s)) => no_nul(s).into_owned(),
        Some(other) => {
            return Err(conv_err(format!(
                "{at}: text must be a string, not {}",
                json_type(other)
            )));
        }
    };
    if text.trim().is_empty() {
        return Err(conv_err(format!("{at} has empty text")));
    }
    let event_id = match obj.get("event_id") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(no_nul(s).into_owned()),
        Some(Value::Number(n)) => Some(n.to_string()),
        Some(other) => {
            return Err(conv_err(format!(
                "{at}: event_id must be a string or a number, not {}",
                json_type(other)
            )));
        }
    };
    let timestamp = parse_time(obj.get("timestamp"), &format!("{at}: timestamp"))?;
    Ok(Message {
        event_id,
        speaker,
        text,
        timestamp,
    })
}

/// Parse a conversation document.
///
/// Accepts `{"session_time"?: RFC3339, "messages": [...]}` or a bare array of
/// messages, each `{"event_id"?, "speaker", "text", "timestamp"?}`; unknown
/// fields are ignored. A numeric `event_id` is kept as its decimal string.
/// Speakers have their whitespace collapsed.
///
/// Errors: [`ErrorCode::InvalidUtf8`] for bad UTF-8, [`ErrorCode::EmptyInput`]
/// for empty or whitespace-only bytes, [`ErrorCode::InvalidConversation`] for
/// anything else that is wrong (not JSON, wrong shape, no messages, a message
/// without speaker or text or with empty ones, a bad timestamp), naming the
/// message.
pub fn parse_conversation(bytes: &[u8]) -> Result<Conversation, Error> {
    let text = decode_text(bytes, "conversation")?;
    check_json_depth(&text, "the conversation")?;
    let value: Value = serde_json::from_str(&text)
        .map_err(|e| conv_err(format!("conversation is not valid JSON: {e}")))?;
    let (session_time, messages) = match &value {
        Value::Array(items) => (None, items),
        Value::Object(obj) => {
            let session_time = parse_time(obj.get("session_time"), "session_time")?;
            match obj.get("messages") {
                Some(Value::Array(items)) => (session_time, items),
                Some(other) => {
                    return Err(conv_err(format!(
                        "\"messages\" must be an array, not {}",
                        json_type(other)
                    )));
                }
                None => {
                    return Err(conv_err(
                        "conversation object has no \"messages\" array".to_string(),
                    ));
                }
            }
        }
        other => {
            return Err(conv_err(format!(
                "a conversation must be an object with \"messages\" or an array of messages, not {}",
                json_type(other)
            )));
        }
    };
    if messages.is_empty() {
        return Err(conv_err("conversation has no messages"));
    }
    if messages.len() > MAX_CONVERSATION_MESSAGES {
        return Err(too_large(format!(
            "the conversation has {} messages; the limit is {MAX_CONVERSATION_MESSAGES} (split it into several conversations)",
            messages.len()
        )));
    }
    // Sets, not lists: every check here is one lookup per message, so conversion
    // stays linear in the number of messages and speakers.
    let mut speakers: HashSet<String> = HashSet::new();
    let mut by_event: HashMap<String, usize> = HashMap::new();
    let mut out: Vec<Message> = Vec::with_capacity(messages.len());
    for (i, value) in messages.iter().enumerate() {
        let m = parse_message(i, value)?;
        if let Some(id) = &m.event_id {
            if let Some(&j) = by_event.get(id) {
                // The same message repeated (a replayed export) is merged; two
                // different messages under one event id are refused, as an append
                // refuses them.
                let first: &Message = &out[j];
                if first.speaker == m.speaker && first.text == m.text {
                    continue;
                }
                return Err(conv_err(format!(
                    "message {} (messages[{i}]) reuses event_id `{id}` of an earlier, different message: event ids must be unique within a conversation",
                    i + 1
                )));
            }
            by_event.insert(id.clone(), out.len());
        }
        if !speakers.contains(&m.speaker) {
            if speakers.len() >= MAX_CONVERSATION_SPEAKERS {
                return Err(too_large(format!(
                    "the conversation has more than {MAX_CONVERSATION_SPEAKERS} distinct speakers (at message {})",
                    i + 1
                )));
            }
            speakers.insert(m.speaker.clone());
        }
        out.push(m);
    }
    let messages = out;
    Ok(Conversation {
        session_time,
        messages,
    })
}

/// A message's text as one paragraph: newlines normalized, blank lines
/// dropped, line ends and the whole text trimmed.
fn turn_text(text: &str) -> String {
    let text = normalize_newlines(text);
    let lines: Vec<&str> = text
        .split('\n')
        .map(str::trim_end)
        .filter(|l| !l.trim().is_empty())
        .collect();
    lines.join("\n").trim_start().to_string()
}

fn render_conversation(conv: &Conversation, fallback_time: Option<Timestamp>) -> Converted {
    let mut markdown = String::new();
    let mut turns = Vec::with_capacity(conv.messages.len());
    let mut authors: Vec<String> = Vec::new();
    let mut seen: HashSet<&str> = HashSet::new();
    for (i, m) in conv.messages.iter().enumerate() {
        if i > 0 {
            markdown.push_str("\n\n");
        }
        let start = markdown.len();
        markdown.push_str(&m.speaker);
        markdown.push_str(": ");
        markdown.push_str(&turn_text(&m.text));
        let end = markdown.len();
        turns.push(TurnSpan {
            start,
            end,
            speaker: m.speaker.clone(),
            event_id: m.event_id.clone(),
            timestamp: m.timestamp.or(conv.session_time).or(fallback_time),
        });
        if seen.insert(m.speaker.as_str()) {
            authors.push(m.speaker.clone());
        }
    }
    let created_at = conv
        .session_time
        .or_else(|| conv.messages.iter().find_map(|m| m.timestamp));
    Converted {
        representation: Representation { markdown, turns },
        metadata: ExtractedMetadata {
            title: None,
            authors,
            created_at,
            language: None,
        },
    }
}

// ---------------------------------------------------------------------------
// Markdown and HTML
// ---------------------------------------------------------------------------

/// The plain text of the first level-1 heading, else (if `any_level`) of the first heading.
fn markdown_title(markdown: &str, any_level: bool) -> Option<String> {
    let mut first_any: Option<String> = None;
    let mut current: Option<(HeadingLevel, usize)> = None;
    for (event, range) in Parser::new_ext(markdown, markdown_options()).into_offset_iter() {
        match event {
            Event::Start(Tag::Heading { level, .. }) => current = Some((level, range.start)),
            Event::End(TagEnd::Heading(_)) => {
                let Some((level, start)) = current.take() else {
                    continue;
                };
                let title = markdown
                    .get(start..range.end)
                    .map(plain_text)
                    .unwrap_or_default();
                if title.is_empty() {
                    continue;
                }
                if level == HeadingLevel::H1 {
                    return Some(title);
                }
                if first_any.is_none() {
                    first_any = Some(title);
                }
            }
            _ => {}
        }
    }
    if any_level { first_any } else { None }
}

/// The deepest DOM nesting handed to htmd, whose tree walk is recursive.
/// Below this depth every element is flattened into its leaves (text and
/// empty elements, in document order) so hostile nesting cannot overflow the
/// stack; real pages rarely nest this deep.
const MAX_HTML_DEPTH: usize = 64;

/// Flatten every subtree rooted deeper than [`MAX_HTML_DEPTH`] (iteratively).
fn flatten_deep_html(root: &Rc<htmd::Node>) {
    let mut stack: Vec<(Rc<htmd::Node>, usize)> = vec![(Rc::clone(root), 0)];
    while let Some((node, depth)) = stack.pop() {
        if depth < MAX_HTML_DEPTH {
            for child in node.children.borrow().iter() {
                stack.push((Rc::clone(child), depth + 1));
            }
            continue;
        }
        if node
            .children
            .borrow()
            .iter()
            .all(|c| c.children.borrow().is_empty())
        {
            continue;
        }
        // Collect the leaves under `node` in document order.
        let mut leaves: Vec<Rc<htmd::Node>> = Vec::new();
        let mut pending: Vec<Rc<htmd::Node>> =
            node.children.borrow().iter().rev().cloned().collect();
        while let Some(n) = pending.pop() {
            let children = n.children.borrow();
            if children.is_empty() {
                leaves.push(Rc::clone(&n));
            } else {
                pending.extend(children.iter().rev().cloned());
            }
        }
        for leaf in &leaves {
            leaf.parent.set(Some(Rc::downgrade(&node)));
        }
        let old = std::mem::replace(&mut *node.children.borrow_mut(), leaves);
        drop(old);
    }
}

#[derive(Default)]
struct HtmlMeta {
    title: Option<String>,
    language: Option<String>,
}

fn html_to_markdown(html: &str) -> Result<(String, HtmlMeta), Error> {
    use htmd::element_handler::{HandlerResult, Handlers};
    use htmd::{Element, HtmlToMarkdown};

    let meta = Arc::new(Mutex::new(HtmlMeta::default()));
    let title_meta = Arc::clone(&meta);
    let lang_meta = Arc::clone(&meta);
    let converter = HtmlToMarkdown::builder()
        .skip_tags(vec!["script", "style", "template", "noscript"])
        // Walk <head> only to find <title>; emit nothing from it.
        .add_handler(
            vec!["head"],
            |handlers: &dyn Handlers, element: Element<'_>| -> Option<HandlerResult> {
                let _ = handlers.walk_children(element.node);
                None
            },
        )
        .add_handler(
            vec!["title"],
            move |handlers: &dyn Handlers, element: Element<'_>| -> Option<HandlerResult> {
                let text = plain_text(&handlers.walk_children(element.node).content);
                if let Ok(mut m) = title_meta.lock()
                    && m.title.is_none()
                    && !text.is_empty()
                {
                    m.title = Some(text);
                }
                None
            },
        )
        .add_handler(
            vec!["html"],
            move |handlers: &dyn Handlers, element: Element<'_>| -> Option<HandlerResult> {
                let lang = element
                    .attrs
                    .iter()
                    .find(|a| (*a.name.local).eq_ignore_ascii_case("lang"))
                    .map(|a| a.value.trim().to_string())
                    .filter(|l| !l.is_empty());
                if let (Some(lang), Ok(mut m)) = (lang, lang_meta.lock())
                    && m.language.is_none()
                {
                    m.language = Some(lang);
                }
                handlers.fallback(element)
            },
        )
        .build();
    let tree = converter.html_to_tree(html).map_err(|e| {
        err(
            ErrorCode::InvalidInput,
            format!("HTML conversion failed: {e}"),
        )
    })?;
    flatten_deep_html(&tree);
    let markdown = converter.tree_to_markdown(&tree);
    drop(tree);
    drop(converter);
    let meta = match Arc::try_unwrap(meta) {
        Ok(m) => m.into_inner().unwrap_or_else(|p| p.into_inner()),
        Err(shared) => {
            let guard = shared.lock().unwrap_or_else(|p| p.into_inner());
            HtmlMeta {
                title: guard.title.clone(),
                language: guard.language.clone(),
            }
        }
    };
    Ok((normalize_newlines(&markdown), meta))
}

// ---------------------------------------------------------------------------
// JSON and NDJSON
// ---------------------------------------------------------------------------

/// A key or string value on one line: line breaks (and the spaces around them) become one space.
fn one_line(s: &str) -> String {
    let s = no_nul(s);
    if !s.contains(['\n', '\r']) {
        return s.into_owned();
    }
    s.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Whether a value renders as a single list item (scalars, `{}` and `[]`).
fn is_leaf(v: &Value) -> bool {
    match v {
        Value::Object(m) => m.is_empty(),
        Value::Array(a) => a.is_empty(),
        _ => true,
    }
}

fn leaf_text(v: &Value) -> String {
    match v {
        Value::Null => "null".to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => one_line(s),
        Value::Object(_) => "{}".to_string(),
        Value::Array(_) => "[]".to_string(),
    }
}

/// Refuse JSON nested deeper than [`MAX_JSON_DEPTH`] before parsing it.
fn check_json_depth(text: &str, what: &str) -> Result<(), Error> {
    if json_nesting_exceeds(text, MAX_JSON_DEPTH) {
        return Err(too_large(format!(
            "{what} nests arrays and objects more than {MAX_JSON_DEPTH} levels deep"
        )));
    }
    Ok(())
}

/// Records of a top-level array (or NDJSON lines) that render smaller than this
/// share one `## Records a–b` section, so tiny records do not each become a
/// section (and so a chunk) of their own.
const RECORD_GROUP_BYTES: usize = 4096;

/// Markdown rendered from one JSON source, refused as soon as it outgrows
/// [`json_render_limit`] of the input: memory and every later stage stay linear
/// in the bytes the caller sent.
struct JsonRender {
    out: String,
    limit: usize,
    input: usize,
}

impl JsonRender {
    fn new(input: usize) -> Self {
        JsonRender {
            out: String::new(),
            limit: json_render_limit(input),
            input,
        }
    }

    fn over(&self) -> Error {
        too_large(format!(
            "the document renders to more than {} bytes of text ({JSON_RENDER_FACTOR}x its {} bytes plus a margin): flatten its nesting or split it",
            self.limit, self.input
        ))
    }

    fn push(out: &mut String, limit: usize, s: &str) -> Result<(), ()> {
        if out.len() + s.len() > limit {
            return Err(());
        }
        out.push_str(s);
        Ok(())
    }
}

/// Leaves share one list item (joined by ` · `) until it reaches this size: every
/// list item is a block, and chunks restart every few blocks, so one item per
/// tiny leaf would make chunks follow the number of leaves instead of the bytes.
const LEAF_ITEM_BYTES: usize = 256;

/// One `path: value` leaf (or `value` at the root), appended to the current
/// `- ` list item or starting the next one.
fn push_leaf(out: &mut String, limit: usize, path: &str, v: &Value) -> Result<(), ()> {
    let text = leaf_text(v);
    let leaf = if path.is_empty() {
        text
    } else {
        format!("{path}: {text}")
    };
    let leaf = leaf.trim_end();
    // Leaf text is on one line, so the current item is everything after the last line break.
    let item_len = out.len() - out.rfind('\n').map_or(0, |i| i + 1);
    let sep = if out.is_empty() {
        "- "
    } else if item_len + leaf.len() < LEAF_ITEM_BYTES {
        " · "
    } else {
        "\n- "
    };
    JsonRender::push(out, limit, sep)?;
    JsonRender::push(out, limit, leaf)
}

enum LeafError {
    /// The rendered text outgrew its limit.
    Budget,
    /// A key path outgrew [`MAX_JSON_KEY_PATH_BYTES`]; the path's tail.
    Path(String),
}

impl From<()> for LeafError {
    fn from(_: ()) -> Self {
        LeafError::Budget
    }
}

/// Every leaf under `v` as `- path.to.leaf: value` (array indices as `[i]`),
/// `path` extended in place. Recursion is bounded by [`MAX_JSON_DEPTH`] (checked
/// before parsing) and each path by [`MAX_JSON_KEY_PATH_BYTES`].
fn flatten(v: &Value, path: &mut String, out: &mut String, limit: usize) -> Result<(), LeafError> {
    let restore = path.len();
    match v {
        Value::Object(map) if !map.is_empty() => {
            for (k, child) in map {
                if !path.is_empty() {
                    path.push('.');
                }
                path.push_str(&one_line(k));
                check_path(path)?;
                flatten(child, path, out, limit)?;
                path.truncate(restore);
            }
        }
        Value::Array(items) if !items.is_empty() => {
            for (i, child) in items.iter().enumerate() {
                path.push('[');
                path.push_str(&i.to_string());
                path.push(']');
                check_path(path)?;
                flatten(child, path, out, limit)?;
                path.truncate(restore);
            }
        }
        leaf => push_leaf(out, limit, path, leaf)?,
    }
    Ok(())
}

fn check_path(path: &str) -> Result<(), LeafError> {
    if path.len() > MAX_JSON_KEY_PATH_BYTES {
        let mut cut = path.len() - 60;
        while !path.is_char_boundary(cut) {
            cut += 1;
        }
        return Err(LeafError::Path(path[cut..].to_string()));
    }
    Ok(())
}

impl JsonRender {
    fn leaves(&self, v: &Value, root: &str, out: &mut String) -> Result<(), Error> {
        let mut path = root.to_string();
        let limit = self.limit.saturating_sub(self.out.len());
        flatten(v, &mut path, out, limit).map_err(|e| match e {
            LeafError::Budget => self.over(),
            LeafError::Path(tail) => too_large(format!(
                "a key path is longer than {MAX_JSON_KEY_PATH_BYTES} bytes (ending `…{tail}`): shorten the keys or the nesting"
            )),
        })
    }

    fn section(&mut self, heading: &str, body: &str) -> Result<(), Error> {
        let sep = if self.out.is_empty() { "" } else { "\n\n" };
        let text = format!("{sep}## {heading}\n\n{body}");
        Self::push(&mut self.out, self.limit, &text).map_err(|_| self.over())
    }

    /// A top-level object: its leaf fields as items first, then one `## key`
    /// section per nested object or array.
    fn object(&mut self, map: &Map<String, Value>) -> Result<(), Error> {
        let mut scalars = String::new();
        for (k, v) in map.iter().filter(|(_, v)| is_leaf(v)) {
            self.leaves(v, &one_line(k), &mut scalars)?;
        }
        if !scalars.is_empty() {
            Self::push(&mut self.out, self.limit, &scalars).map_err(|_| self.over())?;
        }
        for (k, v) in map.iter().filter(|(_, v)| !is_leaf(v)) {
            let key = one_line(k);
            if key.len() > MAX_JSON_KEY_PATH_BYTES {
                return Err(too_large(format!(
                    "a key is longer than {MAX_JSON_KEY_PATH_BYTES} bytes: shorten it"
                )));
            }
            let mut body = String::new();
            self.leaves(v, "", &mut body)?;
            self.section(&key, &body)?;
        }
        Ok(())
    }

    /// Records (a top-level array's elements, NDJSON lines), numbered from 1. A
    /// record that renders to [`RECORD_GROUP_BYTES`] or more gets its own
    /// `## Record N` section; runs of smaller ones share a `## Records a–b`
    /// section, each leaf's path rooted at `#N`.
    fn records<'a>(&mut self, records: impl Iterator<Item = &'a Value>) -> Result<(), Error> {
        let mut group = String::new();
        let mut group_first = 0usize;
        let mut group_last = 0usize;
        for (i, v) in records.enumerate() {
            let n = i + 1;
            let mut body = String::new();
            self.leaves(v, "", &mut body)?;
            if body.len() >= RECORD_GROUP_BYTES {
                self.flush_group(&mut group, group_first, group_last)?;
                self.section(&format!("Record {n}"), &body)?;
                continue;
            }
            if group.is_empty() {
                group_first = n;
            }
            group_last = n;
            // Rendered again with the record's number in every path; bounded by
            // RECORD_GROUP_BYTES plus the prefixes, so linear overall.
            self.leaves(v, &format!("#{n}"), &mut group)?;
            if group.len() >= RECORD_GROUP_BYTES {
                self.flush_group(&mut group, group_first, group_last)?;
            }
        }
        self.flush_group(&mut group, group_first, group_last)
    }

    fn flush_group(&mut self, group: &mut String, first: usize, last: usize) -> Result<(), Error> {
        if group.is_empty() {
            return Ok(());
        }
        let heading = if first == last {
            format!("Record {first}")
        } else {
            format!("Records {first}–{last}")
        };
        self.section(&heading, group)?;
        group.clear();
        Ok(())
    }
}

fn render_json(v: &Value, input: usize) -> Result<String, Error> {
    let mut r = JsonRender::new(input);
    match v {
        Value::Object(map) => r.object(map)?,
        Value::Array(items) => r.records(items.iter())?,
        scalar => {
            let text = leaf_text(scalar);
            JsonRender::push(&mut r.out, r.limit, &text).map_err(|_| r.over())?;
        }
    }
    Ok(r.out)
}

fn json_title(v: &Value) -> Option<String> {
    let Value::Object(map) = v else { return None };
    ["title", "name"].iter().find_map(|k| match map.get(*k) {
        Some(Value::String(s)) if !s.trim().is_empty() => Some(one_line(s.trim())),
        _ => None,
    })
}

// ---------------------------------------------------------------------------
// Entry point
// ---------------------------------------------------------------------------

/// Convert source bytes of `format` to the canonical Markdown representation.
///
/// Text formats must be valid UTF-8 ([`ErrorCode::InvalidUtf8`]) and not
/// blank ([`ErrorCode::EmptyInput`]); a leading BOM is stripped and CRLF/CR
/// become LF.
///
/// - Markdown and Text: the text as is.
/// - Html: converted with htmd; `<head>`, scripts and styles dropped.
/// - Json: a top-level object renders its scalar fields as `- key: value`
///   items first, then one `## key` section per nested object/array listing
///   its leaves as `- path.to.leaf: value` (indices as `[i]`); a top-level
///   array renders its elements as records: one `## Record N` section for a
///   record of 4 KiB or more, runs of smaller records sharing a
///   `## Records a–b` section with their paths rooted at `#N`. Strings are raw,
///   line breaks in them become spaces. Invalid JSON is
///   [`ErrorCode::InvalidInput`]; nesting deeper than
///   [`MAX_JSON_DEPTH`](crate::limits::MAX_JSON_DEPTH), a key path longer than
///   [`MAX_JSON_KEY_PATH_BYTES`] or a rendering larger than
///   [`json_render_limit`] of the input is [`ErrorCode::TooLarge`].
/// - Ndjson: one record per non-empty line, rendered as a top-level array's
///   elements; a bad line is [`ErrorCode::InvalidInput`] naming the line number.
/// - Conversation: see [`parse_conversation`]; each message becomes one turn
///   `Speaker: text` (blank lines inside the text dropped so it stays one
///   paragraph), turns separated by one blank line, each with its exact span
///   and its time (message timestamp, else session time, else
///   `fallback_time`).
///
/// A conversion that leaves no text is [`ErrorCode::EmptyInput`].
pub fn convert(
    format: SourceFormat,
    bytes: &[u8],
    fallback_time: Option<Timestamp>,
) -> Result<Converted, Error> {
    let plain = |markdown: String| Representation {
        markdown,
        turns: Vec::new(),
    };
    match format {
        SourceFormat::Markdown | SourceFormat::Text => {
            let what = if format == SourceFormat::Markdown {
                "Markdown"
            } else {
                "text"
            };
            let markdown = decode_text(bytes, what)?;
            let title = markdown_title(&markdown, true);
            Ok(Converted {
                representation: plain(markdown),
                metadata: ExtractedMetadata {
                    title,
                    ..ExtractedMetadata::default()
                },
            })
        }
        SourceFormat::Html => {
            let html = decode_text(bytes, "HTML")?;
            let (markdown, meta) = html_to_markdown(&html)?;
            let markdown = non_empty(markdown, "HTML")?;
            let title = meta.title.or_else(|| markdown_title(&markdown, false));
            Ok(Converted {
                representation: plain(markdown),
                metadata: ExtractedMetadata {
                    title,
                    language: meta.language,
                    ..ExtractedMetadata::default()
                },
            })
        }
        SourceFormat::Json => {
            let text = decode_text(bytes, "JSON")?;
            check_json_depth(&text, "the JSON document")?;
            let value: Value = serde_json::from_str(&text)
                .map_err(|e| err(ErrorCode::InvalidInput, format!("invalid JSON: {e}")))?;
            let markdown = non_empty(render_json(&value, bytes.len())?, "JSON document")?;
            Ok(Converted {
                representation: plain(markdown),
                metadata: ExtractedMetadata {
                    title: json_title(&value),
                    ..ExtractedMetadata::default()
                },
            })
        }
        SourceFormat::Ndjson => {
            let text = decode_text(bytes, "NDJSON")?;
            let mut values: Vec<Value> = Vec::new();
            for (i, line) in text.split('\n').enumerate() {
                if line.trim().is_empty() {
                    continue;
                }
                check_json_depth(line, &format!("NDJSON line {}", i + 1))?;
                let value: Value = serde_json::from_str(line).map_err(|e| {
                    err(
                        ErrorCode::InvalidInput,
                        format!("invalid JSON on NDJSON line {}: {e}", i + 1),
                    )
                })?;
                values.push(value);
            }
            let mut r = JsonRender::new(bytes.len());
            r.records(values.iter())?;
            let markdown = non_empty(r.out, "NDJSON")?;
            Ok(Converted {
                representation: plain(markdown),
                metadata: ExtractedMetadata::default(),
            })
        }
        SourceFormat::Conversation => {
            let conv = parse_conversation(bytes)?;
            Ok(render_conversation(&conv, fallback_time))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn ts(s: &str) -> Timestamp {
        parse_rfc3339(s).expect("test timestamp")
    }

    fn code_of(r: Result<impl std::fmt::Debug, Error>) -> ErrorCode {
        match r {
            Ok(v) => panic!("expected an error, got {v:?}"),
            Err(e) => e.code(),
        }
    }

    fn md(format: SourceFormat, input: &str) -> String {
        convert(format, input.as_bytes(), None)
            .expect("converts")
            .representation
            .markdown
    }

    #[test]
    fn markdown_title_and_normalization() {
        let c = convert(
            SourceFormat::Markdown,
            "\u{feff}## Intro\r\n\r\n# The *Real* Title\rbody\n".as_bytes(),
            None,
        )
        .expect("converts");
        assert_eq!(
            c.representation.markdown,
            "## Intro\n\n# The *Real* Title\nbody\n"
        );
        assert_eq!(c.metadata.title.as_deref(), Some("The Real Title"));
        assert!(c.representation.turns.is_empty());
        let c = convert(SourceFormat::Markdown, b"### Only h3\n\ntext", None).expect("converts");
        assert_eq!(c.metadata.title.as_deref(), Some("Only h3"));
        let c = convert(SourceFormat::Text, b"just text", None).expect("converts");
        assert_eq!(c.representation.markdown, "just text");
        assert_eq!(c.metadata.title, None);
    }

    #[test]
    fn text_errors() {
        for f in [
            SourceFormat::Markdown,
            SourceFormat::Text,
            SourceFormat::Html,
            SourceFormat::Json,
            SourceFormat::Ndjson,
            SourceFormat::Conversation,
        ] {
            assert_eq!(
                code_of(convert(f, b"\xff\xfe oops", None)),
                ErrorCode::InvalidUtf8
            );
            assert_eq!(code_of(convert(f, b"  \n\t ", None)), ErrorCode::EmptyInput);
            assert_eq!(
                code_of(convert(f, b"\xef\xbb\xbf\n", None)),
                ErrorCode::EmptyInput
            );
        }
    }

    #[test]
    fn html_to_markdown_with_title_and_lang() {
        let html = "<!DOCTYPE html><html lang=\"fr-CA\"><head><title>Page &amp; *Title*</title>\
            <style>body{color:red}</style><script>var x = 1;</script></head>\
            <body><h1>Main</h1><p>Hello <b>world</b> — ünïcödé.</p>\
            <ul><li>one</li><li>two</li></ul><script>alert('no')</script></body></html>";
        let c = convert(SourceFormat::Html, html.as_bytes(), None).expect("converts");
        let m = &c.representation.markdown;
        assert!(m.starts_with("# Main"), "{m}");
        assert!(m.contains("Hello **world** — ünïcödé."), "{m}");
        assert!(m.contains("one") && m.contains("two"), "{m}");
        for banned in ["color", "var x", "alert", "Page"] {
            assert!(!m.contains(banned), "{banned} leaked into {m}");
        }
        assert_eq!(c.metadata.title.as_deref(), Some("Page & *Title*"));
        assert_eq!(c.metadata.language.as_deref(), Some("fr-CA"));
        assert!(c.representation.turns.is_empty());
    }

    #[test]
    fn html_title_falls_back_to_h1_and_empty_html_is_refused() {
        let c = convert(
            SourceFormat::Html,
            b"<body><h2>Sub</h2><h1>Heading <i>One</i></h1></body>",
            None,
        )
        .expect("converts");
        assert_eq!(c.metadata.title.as_deref(), Some("Heading One"));
        assert_eq!(c.metadata.language, None);
        assert_eq!(
            code_of(convert(
                SourceFormat::Html,
                b"<html><head><title>x</title></head><body><script>1</script></body></html>",
                None
            )),
            ErrorCode::EmptyInput
        );
    }

    #[test]
    fn deeply_nested_html_is_flattened_not_overflowing() {
        for (open, close) in [
            ("<blockquote>", "</blockquote>"),
            ("<div><b>", "</b></div>"),
        ] {
            let html = format!(
                "<p>top</p>{}deep text é🎉{}<p>after</p>",
                open.repeat(1500),
                close.repeat(1500)
            );
            let c = convert(SourceFormat::Html, html.as_bytes(), None).expect("converts");
            let m = &c.representation.markdown;
            assert!(m.contains("deep text é🎉"), "{m}");
            assert!(m.contains("top") && m.contains("after"), "{m}");
            assert!(m.matches('>').count() <= MAX_HTML_DEPTH, "{m}");
        }
    }

    #[test]
    fn json_object_rendering() {
        let input = r#"{"a": {"b": 1, "c": [true, null, {"d": "x\ny"}]}, "empty": [], "name": "Widget", "price": 9.5}"#;
        let c = convert(SourceFormat::Json, input.as_bytes(), None).expect("converts");
        assert_eq!(
            c.representation.markdown,
            "- empty: [] · name: Widget · price: 9.5\n\n## a\n\n- b: 1 · c[0]: true · c[1]: null · c[2].d: x y"
        );
        assert_eq!(c.metadata.title.as_deref(), Some("Widget"));
        let c =
            convert(SourceFormat::Json, br#"{"name": "n", "title": "T"}"#, None).expect("converts");
        assert_eq!(c.metadata.title.as_deref(), Some("T"));
    }

    #[test]
    fn json_array_and_scalars() {
        assert_eq!(
            md(SourceFormat::Json, r#"[{"k": "v"}, {"n": [1, 2]}, "s"]"#),
            "## Records 1–3\n\n- #1.k: v · #2.n[0]: 1 · #2.n[1]: 2 · #3: s"
        );
        assert_eq!(md(SourceFormat::Json, "\"hello 🎉\""), "hello 🎉");
        assert_eq!(
            code_of(convert(SourceFormat::Json, b"{", None)),
            ErrorCode::InvalidInput
        );
        assert_eq!(
            code_of(convert(SourceFormat::Json, b"{}", None)),
            ErrorCode::EmptyInput
        );
    }

    #[test]
    fn ndjson_rendering_and_errors() {
        assert_eq!(
            md(
                SourceFormat::Ndjson,
                "{\"a\": 1}\r\n\n{\"b\": {\"c\": \"é\"}}\n"
            ),
            "## Records 1–2\n\n- #1.a: 1 · #2.b.c: é"
        );
        match convert(SourceFormat::Ndjson, b"{\"a\":1}\n\n{bad}\n", None) {
            Err(e) => {
                assert_eq!(e.code(), ErrorCode::InvalidInput);
                assert!(e.to_string().contains("line 3"), "{e}");
            }
            Ok(c) => panic!("accepted {c:?}"),
        }
    }

    #[test]
    fn large_records_get_their_own_section_small_ones_share_one() {
        let big = "x".repeat(RECORD_GROUP_BYTES);
        let input = serde_json::json!([{"a": 1}, {"b": big}, {"c": 2}, {"d": 3}]).to_string();
        let m = md(SourceFormat::Json, &input);
        assert_eq!(
            m,
            format!(
                "## Record 1\n\n- #1.a: 1\n\n## Record 2\n\n- b: {big}\n\n## Records 3–4\n\n- #3.c: 2 · #4.d: 3"
            )
        );
        // 7,500 tiny records: sections (hence chunks) grow with the bytes, not the count.
        let tiny: Vec<Value> = (0..7500).map(|i| serde_json::json!([i % 10])).collect();
        let bytes = serde_json::to_vec(&tiny).expect("serializes");
        let m = convert(SourceFormat::Json, &bytes, None)
            .expect("converts")
            .representation
            .markdown;
        let sections = m.matches("## Record").count();
        assert!(sections <= 1 + m.len() / RECORD_GROUP_BYTES, "{sections}");
        assert!(m.len() <= json_render_limit(bytes.len()));
        assert!(m.ends_with(" · #7500[0]: 9"), "{}", &m[m.len() - 40..]);
        // Leaves share list items (blocks) up to a size, so blocks follow the bytes too.
        for line in m.lines().filter(|l| l.starts_with("- ")) {
            assert!(line.len() < LEAF_ITEM_BYTES + 32, "{line}");
        }
        assert!(m.lines().filter(|l| l.starts_with("- ")).count() < m.len() / 200);
    }

    #[test]
    fn json_amplifiers_are_refused_with_too_large() {
        // Ten nested 800-byte keys over 5,000 leaves: every leaf would repeat the
        // 8 KB path (about 40 MB of Markdown from 18 KB).
        let mut doc = serde_json::json!(vec![0; 5000]);
        for level in 0..10u8 {
            let key = char::from(b'a' + level).to_string().repeat(800);
            doc = serde_json::json!({ key: doc });
        }
        let bytes = serde_json::to_vec(&doc).expect("serializes");
        let e = convert(SourceFormat::Json, &bytes, None).unwrap_err();
        assert_eq!(e.code(), ErrorCode::TooLarge, "{e}");
        // The same shape with short keys but a long path under the limit renders,
        // bounded by the render limit; past the key-path limit it is refused.
        let deep_key = |n: usize| {
            let mut v = serde_json::json!(1);
            for _ in 0..n {
                v = serde_json::json!({ "k".repeat(40): v });
            }
            serde_json::to_vec(&serde_json::json!({ "root": v })).expect("serializes")
        };
        assert!(convert(SourceFormat::Json, &deep_key(12), None).is_ok());
        let e = convert(SourceFormat::Json, &deep_key(13), None).unwrap_err();
        assert_eq!(e.code(), ErrorCode::TooLarge);
        assert!(e.to_string().contains("key path"), "{e}");
        // Many leaves with paths just under the limit: refused by the render limit.
        let mut wide = serde_json::Map::new();
        for i in 0..2000 {
            wide.insert(format!("{i}"), serde_json::json!(0));
        }
        let mut v = Value::Object(wide);
        for _ in 0..11 {
            v = serde_json::json!({ "k".repeat(40): v });
        }
        let bytes = serde_json::to_vec(&serde_json::json!({ "root": v })).expect("serializes");
        let e = convert(SourceFormat::Json, &bytes, None).unwrap_err();
        assert_eq!(e.code(), ErrorCode::TooLarge);
        assert!(e.to_string().contains("renders to more than"), "{e}");
    }

    #[test]
    fn json_nesting_past_the_limit_is_too_large_for_every_json_format() {
        let ok = format!(
            "{}1{}",
            "[".repeat(MAX_JSON_DEPTH),
            "]".repeat(MAX_JSON_DEPTH)
        );
        assert!(convert(SourceFormat::Json, ok.as_bytes(), None).is_ok());
        let deep = format!(
            "{}1{}",
            "[".repeat(MAX_JSON_DEPTH + 1),
            "]".repeat(MAX_JSON_DEPTH + 1)
        );
        let bomb = "[".repeat(100_000);
        for input in [&deep, &bomb] {
            for f in [
                SourceFormat::Json,
                SourceFormat::Ndjson,
                SourceFormat::Conversation,
            ] {
                let e = convert(f, input.as_bytes(), None).unwrap_err();
                assert_eq!(e.code(), ErrorCode::TooLarge, "{f:?}: {e}");
            }
        }
    }

    #[test]
    fn nul_never_reaches_the_markdown() {
        for (format, input) in [
            (SourceFormat::Markdown, "a\0b".to_string()),
            (SourceFormat::Text, "a\0b".to_string()),
            (SourceFormat::Html, "<p>a\0b &#0;</p>".to_string()),
            (SourceFormat::Json, r#"{"k\u0000": "a\u0000b"}"#.to_string()),
            (SourceFormat::Ndjson, r#"["a\u0000b"]"#.to_string()),
            (
                SourceFormat::Conversation,
                r#"[{"speaker": "A\u0000", "text": "a\u0000b", "event_id": "e\u0000"}]"#
                    .to_string(),
            ),
        ] {
            let c = convert(format, input.as_bytes(), None).expect("converts");
            let m = &c.representation.markdown;
            assert!(
                !m.contains('\0') && m.contains('\u{fffd}'),
                "{format:?}: {m:?}"
            );
            for t in &c.representation.turns {
                assert!(!t.speaker.contains('\0'));
                assert!(!t.event_id.as_deref().unwrap_or_default().contains('\0'));
            }
        }
    }

    #[test]
    fn duplicate_event_ids_identical_merge_different_refuse() {
        let input = r#"[{"event_id": "e1", "speaker": "Ann", "text": "hi"},
                        {"event_id": "e2", "speaker": "Bob", "text": "yo"},
                        {"event_id": "e1", "speaker": "Ann", "text": "hi"}]"#;
        let c = convert(SourceFormat::Conversation, input.as_bytes(), None).expect("converts");
        assert_eq!(c.representation.markdown, "Ann: hi\n\nBob: yo");
        assert_eq!(c.representation.turns.len(), 2);
        let input = r#"[{"event_id": 7, "speaker": "Ann", "text": "hi"},
                        {"event_id": "7", "speaker": "Ann", "text": "bye"}]"#;
        let e = parse_conversation(input.as_bytes()).unwrap_err();
        assert_eq!(e.code(), ErrorCode::InvalidConversation);
        assert!(e.to_string().contains("event_id `7`"), "{e}");
        // Messages without event ids are never merged.
        let c = convert(
            SourceFormat::Conversation,
            br#"[{"speaker": "A", "text": "x"}, {"speaker": "A", "text": "x"}]"#,
            None,
        )
        .expect("converts");
        assert_eq!(c.representation.turns.len(), 2);
    }

    #[test]
    fn conversation_caps_on_messages_and_speakers() {
        let msgs = |n: usize, speakers: usize| {
            let v: Vec<Value> = (0..n)
                .map(|i| serde_json::json!({"speaker": format!("S{}", i % speakers), "text": "t"}))
                .collect();
            serde_json::to_vec(&v).expect("serializes")
        };
        // Distinct speakers on every message up to the cap: linear (sets, not lists).
        let c = convert(
            SourceFormat::Conversation,
            &msgs(MAX_CONVERSATION_SPEAKERS, MAX_CONVERSATION_SPEAKERS),
            None,
        )
        .expect("converts");
        assert_eq!(c.metadata.authors.len(), MAX_CONVERSATION_SPEAKERS);
        assert_eq!(c.metadata.authors[17], "S17");
        let e = convert(
            SourceFormat::Conversation,
            &msgs(MAX_CONVERSATION_SPEAKERS + 1, MAX_CONVERSATION_SPEAKERS + 1),
            None,
        )
        .unwrap_err();
        assert_eq!(e.code(), ErrorCode::TooLarge);
        assert!(e.to_string().contains("speakers"), "{e}");
        let c = convert(
            SourceFormat::Conversation,
            &msgs(MAX_CONVERSATION_MESSAGES, 7),
            None,
        )
        .expect("converts");
        assert_eq!(c.representation.turns.len(), MAX_CONVERSATION_MESSAGES);
        let e = convert(
            SourceFormat::Conversation,
            &msgs(MAX_CONVERSATION_MESSAGES + 1, 7),
            None,
        )
        .unwrap_err();
        assert_eq!(e.code(), ErrorCode::TooLarge);
        assert!(e.to_string().contains("messages"), "{e}");
    }

    #[test]
    fn conversation_bare_array_and_spans() {
        let input = r#"[{"speaker": "Ann", "text": "Hi there\n\n\nsecond line  "},
                        {"speaker": " Bob  Smith ", "text": "Hello 🎉", "extra": 1}]"#;
        let c = convert(SourceFormat::Conversation, input.as_bytes(), None).expect("converts");
        let m = &c.representation.markdown;
        assert_eq!(m, "Ann: Hi there\nsecond line\n\nBob Smith: Hello 🎉");
        let spans: Vec<&str> = c
            .representation
            .turns
            .iter()
            .map(|t| &m[t.start..t.end])
            .collect();
        assert_eq!(
            spans,
            vec!["Ann: Hi there\nsecond line", "Bob Smith: Hello 🎉"]
        );
        assert_eq!(c.metadata.authors, vec!["Ann", "Bob Smith"]);
        assert_eq!(c.metadata.title, None);
        assert_eq!(c.metadata.created_at, None);
    }

    #[test]
    fn conversation_object_form_event_ids_and_time_fallback() {
        let input = r#"{"session_time": "2024-01-02T03:04:05Z", "ignored": true, "messages": [
            {"event_id": 42, "speaker": "Ann", "text": "a", "timestamp": "2024-05-01T12:00:00+02:00"},
            {"event_id": "e-2", "speaker": "Bob", "text": "b"},
            {"event_id": 1.5, "speaker": "Ann", "text": "c"}]}"#;
        let conv = parse_conversation(input.as_bytes()).expect("parses");
        let ids: Vec<_> = conv.messages.iter().map(|m| m.event_id.clone()).collect();
        assert_eq!(
            ids,
            vec![Some("42".into()), Some("e-2".into()), Some("1.5".into())]
        );
        let fallback = ts("2000-01-01T00:00:00Z");
        let c = convert(SourceFormat::Conversation, input.as_bytes(), Some(fallback))
            .expect("converts");
        let times: Vec<_> = c.representation.turns.iter().map(|t| t.timestamp).collect();
        assert_eq!(
            times,
            vec![
                Some(ts("2024-05-01T10:00:00Z")),
                Some(ts("2024-01-02T03:04:05Z")),
                Some(ts("2024-01-02T03:04:05Z"))
            ]
        );
        assert_eq!(c.metadata.created_at, Some(ts("2024-01-02T03:04:05Z")));
        assert_eq!(c.metadata.authors, vec!["Ann", "Bob"]);
        assert_eq!(c.representation.turns[0].event_id.as_deref(), Some("42"));

        // Without a session time: message timestamp, else the fallback.
        let input = r#"[{"speaker": "A", "text": "x"}, {"speaker": "B", "text": "y", "timestamp": "2024-05-01T12:00:00Z"}]"#;
        let c = convert(SourceFormat::Conversation, input.as_bytes(), Some(fallback))
            .expect("converts");
        let times: Vec<_> = c.representation.turns.iter().map(|t| t.timestamp).collect();
        assert_eq!(
            times,
            vec![Some(fallback), Some(ts("2024-05-01T12:00:00Z"))]
        );
        assert_eq!(c.metadata.created_at, Some(ts("2024-05-01T12:00:00Z")));
        let c = convert(SourceFormat::Conversation, input.as_bytes(), None).expect("converts");
        assert_eq!(c.representation.turns[0].timestamp, None);
    }

    #[test]
    fn conversation_errors() {
        let cases: &[(&[u8], ErrorCode, &str)] = &[
            (b"\xc3\x28", ErrorCode::InvalidUtf8, "UTF-8"),
            (b"   ", ErrorCode::EmptyInput, "empty"),
            (
                b"not json",
                ErrorCode::InvalidConversation,
                "not valid JSON",
            ),
            (b"42", ErrorCode::InvalidConversation, "a number"),
            (b"{}", ErrorCode::InvalidConversation, "no \"messages\""),
            (
                br#"{"messages": {}}"#,
                ErrorCode::InvalidConversation,
                "must be an array",
            ),
            (b"[]", ErrorCode::InvalidConversation, "no messages"),
            (
                br#"{"messages": []}"#,
                ErrorCode::InvalidConversation,
                "no messages",
            ),
            (
                br#"[{"speaker": "a", "text": "b"}, {"speaker": "a", "text": "b"}, {"text": "x"}]"#,
                ErrorCode::InvalidConversation,
                "message 3 (messages[2]) has no speaker",
            ),
            (
                br#"[{"speaker": "  ", "text": "x"}]"#,
                ErrorCode::InvalidConversation,
                "empty speaker",
            ),
            (
                br#"[{"speaker": "a"}]"#,
                ErrorCode::InvalidConversation,
                "has no text",
            ),
            (
                br#"[{"speaker": "a", "text": " \n "}]"#,
                ErrorCode::InvalidConversation,
                "empty text",
            ),
            (
                br#"[{"speaker": "a", "text": 5}]"#,
                ErrorCode::InvalidConversation,
                "text must be a string",
            ),
            (
                br#"[{"speaker": "a", "text": "x", "timestamp": "yesterday"}]"#,
                ErrorCode::InvalidConversation,
                "timestamp",
            ),
            (
                br#"{"session_time": "soon", "messages": [{"speaker": "a", "text": "x"}]}"#,
                ErrorCode::InvalidConversation,
                "session_time",
            ),
            (
                br#"[{"speaker": "a", "text": "x", "event_id": [1]}]"#,
                ErrorCode::InvalidConversation,
                "event_id",
            ),
            (
                br#"["hi"]"#,
                ErrorCode::InvalidConversation,
                "must be an object",
            ),
        ];
        for (input, code, needle) in cases {
            match parse_conversation(input) {
                Ok(c) => panic!("accepted {c:?}"),
                Err(e) => {
                    assert_eq!(e.code(), *code, "{e}");
                    assert!(e.to_string().contains(needle), "{e:?} lacks {needle:?}");
                }
            }
        }
    }

    /// JSON values with conversation-shaped objects, hostile scalars and nesting.
    fn json_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(|n| serde_json::json!(n)),
            any::<f64>().prop_map(|f| serde_json::json!(f)),
            "[a-z \n\r\t\u{0}é東🎉\\\"#>*-]{0,16}".prop_map(Value::String),
        ];
        leaf.prop_recursive(6, 64, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                prop::collection::btree_map(
                    prop::sample::select(vec![
                        "speaker",
                        "text",
                        "event_id",
                        "messages",
                        "session_time",
                        "timestamp",
                        "title",
                        "name",
                        "a",
                        "",
                        "k\nk",
                    ]),
                    inner,
                    0..5
                )
                .prop_map(|m| Value::Object(
                    m.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
                )),
            ]
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn conversation_turn_spans_slice_exactly(
            msgs in prop::collection::vec(("[A-Za-zé]{1,6}", "[ a-zé東🎉.!?\n]{0,40}[a-z🎉]"), 1..12)
        ) {
            let messages: Vec<Value> = msgs
                .iter()
                .map(|(s, t)| serde_json::json!({"speaker": s, "text": t}))
                .collect();
            let bytes = serde_json::to_vec(&messages).expect("serializes");
            let c = convert(SourceFormat::Conversation, &bytes, None).expect("converts");
            let m = &c.representation.markdown;
            prop_assert_eq!(c.representation.turns.len(), msgs.len());
            let mut prev_end = 0;
            for (turn, (speaker, text)) in c.representation.turns.iter().zip(&msgs) {
                prop_assert!(turn.start >= prev_end);
                let slice = &m[turn.start..turn.end];
                prop_assert_eq!(slice, format!("{speaker}: {}", turn_text(text)));
                prop_assert!(!slice.contains("\n\n"));
                prev_end = turn.end;
            }
        }

        #[test]
        fn convert_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..80), f in 0usize..6) {
            let format = [
                SourceFormat::Markdown,
                SourceFormat::Text,
                SourceFormat::Html,
                SourceFormat::Json,
                SourceFormat::Ndjson,
                SourceFormat::Conversation,
            ][f];
            let _ = convert(format, &bytes, None);
        }

        #[test]
        fn json_formats_render_bounded_or_refuse_typed(v in json_value()) {
            let json = serde_json::to_vec(&v).expect("serializes");
            let ndjson: Vec<u8> = match &v {
                Value::Array(items) => items
                    .iter()
                    .flat_map(|i| {
                        let mut line = serde_json::to_vec(i).expect("serializes");
                        line.push(b'\n');
                        line
                    })
                    .collect(),
                other => serde_json::to_vec(other).expect("serializes"),
            };
            for (format, bytes) in [
                (SourceFormat::Json, &json),
                (SourceFormat::Ndjson, &ndjson),
                (SourceFormat::Conversation, &json),
            ] {
                match convert(format, bytes, None) {
                    Ok(c) => {
                        let m = &c.representation.markdown;
                        prop_assert!(!m.trim().is_empty() && !m.contains('\0'));
                        if format != SourceFormat::Conversation {
                            prop_assert!(m.len() <= json_render_limit(bytes.len()));
                        }
                        for t in &c.representation.turns {
                            prop_assert!(m.get(t.start..t.end).is_some());
                        }
                    }
                    Err(e) => prop_assert!(
                        matches!(
                            e.code(),
                            ErrorCode::TooLarge
                                | ErrorCode::InvalidInput
                                | ErrorCode::EmptyInput
                                | ErrorCode::InvalidConversation
                        ),
                        "{format:?}: {e}"
                    ),
                }
            }
        }

        #[test]
        fn text_formats_convert_any_string(s in any::<String>(), f in 0usize..3) {
            let format = [SourceFormat::Markdown, SourceFormat::Text, SourceFormat::Html][f];
            match convert(format, s.as_bytes(), None) {
                Ok(c) => prop_assert!(!c.representation.markdown.contains('\0')),
                Err(e) => prop_assert_eq!(e.code(), ErrorCode::EmptyInput, "{}", e),
            }
        }

        #[test]
        fn html_never_panics(s in "[<>a-z/ =\"'éü🎉&;#!-]{0,80}") {
            let _ = convert(SourceFormat::Html, s.as_bytes(), None);
        }
    }
}
