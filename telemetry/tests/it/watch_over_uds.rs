//! TelemetryService over real gRPC on a Unix socket: ordering, resume,
//! tail, snapshot, filters, concurrency.

#![allow(clippy::unwrap_used)]

use futures::future::join_all;
use trident_proto::v1::{
    GetBusStatusRequest, LogLevel, RecordKind, WatchLogsRequest, WatchOptions, WatchRequest,
    record, stream_event,
};
use trident_telemetry::{Bus, BusConfig};

use crate::support::*;

fn emit(count: usize, from: usize) {
    for i in from..from + count {
        tracing::info!(index = i as u64, "record {i}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn records_arrive_in_order_without_duplicates_and_resume_gives_exactly_the_rest() {
    let served = Served::start(Bus::in_memory(BusConfig::default())).await;
    let _guard = tracing::subscriber::set_default(served.bus.subscriber());
    emit(1000, 0);
    let mut client = served.client().await;

    let events = collect(
        &mut client,
        WatchOptions {
            snapshot: true,
            ..Default::default()
        },
        vec![],
    )
    .await;
    let all = records(&events);
    assert_eq!(all.len(), 1000);
    let seqs: Vec<u64> = all.iter().map(|r| seq(r)).collect();
    assert!(
        seqs.windows(2).all(|w| w[1] == w[0] + 1),
        "strictly increasing, no duplicates"
    );
    assert_eq!(
        messages(&events),
        (0..1000).map(|i| format!("record {i}")).collect::<Vec<_>>()
    );
    assert!(
        matches!(events.last().and_then(|e| e.event.as_ref()), Some(stream_event::Event::EndOfSnapshot(c)) if c.sequence == seqs[999])
    );

    let after = cursor(all[499]);
    let resumed = collect(
        &mut client,
        WatchOptions {
            after: Some(after),
            snapshot: true,
            ..Default::default()
        },
        vec![],
    )
    .await;
    assert_eq!(
        messages(&resumed),
        (500..1000)
            .map(|i| format!("record {i}"))
            .collect::<Vec<_>>()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tail_starts_with_the_last_n_records_then_follows() {
    let served = Served::start(Bus::in_memory(BusConfig::default())).await;
    let _guard = tracing::subscriber::set_default(served.bus.subscriber());
    emit(100, 0);
    let mut client = served.client().await;
    let mut stream = client
        .watch_logs(WatchLogsRequest {
            options: Some(WatchOptions {
                tail: Some(10),
                ..Default::default()
            }),
        })
        .await
        .unwrap()
        .into_inner();
    // The subscription exists once the first batch arrived; later records follow.
    let mut first = tokio_stream::StreamExt::next(&mut stream)
        .await
        .unwrap()
        .unwrap()
        .events;
    emit(5, 100);
    let mut wrapped = Vec::new();
    while records(&first).len() + wrapped.len() < 15 {
        let more = tokio_stream::StreamExt::next(&mut stream)
            .await
            .unwrap()
            .unwrap()
            .events;
        wrapped.extend(more);
    }
    first.extend(wrapped);
    assert_eq!(
        messages(&first),
        (90..105).map(|i| format!("record {i}")).collect::<Vec<_>>()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn filters_select_by_kind_level_target_prefix_operation_and_span_name() {
    let served = Served::start(Bus::in_memory(BusConfig::default())).await;
    {
        let _guard = tracing::subscriber::set_default(served.bus.subscriber());
        tracing::debug!("debug line");
        tracing::warn!(target: "tridentd::engine::write", "warn line");
        tracing::info!(log.target = "script::setup", "script line");
        let op = tracing::info_span!("servicing_operation", operation_id = "op-7");
        let _op = op.enter();
        let write = tracing::info_span!("write_image");
        let _write = write.enter();
        tracing::error!("inside write");
    }
    let mut client = served.client().await;
    let snap = |options: WatchOptions| WatchOptions {
        snapshot: true,
        ..options
    };
    let logs = vec![RecordKind::Log as i32];

    let warn_or_worse = collect(
        &mut client,
        snap(WatchOptions {
            min_level: LogLevel::Warn as i32,
            ..Default::default()
        }),
        logs.clone(),
    )
    .await;
    assert_eq!(messages(&warn_or_worse), ["warn line", "inside write"]);

    let scripts = collect(
        &mut client,
        snap(WatchOptions {
            target_prefixes: vec!["script::".into()],
            ..Default::default()
        }),
        logs.clone(),
    )
    .await;
    assert_eq!(messages(&scripts), ["script line"]);

    let engine = collect(
        &mut client,
        snap(WatchOptions {
            target_prefixes: vec!["tridentd::engine".into()],
            ..Default::default()
        }),
        logs.clone(),
    )
    .await;
    assert_eq!(messages(&engine), ["warn line"]);

    let in_op = collect(
        &mut client,
        snap(WatchOptions {
            operation_id: "op-7".into(),
            ..Default::default()
        }),
        vec![],
    )
    .await;
    assert!(records(&in_op).iter().all(|r| match &r.record {
        Some(record::Record::Log(l)) => l.operation_id == "op-7",
        Some(record::Record::Span(s)) => s.operation_id == "op-7",
        _ => false,
    }));
    assert_eq!(messages(&in_op), ["inside write"]);

    let in_span = collect(
        &mut client,
        snap(WatchOptions {
            span_name: "write_image".into(),
            ..Default::default()
        }),
        vec![],
    )
    .await;
    let names: Vec<_> = records(&in_span)
        .iter()
        .map(|r| match &r.record {
            Some(record::Record::Span(s)) => format!("span {} {}", s.name, s.event),
            Some(record::Record::Log(l)) => format!("log {}", l.message),
            _ => "other".into(),
        })
        .collect();
    assert_eq!(
        names,
        [
            "span write_image 1",
            "log inside write",
            "span write_image 2"
        ]
    );

    // A subscriber starting after the span opened still knows it.
    let opened = cursor(records(&in_span)[0]);
    let late = collect(
        &mut client,
        snap(WatchOptions {
            after: Some(opened),
            span_name: "write_image".into(),
            ..Default::default()
        }),
        vec![],
    )
    .await;
    assert_eq!(messages(&late), ["inside write"]);

    let spans_only = collect(
        &mut client,
        snap(WatchOptions::default()),
        vec![RecordKind::Span as i32],
    )
    .await;
    assert_eq!(records(&spans_only).len(), 4);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hundred_concurrent_subscribers_each_receive_every_record_in_order() {
    let served = Served::start(Bus::in_memory(BusConfig::default())).await;
    let mut streams = Vec::new();
    for _ in 0..100 {
        let mut client = served.client().await;
        let stream = client
            .watch(WatchRequest {
                options: Some(WatchOptions::default()),
                kinds: vec![],
            })
            .await
            .unwrap()
            .into_inner();
        streams.push(stream);
    }
    // Watch RPCs register on the bus before their first response.
    for _ in 0..100 {
        if served.bus.status().subscribers == 100 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert_eq!(served.bus.status().subscribers, 100);
    {
        let _guard = tracing::subscriber::set_default(served.bus.subscriber());
        emit(1000, 0);
    }
    let results = join_all(streams.iter_mut().map(|s| take_records(s, 1000))).await;
    let expected: Vec<String> = (0..1000).map(|i| format!("record {i}")).collect();
    for events in results {
        assert_eq!(messages(&events), expected);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_requests_get_invalid_argument() {
    let served = Served::start(Bus::in_memory(BusConfig::default())).await;
    let mut client = served.client().await;
    let bad_cursor = WatchOptions {
        after: Some(trident_proto::v1::Cursor {
            run_id: "not-a-run".into(),
            sequence: 3,
        }),
        ..Default::default()
    };
    let status = client
        .watch(WatchRequest {
            options: Some(bad_cursor),
            kinds: vec![],
        })
        .await
        .unwrap_err();
    assert_eq!(status.code(), tonic::Code::InvalidArgument);
    let status = client
        .watch(WatchRequest {
            options: None,
            kinds: vec![42],
        })
        .await
        .unwrap_err();
    assert_eq!(status.code(), tonic::Code::InvalidArgument);
    let status = client
        .get_bus_status(GetBusStatusRequest {})
        .await
        .unwrap()
        .into_inner();
    assert_eq!(status.run_id, served.bus.run_id());
}
