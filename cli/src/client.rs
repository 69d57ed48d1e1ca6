//! The gRPC channel to tridentd over its Unix socket.
//!
//! Connection failures become ONE line naming the socket, what failed and
//! what to try ([`CliError::Connect`]), so a user never sees a tonic
//! transport error chain.

use std::error::Error as StdError;
use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

use tonic::metadata::MetadataValue;
use trident_proto::client::{OptedInChannel, connect_uds, opt_in, uds_endpoint};

use crate::exit::{CliError, CliResult, ConnectFailure};

/// The CLI's channel to the daemon: every call opts in to all of our
/// additions (`trident-additions: all`): progress on servicing streams, our
/// ids and the full error report.
pub type Channel = OptedInChannel;

/// Default socket of tridentd.
pub const DEFAULT_SOCKET: &str = "/run/trident/listen.sock";
/// Environment variable naming the socket (same as the daemon's).
pub const SOCKET_ENV: &str = "TRIDENT_SOCKET";
/// Upstream Trident's socket, tried when ours is absent or refuses.
pub const UPSTREAM_SOCKET: &str = "/run/trident/trident.sock";
/// Environment variable naming the upstream-path socket (same as the daemon's).
pub const UPSTREAM_SOCKET_ENV: &str = "TRIDENT_UPSTREAM_SOCKET";
/// How long to wait for the socket to accept before giving up.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Environment variable carrying a caller's W3C trace context.
pub const TRACEPARENT_ENV: &str = "TRACEPARENT";
/// Metadata key of the W3C trace context.
pub const TRACEPARENT: &str = "traceparent";

/// Opens a channel to the daemon: `socket` first, then the upstream-path
/// socket when `socket` has no listener (no file, or refused). The second
/// path is `TRIDENT_UPSTREAM_SOCKET`, else upstream's default when `socket`
/// is our default: an explicit `--socket` elsewhere is never silently
/// swapped for the machine's daemon. If both fail, the error names ours.
pub async fn connect_with_fallback(socket: &Path) -> CliResult<Channel> {
    let first = match connect(socket).await {
        Ok(channel) => return Ok(channel),
        Err(error) => error,
    };
    let absent = matches!(
        first,
        CliError::Connect {
            failure: ConnectFailure::NoSocket | ConnectFailure::Refused,
            ..
        }
    );
    let fallback = match std::env::var_os(UPSTREAM_SOCKET_ENV) {
        Some(path) if !path.is_empty() => Some(PathBuf::from(path)),
        _ if socket == Path::new(DEFAULT_SOCKET) => Some(PathBuf::from(UPSTREAM_SOCKET)),
        _ => None,
    };
    match fallback.filter(|path| absent && path != socket) {
        Some(path) => match connect(&path).await {
            Ok(channel) => Ok(channel),
            // Nothing there either: the first error is the one to act on.
            Err(CliError::Connect {
                failure: ConnectFailure::NoSocket,
                ..
            }) => Err(first),
            Err(second) => Err(second),
        },
        None => Err(first),
    }
}

/// Opens a channel to the daemon at `socket`, failing fast with a clear
/// [`CliError::Connect`].
pub async fn connect(socket: &Path) -> CliResult<Channel> {
    let endpoint = uds_endpoint().connect_timeout(CONNECT_TIMEOUT);
    connect_uds(endpoint, socket)
        .await
        .map(|channel| opt_in(channel, trident_proto::ADDITION_ALL))
        .map_err(|e| classify(socket, &e))
}

