//! The registry side of an `oci://` source: the client, the one layer of
//! the artifact, and what the registry's errors mean (which are worth a
//! retry, which are the structured ones of [`RegistryFailure`]).

use oci_client::client::{ClientConfig, ClientProtocol, SizedStream};
use oci_client::errors::{OciDistributionError, OciErrorCode};
use oci_client::manifest::OciDescriptor;
use oci_client::secrets::RegistryAuth;
use oci_client::{Client, Reference};

use crate::error::{CosiError, RegistryFailure};
use crate::source::options::HttpTimeouts;

pub(super) fn client(timeouts: HttpTimeouts) -> Result<Client, OciDistributionError> {
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

/// The single layer and its blob stream (verified against its digest as
/// it is read).
pub(super) async fn open_layer(
    client: &Client,
    reference: &Reference,
    auth: &RegistryAuth,
) -> Result<(OciDescriptor, SizedStream), OciDistributionError> {
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
    let stream = client.pull_blob_stream(reference, &layer).await?;
    Ok((layer, stream))
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

pub(super) fn registry_error(url: &str, error: OciDistributionError) -> CosiError {
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
pub(super) fn error_chain(error: &dyn std::error::Error) -> String {
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

/// Whether a failed request to the registry may be tried again: it could
/// not be sent or answered (connect, TLS, timeouts), or the registry had a
/// passing trouble (5xx, 408, 429).
pub(super) fn retryable(error: &OciDistributionError) -> bool {
    match error {
        OciDistributionError::RequestError(_) | OciDistributionError::IoError(_) => true,
        OciDistributionError::ServerError { code, .. } => matches!(code, 408 | 429 | 500..=599),
        _ => false,
    }
}
