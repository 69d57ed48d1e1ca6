//! The one output format: a JSON object per line on stdout.

/// Prints one result line.
pub fn line(bench: &str, metric: &str, value: f64, unit: &str, baseline: Option<f64>) {
    let ratio = baseline.filter(|b| *b != 0.0).map(|b| value / b);
    println!(
        "{}",
        serde_json::json!({
            "bench": bench,
            "metric": metric,
            "value": round(value),
            "unit": unit,
            "baseline": baseline.map(round),
            "ratio": ratio.map(|r| (r * 1000.0).round() / 1000.0),
        })
    );
}

/// Median of samples (the upper middle one for an even count).
pub fn median(mut samples: Vec<f64>) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

/// The 1-minute load average, from /proc/loadavg.
pub fn load_average() -> Option<f64> {
    std::fs::read_to_string("/proc/loadavg")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

fn round(value: f64) -> f64 {
    (value * 100.0).round() / 100.0
}
