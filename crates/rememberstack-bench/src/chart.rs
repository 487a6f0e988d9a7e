//! SVG charts of benchmark results, drawn from the harness's own JSON: recall
//! against context budget (`locomo.json`) and latency against store size (several
//! `scale.json`). Plain SVG with no script or external font, so a documentation
//! page can embed it as an image.

use serde_json::Value;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

const WIDTH: f64 = 720.0;
const HEIGHT: f64 = 400.0;
const LEFT: f64 = 64.0;
const RIGHT: f64 = 240.0;
const TOP: f64 = 40.0;
const BOTTOM: f64 = 56.0;
/// Distinguishable line colours (the Okabe–Ito palette, legible to colour-blind readers).
const COLOURS: &[&str] = &[
    "#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442",
];

/// One line of a chart: its name and its points.
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// A line chart. `log_x` spaces the x axis logarithmically (budgets and store sizes
/// double). The y axis starts at zero.
pub fn line_chart(
    title: &str,
    x_label: &str,
    y_label: &str,
    series: &[Series],
    log_x: bool,
) -> String {
    let xs: Vec<f64> = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.0))
        .collect();
    let ys = series.iter().flat_map(|s| s.points.iter().map(|p| p.1));
    let fx = |x: f64| {
        if log_x {
            x.max(f64::MIN_POSITIVE).ln()
        } else {
            x
        }
    };
    let (x_min, x_max) = xs
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &x| {
            (lo.min(fx(x)), hi.max(fx(x)))
        });
    let (x_min, x_max) = if x_min < x_max {
        (x_min, x_max)
    } else {
        (x_min - 1.0, x_min + 1.0)
    };
    let y_max = nice_ceiling(ys.fold(0.0, f64::max));
    let plot_w = WIDTH - LEFT - RIGHT;
    let plot_h = HEIGHT - TOP - BOTTOM;
    let px = |x: f64| LEFT + (fx(x) - x_min) / (x_max - x_min) * plot_w;
    let py = |y: f64| TOP + plot_h - y / y_max * plot_h;

    let mut svg = String::new();
    let _ = write!(
        svg,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {WIDTH} {HEIGHT}\" \
         width=\"{WIDTH}\" height=\"{HEIGHT}\" font-family=\"sans-serif\" font-size=\"12\">\n\
         <rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n\
         <text x=\"{LEFT}\" y=\"22\" font-size=\"14\" font-weight=\"bold\">{}</text>\n",
        escape(title)
    );
    // Horizontal grid and y ticks: five steps.
    for i in 0..=5 {
        let y = y_max * i as f64 / 5.0;
        let _ = write!(
            svg,
            "<line x1=\"{LEFT}\" x2=\"{:.1}\" y1=\"{:.1}\" y2=\"{:.1}\" stroke=\"#ddd\"/>\n\
             <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>\n",
            LEFT + plot_w,
            py(y),
            py(y),
            LEFT - 6.0,
            py(y) + 4.0,
            tick(y)
        );
    }
    // x ticks at the distinct x values.
    let mut ticks = xs.clone();
    ticks.sort_by(f64::total_cmp);
    ticks.dedup();
    for x in ticks {
        let _ = write!(
            svg,
            "<line x1=\"{0:.1}\" x2=\"{0:.1}\" y1=\"{1:.1}\" y2=\"{2:.1}\" stroke=\"#999\"/>\n\
             <text x=\"{0:.1}\" y=\"{3:.1}\" text-anchor=\"middle\">{4}</text>\n",
            px(x),
            TOP + plot_h,
            TOP + plot_h + 4.0,
            TOP + plot_h + 18.0,
            tick(x)
        );
    }
    let _ = write!(
        svg,
        "<line x1=\"{LEFT}\" x2=\"{LEFT}\" y1=\"{TOP}\" y2=\"{:.1}\" stroke=\"#333\"/>\n\
         <line x1=\"{LEFT}\" x2=\"{:.1}\" y1=\"{:.1}\" y2=\"{:.1}\" stroke=\"#333\"/>\n\
         <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>\n\
         <text transform=\"translate(16 {:.1}) rotate(-90)\" text-anchor=\"middle\">{}</text>\n",
        TOP + plot_h,
        LEFT + plot_w,
        TOP + plot_h,
        TOP + plot_h,
        LEFT + plot_w / 2.0,
        HEIGHT - 16.0,
        escape(x_label),
        TOP + plot_h / 2.0,
        escape(y_label)
    );
    for (i, s) in series.iter().enumerate() {
        let colour = COLOURS[i % COLOURS.len()];
        let mut points = s.points.clone();
        points.sort_by(|a, b| a.0.total_cmp(&b.0));
        let path: Vec<String> = points
            .iter()
            .map(|&(x, y)| format!("{:.1},{:.1}", px(x), py(y)))
            .collect();
        let _ = writeln!(
            svg,
            "<polyline fill=\"none\" stroke=\"{colour}\" stroke-width=\"2\" points=\"{}\"/>",
            path.join(" ")
        );
        for &(x, y) in &points {
            let _ = writeln!(
                svg,
                "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"3\" fill=\"{colour}\"><title>{}: {}</title></circle>",
                px(x),
                py(y),
                escape(&s.name),
                tick(y)
            );
        }
        let ly = TOP + 8.0 + i as f64 * 18.0;
        let lx = LEFT + plot_w + 12.0;
        let _ = write!(
            svg,
            "<line x1=\"{lx}\" x2=\"{:.1}\" y1=\"{ly:.1}\" y2=\"{ly:.1}\" stroke=\"{colour}\" stroke-width=\"2\"/>\n\
             <text x=\"{:.1}\" y=\"{:.1}\">{}</text>\n",
            lx + 18.0,
            lx + 24.0,
            ly + 4.0,
            escape(&s.name)
        );
    }
    svg.push_str("</svg>\n");
    svg
}

