//! `trident.v1.VersionService`: crate version and build commit.

use trident_proto::v1::{VersionRequest, VersionResponse, version_service_server::VersionService};

use crate::{GIT_COMMIT, VERSION};

/// Answers `Version` from compile-time constants.
#[derive(Debug, Default, Clone, Copy)]
pub struct Version;

#[tonic::async_trait]
impl VersionService for Version {
    async fn version(
        &self,
        _request: tonic::Request<VersionRequest>,
    ) -> Result<tonic::Response<VersionResponse>, tonic::Status> {
        Ok(tonic::Response::new(VersionResponse {
            version: VERSION.to_owned(),
            git_commit: GIT_COMMIT.to_owned(),
        }))
    }
}
