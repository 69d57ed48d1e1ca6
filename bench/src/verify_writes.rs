//! What StreamDisk's read-back costs: the same COSI image (1 GiB
//! uncompressed; 256 MiB with `--quick`) streamed through a real `tridentd`
//! onto a disk-image file with the default read-back (`sampled`: both
//! partition tables, every region's first and last 4 KiB) and with `full`
//! (every byte read back from the device after its cached pages were
//! dropped), beside the shell baseline of `stream-disk` (`zstd -dc | dd
//! conv=fsync` per region plus `sha384sum`). The three alternate their
//! order run by run so each sees the same machine; medians of [`RUNS`]
//! (3 with `--quick`). The machine's load average is printed before and
//! after, as result lines. `TRIDENT_BENCH_DIR` sets the work directory.

use std::time::Duration;

use trident_proto::v1::VerifyWrites;

use crate::daemon::{Daemon, tridentd};
use crate::report::{self, load_average, median};
use crate::stream_disk::{Fixture, baseline, daemon_run, prepare, work_dir};

const BENCH: &str = "verify-writes";
const DISK_BYTES: u64 = 1 << 30;
const QUICK_DISK_BYTES: u64 = 256 << 20;
const RUNS: usize = 5;
const QUICK_RUNS: usize = 3;

#[derive(Clone, Copy)]
enum Case {
    Baseline,
    Sampled,
    Full,
}

async fn once(daemon: &Daemon, f: &Fixture, case: Case) -> anyhow::Result<Duration> {
    match case {
        Case::Baseline => baseline(f),
        // Unset, as upstream's clients send it: the default.
        Case::Sampled => daemon_run(&daemon.socket, f, VerifyWrites::Unspecified).await,
        Case::Full => daemon_run(&daemon.socket, f, VerifyWrites::Full).await,
    }
}

pub fn run(quick: bool) -> anyhow::Result<()> {
    if !tridentd().exists() {
        anyhow::bail!(
            "{} not found (build it with --release)",
            tridentd().display()
        );
    }
    let disk = if quick { QUICK_DISK_BYTES } else { DISK_BYTES };
    let runs = if quick { QUICK_RUNS } else { RUNS };
    let dir = work_dir()?;
    let f = prepare(dir.path(), disk)?;
    eprintln!(
        "verify-writes: {} MiB uncompressed, {runs} runs",
        f.total >> 20
    );
    let load_before = load_average().unwrap_or(f64::NAN);
    let rt = tokio::runtime::Runtime::new()?;
    let (base, sampled, full) = rt.block_on(async {
        let daemon = Daemon::start(
            dir.path(),
            [std::ffi::OsStr::new("--disk"), f.target.as_os_str()],
        )
        .await?;
        // Warm-up (untimed): the image in the page cache, the target's
        // blocks allocated.
        baseline(&f)?;
        once(&daemon, &f, Case::Sampled).await?;
        let cases = [Case::Baseline, Case::Sampled, Case::Full];
        let mut seconds = [Vec::new(), Vec::new(), Vec::new()];
        for run in 0..runs {
            for i in 0..cases.len() {
                let which = (run + i) % cases.len();
                seconds[which].push(once(&daemon, &f, cases[which]).await?.as_secs_f64());
            }
        }
        let [base, sampled, full] = seconds.map(median);
        anyhow::Ok((base, sampled, full))
    })?;
    let load_after = load_average().unwrap_or(f64::NAN);
    report::line(BENCH, "load_average_1m_before", load_before, "", None);
    report::line(BENCH, "baseline_seconds", base, "s", None);
    report::line(BENCH, "sampled_seconds", sampled, "s", Some(base));
    report::line(BENCH, "full_seconds", full, "s", Some(base));
    report::line(BENCH, "full_vs_sampled_seconds", full, "s", Some(sampled));
    report::line(BENCH, "load_average_1m_after", load_after, "", None);
    Ok(())
}
