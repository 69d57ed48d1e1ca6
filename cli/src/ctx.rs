//! What every command, and the servicing and live views they use, need
//! from the global arguments: the socket, verbosity and the root-level
//! output format, and the daemon connection built from them.

use std::path::PathBuf;

use trident_proto::v1::GetHostStatusRequest;
use trident_proto::v1::host_status_service_client::HostStatusServiceClient;

use crate::args::{OutputFormat, Verbosity};
use crate::client::Channel;
use crate::exit::{CliError, CliResult};
use crate::output;

/// What every command may need from the global arguments.
#[derive(Debug, Clone)]
pub struct Ctx {
    pub socket: PathBuf,
    pub verbosity: Verbosity,
    /// The root-level --output, if given.
    pub output: Option<OutputFormat>,
}

impl Ctx {
    /// A channel to the daemon, on our socket or else upstream's path
    /// (fails with one clear line).
    pub async fn channel(&self) -> CliResult<Channel> {
        crate::client::connect_with_fallback(&self.socket).await
    }

    /// The data format: a command-level choice wins over the root one.
    pub fn format(&self, local: Option<OutputFormat>, default: OutputFormat) -> OutputFormat {
        local.or(self.output).unwrap_or(default)
    }

    /// The full Host Status (upstream's keys), as the daemon's YAML or as JSON.
    pub async fn host_status_text(&self, format: OutputFormat) -> CliResult<String> {
        let yaml = HostStatusServiceClient::new(self.channel().await?)
            .get_host_status(GetHostStatusRequest {})
            .await
            .map_err(|s| CliError::rpc("GetHostStatus", s))?
            .into_inner()
            .host_status;
        match format {
            OutputFormat::Json => output::encode(&output::yaml_value(&yaml), format),
            OutputFormat::Yaml | OutputFormat::Human => Ok(output::with_newline(yaml)),
        }
    }
}
