//! Deterministic text processing: conversion to Markdown, the blockizer,
//! sections with roles, the chunker and the lexical tokenizer.
//!
//! Every function here is pure: the same input gives the same output, byte for
//! byte, on every machine. Offsets are UTF-8 byte offsets into the
//! representation's Markdown unless a field says `char_`.

pub mod blockize;
pub mod chunk;
pub mod convert;
pub mod lexical;
pub mod sections;

use crate::time::Timestamp;
use serde::{Deserialize, Serialize};

pub use blockize::{BLOCKIZER_VERSION, blockize};
pub use chunk::{CHUNKER_VERSION, ChunkParams, ChunkPlan, chunk_document};
pub use convert::{CONVERTER_VERSION, Converted, ExtractedMetadata, convert, parse_conversation};
pub use lexical::{estimate_tokens, lexical_terms};
pub use sections::{SECTIONER_VERSION, build_sections};

/// The formats the engine converts. Anything else is stored and parked.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SourceFormat {
    /// CommonMark / GFM Markdown.
    Markdown,
    /// Plain UTF-8 text.
    Text,
    /// HTML, converted to Markdown.
    Html,
    /// One JSON document.
    Json,
    /// Newline-delimited JSON records.
    Ndjson,
    /// A conversation transcript (see [`Conversation`]).
    Conversation,
}

impl SourceFormat {
    /// The snake_case name.
    pub fn as_str(&self) -> &'static str {
        match self {
            SourceFormat::Markdown => "markdown",
            SourceFormat::Text => "text",
            SourceFormat::Html => "html",
            SourceFormat::Json => "json",
            SourceFormat::Ndjson => "ndjson",
            SourceFormat::Conversation => "conversation",
        }
    }
    /// Parse the snake_case name.
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "markdown" | "md" => SourceFormat::Markdown,
            "text" | "txt" => SourceFormat::Text,
            "html" | "htm" => SourceFormat::Html,
            "json" => SourceFormat::Json,
            "ndjson" | "jsonl" => SourceFormat::Ndjson,
            "conversation" => SourceFormat::Conversation,
            _ => return None,
        })
    }
    /// The MIME type recorded for stored bytes of this format.
    pub fn mime(&self) -> &'static str {
        match self {
            SourceFormat::Markdown => "text/markdown",
            SourceFormat::Text => "text/plain",
            SourceFormat::Html => "text/html",
            SourceFormat::Json => "application/json",
            SourceFormat::Ndjson => "application/x-ndjson",
            SourceFormat::Conversation => "application/vnd.rememberstack.conversation+json",
        }
    }
    /// The format a file extension names, if any (lowercase, without the dot).
    pub fn from_extension(ext: &str) -> Option<Self> {
        Some(match ext.to_ascii_lowercase().as_str() {
            "md" | "markdown" => SourceFormat::Markdown,
            "txt" | "text" => SourceFormat::Text,
            "html" | "htm" => SourceFormat::Html,
            "json" => SourceFormat::Json,
            "ndjson" | "jsonl" => SourceFormat::Ndjson,
            _ => return None,
        })
    }
}

/// One conversation message as given by the caller.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// The caller's message id, kept as block metadata all the way into results.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event_id: Option<String>,
    /// Who spoke.
    pub speaker: String,
    /// What they said.
    pub text: String,
    /// When, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<Timestamp>,
}

/// A conversation: `{"session_time"?: RFC3339, "messages": [...]}` or a bare array of messages.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Conversation {
    /// When the session took place, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_time: Option<Timestamp>,
    /// The turns, in order.
    pub messages: Vec<Message>,
}

/// A conversation turn's place in the representation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TurnSpan {
    /// Byte offset of the turn's first byte (`Speaker: …`).
    pub start: usize,
    /// Byte offset one past the turn's last byte.
    pub end: usize,
    /// Who spoke.
    pub speaker: String,
    /// The caller's message id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event_id: Option<String>,
    /// The turn's source time (its timestamp, else the session time, else the caller's source time).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<Timestamp>,
}

/// The canonical `document.md` of a version, plus the conversation source map.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Representation {
    /// The Markdown text: the coordinate system every span refers to.
    pub markdown: String,
    /// For conversations: each turn's span, in order. Empty otherwise.
    #[serde(default)]
    pub turns: Vec<TurnSpan>,
}

/// The kind of a block.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BlockKind {
    /// A paragraph.
    Paragraph,
    /// A heading (`level` on the block).
    Heading,
    /// A top-level list item (with its nested content).
    ListItem,
    /// A table (atomic).
    Table,
    /// A fenced or indented code block (atomic).
    Code,
    /// A block quote.
    Quote,
    /// A conversation turn.
    Turn,
    /// Anything else that holds text (HTML blocks, rules, link definitions).
    Other,
}

impl BlockKind {
    /// Whether a chunker may split this block at sentence boundaries when it is too big.
    pub fn is_atomic(&self) -> bool {
        matches!(self, BlockKind::Table | BlockKind::Code)
    }
}

/// A paragraph-grain structural atom of the representation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Block {
    /// Position in the version's block sequence, from 0.
    pub ordinal: u32,
    /// The kind.
    pub kind: BlockKind,
    /// Heading level 1–6 for headings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub level: Option<u8>,
    /// Byte offset of the first byte.
    pub start: usize,
    /// Byte offset one past the last byte.
    pub end: usize,
    /// sha256 (hex) of the block's kind and whitespace-normalized text.
    pub hash: String,
    /// Conversation metadata for turns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn: Option<TurnMeta>,
}

/// A turn's metadata on its block.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TurnMeta {
    /// Who spoke.
    pub speaker: String,
    /// The caller's message id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event_id: Option<String>,
    /// The turn's time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<Timestamp>,
}

/// What a section is for; search drops some roles by default.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SectionRole {
    /// Ordinary content.
    Body,
    /// Bibliographies, references, citations.
    References,
    /// Navigation, tables of contents, menus.
    Nav,
    /// Footers, share/subscribe widgets, acknowledgements and other boilerplate.
    Boilerplate,
    /// Licences, copyright, terms, privacy notices, disclaimers.
    Legal,
}

impl SectionRole {
    /// The snake_case name.
    pub fn as_str(&self) -> &'static str {
        match self {
            SectionRole::Body => "body",
            SectionRole::References => "references",
            SectionRole::Nav => "nav",
            SectionRole::Boilerplate => "boilerplate",
            SectionRole::Legal => "legal",
        }
    }
    /// Parse the snake_case name.
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "body" => SectionRole::Body,
            "references" => SectionRole::References,
            "nav" => SectionRole::Nav,
            "boilerplate" => SectionRole::Boilerplate,
            "legal" => SectionRole::Legal,
            _ => return None,
        })
    }
    /// Roles that default search drops.
    pub fn excluded_by_default(&self) -> bool {
        !matches!(self, SectionRole::Body)
    }
}

/// A section: a contiguous run of whole blocks. A version's sections partition its blocks.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Section {
    /// Position in document order, from 0.
    pub ordinal: u32,
    /// First block ordinal (inclusive).
    pub block_start: u32,
    /// One past the last block ordinal.
    pub block_end: u32,
    /// Heading level (0 for the root section).
    pub level: u8,
    /// The section's title (the heading text, or the document title for the root).
    pub title: String,
    /// Titles from the outermost heading down to this one (empty for the root).
    pub path: Vec<String>,
    /// The role.
    pub role: SectionRole,
    /// The enclosing section's ordinal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<u32>,
}
