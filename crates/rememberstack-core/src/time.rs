//! Time: UTC timestamps and an injectable clock.

use chrono::{DateTime, Utc};

/// A UTC instant.
pub type Timestamp = DateTime<Utc>;

/// Where "now" comes from. The engine never reads the system clock directly,
/// so tests can move time (for example to expire a lease).
pub trait Clock: Send + Sync + std::fmt::Debug {
    /// The current instant.
    fn now(&self) -> Timestamp;
}

/// The system clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        Utc::now()
    }
}

/// Parse an RFC 3339 timestamp into UTC.
pub fn parse_rfc3339(s: &str) -> Option<Timestamp> {
    DateTime::parse_from_rfc3339(s.trim())
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

/// Parse the RFC 3339 instant a caller gave as `field`: an `invalid_input` error
/// naming the field and the value otherwise. Every surface (facade calls, CLI,
/// HTTP, MCP) reads a caller's instants through this one rule.
pub fn parse_instant(field: &str, value: &str) -> crate::Result<Timestamp> {
    parse_rfc3339(value).ok_or_else(|| {
        crate::Error::invalid_input(format!(
            "`{field}` must be an RFC 3339 date-time such as 2026-05-01T09:30:00Z, not `{value}`"
        ))
    })
}

/// Format as RFC 3339 with millisecond precision and a `Z` suffix.
pub fn to_rfc3339(t: &Timestamp) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}