/// The smallest of 1, 2, 2.5 and 5 times a power of ten at or above `v` (at least
/// a tiny positive number, so an all-zero chart still has an axis).
fn nice_ceiling(v: f64) -> f64 {
    if v.is_nan() || v <= 0.0 || !v.is_finite() {
        return 1.0;
    }
    let magnitude = 10f64.powf(v.log10().floor());
    for step in [1.0, 2.0, 2.5, 5.0, 10.0] {
        if step * magnitude >= v - 1e-12 {
            return step * magnitude;
        }
    }
    10.0 * magnitude
}

fn tick(v: f64) -> String {
    if v == v.trunc() && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else if v.abs() >= 10.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    }
}

fn read(path: &Path) -> rememberstack::Result<Value> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| rememberstack::Error::invalid_input(format!("{}: {e}", path.display())))?;
    serde_json::from_str(&text)
        .map_err(|e| rememberstack::Error::invalid_input(format!("{}: {e}", path.display())))
}

/// Recall within each context budget, one line per system, from a `locomo.json`.
pub fn budget_chart(locomo: &Value) -> rememberstack::Result<String> {
    let systems = locomo["systems"].as_object().ok_or_else(|| {
        rememberstack::Error::invalid_input("not a locomo.json: no `systems` object")
    })?;
    let mut series = Vec::new();
    for (name, system) in systems {
        let overall = &system["overall"];
        let points: Vec<(f64, f64)> = crate::score::BUDGETS
            .iter()
            .filter_map(|b| {
                overall[format!("recall@{b}tok")]
                    .as_f64()
                    .map(|r| (*b as f64, r))
            })
            .collect();
        if !points.is_empty() {
            series.push(Series {
                name: name.rsplit('/').next().unwrap_or(name).to_string(),
                points,
            });
        }
    }
    if series.is_empty() {
        return Err(rememberstack::Error::invalid_input(
            "the locomo.json has no recall@budget figures",
        ));
    }
    Ok(line_chart(
        "Evidence found within a context budget (LoCoMo)",
        "context budget (estimated tokens)",
        "recall",
        &series,
        true,
    ))
}

