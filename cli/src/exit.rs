//! Exit codes and the CLI's error type.
//!
//! Upstream's exit codes are a contract with scripts and orchestrators, and
//! we map exactly as upstream's CLI does (its `TridentExitCodes` and
//! `client_main`):
//!
//! | code | when |
//! |---|---|
//! | 0 | success (also `--help`, `--version`) |
//! | 1 | the CLI itself could not set up (its async runtime) |
//! | 2 | everything else that fails: usage error, daemon unreachable, another servicing operation still running when `--wait` ran out, an RPC refused (busy, invalid argument, failed precondition, permission denied) or failed, Host Configuration unreadable or invalid, servicing failed, stream lost, local file errors; also a remote host (daemon with another boot id) that went down for its reboot and did not come back within `TRIDENT_REBOOT_TIMEOUT` |
//! | 3 | Trident was to reboot the host and the reboot did not happen (this host still up; or a remote host whose daemon still answers with its old boot id) |
//! | 4 | the agent configuration could not be loaded: never for this CLI, which has none; `tridentd` exits 4 when `/etc/trident/trident.conf` cannot be loaded |
//!
//! Ctrl-C is not in upstream's table (its CLI dies of SIGINT, which a shell
//! reports as 130); ours detaches and exits 130 too.
//! Every error path of the CLI maps to exactly one code through
//! [`CliError::exit`].

use std::path::PathBuf;

/// The process exit code of `trident`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    Success = 0,
    /// The CLI itself could not set up (its async runtime).
    SetupFailed = 1,
    /// The command failed (upstream's `Failed`): usage, connection, RPC,
    /// Host Configuration or servicing.
    ServicingFailed = 2,
    /// Trident was to reboot the host and the reboot did not happen.
    RebootUnsuccessful = 3,
    /// The agent configuration could not be loaded (tridentd only; kept so
    /// the table is complete).
    AgentConfigLoadFailed = 4,
    /// Ctrl-C: the CLI detached (what a shell reports for death by SIGINT).
    Interrupted = 130,
}

impl Exit {
    /// The numeric code.
    pub fn code(self) -> u8 {
        self as u8
    }
}

impl From<Exit> for std::process::ExitCode {
    fn from(exit: Exit) -> Self {
        std::process::ExitCode::from(exit.code())
    }
}

/// Why the daemon could not be reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConnectFailure {
    /// No socket file at that path.
    NoSocket,
    /// The socket exists but we may not open it.
    PermissionDenied,
    /// The socket file exists but nobody listens on it.
    Refused,
    /// The connection was made but gRPC did not come up.
    Other,
}

/// Every failure of the CLI, each with the exit code it maps to.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// The daemon could not be reached; the message is one line naming the
    /// socket, what failed and what to try.
    #[error("cannot reach tridentd at {socket}: {detail}; {hint}", socket = socket.display())]
    Connect {
        socket: PathBuf,
        failure: ConnectFailure,
        detail: String,
        hint: &'static str,
    },
    /// An RPC failed with a gRPC status before a servicing stream started.
    #[error("{what} failed: {}", describe_status(status))]
    Rpc {
        what: &'static str,
        status: Box<tonic::Status>,
    },
    /// The Host Configuration file could not be read.
    #[error("failed to load the Host Configuration {}: {detail}", path.display())]
    ConfigLoad { path: PathBuf, detail: String },
    /// The daemon rejected the Host Configuration as invalid.
    #[error("{0}")]
    ConfigInvalid(String),
    /// Bad usage the argument parser cannot catch (e.g. bad cursor text).
    #[error("{0}")]
    Usage(String),
    /// A local file could not be read or written.
    #[error("{what} {}: {source}", path.display())]
    File {
        what: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The servicing operation reported failure; the error was already rendered.
    #[error("servicing failed")]
    ServicingFailed,
    /// Trident was asked to handle the reboot and it did not happen.
    #[error("{0}")]
    RebootUnsuccessful(String),
    /// A remote host went down for the reboot its daemon started and did
    /// not come back in time: the reboot may have happened, the host is
    /// unreachable (exit 2, like any unreachable daemon).
    #[error("{0}")]
    RemoteHostLost(String),
    /// The daemon still ran another servicing operation when `--wait` ran
    /// out; the message names it.
    #[error("{0}")]
    Busy(String),
    /// The stream ended without saying how the operation finished.
    #[error("{0}")]
    StreamLost(String),
    /// The user pressed Ctrl-C; a running operation goes on in the daemon.
    #[error("interrupted; a running operation goes on in tridentd: reattach with `trident watch`")]
    Interrupted,
    /// Anything local that is not the user's fault (serialisation, terminal).
    #[error("{0}")]
    Local(String),
    /// `start-network` could not apply the netplan configuration (netplan
    /// missing, the file not written, `netplan apply` failed).
    #[error("start-network: {0}")]
    StartNetwork(String),
}

