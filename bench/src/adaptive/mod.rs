//! Adaptive A/B updates against the peers (issue 38), side by side in one
//! run. Image pairs v1 -> v2 built reproducibly ([`images`]): one package
//! changed (its files grown a little, so the files after them move), the
//! same package changed to the same sizes, about 10 % of the files
//! changed, everything changed. Each v2 is served by a local HTTP server
//! through a proxy on loopback throttled to 100 Mbit/s
//! (`trident_e2e::throttled_http::ThrottledProxy`, which counts the bytes
//! it delivers), and updated by:
//!
//! - tridentd adaptively (the indexed COSI; v1 in the active volume);
//! - tridentd in full (the plain, indexless COSI): the baseline;
//! - `casync extract` from a chunk store (`casync make`, zstd, default
//!   chunk sizes) of v2's root, seeded with v1's root.
//!
//! RAUC's adaptive mode needs the kernel's `nbd` for HTTP streaming, which
//! this host lacks: its side runs in a VM guest, not here. Medians of
//! [`RUNS`] runs (the tools' order alternating run by run); the 1-minute
//! load average before and after. `TRIDENT_BENCH_DIR` sets the work
//! directory (about 1.5 GiB); `TRIDENT_BENCH_CHUNK_SIZE` (bytes) the
//! indexed COSIs' chunk size, else `mkcosi`'s default.

mod images;
mod tools;

use std::path::Path;

use anyhow::{Context, bail};
use trident_e2e::dir_http::HttpServer;
use trident_e2e::faulty_http::{Faults, FaultyServer};
use trident_e2e::throttled_http::ThrottledProxy;

use crate::daemon::tridentd;
use crate::report::{self, load_average, median};
use crate::stream_disk::work_dir;
use images::{Change, Size};
use tools::{Measured, Target};

const BENCH: &str = "adaptive";
/// 100 Mbit/s.
const BYTES_PER_SECOND: u64 = 100_000_000 / 8;
const RUNS: usize = 3;
const QUICK_RUNS: usize = 1;
/// About 80 MiB of files in a 128 MiB root (`--quick`: 20 in 48).
const SIZE: Size = Size {
    packages: 64,
    root_mib: 128,
};
const QUICK_SIZE: Size = Size {
    packages: 16,
    root_mib: 48,
};

/// The medians of one tool's runs.
struct Medians {
    bytes: f64,
    wall: f64,
    cpu: f64,
}

fn medians(runs: &[Measured]) -> Medians {
    Medians {
        bytes: median(runs.iter().map(|m| m.bytes as f64).collect()),
        wall: median(runs.iter().map(|m| m.wall).collect()),
        cpu: median(runs.iter().map(|m| m.cpu).collect()),
    }
}

fn report_tool(pair: &str, tool: &str, m: &Medians, full: Option<&Medians>) {
    let metric = |what: &str| format!("{pair}.{tool}.{what}");
    report::line(
        BENCH,
        &metric("bytes_fetched"),
        m.bytes,
        "bytes",
        full.map(|f| f.bytes),
    );
    report::line(BENCH, &metric("wall"), m.wall, "s", full.map(|f| f.wall));
    report::line(BENCH, &metric("cpu"), m.cpu, "s", full.map(|f| f.cpu));
}

fn file_len(path: &Path) -> anyhow::Result<f64> {
    Ok(std::fs::metadata(path)?.len() as f64)
}

