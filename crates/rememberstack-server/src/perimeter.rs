//! What a browser can make a server do: the Host, Origin and request-shape rules
//! that keep a web page from driving a server, written once for `/v1` and `/mcp`.
//!
//! A page on another site can send, without asking the server first (a CORS
//! preflight), only GET, HEAD and POST with no custom header and a body typed
//! `text/plain`, form-encoded or multipart. So an unsafe request must carry
//! something a page cannot send unasked (a JSON or octet-stream body, or a header
//! such as `Authorization`), a present `Origin` must be allowed, and an open server
//! answers only a loopback `Host` name (or a host the operator named), which
//! defeats DNS rebinding.

use crate::error::ApiError;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};

/// Headers a page cannot send cross-site without a preflight, any of which makes
/// an unsafe request acceptable whatever its body's type.
pub const PREFLIGHTED_HEADERS: [&str; 3] = ["authorization", "x-remember-client", "mcp-session-id"];

/// Headers a preflight may ask for (the API's own).
const ALLOW_HEADERS: &str = "authorization, content-type, x-request-id, x-remember-client, \
     x-rememberstack-namespace, x-ingest-principal-kind, x-ingest-principal-ref, \
     mcp-session-id, mcp-protocol-version, last-event-id";

/// Response headers a page allowed by CORS may read.
const EXPOSE_HEADERS: &str = "x-request-id, mcp-session-id, retry-after, location";

/// The operator's perimeter settings.
#[derive(Clone, Debug, Default)]
pub struct PerimeterConfig {
    /// Host names (`name` for any port, `name:port` for one) an open server answers
    /// besides loopback ones.
    pub allowed_hosts: Vec<String>,
    /// Browser origins (`scheme://host[:port]`) allowed to call with CORS.
    pub cors_origins: Vec<String>,
}

impl PerimeterConfig {
    /// Refuse a host or origin that could never match (a typo would otherwise
    /// fail closed in silence).
    pub fn validate(&self) -> rememberstack::Result<()> {
        let bad = |what: &str, v: &str, form: &str| {
            Err(rememberstack::Error::new(
                rememberstack::ErrorCode::Config,
                format!("{what} `{v}` is not {form}"),
            ))
        };
        for h in &self.allowed_hosts {
            if split_authority(h).is_none() {
                return bad("--allowed-host", h, "a host name or `name:port`");
            }
        }
        for o in &self.cors_origins {
            if normalize_origin(o).is_none() {
                return bad(
                    "--cors-origin",
                    o,
                    "an origin such as `https://app.example.com` or `http://host:8080`",
                );
            }
        }
        Ok(())
    }
}

/// The verdict on a request's `Origin`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OriginVerdict {
    /// No `Origin` header: not a cross-origin browser request.
    Absent,
    /// A loopback page: allowed, but given no CORS headers.
    Loopback,
    /// An origin named with `--cors-origin`: allowed, with CORS headers.
    Cors(String),
}

fn is_loopback_name(host: &str) -> bool {
    if host == "localhost" {
        return true;
    }
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    bare.parse::<std::net::IpAddr>()
        .is_ok_and(|ip| ip.is_loopback())
}

/// Split `host[:port]` (with `[v6]` brackets) into a lowercase name and a port.
fn split_authority(authority: &str) -> Option<(String, Option<u16>)> {
    let authority = authority.trim().to_ascii_lowercase();
    if authority.is_empty() || authority.contains(['/', '@', ' ']) {
        return None;
    }
    if let Some(rest) = authority.strip_prefix('[') {
        let (v6, after) = rest.split_once(']')?;
        let port = match after {
            "" => None,
            p => Some(p.strip_prefix(':')?.parse().ok()?),
        };
        return Some((format!("[{v6}]"), port));
    }
    match authority.rsplit_once(':') {
        Some((name, port)) if !name.contains(':') => {
            Some((name.to_string(), Some(port.parse().ok()?)))
        }
        Some(_) => None,
        None => Some((authority, None)),
    }
}