impl CliError {
    /// The exit code this error maps to.
    pub fn exit(&self) -> Exit {
        match self {
            CliError::Interrupted => Exit::Interrupted,
            CliError::RebootUnsuccessful(_) => Exit::RebootUnsuccessful,
            // Upstream's client fails every one of these with 2, refused
            // RPCs (busy, invalid argument, precondition, permission) and
            // an unreachable daemon included.
            CliError::Connect { .. }
            | CliError::Usage(_)
            | CliError::Local(_)
            | CliError::StartNetwork(_)
            | CliError::Rpc { .. }
            | CliError::ConfigLoad { .. }
            | CliError::ConfigInvalid(_)
            | CliError::File { .. }
            | CliError::ServicingFailed
            | CliError::StreamLost(_)
            | CliError::Busy(_)
            | CliError::RemoteHostLost(_) => Exit::ServicingFailed,
        }
    }

    /// Wraps a gRPC status of a unary or stream-opening call.
    pub fn rpc(what: &'static str, status: tonic::Status) -> Self {
        CliError::Rpc {
            what,
            status: Box::new(status),
        }
    }

    /// Wraps a local I/O failure on a file.
    pub fn file(what: &'static str, path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        CliError::File {
            what,
            path: path.into(),
            source,
        }
    }
}

/// One line for a gRPC status: the code in words and the daemon's message.
pub fn describe_status(status: &tonic::Status) -> String {
    let code = match status.code() {
        tonic::Code::Unavailable => "daemon busy or unavailable",
        tonic::Code::InvalidArgument => "invalid input",
        tonic::Code::FailedPrecondition => "precondition failed",
        tonic::Code::Unimplemented => "not supported by this daemon",
        tonic::Code::PermissionDenied => "permission denied",
        tonic::Code::NotFound => "not found",
        tonic::Code::Internal => "internal error",
        _ => "error",
    };
    let message = status.message().trim();
    if message.is_empty() {
        format!("{code} ({:?})", status.code())
    } else {
        format!("{code}: {message}")
    }
}

/// Result alias of the CLI.
pub type CliResult<T> = Result<T, CliError>;

#[cfg(test)]
mod tests {
    use super::*;

    /// Upstream's client fails every RPC error with 2, refusals included.
    #[test]
    fn every_rpc_refusal_and_failure_exits_2() {
        for code in [
            tonic::Code::Unavailable,
            tonic::Code::InvalidArgument,
            tonic::Code::FailedPrecondition,
            tonic::Code::PermissionDenied,
            tonic::Code::Unimplemented,
            tonic::Code::Internal,
            tonic::Code::Unknown,
        ] {
            let error = CliError::rpc("call", tonic::Status::new(code, "x"));
            assert_eq!(error.exit().code(), 2, "{code:?}");
        }
    }

    #[test]
    fn the_table_matches_upstream() {
        let config = || PathBuf::from("/c.yaml");
        let cases = [
            (CliError::Usage("u".into()), 2),
            (
                CliError::ConfigLoad {
                    path: config(),
                    detail: "d".into(),
                },
                2,
            ),
            (CliError::ConfigInvalid("i".into()), 2),
            (CliError::ServicingFailed, 2),
            (CliError::StreamLost("s".into()), 2),
            (CliError::Local("l".into()), 2),
            (CliError::RebootUnsuccessful("r".into()), 3),
            (CliError::RemoteHostLost("h".into()), 2),
            (CliError::Interrupted, 130),
        ];
        for (error, code) in cases {
            assert_eq!(error.exit().code(), code, "{error}");
        }
    }
}
