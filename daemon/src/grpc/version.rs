//! `trident.v1.VersionService`: crate version and, for clients that opted
//! in to `ids`, the build commit (our field 1000).

use trident_proto::v1::{VersionRequest, VersionResponse, version_service_server::VersionService};

use super::additions::Additions;
use crate::{GIT_COMMIT, VERSION};

/// Answers `Version` from compile-time constants.
#[derive(Debug, Default, Clone, Copy)]
pub struct Version;

#[tonic::async_trait]
impl VersionService for Version {
    async fn version(
        &self,
        request: tonic::Request<VersionRequest>,
    ) -> Result<tonic::Response<VersionResponse>, tonic::Status> {
        let additions = Additions::from_metadata(request.metadata());
        Ok(tonic::Response::new(additions.version(VersionResponse {
            version: VERSION.to_owned(),
            git_commit: GIT_COMMIT.to_owned(),
        })))
    }
}
