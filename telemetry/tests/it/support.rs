//! Serves a bus's TelemetryService on a real Unix socket with tonic, and
//! gives real gRPC clients to it.

#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::net::UnixListener;
use tokio_stream::StreamExt;
use tokio_stream::wrappers::UnixListenerStream;
use tonic::transport::Channel;
use trident_proto::v1::telemetry_service_client::TelemetryServiceClient;
use trident_proto::v1::{
    Cursor, Record, StreamEvent, WatchOptions, WatchRequest, record, stream_event,
};
use trident_telemetry::Bus;

/// A served bus; the server stops when this is dropped.
pub struct Served {
    pub bus: Bus,
    pub socket: PathBuf,
    _stop: tokio::sync::oneshot::Sender<()>,
    _dir: tempfile::TempDir,
}

impl Served {
    pub async fn start(bus: Bus) -> Served {
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("telemetry.sock");
        let listener = UnixListener::bind(&socket).unwrap();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let service = bus.service();
        tokio::spawn(async move {
            let _ = tonic::transport::Server::builder()
                .add_service(service)
                .serve_with_incoming_shutdown(UnixListenerStream::new(listener), async {
                    let _ = stopped.await;
                })
                .await;
        });
        Served {
            bus,
            socket,
            _stop: stop,
            _dir: dir,
        }
    }

    pub async fn client(&self) -> TelemetryServiceClient<Channel> {
        TelemetryServiceClient::new(channel(&self.socket).await)
    }
}

/// A tonic channel over a Unix socket.
pub async fn channel(socket: &Path) -> Channel {
    trident_proto::client::uds_channel(socket).await.unwrap()
}

/// Runs a Watch and collects every event until the stream ends.
pub async fn collect(
    client: &mut TelemetryServiceClient<Channel>,
    options: WatchOptions,
    kinds: Vec<i32>,
) -> Vec<StreamEvent> {
    let mut stream = client
        .watch(WatchRequest {
            options: Some(options),
            kinds,
        })
        .await
        .unwrap()
        .into_inner();
    let mut events = Vec::new();
    while let Some(response) = tokio::time::timeout(Duration::from_secs(30), stream.next())
        .await
        .unwrap()
    {
        events.extend(response.unwrap().events);
    }
    events
}

/// Reads a following Watch until `want` records arrived (gaps etc. kept).
pub async fn take_records(
    stream: &mut tonic::Streaming<trident_proto::v1::WatchResponse>,
    want: usize,
) -> Vec<StreamEvent> {
    let mut events = Vec::new();
    let mut records = 0;
    while records < want {
        let response = tokio::time::timeout(Duration::from_secs(30), stream.next())
            .await
            .expect("records in time")
            .expect("stream open")
            .unwrap();
        records += response
            .events
            .iter()
            .filter(|e| as_record(e).is_some())
            .count();
        events.extend(response.events);
    }
    events
}

pub fn as_record(event: &StreamEvent) -> Option<&Record> {
    match &event.event {
        Some(stream_event::Event::Record(r)) => Some(r),
        _ => None,
    }
}

pub fn records(events: &[StreamEvent]) -> Vec<&Record> {
    events.iter().filter_map(as_record).collect()
}

pub fn seq(record: &Record) -> u64 {
    record.cursor.as_ref().unwrap().sequence
}

pub fn cursor(record: &Record) -> Cursor {
    record.cursor.clone().unwrap()
}

pub fn message(record: &Record) -> Option<&str> {
    match &record.record {
        Some(record::Record::Log(l)) => Some(&l.message),
        _ => None,
    }
}

pub fn messages(events: &[StreamEvent]) -> Vec<String> {
    records(events)
        .into_iter()
        .filter_map(message)
        .map(str::to_owned)
        .collect()
}
