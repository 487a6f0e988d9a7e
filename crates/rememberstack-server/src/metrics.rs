//! Request counters and latency histograms, rendered as Prometheus text.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::Mutex;
use std::time::Duration;

/// Histogram bucket bounds, in seconds.
const BUCKETS: [f64; 12] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0,
];

#[derive(Default)]
struct Histogram {
    counts: [u64; BUCKETS.len()],
    count: u64,
    sum: f64,
}

#[derive(Default)]
struct Inner {
    /// (route, method, status) → requests.
    requests: BTreeMap<(String, String, u16), u64>,
    /// (route, method) → latency.
    latency: BTreeMap<(String, String), Histogram>,
}

/// The server's own metrics (the ledger's are read from the store at scrape time).
#[derive(Default)]
pub struct Metrics {
    inner: Mutex<Inner>,
}

impl Metrics {
    /// Record one finished request. `route` is the matched route template, never
    /// the raw path (ids and names stay out of metrics).
    pub fn record(&self, route: &str, method: &str, status: u16, elapsed: Duration) {
        let Ok(mut inner) = self.inner.lock() else {
            return;
        };
        *inner
            .requests
            .entry((route.to_string(), method.to_string(), status))
            .or_default() += 1;
        let h = inner
            .latency
            .entry((route.to_string(), method.to_string()))
            .or_default();
        let secs = elapsed.as_secs_f64();
        for (i, bound) in BUCKETS.iter().enumerate() {
            if secs <= *bound {
                h.counts[i] += 1;
            }
        }
        h.count += 1;
        h.sum += secs;
    }

    /// The request metrics as Prometheus text.
    pub fn render(&self, out: &mut String) {
        let Ok(inner) = self.inner.lock() else {
            return;
        };
        let _ = writeln!(
            out,
            "# HELP rememberstack_http_requests_total HTTP requests by route, method and status.\n# TYPE rememberstack_http_requests_total counter"
        );
        for ((route, method, status), n) in &inner.requests {
            let _ = writeln!(
                out,
                "rememberstack_http_requests_total{{route=\"{}\",method=\"{method}\",status=\"{status}\"}} {n}",
                escape(route)
            );
        }
        let _ = writeln!(
            out,
            "# HELP rememberstack_http_request_duration_seconds HTTP request latency by route and method.\n# TYPE rememberstack_http_request_duration_seconds histogram"
        );
        for ((route, method), h) in &inner.latency {
            let route = escape(route);
            for (i, bound) in BUCKETS.iter().enumerate() {
                let _ = writeln!(
                    out,
                    "rememberstack_http_request_duration_seconds_bucket{{route=\"{route}\",method=\"{method}\",le=\"{bound}\"}} {}",
                    h.counts[i]
                );
            }
            let _ = writeln!(
                out,
                "rememberstack_http_request_duration_seconds_bucket{{route=\"{route}\",method=\"{method}\",le=\"+Inf\"}} {}\nrememberstack_http_request_duration_seconds_sum{{route=\"{route}\",method=\"{method}\"}} {}\nrememberstack_http_request_duration_seconds_count{{route=\"{route}\",method=\"{method}\"}} {}",
                h.count, h.sum, h.count
            );
        }
    }
}

/// The `method` label: the methods the API knows, and `other` for any other, so a
/// client cannot grow the metrics by inventing methods.
pub fn method_label(method: &axum::http::Method) -> &'static str {
    use axum::http::Method;
    match *method {
        Method::GET => "GET",
        Method::HEAD => "HEAD",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::PATCH => "PATCH",
        Method::DELETE => "DELETE",
        Method::OPTIONS => "OPTIONS",
        _ => "other",
    }
}

/// Escape a Prometheus label value.
pub fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}
