//! StreamDisk by a private tridentd whose trust store is a given PEM file
//! (SSL_CERT_FILE, honoured by the platform verifier on Linux; the
//! machine's real store is never touched): the tests of image sources over
//! TLS (`https_image_source`, `oci_image_source`).

use std::path::Path;

use futures::StreamExt;
use trident_proto::v1::{
    Completed, StreamDiskRequest, servicing_response,
    streaming_service_client::StreamingServiceClient,
};

use crate::Daemon;

/// StreamDisk of `url` (with `image_hash` when given) onto `disk` by a
/// tridentd trusting only `store` and started with `extra` flags; the
/// `Completed` it ends with.
pub async fn stream_disk_trusting(
    store: &Path,
    disk: &Path,
    url: &str,
    image_hash: Option<String>,
    extra: &[&str],
) -> anyhow::Result<Completed> {
    let no_dir = store.parent().unwrap_or(Path::new("/")).join("no-cert-dir");
    let daemon = Daemon::builder()
        .args(["--inactivity-timeout", "0"])
        .args(extra)
        .arg("--disk")
        .arg(disk)
        .env("SSL_CERT_FILE", store)
        .env("SSL_CERT_DIR", no_dir)
        .spawn()
        .await?;
    let mut client = StreamingServiceClient::new(daemon.channel().await?);
    let request = StreamDiskRequest {
        image_url: url.to_owned(),
        image_hash,
        reboot: None,
        ..Default::default()
    };
    let mut stream = client.stream_disk(request).await?.into_inner();
    while let Some(item) = stream.next().await {
        if let Some(servicing_response::Response::Completed(done)) = item?.response {
            return Ok(done);
        }
    }
    anyhow::bail!("no Completed:\n{}", daemon.stderr())
}
