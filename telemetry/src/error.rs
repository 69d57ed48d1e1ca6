//! Errors of the telemetry crate, and their one mapping to gRPC statuses.

use std::path::PathBuf;

/// What can go wrong in the bus, its journal or its service.
#[derive(Debug, thiserror::Error)]
pub enum TelemetryError {
    /// The journal directory or one of its files could not be used.
    #[error("journal {path}: {source}")]
    Journal {
        /// The file or folder.
        path: PathBuf,
        /// The underlying I/O error.
        source: std::io::Error,
    },
    /// The journal writer thread could not be started.
    #[error("cannot start the journal writer: {0}")]
    Writer(std::io::Error),
    /// A request named something malformed (e.g. a bad cursor).
    #[error("invalid request: {0}")]
    InvalidRequest(String),
}

impl From<TelemetryError> for tonic::Status {
    fn from(error: TelemetryError) -> Self {
        match error {
            TelemetryError::InvalidRequest(message) => tonic::Status::invalid_argument(message),
            other => tonic::Status::internal(other.to_string()),
        }
    }
}
