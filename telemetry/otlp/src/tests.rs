//! The export pipeline against a collector that accepts and never answers.

use std::net::TcpListener;
use std::time::Duration;

use tracing_subscriber::layer::SubscriberExt;

use super::*;

#[test]
#[allow(clippy::unwrap_used)]
fn a_stalled_collector_fills_the_bounded_queue_and_the_drops_are_counted() {
    // Bound but never accepted: connections hang in the backlog, no answer.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let flags = OtlpFlags {
        endpoint: Some(format!("http://{}", listener.local_addr().unwrap())),
        protocol: None,
        timeout: Some(Duration::from_millis(500)),
    };
    let mut config = OtlpConfig::resolve(&flags, |_| None).unwrap().unwrap();
    config.span_queue = 8;
    config.span_delay = Duration::from_millis(20);
    let identity = ServiceIdentity {
        service_name: "tridentd".into(),
        service_version: "test".into(),
        instance_id: "run".into(),
    };
    let export = OtlpExport::start(config, &identity).unwrap();
    let subscriber = tracing_subscriber::registry().with(export.layer());
    tracing::subscriber::with_default(subscriber, || {
        for i in 0..200 {
            let _span = tracing::info_span!(target: "tridentd::test", "work", i).entered();
        }
    });
    let health = Arc::clone(export.health());
    let dropped = health.dropped_count(Signal::Traces, DropReason::QueueFull);
    assert!(
        dropped >= 150,
        "queue of 8 must drop most of 200 spans, dropped {dropped}"
    );
    assert!(health.in_outage());
    // Bounded: returns (false = gave up waiting on the stalled collector).
    let _ = export.shutdown();
    assert!(
        health.take_notices().is_empty(),
        "shutdown announced the outage"
    );
}
