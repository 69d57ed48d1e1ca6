//! `trident-bench [BENCH...|all] [--quick]`: benchmarks of tridentd
//! ([`USAGE`] lists them). Prints one JSON object per line:
//! `{"bench","metric","value","unit","baseline","ratio"}`, where `baseline`
//! is the comparison measured side by side in the same run (null if none)
//! and `ratio` is value / baseline. Build with `--release`.

mod adaptive;
mod daemon;
mod end_to_end;
mod hot_path;
mod legacy_bridge;
mod memory;
mod otlp_export;
mod rcp;
mod report;
mod servicing;
mod stream_disk;
mod subscribers;
mod uds;
mod verify_writes;

use anyhow::bail;

/// Benchmarks `all` runs, in order.
const ALL: &[&str] = &["hot-path", "end-to-end", "memory"];

/// Usage line, naming every benchmark (the last eight are run by name
/// only: five need a few GB of disk, rcp starts a thousand agents,
/// legacy-bridge runs servicing against local HTTP endpoints, adaptive
/// builds filesystems and needs casync).
const USAGE: &str = "usage: trident-bench [hot-path|end-to-end|memory|all|stream-disk|servicing|otlp-export|rcp|legacy-bridge|subscribers|verify-writes|adaptive]... [--quick]";

fn main() -> anyhow::Result<()> {
    let mut quick = false;
    let mut which = Vec::new();
    for arg in std::env::args().skip(1) {
        match arg.as_str() {
            "--quick" => quick = true,
            "-h" | "--help" => {
                println!("{USAGE}");
                return Ok(());
            }
            "all" => which.extend(ALL.iter().map(|s| s.to_string())),
            other => which.push(other.to_owned()),
        }
    }
    if which.is_empty() {
        which.extend(ALL.iter().map(|s| s.to_string()));
    }
    if cfg!(debug_assertions) {
        eprintln!("trident-bench: warning: debug build; figures are meaningful with --release");
    }
    let alone = which.len() == 1;
    for bench in which {
        match bench.as_str() {
            "hot-path" => hot_path::run(quick)?,
            "end-to-end" => end_to_end::run(quick)?,
            // Peak RSS must be this benchmark's own: a fresh process.
            "memory" if !alone => run_alone("memory", quick)?,
            "memory" => memory::run(quick)?,
            "stream-disk" => stream_disk::run(quick)?,
            "otlp-export" => otlp_export::run(quick)?,
            "servicing" => servicing::run(quick)?,
            "rcp" => rcp::run(quick)?,
            "legacy-bridge" => legacy_bridge::run(quick)?,
            "subscribers" => subscribers::run(quick)?,
            "verify-writes" => verify_writes::run(quick)?,
            "adaptive" => adaptive::run(quick)?,
            other => bail!("unknown benchmark {other:?}; known: {}", ALL.join(", ")),
        }
    }
    Ok(())
}

/// Runs one benchmark in a child process (same binary), output passed through.
fn run_alone(bench: &str, quick: bool) -> anyhow::Result<()> {
    let mut command = std::process::Command::new(std::env::current_exe()?);
    command.arg(bench);
    if quick {
        command.arg("--quick");
    }
    let status = command.status()?;
    if !status.success() {
        bail!("{bench} benchmark failed: {status}");
    }
    Ok(())
}
