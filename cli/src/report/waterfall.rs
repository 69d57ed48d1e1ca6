//! The span waterfall of `report.html` as inline SVG: one row per span in
//! opening order, indented by depth, its bar placed and sized on the
//! operation's time axis.

use super::escape::escape;
use super::spans::{Span, horizon};

const ROW: usize = 20;
const LABEL: usize = 300;
const BARS: usize = 640;

/// The SVG (or a note when there are no spans).
pub(super) fn waterfall_svg(spans: &[Span]) -> String {
    let Some(start) = spans.iter().map(|s| s.start_us).min() else {
        return "<p id=\"waterfall\" class=\"muted\">no span records</p>\n".into();
    };
    let until = horizon(spans).max(start + 1);
    let scale = BARS as f64 / (until - start) as f64;
    let height = ROW * spans.len() + ROW;
    let mut svg = format!(
        "<svg id=\"waterfall\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{height}\">\n",
        LABEL + BARS + 120
    );
    for (i, span) in spans.iter().enumerate() {
        let y = i * ROW;
        let x = LABEL as f64 + (span.start_us - start) as f64 * scale;
        let end = span.end_or(until);
        let width = ((end - span.start_us) as f64 * scale).max(1.0);
        let color = match span.status {
            "error" => "#d32f2f",
            "running" => "#9e9e9e",
            _ => "#1976d2",
        };
        let millis = (end - span.start_us) as f64 / 1000.0;
        svg.push_str(&format!(
            "<g class=\"span\"><title>{name} {millis:.1} ms ({status})</title>\
             <text x=\"{indent}\" y=\"{ty}\">{name}</text>\
             <rect x=\"{x:.1}\" y=\"{ry}\" width=\"{width:.1}\" height=\"{h}\" fill=\"{color}\"/>\
             <text x=\"{tx:.1}\" y=\"{ty}\">{millis:.1} ms</text></g>\n",
            name = escape(&span.name),
            status = span.status,
            indent = 4 + span.depth * 12,
            ty = y + 14,
            ry = y + 3,
            h = ROW - 6,
            tx = x + width + 4.0,
        ));
    }
    svg.push_str("</svg>\n");
    svg
}