/// Whether an open server answers this `Host`: a loopback name with any port, or
/// one the operator allowed (`name` for any port, `name:port` for that one).
pub fn host_allowed(host: Option<&str>, allowed: &[String]) -> bool {
    let Some((name, port)) = host.and_then(split_authority) else {
        return false;
    };
    if is_loopback_name(&name) {
        return true;
    }
    allowed.iter().any(|a| match split_authority(a) {
        Some((a_name, None)) => a_name == name,
        Some((a_name, Some(a_port))) => a_name == name && port == Some(a_port),
        None => false,
    })
}

/// `scheme://host[:port]` normalized: lowercase, the scheme's default port explicit.
fn normalize_origin(origin: &str) -> Option<(String, String, u16)> {
    let (scheme, rest) = origin.trim().split_once("://")?;
    let scheme = scheme.to_ascii_lowercase();
    let default = match scheme.as_str() {
        "http" => 80,
        "https" => 443,
        _ => return None,
    };
    let (name, port) = split_authority(rest.trim_end_matches('/'))?;
    Some((scheme, name, port.unwrap_or(default)))
}

/// Judge a request's `Origin`: absent, a loopback page, a `--cors-origin` one, or
/// refused (`403 forbidden`; `Origin: null`, from sandboxed frames and files, too).
pub fn check_origin(
    headers: &HeaderMap,
    cors_origins: &[String],
) -> Result<OriginVerdict, ApiError> {
    let Some(value) = headers.get(header::ORIGIN) else {
        return Ok(OriginVerdict::Absent);
    };
    let refused = || {
        ApiError::forbidden(
            "requests from this browser origin are refused: only loopback pages and origins \
             named with `--cors-origin` may call this server",
        )
    };
    let origin = value.to_str().map_err(|_| refused())?;
    let parsed = normalize_origin(origin).ok_or_else(refused)?;
    if cors_origins
        .iter()
        .any(|c| normalize_origin(c).as_ref() == Some(&parsed))
    {
        return Ok(OriginVerdict::Cors(origin.trim().to_string()));
    }
    if is_loopback_name(&parsed.1) {
        return Ok(OriginVerdict::Loopback);
    }
    Err(refused())
}

/// Whether `method` may change state (and so must not be sendable cross-site).
pub fn is_unsafe(method: &Method) -> bool {
    matches!(
        *method,
        Method::POST | Method::PUT | Method::PATCH | Method::DELETE
    )
}

/// An unsafe request must carry what a page cannot send without a preflight: a
/// JSON (`application/json`, `application/*+json`) or `application/octet-stream`
/// body type, or one of [`PREFLIGHTED_HEADERS`]; else `415`. Bodyless POSTs
/// (`…/forget`) included.
pub fn check_declared(method: &Method, headers: &HeaderMap) -> Result<(), ApiError> {
    if !is_unsafe(method) || PREFLIGHTED_HEADERS.iter().any(|h| headers.contains_key(*h)) {
        return Ok(());
    }
    let media = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(|v| {
            v.split(';')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase()
        })
        .unwrap_or_default();
    let declared = media == "application/json"
        || media == "application/octet-stream"
        || (media.starts_with("application/") && media.ends_with("+json"));
    if declared {
        return Ok(());
    }
    Err(ApiError::new(
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        "unsupported_media_type",
        "a POST, PUT, PATCH or DELETE must say `Content-Type: application/json` (or \
         `application/octet-stream` for raw bytes), or carry an `X-Remember-Client` header, \
         so that no web page can send it unasked",
    ))
}

/// `421` for a `Host` an open server does not answer.
pub fn misdirected(host: Option<&str>) -> ApiError {
    let shown: String = host
        .unwrap_or("")
        .chars()
        .take(100)
        .filter(|c| !c.is_control())
        .collect();
    ApiError::new(
        StatusCode::MISDIRECTED_REQUEST,
        "misdirected_request",
        format!(
            "this server has no API key, so it answers only loopback host names, not `{shown}`: \
             call it as localhost or 127.0.0.1, or name the host with `--allowed-host`"
        ),
    )
}

