//! `oci://registry/repository:tag` and `oci://registry/repository@sha256:…`
//! image sources, through the ORAS project's `oci-client`.
//!
//! As upstream Trident: the reference names an OCI artifact whose manifest
//! holds exactly one layer, the COSI file (its media type is not checked,
//! so any artifact type a pusher chose works). A `@sha256:` digest names
//! the manifest, as in every OCI tool; a digest that is no manifest but the
//! layer blob itself (upstream's reading of it) is accepted too.
//!
//! The layer is streamed, not copied: a puller thread with its own small
//! runtime forwards the (digest-verifying) blob stream through a bounded
//! channel into the synchronous reader the COSI reader consumes, so the
//! download runs at the speed the target is written and never holds more
//! than a few chunks in memory.

use std::io::{self, Read};
use std::path::Path;
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};

use bytes::Bytes;
use futures::StreamExt;
use oci_client::client::{ClientConfig, ClientProtocol};
use oci_client::errors::{OciDistributionError, OciErrorCode};
use oci_client::manifest::OciDescriptor;
use oci_client::secrets::RegistryAuth;
use oci_client::{Client, Reference};

use super::options::{HttpTimeouts, SourceOptions};
use super::transport::{AnnouncedLength, ImageStream};
use crate::error::{CosiError, RegistryFailure};

/// URL scheme of registry sources.
pub(crate) const OCI_SCHEME: &str = "oci://";

/// Chunks in flight between the puller thread and the reader.
const CHANNEL_CHUNKS: usize = 8;

/// Opens the COSI layer of `url` (`oci://…`) as a byte stream, with the
/// credentials and timeouts of `options`.
pub(super) fn open(url: &str, options: &SourceOptions) -> Result<ImageStream, CosiError> {
    let reference = parse(url)?;
    let auth = registry_auth(url, &reference, options.registry_auth_file.as_deref())?;
    let timeouts = options.http_timeouts;
    let (opened_tx, opened_rx) = sync_channel(1);
    let (chunks_tx, chunks_rx) = sync_channel(CHANNEL_CHUNKS);
    let thread_url = url.to_owned();
    std::thread::Builder::new()
        .name("oci-pull".to_owned())
        .spawn(move || pull(thread_url, reference, auth, timeouts, opened_tx, chunks_tx))
        .map_err(|source| CosiError::Open {
            url: url.to_owned(),
            source,
        })?;
    // The puller always answers (its sender is dropped only after sending).
    let announced = opened_rx.recv().map_err(|_| CosiError::Registry {
        url: url.to_owned(),
        failure: RegistryFailure::Transport,
        reason: "the registry client stopped before it opened the image".to_owned(),
    })??;
    let reader = ChannelReader {
        chunks: chunks_rx,
        current: Bytes::new(),
        finished: false,
    };
    Ok(match announced {
        Some(announced) => Box::new(AnnouncedLength::new(reader, announced)),
        None => Box::new(reader),
    })
}

/// `oci://` stripped and parsed; a reference without a tag or digest
/// means `:latest`, as for `docker pull`.
fn parse(url: &str) -> Result<Reference, CosiError> {
    let rest = url
        .strip_prefix(OCI_SCHEME)
        .ok_or_else(|| CosiError::UnsupportedUrl {
            url: url.to_owned(),
        })?;
    rest.parse::<Reference>()
        .map_err(|e| CosiError::InvalidOciReference {
            url: url.to_owned(),
            reason: e.to_string(),
        })
}

/// Credentials for the reference's registry from the Docker config file
/// `auth_file`, else anonymous. The file is read at each pull, so rotated
/// credentials need no restart.
fn registry_auth(
    url: &str,
    reference: &Reference,
    auth_file: Option<&Path>,
) -> Result<RegistryAuth, CosiError> {
    let Some(path) = auth_file else {
        return Ok(RegistryAuth::Anonymous);
    };
    credentials_from_file(url, path, reference.resolve_registry())
}

fn credentials_from_file(
    url: &str,
    path: &Path,
    registry: &str,
) -> Result<RegistryAuth, CosiError> {
    let auth_file_error = |reason: String| CosiError::RegistryAuthFile {
        url: url.to_owned(),
        path: path.to_owned(),
        reason,
    };
    let file = std::fs::File::open(path).map_err(|e| auth_file_error(e.to_string()))?;
    match docker_credential::get_credential_from_reader(io::BufReader::new(file), registry) {
        Ok(docker_credential::DockerCredential::UsernamePassword(user, password)) => {
            Ok(RegistryAuth::Basic(user, password))
        }
        Ok(docker_credential::DockerCredential::IdentityToken(_)) => Err(auth_file_error(format!(
            "the entry for {registry} is an identity token; only username and password (\"auth\") entries are supported"
        ))),
        // No entry for this registry: pull anonymously, as without a file.
        Err(docker_credential::CredentialRetrievalError::NoCredentialConfigured) => {
            Ok(RegistryAuth::Anonymous)
        }
        // A helper's output may hold a secret: name the helper only.
        Err(docker_credential::CredentialRetrievalError::HelperFailure { helper, .. }) => Err(
            auth_file_error(format!("credential helper {helper:?} failed")),
        ),
        // The crate's other messages name no value.
        Err(e) => Err(auth_file_error(e.to_string())),
    }
}

