//! `trident version`: this client's version and the daemon's.

use serde::Serialize;
use trident_proto::v1::VersionRequest;
use trident_proto::v1::version_service_client::VersionServiceClient;

use crate::args::OutputFormat;
use crate::ctx::Ctx;
use crate::exit::{CliError, CliResult, Exit};
use crate::output;

/// Version of this client binary.
pub const CLIENT_VERSION: &str = env!("CARGO_PKG_VERSION");

#[derive(Debug, Serialize)]
struct Versions {
    client: String,
    daemon: DaemonVersion,
}

#[derive(Debug, Serialize)]
struct DaemonVersion {
    version: String,
    git_commit: String,
}

pub async fn run(ctx: &Ctx) -> CliResult<Exit> {
    let format = ctx.format(None, OutputFormat::Human);
    let channel = match ctx.channel().await {
        Ok(channel) => channel,
        Err(err) => {
            // The client's own version is still worth printing to a person.
            if format == OutputFormat::Human {
                output::emit(&format!("trident {CLIENT_VERSION}\n"), None)?;
            }
            return Err(err);
        }
    };
    let response = VersionServiceClient::new(channel)
        .version(VersionRequest {})
        .await
        .map_err(|s| CliError::rpc("Version", s))?
        .into_inner();
    let versions = Versions {
        client: CLIENT_VERSION.to_string(),
        daemon: DaemonVersion {
            version: response.version,
            git_commit: response.git_commit,
        },
    };
    let text = match format {
        OutputFormat::Human => {
            let commit = if versions.daemon.git_commit.is_empty() {
                String::new()
            } else {
                format!(" ({})", versions.daemon.git_commit)
            };
            format!(
                "trident {}\ntridentd {}{commit}\n",
                versions.client, versions.daemon.version
            )
        }
        other => output::encode(&versions, other)?,
    };
    output::emit(&text, None)?;
    Ok(Exit::Success)
}
