//! Continuation cursors: what a page of results continues from, signed with the
//! store's own secret so an altered or foreign cursor is refused.

use super::*;

#[derive(Debug, Serialize, Deserialize)]
pub(super) struct Cursor {
    /// Offset into the fused list.
    pub(super) o: usize,
    /// Channel depth.
    pub(super) d: usize,
    /// Query digest.
    pub(super) q: String,
}

/// Bytes of the HMAC-SHA256 tag a cursor carries.
pub(super) const CURSOR_TAG_BYTES: usize = 16;

/// HMAC-SHA256 (RFC 2104) of `message` under `key`.
pub(super) fn hmac_sha256(key: &[u8; 32], message: &[u8]) -> [u8; 32] {
    use sha2::{Digest, Sha256};
    let mut ipad = [0x36u8; 64];
    let mut opad = [0x5cu8; 64];
    for (i, k) in key.iter().enumerate() {
        ipad[i] ^= k;
        opad[i] ^= k;
    }
    let inner = Sha256::new()
        .chain_update(ipad)
        .chain_update(message)
        .finalize();
    Sha256::new()
        .chain_update(opad)
        .chain_update(inner)
        .finalize()
        .into()
}

/// A cursor as the client sees it: its JSON followed by a truncated HMAC tag, in
/// URL-safe base64.
pub(super) fn encode_cursor(key: &[u8; 32], c: &Cursor) -> String {
    encode_signed(key, c)
}

/// Any cursor state, signed: its JSON followed by a truncated HMAC tag, in
/// URL-safe base64.
pub(super) fn encode_signed<T: Serialize>(key: &[u8; 32], c: &T) -> String {
    let mut bytes = serde_json::to_vec(c).unwrap_or_default();
    let tag = hmac_sha256(key, &bytes);
    bytes.extend_from_slice(&tag[..CURSOR_TAG_BYTES]);
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// The refusal of a cursor this store did not issue.
pub(super) fn foreign_cursor() -> Error {
    Error::new(
        ErrorCode::InvalidParameter,
        "the cursor is not one this store issued (or it was altered): repeat the request without it",
    )
}

/// State signed by [`encode_signed`] under `key`, if `s` (at most `max_len`
/// characters) is exactly that; `None` for anything else.
pub(super) fn decode_signed<T: serde::de::DeserializeOwned>(
    key: &[u8; 32],
    s: &str,
    max_len: usize,
) -> Option<T> {
    if s.len() > max_len {
        return None;
    }
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(s.trim())
        .ok()?;
    if bytes.len() <= CURSOR_TAG_BYTES {
        return None;
    }
    let (json, tag) = bytes.split_at(bytes.len() - CURSOR_TAG_BYTES);
    let expected = hmac_sha256(key, json);
    // Compare every byte, so the time taken says nothing about where they differ.
    let diff = expected[..CURSOR_TAG_BYTES]
        .iter()
        .zip(tag)
        .fold(0u8, |acc, (a, b)| acc | (a ^ b));
    if diff != 0 {
        return None;
    }
    serde_json::from_slice::<T>(json).ok()
}

/// A cursor this store issued; anything else (garbage, another store's, one with
/// a changed offset or depth) is `invalid_parameter`.
pub(super) fn decode_cursor(key: &[u8; 32], s: &str) -> Result<Cursor> {
    decode_signed::<Cursor>(key, s, 1024)
        .filter(|c| c.d > 0 && c.d <= crate::limits::MAX_SEARCH_DEPTH)
        .ok_or_else(foreign_cursor)
}