pub fn run(quick: bool) -> anyhow::Result<()> {
    if !tridentd().exists() {
        bail!(
            "{} not found (build it with --release)",
            tridentd().display()
        );
    }
    for tool in ["casync", "mkfs.ext4", "debugfs", "mkfs.vfat"] {
        which(tool)?;
    }
    let (size, runs) = if quick {
        (QUICK_SIZE, QUICK_RUNS)
    } else {
        (SIZE, RUNS)
    };
    let work = work_dir()?;
    let dir = work.path();
    report::line(
        BENCH,
        "load_average_1m_before",
        load_average().unwrap_or(f64::NAN),
        "",
        None,
    );
    report::line(
        BENCH,
        "chunk_size",
        images::index_options()?.chunk_size as f64,
        "bytes",
        None,
    );
    report::line(
        BENCH,
        "link_rate",
        BYTES_PER_SECOND as f64 * 8.0 / 1e6,
        "Mbit/s",
        None,
    );

    let esp = images::esp(dir)?;
    let v1 = images::build(dir, "v1", size, None, &esp)?;
    // Reproducible: the same tree built again is the same filesystem.
    let again = images::build(dir, "v1-again", size, None, &esp)?;
    let identical = std::fs::read(&v1.root)? == std::fs::read(&again.root)?;
    report::line(
        BENCH,
        "v1_root_rebuilt_identical",
        f64::from(u8::from(identical)),
        "bool",
        None,
    );
    for path in [&again.root, &again.plain, &again.indexed] {
        std::fs::remove_file(path)?;
    }
    report::line(
        BENCH,
        "root_filesystem_bytes",
        file_len(&v1.root)?,
        "bytes",
        None,
    );

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let target = Target {
        disk: dir.join("disk.img"),
        root_mib: size.root_mib,
    };
    for change in Change::ALL {
        let pair = change.name();
        let v2 = images::build(dir, &format!("v2-{pair}"), size, Some(change), &esp)?;
        let plain_len = file_len(&v2.plain)?;
        report::line(
            BENCH,
            &format!("{pair}.v2_plain_cosi_bytes"),
            plain_len,
            "bytes",
            None,
        );
        let indexed_len = file_len(&v2.indexed)?;
        report::line(
            BENCH,
            &format!("{pair}.v2_indexed_cosi_bytes"),
            indexed_len,
            "bytes",
            Some(plain_len),
        );
        let served = dir.join(format!("casync-{pair}"));
        let make = tools::casync_make(&served, &v2)?;
        report::line(BENCH, &format!("{pair}.casync.make"), make, "s", None);

        let indexed_server = FaultyServer::start(&v2.indexed, Faults::default());
        let plain_server = FaultyServer::start(&v2.plain, Faults::default());
        let store_server = HttpServer::start(&served);
        let out = dir.join("casync-out.img");
        let (mut adaptive, mut full, mut casync) = (Vec::new(), Vec::new(), Vec::new());
        for run in 0..runs {
            let casync_run = || -> anyhow::Result<Measured> {
                let proxy = ThrottledProxy::start(store_server.port, BYTES_PER_SECOND)?;
                let m = tools::casync_extract(&proxy, &v1, &out)?;
                if std::fs::read(&out)? != std::fs::read(&v2.root)? {
                    bail!("{pair}: casync extracted another root than v2's");
                }
                Ok(m)
            };
            // Alternating, so neither tool always runs on the warmer cache.
            if run % 2 == 1 {
                casync.push(casync_run()?);
            }
            let indexed = ThrottledProxy::start(indexed_server.port(), BYTES_PER_SECOND)?;
            let plain = ThrottledProxy::start(plain_server.port(), BYTES_PER_SECOND)?;
            let (a, f) = runtime
                .block_on(tools::tridentd(dir, &target, &v1, &v2, &indexed, &plain))
                .with_context(|| format!("{pair}: tridentd"))?;
            adaptive.push(a);
            full.push(f);
            if run % 2 == 0 {
                casync.push(casync_run()?);
            }
        }
        let (adaptive, full, casync) = (medians(&adaptive), medians(&full), medians(&casync));
        report_tool(pair, "full", &full, None);
        report_tool(pair, "adaptive", &adaptive, Some(&full));
        report_tool(pair, "casync", &casync, Some(&full));
        report::line(
            BENCH,
            &format!("{pair}.adaptive_vs_casync.bytes_fetched"),
            adaptive.bytes,
            "bytes",
            Some(casync.bytes),
        );
        for path in [&v2.root, &v2.plain, &v2.indexed] {
            std::fs::remove_file(path)?;
        }
        std::fs::remove_dir_all(&served)?;
    }
    report::line(
        BENCH,
        "load_average_1m_after",
        load_average().unwrap_or(f64::NAN),
        "",
        None,
    );
    Ok(())
}

/// Fails naming the Debian package when `tool` is not on the PATH.
fn which(tool: &str) -> anyhow::Result<()> {
    let found = std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(tool).exists()));
    if !found {
        bail!("{tool} not found: apt-get install -y casync e2fsprogs dosfstools");
    }
    Ok(())
}
