//! Overall progress records: derived by the bus from an operation's plan
//! and phases, delivered on WatchProgress beside the phase records, with a
//! final `finished` record before the operation's completion.

use futures::StreamExt;
use trident_proto::v1::{
    OverallProgress, RebootStatus, RecordKind, ServicingKind, StatusCode, WatchOptions, record,
    stream_event,
};
use trident_telemetry::operation::{Completion, Operation, OperationSpec};
use trident_telemetry::progress::{Phase, Unit};
use trident_telemetry::{Bus, BusConfig, Subscription};

fn progress_records(bus: &Bus, operation_id: &str) -> Vec<record::Record> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime");
    let events: Vec<_> = runtime.block_on(
        bus.subscribe(Subscription {
            options: WatchOptions {
                snapshot: true,
                operation_id: operation_id.to_owned(),
                ..WatchOptions::default()
            },
            kinds: vec![RecordKind::Progress, RecordKind::Operation],
        })
        .collect(),
    );
    events
        .into_iter()
        .filter_map(|e| match e.event {
            Some(stream_event::Event::Record(r)) => r.record,
            _ => None,
        })
        .collect()
}

#[test]
fn the_bus_derives_overall_progress_from_the_plan_and_top_level_byte_phases() {
    let bus = Bus::new(BusConfig::default()).expect("bus");
    let id = tracing::subscriber::with_default(bus.subscriber(), || {
        let op = Operation::start(
            &bus,
            OperationSpec {
                kind: ServicingKind::CleanInstall,
                rpc: "StreamDisk",
                parent: None,
                continues: None,
            },
        );
        {
            let _in_op = op.span().enter();
            trident_telemetry::overall::plan_steps(3);
            Phase::start("validate", "Validate", Unit::Items, Some(1)).done();
            trident_telemetry::overall::plan_bytes(1000);
            let download = Phase::start("download", "Download", Unit::Bytes, Some(1000));
            let region = Phase::child(&download, "write/a", "Write a", Unit::Bytes, Some(1000));
            download.set(400);
            region.set(400);
            std::thread::sleep(std::time::Duration::from_millis(150));
            download.set(1000);
            region.set(1000);
            region.done();
            download.done();
        }
        let id = op.id().to_owned();
        op.complete(Completion {
            result: StatusCode::Success,
            reboot_status: RebootStatus::RebootNotRequired,
            ..Completion::default()
        });
        id
    });
    let records = progress_records(&bus, &id);
    let overall: Vec<OverallProgress> = records
        .iter()
        .filter_map(|r| match r {
            record::Record::OverallProgress(o) => Some(o.clone()),
            _ => None,
        })
        .collect();
    assert!(overall.iter().all(|o| o.operation_id == id));
    assert!(
        overall.iter().any(|o| o.bytes_total == Some(1000)),
        "the plan's total reaches the wire"
    );
    assert!(
        overall.iter().all(|o| o.steps_planned == 3),
        "the step plan, declared first, is on every record: {overall:?}"
    );
    assert!(
        overall.iter().all(|o| o.bytes_done <= 1000),
        "a child's bytes are not counted twice: {overall:?}"
    );
    let last = overall.last().expect("overall records");
    assert!(last.finished, "the last overall record says finished");
    assert_eq!(last.bytes_done, 1000);
    assert_eq!(last.steps_done, 2);
    assert_eq!(last.eta, None);
    // The final overall record comes before the completed record.
    let final_at = records
        .iter()
        .position(|r| matches!(r, record::Record::OverallProgress(o) if o.finished));
    let completed_at = records
        .iter()
        .rposition(|r| matches!(r, record::Record::Operation(_)));
    assert!(final_at < completed_at);
}
