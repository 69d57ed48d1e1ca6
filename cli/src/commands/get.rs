//! `trident get [configuration|status|last-error|rollback-chain|rollback-target] [-o FILE]`.
//! YAML by default like upstream; `trident --output json get ...` for JSON.

use trident_proto::v1::host_status_service_client::HostStatusServiceClient;
use trident_proto::v1::telemetry_service_client::TelemetryServiceClient;
use trident_proto::v1::{GetHostStatusRequest, GetLastErrorRequest};
use trident_proto::v1preview::rollback_service_client::RollbackServiceClient;
use trident_proto::v1preview::status_service_client::StatusServiceClient;
use trident_proto::v1preview::{
    GetConfigRequest, GetRollbackChainRequest, GetRollbackTargetRequest,
};

use super::Ctx;
use crate::args::{GetArgs, GetKind, OutputFormat};
use crate::exit::{CliError, CliResult, Exit};
use crate::output;
use crate::render::error::ErrorView;

pub async fn run(ctx: &Ctx, args: &GetArgs) -> CliResult<Exit> {
    let format = ctx.format(None, OutputFormat::Yaml);
    let text = match args.kind {
        GetKind::Configuration => {
            let config = configuration(ctx).await?;
            match format {
                // The daemon's YAML text as is.
                OutputFormat::Yaml | OutputFormat::Human => with_newline(config),
                OutputFormat::Json => output::encode(&yaml_value(&config), format)?,
            }
        }
        GetKind::Status => host_status_text(ctx, format).await?,
        GetKind::LastError => {
            let error = last_error(ctx).await?;
            output::encode(&error, yaml_if_human(format))?
        }
        GetKind::RollbackChain => {
            let chain = RollbackServiceClient::new(ctx.channel().await?)
                .get_rollback_chain(GetRollbackChainRequest {})
                .await
                .map_err(|s| CliError::rpc("GetRollbackChain", s))?
                .into_inner()
                .rollback_chain;
            output::encode(&chain, yaml_if_human(format))?
        }
        GetKind::RollbackTarget => {
            let target = RollbackServiceClient::new(ctx.channel().await?)
                .get_rollback_target(GetRollbackTargetRequest {})
                .await
                .map_err(|s| CliError::rpc("GetRollbackTarget", s))?
                .into_inner()
                .rollback_target;
            output::encode(&target, yaml_if_human(format))?
        }
    };
    output::emit(&text, args.outfile.as_deref())?;
    Ok(Exit::Success)
}

fn yaml_if_human(format: OutputFormat) -> OutputFormat {
    if format == OutputFormat::Human {
        OutputFormat::Yaml
    } else {
        format
    }
}

fn with_newline(mut text: String) -> String {
    if !text.ends_with('\n') {
        text.push('\n');
    }
    text
}

/// Parses YAML text into a JSON value (null for empty or unparsable text).
pub(crate) fn yaml_value(text: &str) -> serde_json::Value {
    if text.trim().is_empty() {
        return serde_json::Value::Null;
    }
    serde_saphyr::from_str(text).unwrap_or_else(|_| serde_json::Value::String(text.to_string()))
}

async fn configuration(ctx: &Ctx) -> CliResult<String> {
    let response = StatusServiceClient::new(ctx.channel().await?)
        .get_provisioned_config(GetConfigRequest {})
        .await
        .map_err(|s| CliError::rpc("GetProvisionedConfig", s))?
        .into_inner();
    Ok(response.config.map(|c| c.config).unwrap_or_default())
}

/// The full Host Status (upstream's keys), as the daemon's YAML or as JSON.
pub async fn host_status_text(ctx: &Ctx, format: OutputFormat) -> CliResult<String> {
    let yaml = HostStatusServiceClient::new(ctx.channel().await?)
        .get_host_status(GetHostStatusRequest {})
        .await
        .map_err(|s| CliError::rpc("GetHostStatus", s))?
        .into_inner()
        .host_status;
    match format {
        OutputFormat::Json => output::encode(&yaml_value(&yaml), format),
        OutputFormat::Yaml | OutputFormat::Human => Ok(with_newline(yaml)),
    }
}

/// The last error in full. The daemon answers from its bus, or from the
/// Host Status's `lastError` when the bus never saw the error (a commit
/// that failed on the other A/B volume); None when neither has one.
pub async fn last_error(ctx: &Ctx) -> CliResult<Option<ErrorView>> {
    let response = TelemetryServiceClient::new(ctx.channel().await?)
        .get_last_error(GetLastErrorRequest {})
        .await
        .map_err(|s| CliError::rpc("GetLastError", s))?
        .into_inner();
    Ok(response.error.as_ref().map(ErrorView::from))
}
