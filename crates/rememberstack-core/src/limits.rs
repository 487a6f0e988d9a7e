//! The fixed bounds on what one input or request may cost.
//!
//! Every input is bounded so that work and storage stay linear in what the caller
//! sent: a bound that is exceeded is refused with a typed error
//! ([`ErrorCode::TooLarge`] for sizes of a source, [`ErrorCode::InvalidParameter`]
//! for request parameters) before anything is written. The README's limits table
//! lists each one.

use crate::error::{Error, ErrorCode};

/// Most messages one conversation document holds (after merging identical duplicates).
pub const MAX_CONVERSATION_MESSAGES: usize = 100_000;
/// Most distinct speakers in one conversation document.
pub const MAX_CONVERSATION_SPEAKERS: usize = 1_000;
/// Deepest nesting of arrays and objects in a JSON or NDJSON source (or a
/// conversation document).
pub const MAX_JSON_DEPTH: usize = 64;
/// Longest key path (e.g. `items[3].address.city`) one JSON leaf renders with, in bytes.
pub const MAX_JSON_KEY_PATH_BYTES: usize = 512;
/// A JSON or NDJSON source renders to at most this many times its own size …
pub const JSON_RENDER_FACTOR: usize = 8;
/// … plus this many bytes (so tiny documents are not refused for their headings).
pub const JSON_RENDER_SLACK_BYTES: usize = 64 * 1024;

/// Longest query text of a search or a context operation, in bytes.
pub const MAX_QUERY_BYTES: usize = 4_096;
/// Most items in one list parameter of a request (roles, entities, document ids, kinds).
pub const MAX_LIST_ITEMS: usize = 100;
/// The deepest candidate list a search continuation may ask the channels for.
pub const MAX_SEARCH_DEPTH: usize = 10_000;
/// Most facts one fact listing returns; more come a page at a time with its cursor.
pub const MAX_FACTS_PAGE: u32 = 1_000;

/// The largest rendered Markdown a JSON or NDJSON source of `input_bytes` may produce.
pub fn json_render_limit(input_bytes: usize) -> usize {
    input_bytes
        .saturating_mul(JSON_RENDER_FACTOR)
        .saturating_add(JSON_RENDER_SLACK_BYTES)
}

/// `too_large`.
pub fn too_large(message: impl Into<String>) -> Error {
    Error::new(ErrorCode::TooLarge, message)
}

/// `invalid_parameter`.
pub fn invalid_parameter(message: impl Into<String>) -> Error {
    Error::new(ErrorCode::InvalidParameter, message)
}

/// Refuse a query longer than [`MAX_QUERY_BYTES`].
pub fn check_query_len(what: &str, query: &str) -> Result<(), Error> {
    if query.len() > MAX_QUERY_BYTES {
        return Err(invalid_parameter(format!(
            "{what} is {} bytes; the limit is {MAX_QUERY_BYTES}",
            query.len()
        )));
    }
    Ok(())
}

/// Refuse a list parameter with more than [`MAX_LIST_ITEMS`] items.
pub fn check_list_len(what: &str, len: usize) -> Result<(), Error> {
    if len > MAX_LIST_ITEMS {
        return Err(invalid_parameter(format!(
            "{what} has {len} items; the limit is {MAX_LIST_ITEMS}"
        )));
    }
    Ok(())
}

/// Refuse a fact listing `limit` past [`MAX_FACTS_PAGE`] (0 means the default).
pub fn check_facts_limit(limit: u32) -> Result<(), Error> {
    if limit > MAX_FACTS_PAGE {
        return Err(invalid_parameter(format!(
            "limit is {limit}; a fact listing returns at most {MAX_FACTS_PAGE} a page (continue with its cursor)"
        )));
    }
    Ok(())
}

/// Whether `text` (JSON) nests arrays and objects deeper than `max`. A linear
/// scan that skips strings, so it runs before the (recursive) parser and refuses
/// hostile nesting with its own message instead of the parser's recursion limit.
pub fn json_nesting_exceeds(text: &str, max: usize) -> bool {
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    for b in text.bytes() {
        if in_string {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                if depth > max {
                    return true;
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nesting_scan_skips_strings_and_counts_both_brackets() {
        assert!(!json_nesting_exceeds(r#"{"a": [1, {"b": "[[[[{{{{"}]}"#, 3));
        assert!(json_nesting_exceeds(r#"{"a": [1, {"b": [2]}]}"#, 3));
        assert!(!json_nesting_exceeds(r#"{"a": [1, {"b": [2]}]}"#, 4));
        assert!(!json_nesting_exceeds(r#"["\"[[[[", "\\"]"#, 1));
        assert!(json_nesting_exceeds(&"[".repeat(65), MAX_JSON_DEPTH));
        assert!(!json_nesting_exceeds(&"[]".repeat(1000), 1));
    }

    #[test]
    fn list_and_query_caps_are_invalid_parameter() {
        assert!(check_list_len("roles", MAX_LIST_ITEMS).is_ok());
        let e = check_list_len("roles", MAX_LIST_ITEMS + 1).unwrap_err();
        assert_eq!(e.code(), ErrorCode::InvalidParameter);
        assert!(e.to_string().contains("roles"), "{e}");
        assert!(check_query_len("query", &"q".repeat(MAX_QUERY_BYTES)).is_ok());
        let e = check_query_len("query", &"q".repeat(MAX_QUERY_BYTES + 1)).unwrap_err();
        assert_eq!(e.code(), ErrorCode::InvalidParameter);
        assert_eq!(json_render_limit(usize::MAX), usize::MAX);
        assert!(check_facts_limit(MAX_FACTS_PAGE).is_ok());
        let e = check_facts_limit(MAX_FACTS_PAGE + 1).unwrap_err();
        assert_eq!(e.code(), ErrorCode::InvalidParameter);
    }
}
