//! The emit API (operations, progress, errors) and the layer produce the
//! typed records the proto describes.

use futures::StreamExt;
use trident_proto::v1::{
    OperationEvent, PhaseState, RebootStatus, RecordKind, ServicingKind, SpanEvent, SpanStatus,
    StatusCode, StreamEvent, TridentErrorKind, WatchOptions, record, stream_event,
};
use trident_telemetry::operation::{Completion, Operation, OperationSpec};
use trident_telemetry::progress::{Phase, Unit};
use trident_telemetry::{Bus, BusConfig, Subscription, TraceParent};

fn snapshot(bus: &Bus, kinds: Vec<RecordKind>, options: WatchOptions) -> Vec<StreamEvent> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime");
    runtime.block_on(
        bus.subscribe(Subscription {
            options: WatchOptions {
                snapshot: true,
                ..options
            },
            kinds,
        })
        .collect(),
    )
}

fn records(events: &[StreamEvent]) -> Vec<record::Record> {
    events
        .iter()
        .filter_map(|e| match &e.event {
            Some(stream_event::Event::Record(r)) => r.record.clone(),
            _ => None,
        })
        .collect()
}

#[test]
fn log_records_carry_level_target_fields_location_and_span_ids() {
    let bus = Bus::new(BusConfig::default()).expect("bus");
    tracing::subscriber::with_default(bus.subscriber(), || {
        let span = tracing::info_span!("outer", operation_id = "op-1");
        let _entered = span.enter();
        tracing::warn!(disk = "/dev/sda", size = 42u64, ok = true, "disk found");
        tracing::info!(log.target = "script::setup", "script line");
    });
    let all = records(&snapshot(
        &bus,
        vec![RecordKind::Log],
        WatchOptions::default(),
    ));
    let logs: Vec<_> = all
        .iter()
        .filter_map(|r| match r {
            record::Record::Log(l) => Some(l.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(logs.len(), 2);
    let first = &logs[0];
    assert_eq!(first.message, "disk found");
    assert_eq!(first.level, trident_proto::v1::LogLevel::Warn as i32);
    assert_eq!(first.target, module_path!());
    assert_eq!(first.fields.len(), 3);
    assert_eq!(first.operation_id, "op-1");
    assert_eq!(first.trace_id.len(), 32);
    assert_eq!(first.span_id.len(), 16);
    assert!(first.location.as_ref().is_some_and(|l| l.line > 0));
    assert_eq!(logs[1].target, "script::setup");
    assert!(logs[1].fields.is_empty());
}

#[test]
fn every_field_type_round_trips_through_the_encoded_log_record() {
    use trident_proto::v1::field::Value;
    let bus = Bus::new(BusConfig::default()).expect("bus");
    let error = std::io::Error::other("disk gone");
    tracing::subscriber::with_default(bus.subscriber(), || {
        tracing::info!(
            text = "t",
            signed = -5i64,
            unsigned = 7u64,
            real = 1.5f64,
            flag = false,
            debug = ?vec![1, 2],
            display = %"shown",
            error = &error as &(dyn std::error::Error + 'static),
            "value {}", 42
        );
    });
    let all = records(&snapshot(
        &bus,
        vec![RecordKind::Log],
        WatchOptions::default(),
    ));
    let Some(record::Record::Log(log)) = all.first() else {
        panic!("no log record");
    };
    assert_eq!(log.message, "value 42");
    let value = |name: &str| {
        log.fields
            .iter()
            .find(|f| f.name == name)
            .and_then(|f| f.value.clone())
            .expect(name)
    };
    assert_eq!(value("text"), Value::Text("t".into()));
    assert_eq!(value("signed"), Value::Signed(-5));
    assert_eq!(value("unsigned"), Value::Unsigned(7));
    assert_eq!(value("real"), Value::Real(1.5));
    assert_eq!(value("flag"), Value::Boolean(false));
    assert_eq!(value("debug"), Value::Text("[1, 2]".into()));
    assert_eq!(value("display"), Value::Text("shown".into()));
    assert_eq!(value("error"), Value::Text("disk gone".into()));
    assert!(log.trace_id.is_empty() && log.span_id.is_empty() && log.operation_id.is_empty());
}

#[test]
fn operation_progress_and_error_records_follow_the_emit_api() {
    let bus = Bus::new(BusConfig::default()).expect("bus");
    let parent = TraceParent::parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
    let (op_id, cursor) = tracing::subscriber::with_default(bus.subscriber(), || {
        let op = Operation::start(
            &bus,
            OperationSpec {
                kind: ServicingKind::CleanInstall,
                rpc: "Install",
                parent,
                continues: None,
            },
        );
        assert_eq!(op.trace_id(), "4bf92f3577b34da6a3ce929d0e0e4736");
        let id = op.id().to_owned();
        let cursor = op.started_cursor().cloned();
        {
            let _in_op = op.span().enter();
            tracing::info!("writing");
            let phase = Phase::start("write/root-a", "Write root-a", Unit::Bytes, Some(100));
            let child = Phase::child(&phase, "write/root-a/verify", "Verify", Unit::Items, None);
            phase.set(50);
            child.done();
            phase.done();
            let _abandoned = Phase::start("cleanup", "Clean up", Unit::Items, None);
            bus.report_error(trident_proto::v1::ErrorReport {
                category: TridentErrorKind::ServicingError as i32,
                subkind: "write-image".into(),
                message: "short write".into(),
                ..Default::default()
            });
        }
        op.complete(Completion {
            result: StatusCode::Failure,
            reboot_status: RebootStatus::RebootNotRequired,
            error: None,
            ..Completion::default()
        });
        (id, cursor)
    });
    assert!(cursor.is_some_and(|c| c.sequence > 0));
    let all = records(&snapshot(&bus, vec![], WatchOptions::default()));

    let of_op: Vec<_> = all
        .iter()
        .filter(|r| {
            trident_telemetry::record::operation_of(&trident_proto::v1::Record {
                cursor: None,
                boot_id: String::new(),
                timestamp: None,
                record: Some((*r).clone()),
            }) == op_id
        })
        .collect();
    assert!(
        matches!(of_op.first(), Some(record::Record::Operation(o)) if o.event == OperationEvent::Started as i32),
        "the started record opens the operation"
    );
    assert!(
        matches!(of_op.last(), Some(record::Record::Operation(o)) if o.event == OperationEvent::Completed as i32),
        "the completed record ends it"
    );

    let ops: Vec<_> = all
        .iter()
        .filter_map(|r| match r {
            record::Record::Operation(o) => Some(o.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(ops.len(), 2);
    assert_eq!(ops[0].event, OperationEvent::Started as i32);
    assert_eq!(ops[1].event, OperationEvent::Completed as i32);
    assert_eq!(ops[1].result, StatusCode::Failure as i32);

    let root = all
        .iter()
        .find_map(|r| match r {
            record::Record::Span(s)
                if s.name == "servicing_operation" && s.event == SpanEvent::Closed as i32 =>
            {
                Some(s.clone())
            }
            _ => None,
        })
        .expect("root span closed");
    assert_eq!(root.trace_id, "4bf92f3577b34da6a3ce929d0e0e4736");
    assert_eq!(root.parent_span_id, "00f067aa0ba902b7");
    assert_eq!(root.status, SpanStatus::Error as i32);
    assert_eq!(root.operation_id, op_id);

    let progress: Vec<_> = all
        .iter()
        .filter_map(|r| match r {
            record::Record::Progress(p) => Some(p.clone()),
            _ => None,
        })
        .collect();
    assert!(progress.iter().all(|p| p.operation_id == op_id));
    let last_of = |id: &str| {
        progress
            .iter()
            .rev()
            .find(|p| p.phase_id == id)
            .cloned()
            .expect(id)
    };
    assert_eq!(last_of("write/root-a").state, PhaseState::Done as i32);
    assert_eq!(last_of("write/root-a").total, Some(100));
    assert_eq!(
        last_of("write/root-a/verify").parent_phase_id,
        "write/root-a"
    );
    assert_eq!(last_of("write/root-a/verify").total, None);
    assert_eq!(last_of("cleanup").state, PhaseState::Failed as i32);

    let error = bus.last_error().expect("last error");
    assert_eq!(error.operation_id, op_id);
    assert_eq!(error.trace_id, "4bf92f3577b34da6a3ce929d0e0e4736");
    assert!(error.timestamp.is_some());
    assert!(error.recent_logs.iter().any(|l| l.message == "writing"));
    assert_eq!(bus.operations().len(), 1);
    assert!(!bus.operations()[0].running);
}
