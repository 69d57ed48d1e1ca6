#![allow(clippy::unwrap_used)]

use serde_json::{Value, json};
use trident_proto::v1::{Field, FileLocation, LogLevel, LogRecord, SpanRecord, field};

use trident_host::config::HostConfiguration;

use super::Endpoints;
use super::shapes::{self, MetricContext, PhoneHome, PhoneHomeState};

fn text(name: &str, value: &str) -> Field {
    Field {
        name: name.into(),
        value: Some(field::Value::Text(value.into())),
    }
}

fn hc(phonehome: Option<&str>, logstream: Option<&str>) -> HostConfiguration {
    let mut hc = HostConfiguration::default();
    hc.trident.phonehome = phonehome.map(str::to_owned);
    hc.trident.logstream = logstream.map(str::to_owned);
    hc
}

#[test]
fn tracestream_url_follows_upstreams_rule() {
    let e = Endpoints::of(&hc(Some("http://o:8/phonehome/h1"), None)).unwrap();
    assert_eq!(e.tracestream.as_deref(), Some("http://o:8/tracestream/h1"));
    assert_eq!(e.logstream, None);
    let e = Endpoints::of(&hc(None, Some("http://o:8/logs"))).unwrap();
    assert_eq!((e.phonehome, e.tracestream), (None, None));
    let e = Endpoints::of(&hc(Some("http://o:8/report"), None)).unwrap();
    assert_eq!(
        e.tracestream, None,
        "no tracestream without 'phonehome' in the URL"
    );
    assert!(Endpoints::of(&hc(None, None)).is_none());
}

#[test]
fn phonehome_is_upstreams_shape() {
    let body = serde_json::to_value(PhoneHome {
        state: PhoneHomeState::Succeeded,
        message: "ok".into(),
        host_status: Some("servicingState: provisioned\n".into()),
    })
    .unwrap();
    assert_eq!(
        body,
        json!({"state": "succeeded", "message": "ok", "host_status": "servicingState: provisioned\n"})
    );
    let started = serde_json::to_value(PhoneHome {
        state: PhoneHomeState::Started,
        message: "m".into(),
        host_status: None,
    })
    .unwrap();
    assert_eq!(started["state"], "started");
    assert_eq!(started["host_status"], Value::Null);
}

#[test]
fn log_entry_is_upstreams_shape() {
    let log = LogRecord {
        level: LogLevel::Warn as i32,
        message: "disk slow".into(),
        target: "tridentd::servicing".into(),
        module: "tridentd::servicing::engine".into(),
        location: Some(FileLocation {
            path: "daemon/src/x.rs".into(),
            line: 7,
        }),
        ..Default::default()
    };
    let at = prost_types::Timestamp {
        seconds: 1_700_000_000,
        nanos: 5,
    };
    let body = serde_json::to_value(shapes::log_entry(&log, shapes::rfc3339(Some(&at)))).unwrap();
    assert_eq!(
        body,
        json!({
            "level": "warn", "message": "disk slow", "target": "tridentd::servicing",
            "module": "tridentd::servicing::engine", "file": "daemon/src/x.rs", "line": 7,
            "timestamp": "2023-11-14T22:13:20.000000005Z"
        })
    );
}

#[test]
fn metrics_from_events_and_spans() {
    let context = MetricContext::default();
    let single = LogRecord {
        fields: vec![
            text("metric_name", "image_bytes"),
            Field {
                name: "value".into(),
                value: Some(field::Value::Unsigned(42)),
            },
        ],
        ..Default::default()
    };
    let entry = context.event_metric(&single, "t".into()).unwrap();
    assert_eq!(
        (entry.metric_name.as_str(), entry.value.clone()),
        ("image_bytes", json!(42))
    );
    let several = LogRecord {
        fields: vec![text("metric_name", "disk"), text("a", "x"), text("b", "y")],
        ..Default::default()
    };
    let entry = context.event_metric(&several, "t".into()).unwrap();
    assert_eq!(entry.value, json!({"a": "x", "b": "y"}));
    assert!(
        context
            .event_metric(&LogRecord::default(), "t".into())
            .is_none()
    );

    let span = SpanRecord {
        name: "write_image".into(),
        fields: vec![text("disk", "/dev/sda")],
        duration: Some(prost_types::Duration {
            seconds: 1,
            nanos: 500_000_000,
        }),
        ..Default::default()
    };
    let entry = serde_json::to_value(context.span_metric(&span, "t".into())).unwrap();
    assert_eq!(entry["metric_name"], "write_image");
    assert_eq!(
        entry["value"],
        json!({"disk": "/dev/sda", "execution_time": 1.5})
    );
    for key in ["timestamp", "additional_fields", "platform_info"] {
        assert!(entry.get(key).is_some(), "{key} missing: {entry}");
    }
}
