//! Serving a bus's TelemetryService on a Unix socket inside the bench
//! process, and gRPC clients to it over the socket.

use std::path::{Path, PathBuf};

use tokio::net::UnixListener;
use tokio_stream::wrappers::UnixListenerStream;
use tonic::transport::Channel;
use trident_proto::v1::telemetry_service_client::TelemetryServiceClient;
use trident_telemetry::Bus;

/// A served bus; the server stops on drop.
pub struct Served {
    pub socket: PathBuf,
    _stop: tokio::sync::oneshot::Sender<()>,
    _dir: tempfile::TempDir,
}

impl Served {
    /// Serves `bus` on a fresh socket in a temp dir (on the current runtime).
    pub fn start(bus: &Bus) -> anyhow::Result<Served> {
        let dir = tempfile::tempdir()?;
        let socket = dir.path().join("bench.sock");
        let listener = UnixListener::bind(&socket)?;
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
        Ok(Served {
            socket,
            _stop: stop,
            _dir: dir,
        })
    }

    /// A new connection.
    pub async fn channel(&self) -> anyhow::Result<Channel> {
        channel(&self.socket).await
    }

    /// A new client on its own connection.
    pub async fn client(&self) -> anyhow::Result<TelemetryServiceClient<Channel>> {
        Ok(TelemetryServiceClient::new(channel(&self.socket).await?)
            .max_decoding_message_size(64 * 1024 * 1024))
    }
}

/// A channel to a gRPC server on the Unix socket `socket`.
pub async fn channel(socket: &Path) -> anyhow::Result<Channel> {
    Ok(trident_proto::client::uds_channel(socket).await?)
}
