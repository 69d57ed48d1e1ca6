//! `trident.v1.VersionService`: crate version and, for clients that opted
//! in to `ids`, the build commit (our field 1000) and the host's boot id
//! (1001).

use trident_proto::v1::{VersionRequest, VersionResponse, version_service_server::VersionService};

use super::additions::Additions;
use crate::{GIT_COMMIT, VERSION};

/// Answers `Version` from compile-time constants and the boot id read at
/// start (a boot id cannot change while the daemon runs).
#[derive(Debug, Default, Clone)]
pub struct Version {
    boot_id: String,
}

impl Version {
    /// `boot_id` empty when the host's boot id is not known.
    pub fn new(boot_id: String) -> Self {
        Version { boot_id }
    }
}

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
            boot_id: self.boot_id.clone(),
        })))
    }
}