/// p95 latency of each operation against the number of claims, from several
/// `scale.json` of one store and embedder at different sizes.
pub fn latency_chart(scales: &[Value]) -> rememberstack::Result<String> {
    let mut by_op: std::collections::BTreeMap<String, Vec<(f64, f64)>> = Default::default();
    for scale in scales {
        let claims = scale["corpus"]["store"]["claims"].as_f64().ok_or_else(|| {
            rememberstack::Error::invalid_input("not a scale.json: no corpus.store.claims")
        })?;
        for (op, stats) in scale["latency"].as_object().into_iter().flatten() {
            if let Some(p95) = stats["p95_ms"].as_f64() {
                by_op.entry(op.clone()).or_default().push((claims, p95));
            }
        }
    }
    if by_op.is_empty() {
        return Err(rememberstack::Error::invalid_input(
            "no latency figures in the scale.json files",
        ));
    }
    let series: Vec<Series> = by_op
        .into_iter()
        .map(|(name, points)| Series { name, points })
        .collect();
    Ok(line_chart(
        "p95 latency against store size",
        "claims in the store",
        "p95 latency (ms)",
        &series,
        true,
    ))
}

/// `rememberstack-bench chart`: write the charts the given results allow.
pub fn run(locomo: Option<PathBuf>, scales: &[PathBuf], out: &Path) -> rememberstack::Result<()> {
    std::fs::create_dir_all(out)
        .map_err(|e| rememberstack::Error::invalid_input(format!("{}: {e}", out.display())))?;
    let write = |name: &str, svg: String| -> rememberstack::Result<()> {
        let path = out.join(name);
        std::fs::write(&path, svg)
            .map_err(|e| rememberstack::Error::invalid_input(format!("{}: {e}", path.display())))?;
        println!("wrote {}", path.display());
        Ok(())
    };
    if let Some(path) = locomo {
        write("recall-budget.svg", budget_chart(&read(&path)?)?)?;
    }
    if !scales.is_empty() {
        let values = scales
            .iter()
            .map(|p| read(p))
            .collect::<Result<Vec<_>, _>>()?;
        write("latency-size.svg", latency_chart(&values)?)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_budget_chart_draws_one_line_per_system_at_its_figures() {
        let locomo = json!({"systems": {
            "baseline/bm25_turns": {"overall": {"recall@500tok": 0.5, "recall@1000tok": 0.6,
                "recall@2000tok": 0.7, "recall@4000tok": 0.8}},
            "rememberstack/claims_and_sources_context": {"overall": {"recall@500tok": 0.75,
                "recall@1000tok": 0.83, "recall@2000tok": 0.89, "recall@4000tok": 0.93}},
        }});
        let svg = budget_chart(&locomo).unwrap();
        assert_eq!(svg.matches("<polyline").count(), 2);
        assert_eq!(svg.matches("<circle").count(), 8);
        assert!(svg.contains(">bm25_turns<") && svg.contains(">claims_and_sources_context<"));
        assert!(svg.contains("<title>claims_and_sources_context: 0.89</title>"));
        // The best figure sits higher (a smaller y) than the worst.
        let y = |label: &str| -> f64 {
            let at = svg.find(&format!("<title>{label}</title>")).unwrap();
            let before = &svg[..at];
            let cy = before.rfind("cy=\"").unwrap();
            before[cy + 4..].split('"').next().unwrap().parse().unwrap()
        };
        assert!(y("claims_and_sources_context: 0.93") < y("bm25_turns: 0.50"));
        assert!(budget_chart(&json!({"systems": {}})).is_err());
        assert!(budget_chart(&json!({"rows": []})).is_err());
    }

    #[test]
    fn a_latency_chart_has_a_line_per_operation_over_store_sizes() {
        let scale = |claims: u64, p95: f64| {
            json!({"corpus": {"store": {"claims": claims}},
                   "latency": {"search": {"p95_ms": p95}, "facts_context": {"p95_ms": p95 * 2.0}}})
        };
        let svg =
            latency_chart(&[scale(1000, 5.0), scale(10000, 9.0), scale(100000, 30.0)]).unwrap();
        assert_eq!(svg.matches("<polyline").count(), 2);
        assert!(svg.contains("<title>facts_context: 60</title>"));
        assert!(latency_chart(&[json!({"latency": {}})]).is_err());
    }

    #[test]
    fn axis_tops_are_round() {
        assert_eq!(nice_ceiling(0.93), 1.0);
        assert_eq!(nice_ceiling(37.0), 50.0);
        assert_eq!(nice_ceiling(0.0), 1.0);
        assert_eq!(nice_ceiling(120.0), 200.0);
    }
}