/// The answer to a CORS preflight from an allowed `--cors-origin` origin.
pub fn preflight(origin: &str) -> Response {
    let mut response = StatusCode::NO_CONTENT.into_response();
    let h = response.headers_mut();
    if let Ok(v) = HeaderValue::from_str(origin) {
        h.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, v);
    }
    h.insert(
        header::ACCESS_CONTROL_ALLOW_METHODS,
        HeaderValue::from_static("GET, POST, DELETE"),
    );
    h.insert(
        header::ACCESS_CONTROL_ALLOW_HEADERS,
        HeaderValue::from_static(ALLOW_HEADERS),
    );
    h.insert(
        header::ACCESS_CONTROL_MAX_AGE,
        HeaderValue::from_static("600"),
    );
    h.insert(header::VARY, HeaderValue::from_static("origin"));
    response
}

/// Let a `--cors-origin` page read `response`.
pub fn allow_cors(response: &mut Response, origin: &str) {
    let h = response.headers_mut();
    if let Ok(v) = HeaderValue::from_str(origin) {
        h.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, v);
    }
    h.insert(
        header::ACCESS_CONTROL_EXPOSE_HEADERS,
        HeaderValue::from_static(EXPOSE_HEADERS),
    );
    h.append(header::VARY, HeaderValue::from_static("origin"));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_and_named_hosts_only() {
        let allowed = vec!["memory.internal".to_string(), "box:9000".to_string()];
        for ok in [
            "localhost",
            "localhost:8420",
            "LOCALHOST:1",
            "127.0.0.1",
            "127.0.0.1:8420",
            "[::1]",
            "[::1]:8420",
            "memory.internal:80",
            "memory.internal",
            "box:9000",
        ] {
            assert!(host_allowed(Some(ok), &allowed), "{ok}");
        }
        for bad in [
            "attacker.example",
            "attacker.example:8420",
            "localhost.attacker.example",
            "127.0.0.1.nip.io",
            "box:9001",
            "box",
            "",
            "user@localhost",
            "[::2]:80",
        ] {
            assert!(!host_allowed(Some(bad), &allowed), "{bad}");
        }
        assert!(!host_allowed(None, &allowed));
    }

    #[test]
    fn origins_are_loopback_or_named() {
        let cors = vec!["https://app.example.com".to_string()];
        let h = |o: &str| {
            let mut m = HeaderMap::new();
            m.insert(header::ORIGIN, HeaderValue::from_str(o).unwrap());
            m
        };
        assert_eq!(
            check_origin(&HeaderMap::new(), &cors).unwrap(),
            OriginVerdict::Absent
        );
        assert_eq!(
            check_origin(&h("http://localhost:3000"), &cors).unwrap(),
            OriginVerdict::Loopback
        );
        assert_eq!(
            check_origin(&h("https://app.example.com:443"), &cors).unwrap(),
            OriginVerdict::Cors("https://app.example.com:443".into())
        );
        for bad in [
            "https://evil.example",
            "null",
            "http://app.example.com",
            "file://",
        ] {
            let e = check_origin(&h(bad), &cors).unwrap_err();
            assert_eq!((e.status.as_u16(), e.code), (403, "forbidden"), "{bad}");
        }
    }

    #[test]
    fn unsafe_requests_must_declare_themselves() {
        let with = |pairs: &[(&'static str, &'static str)]| {
            let mut m = HeaderMap::new();
            for (k, v) in pairs {
                m.insert(*k, HeaderValue::from_static(v));
            }
            m
        };
        let refused = [
            with(&[]),
            with(&[("content-type", "text/plain")]),
            with(&[("content-type", "text/plain; charset=application/json")]),
            with(&[("content-type", "application/x-www-form-urlencoded")]),
            with(&[("content-type", "multipart/form-data; boundary=x")]),
        ];
        for h in &refused {
            for m in [Method::POST, Method::PUT, Method::PATCH, Method::DELETE] {
                let e = check_declared(&m, h).unwrap_err();
                assert_eq!(e.status.as_u16(), 415, "{m} {h:?}");
            }
            assert!(check_declared(&Method::GET, h).is_ok());
        }
        for h in [
            with(&[("content-type", "application/json")]),
            with(&[("content-type", "Application/JSON; charset=utf-8")]),
            with(&[("content-type", "application/octet-stream")]),
            with(&[("content-type", "application/ld+json")]),
            with(&[("x-remember-client", "cli")]),
            with(&[("authorization", "Bearer x")]),
            with(&[("mcp-session-id", "s")]),
        ] {
            assert!(check_declared(&Method::POST, &h).is_ok(), "{h:?}");
        }
    }
}