/// Maps a transport error to the one-line connection error.
fn classify(socket: &Path, error: &(dyn StdError + 'static)) -> CliError {
    let mut source: Option<&(dyn StdError + 'static)> = Some(error);
    while let Some(err) = source {
        if let Some(io_err) = err.downcast_ref::<io::Error>() {
            let failure = match io_err.kind() {
                io::ErrorKind::NotFound => ConnectFailure::NoSocket,
                io::ErrorKind::PermissionDenied => ConnectFailure::PermissionDenied,
                io::ErrorKind::ConnectionRefused => ConnectFailure::Refused,
                _ => ConnectFailure::Other,
            };
            return connect_error(socket, failure, io_err.to_string());
        }
        source = err.source();
    }
    connect_error(socket, ConnectFailure::Other, error.to_string())
}

fn connect_error(socket: &Path, failure: ConnectFailure, detail: String) -> CliError {
    let (what, hint) = match failure {
        ConnectFailure::NoSocket => (
            "no socket",
            "is tridentd running? start it (systemctl start tridentd.socket) or pass --socket PATH / TRIDENT_SOCKET",
        ),
        ConnectFailure::PermissionDenied => (
            "permission denied",
            "run as root or as a member of the daemon's --socket-group",
        ),
        ConnectFailure::Refused => (
            "connection refused",
            "the socket is stale: tridentd is not listening; restart tridentd",
        ),
        ConnectFailure::Other => (
            "connection failed",
            "check that tridentd is running and serving gRPC on this socket",
        ),
    };
    CliError::Connect {
        socket: socket.to_path_buf(),
        failure,
        detail: format!("{what} ({detail})"),
        hint,
    }
}

/// A W3C trace context of the CLI's own, sent on servicing calls so the
/// daemon's operation span joins the CLI's trace.
#[derive(Debug, Clone)]
pub struct TraceParent {
    pub trace_id: String,
    pub span_id: String,
}

impl TraceParent {
    /// The caller's trace context from `TRACEPARENT` (so a script's trace
    /// continues into the daemon), else a fresh one.
    pub fn from_env_or_generate() -> Self {
        std::env::var(TRACEPARENT_ENV)
            .ok()
            .and_then(|v| Self::parse(&v))
            .unwrap_or_else(Self::generate)
    }

    /// Parses a W3C `traceparent` value ("00-<32 hex>-<16 hex>-<2 hex>").
    pub fn parse(value: &str) -> Option<Self> {
        let mut parts = value.trim().split('-');
        let (version, trace_id, span_id, _flags) =
            (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
        let hex = |s: &str, n: usize| s.len() == n && s.chars().all(|c| c.is_ascii_hexdigit());
        (version == "00" && hex(trace_id, 32) && hex(span_id, 16) && trace_id != "0".repeat(32))
            .then(|| TraceParent {
                trace_id: trace_id.to_ascii_lowercase(),
                span_id: span_id.to_ascii_lowercase(),
            })
    }

    /// A fresh random trace and span id.
    pub fn generate() -> Self {
        let trace_id = uuid::Uuid::new_v4().simple().to_string();
        let span_id = uuid::Uuid::new_v4().simple().to_string()[..16].to_string();
        TraceParent { trace_id, span_id }
    }

    /// The `traceparent` header value (version 00, sampled).
    pub fn header(&self) -> String {
        format!("00-{}-{}-01", self.trace_id, self.span_id)
    }

    /// Wraps `message` in a servicing request carrying this trace context
    /// (the additions header comes from the channel, see [`Channel`]).
    pub fn request<T>(&self, message: T) -> tonic::Request<T> {
        let mut request = tonic::Request::new(message);
        if let Ok(value) = MetadataValue::try_from(self.header()) {
            request.metadata_mut().insert(TRACEPARENT, value);
        }
        request
    }
}

/// The servicing operations the daemon knows (`ListOperations`), oldest first.
pub async fn list_operations(
    client: &mut trident_proto::v1::telemetry_service_client::TelemetryServiceClient<Channel>,
) -> CliResult<Vec<trident_proto::v1::OperationSummary>> {
    Ok(client
        .list_operations(trident_proto::v1::ListOperationsRequest {})
        .await
        .map_err(|s| CliError::rpc("ListOperations", s))?
        .into_inner()
        .operations)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn traceparent_header_has_w3c_shape() {
        let tp = TraceParent::generate();
        let header = tp.header();
        let parts: Vec<&str> = header.split('-').collect();
        assert_eq!(parts.len(), 4);
        assert_eq!(parts[0], "00");
        assert_eq!(parts[1].len(), 32);
        assert_eq!(parts[2].len(), 16);
        assert_eq!(parts[3], "01");
    }

    #[test]
    fn traceparent_parses_w3c_and_rejects_garbage() {
        let tp = TraceParent::parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
            .expect("valid");
        assert_eq!(tp.trace_id, "4bf92f3577b34da6a3ce929d0e0e4736");
        assert!(TraceParent::parse("00-xyz-00f067aa0ba902b7-01").is_none());
        assert!(TraceParent::parse("").is_none());
    }

    #[tokio::test]
    async fn missing_socket_is_one_clear_line() {
        let dir = tempfile::tempdir().expect("tempdir");
        let socket = dir.path().join("nope.sock");
        let err = connect(&socket).await.expect_err("must fail");
        let text = err.to_string();
        assert!(!text.contains('\n'), "{text}");
        assert!(text.contains("nope.sock"), "{text}");
        assert!(text.contains("no socket"), "{text}");
        assert!(text.contains("--socket"), "{text}");
        assert_eq!(err.exit(), crate::exit::Exit::ServicingFailed);
    }
}