enum Chunk {
    Data(Bytes),
    Failed(io::Error),
    End,
}

type Opened = Result<Option<u64>, CosiError>;

/// The puller thread: resolves the layer, reports the outcome on `opened`,
/// then forwards the blob to `chunks` until it ends, fails, or the reader
/// is dropped.
fn pull(
    url: String,
    reference: Reference,
    auth: RegistryAuth,
    timeouts: HttpTimeouts,
    opened: SyncSender<Opened>,
    chunks: SyncSender<Chunk>,
) {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(source) => {
            let _ = opened.send(Err(CosiError::Open { url, source }));
            return;
        }
    };
    runtime.block_on(async move {
        let opened_layer = match client(timeouts) {
            Ok(client) => open_layer(&client, &reference, &auth).await,
            Err(e) => Err(e),
        };
        let stream = match opened_layer {
            Ok(stream) => stream,
            Err(e) => {
                let _ = opened.send(Err(registry_error(&url, e)));
                return;
            }
        };
        if opened.send(Ok(stream.content_length)).is_err() {
            return;
        }
        let mut stream = stream.stream;
        while let Some(item) = stream.next().await {
            let chunk = match item {
                Ok(data) if data.is_empty() => continue,
                Ok(data) => Chunk::Data(data),
                Err(e) => Chunk::Failed(e),
            };
            let failed = matches!(chunk, Chunk::Failed(_));
            // A send error means the reader is gone: stop downloading.
            if chunks.send(chunk).is_err() || failed {
                return;
            }
        }
        let _ = chunks.send(Chunk::End);
    });
}

fn client(timeouts: HttpTimeouts) -> Result<Client, OciDistributionError> {
    // reqwest is built without a crypto provider (no aws-lc build): it
    // uses the process default, ring as everywhere else in the workspace.
    // An error only says one is installed already.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let proxy = |upper: &str, lower: &str| {
        std::env::var(upper)
            .or_else(|_| std::env::var(lower))
            .ok()
            .filter(|v| !v.trim().is_empty())
    };
    Client::try_from(ClientConfig {
        protocol: ClientProtocol::Https,
        connect_timeout: Some(timeouts.connect),
        // Per read, like the http(s) source: a stall fails, a slow but
        // steady download does not.
        read_timeout: Some(timeouts.read),
        https_proxy: proxy("HTTPS_PROXY", "https_proxy"),
        http_proxy: proxy("HTTP_PROXY", "http_proxy"),
        no_proxy: proxy("NO_PROXY", "no_proxy"),
        // An image index is not a COSI artifact: refused, not resolved to
        // some platform's manifest.
        platform_resolver: None,
        ..ClientConfig::default()
    })
}

/// The single layer's blob stream (verified against its digest as it is
/// read).
async fn open_layer(
    client: &Client,
    reference: &Reference,
    auth: &RegistryAuth,
) -> Result<oci_client::client::SizedStream, OciDistributionError> {
    let layer = match client.pull_image_manifest(reference, auth).await {
        Ok((manifest, _digest)) => {
            let [layer] = <[OciDescriptor; 1]>::try_from(manifest.layers).map_err(|layers| {
                OciDistributionError::SpecViolationError(format!(
                    "expected the OCI artifact to hold exactly one layer (the COSI file), found {}",
                    layers.len()
                ))
            })?;
            layer
        }
        // Upstream reads `@sha256:` as the layer's own digest. Registries
        // answer a blob digest asked for as a manifest with "unknown" or
        // with a server error (the distribution registry: 500), so any
        // answer but a refusal means: try it as the blob.
        Err(e) if reference.digest().is_some() && is_registry_answer(&e) => OciDescriptor {
            digest: reference.digest().unwrap_or_default().to_owned(),
            ..OciDescriptor::default()
        },
        Err(e) => return Err(e),
    };
    client.pull_blob_stream(reference, &layer).await
}

fn is_not_found(error: &OciDistributionError) -> bool {
    match error {
        OciDistributionError::ImageManifestNotFoundError(_) => true,
        OciDistributionError::ServerError { code, .. } => *code == 404,
        OciDistributionError::RegistryError { envelope, .. } => envelope.errors.iter().any(|e| {
            matches!(
                e.code,
                OciErrorCode::ManifestUnknown
                    | OciErrorCode::BlobUnknown
                    | OciErrorCode::NameUnknown
                    | OciErrorCode::NotFound
            )
        }),
        _ => false,
    }
}

