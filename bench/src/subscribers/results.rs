//! What the subscribers benchmark measured in each observed run, and its
//! result lines.

use trident_proto::v1::DropCounters;

use super::follow::{self, Kind};
use super::{BENCH, MIB, RING_RECORDS};
use crate::report::{self, median};

/// What an observed update measured.
#[derive(Debug, Default)]
pub(super) struct Observed {
    pub complete: usize,
    pub kept_up: usize,
    /// Slow subscribers, per kind.
    pub slow: [usize; 3],
    /// Slow subscribers told of a gap and their drop counters, per kind.
    pub slow_with_gaps: [usize; 3],
    /// Slow subscribers of kinds that carry operation records (Watch,
    /// WatchProgress) that still got the operation's completed record.
    pub slow_saw_completion: usize,
    pub gap_records: u64,
    /// Sum of the slow subscribers' own drop counters.
    pub slow_drops: DropCounters,
    /// The daemon's bus-wide drop counters after the update.
    pub bus_drops: DropCounters,
    /// Records of the operation per kind (Watch, WatchLogs, WatchProgress).
    pub operation_records: [usize; 3],
    pub rss_max_kib: u64,
}

/// Adds `b` into `a`, counter by counter.
pub(super) fn add_drops(a: &mut DropCounters, b: &DropCounters) {
    a.logs += b.logs;
    a.spans += b.spans;
    a.progress += b.progress;
    a.errors += b.errors;
    a.operations += b.operations;
    a.progress_coalesced += b.progress_coalesced;
    a.journal += b.journal;
}

/// Reads one drop counter.
type Counter = fn(&DropCounters) -> u64;

/// The result lines; counts are the worst of the observed runs.
pub(super) fn report(n: usize, plain: Vec<f64>, watched: Vec<f64>, all: &[Observed]) {
    let worst = |f: &dyn Fn(&Observed) -> f64| all.iter().map(f).fold(f64::INFINITY, f64::min);
    let slow = (n - n * 3 / 4) as f64;
    let kept_up = all.first().map_or(0, |o| o.kept_up) as f64;
    let ring = RING_RECORDS.parse().unwrap_or(0.0);
    report::line(BENCH, "ring_records", ring, "records", None);
    report::line(
        BENCH,
        "slow_window",
        f64::from(follow::SLOW_WINDOW),
        "bytes",
        None,
    );
    for kind in Kind::ALL {
        report::line(
            BENCH,
            &format!("operation_records.{}", kind.name()),
            worst(&|o| o.operation_records[kind.index()] as f64),
            "records",
            Some(ring),
        );
    }
    report::line(
        BENCH,
        "update_duration",
        median(watched),
        "s",
        Some(median(plain)),
    );
    report::line(BENCH, "subscribers_held", n as f64, "count", None);
    report::line(
        BENCH,
        "subscribers_complete",
        worst(&|o| o.complete as f64),
        "count",
        Some(kept_up),
    );
    report::line(
        BENCH,
        "slow_subscribers_with_gaps",
        worst(&|o| o.slow_with_gaps.iter().sum::<usize>() as f64),
        "count",
        Some(slow),
    );
    for kind in Kind::ALL {
        report::line(
            BENCH,
            &format!("slow_subscribers_with_gaps.{}", kind.name()),
            worst(&|o| o.slow_with_gaps[kind.index()] as f64),
            "count",
            all.first().map(|o| o.slow[kind.index()] as f64),
        );
    }
    // WatchLogs carries no operation records: its slow ones are not counted.
    let carrying = all
        .first()
        .map(|o| (o.slow[Kind::Watch.index()] + o.slow[Kind::Progress.index()]) as f64);
    report::line(
        BENCH,
        "slow_subscribers_saw_completion",
        worst(&|o| o.slow_saw_completion as f64),
        "count",
        carrying,
    );
    report::line(
        BENCH,
        "gap_records_min",
        worst(&|o| o.gap_records as f64),
        "records",
        None,
    );
    let counters: [(&str, Counter); 5] = [
        ("logs", |d| d.logs),
        ("spans", |d| d.spans),
        ("operations", |d| d.operations),
        ("progress_coalesced", |d| d.progress_coalesced),
        ("journal", |d| d.journal),
    ];
    for (name, get) in counters {
        report::line(
            BENCH,
            &format!("slow_drops.{name}"),
            worst(&|o| get(&o.slow_drops) as f64),
            "records",
            None,
        );
        report::line(
            BENCH,
            &format!("bus_drops.{name}"),
            worst(&|o| get(&o.bus_drops) as f64),
            "records",
            None,
        );
    }
    let rss = all.iter().map(|o| o.rss_max_kib).max().unwrap_or(0);
    report::line(
        BENCH,
        "daemon_rss_max",
        rss as f64 * 1024.0 / MIB,
        "MiB",
        None,
    );
}