/// The registry answered (as opposed to: could not be reached, or refused
/// access).
fn is_registry_answer(error: &OciDistributionError) -> bool {
    !is_unauthorized(error) && !matches!(error, OciDistributionError::RequestError(_))
}

fn is_unauthorized(error: &OciDistributionError) -> bool {
    match error {
        OciDistributionError::UnauthorizedError { .. }
        | OciDistributionError::AuthenticationFailure(_) => true,
        OciDistributionError::ServerError { code, .. } => matches!(code, 401 | 403),
        OciDistributionError::RegistryError { envelope, .. } => envelope
            .errors
            .iter()
            .any(|e| matches!(e.code, OciErrorCode::Unauthorized | OciErrorCode::Denied)),
        _ => false,
    }
}

fn registry_error(url: &str, error: OciDistributionError) -> CosiError {
    let failure = if is_not_found(&error) {
        RegistryFailure::NotFound
    } else if is_unauthorized(&error) {
        RegistryFailure::Unauthorized
    } else if matches!(error, OciDistributionError::SpecViolationError(_)) {
        RegistryFailure::NotCosiArtifact
    } else {
        RegistryFailure::Transport
    };
    CosiError::Registry {
        url: url.to_owned(),
        failure,
        reason: error_chain(&error),
    }
}

/// The error with its sources (reqwest hides the cause, e.g. a timeout or a
/// certificate problem, one level down).
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

/// The reader end: hands out the puller's chunks in order.
struct ChannelReader {
    chunks: Receiver<Chunk>,
    current: Bytes,
    finished: bool,
}

impl Read for ChannelReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while self.current.is_empty() {
            if self.finished || buf.is_empty() {
                return Ok(0);
            }
            match self.chunks.recv() {
                Ok(Chunk::Data(data)) => self.current = data,
                Ok(Chunk::End) => self.finished = true,
                Ok(Chunk::Failed(e)) => {
                    self.finished = true;
                    return Err(io::Error::new(e.kind(), error_chain(&e)));
                }
                Err(_) => {
                    self.finished = true;
                    return Err(io::Error::new(
                        io::ErrorKind::ConnectionAborted,
                        "the registry download stopped without an error",
                    ));
                }
            }
        }
        let n = buf.len().min(self.current.len());
        buf[..n].copy_from_slice(&self.current.split_to(n));
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn references_parse_with_tag_digest_or_neither() {
        let tagged = parse("oci://127.0.0.1:5000/os/image:v1").unwrap();
        assert_eq!(tagged.registry(), "127.0.0.1:5000");
        assert_eq!(tagged.repository(), "os/image");
        assert_eq!(tagged.tag(), Some("v1"));
        let digest = format!("sha256:{}", "a".repeat(64));
        let pinned = parse(&format!("oci://registry.example/os@{digest}")).unwrap();
        assert_eq!(pinned.digest(), Some(digest.as_str()));
        let err = parse("oci://registry.example/Upper Case").unwrap_err();
        assert_eq!(err.subkind(), "invalid-oci-reference", "{err}");
    }

    #[test]
    fn credentials_come_from_the_registrys_entry_of_the_docker_config() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.json");
        // "puller:s3cret" in base64.
        std::fs::write(
            &path,
            r#"{"auths":{"127.0.0.1:5000":{"auth":"cHVsbGVyOnMzY3JldA=="}}}"#,
        )
        .unwrap();
        let auth = credentials_from_file("oci://x", &path, "127.0.0.1:5000").unwrap();
        assert_eq!(
            auth,
            RegistryAuth::Basic("puller".to_owned(), "s3cret".to_owned())
        );
        let other = credentials_from_file("oci://x", &path, "elsewhere.example").unwrap();
        assert_eq!(other, RegistryAuth::Anonymous);
        std::fs::write(&path, "{not json").unwrap();
        let err = credentials_from_file("oci://x", &path, "127.0.0.1:5000").unwrap_err();
        assert_eq!(err.subkind(), "registry-auth-file", "{err}");
    }

    #[test]
    fn the_reader_passes_chunks_through_and_reports_a_failed_download() {
        let (tx, rx) = sync_channel(4);
        tx.send(Chunk::Data(Bytes::from_static(b"hello "))).unwrap();
        tx.send(Chunk::Data(Bytes::from_static(b"world"))).unwrap();
        tx.send(Chunk::Failed(io::Error::new(
            io::ErrorKind::TimedOut,
            "stalled",
        )))
        .unwrap();
        let mut reader = ChannelReader {
            chunks: rx,
            current: Bytes::new(),
            finished: false,
        };
        let mut out = Vec::new();
        let err = reader.read_to_end(&mut out).unwrap_err();
        assert_eq!(out, b"hello world");
        assert_eq!(err.kind(), io::ErrorKind::TimedOut);
    }
}
