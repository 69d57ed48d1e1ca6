//! `trident get [configuration|status|last-error|rollback-chain|rollback-target] [-o FILE]`.
//! YAML by default like upstream; `trident --output json get ...` for JSON.

use serde::Serialize;
use trident_proto::v1::GetLastErrorRequest as BusLastErrorRequest;
use trident_proto::v1::telemetry_service_client::TelemetryServiceClient;
use trident_proto::v1preview::rollback_service_client::RollbackServiceClient;
use trident_proto::v1preview::status_service_client::StatusServiceClient;
use trident_proto::v1preview::{
    GetActiveVolumeRequest, GetConfigRequest, GetLastErrorRequest, GetRollbackChainRequest,
    GetRollbackTargetRequest, GetServicingStateRequest,
};

use trident_host::KebabName;
use trident_host::status::AbVolume;

use super::Ctx;
use crate::args::{GetArgs, GetKind, OutputFormat};
use crate::exit::{CliError, CliResult, Exit};
use crate::output;
use crate::render::error::ErrorView;

/// What `get status` and `-s FILE` print.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HostStatusView {
    pub servicing_state: String,
    pub ab_active_volume: Option<String>,
    /// The provisioned Host Configuration (null when not provisioned).
    pub spec: serde_json::Value,
}

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
        GetKind::Status => output::encode(&host_status(ctx).await?, yaml_if_human(format))?,
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
fn yaml_value(text: &str) -> serde_json::Value {
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

/// The servicing state, active volume and provisioned configuration.
pub async fn host_status(ctx: &Ctx) -> CliResult<HostStatusView> {
    let mut client = StatusServiceClient::new(ctx.channel().await?);
    let state = client
        .get_servicing_state(GetServicingStateRequest {})
        .await
        .map_err(|s| CliError::rpc("GetServicingState", s))?
        .into_inner()
        .state();
    let volume = client
        .get_active_volume(GetActiveVolumeRequest {})
        .await
        .map_err(|s| CliError::rpc("GetActiveVolume", s))?
        .into_inner()
        .active_volume();
    let spec = match client.get_provisioned_config(GetConfigRequest {}).await {
        Ok(r) => yaml_value(&r.into_inner().config.map(|c| c.config).unwrap_or_default()),
        // Not provisioned yet: no spec.
        Err(s) if s.code() == tonic::Code::NotFound => serde_json::Value::Null,
        Err(s) => return Err(CliError::rpc("GetProvisionedConfig", s)),
    };
    Ok(HostStatusView {
        servicing_state: state.kebab_name().to_string(),
        ab_active_volume: AbVolume::try_from(volume)
            .ok()
            .map(|v| v.kebab_name().to_string()),
        spec,
    })
}

/// The last error in full (bus report), falling back to the upstream
/// StatusService answer; None when there is none.
pub async fn last_error(ctx: &Ctx) -> CliResult<Option<ErrorView>> {
    let channel = ctx.channel().await?;
    match TelemetryServiceClient::new(channel.clone())
        .get_last_error(BusLastErrorRequest {})
        .await
    {
        Ok(response) => return Ok(response.into_inner().error.as_ref().map(ErrorView::from)),
        Err(s) if s.code() == tonic::Code::Unimplemented => {}
        Err(s) => return Err(CliError::rpc("GetLastError", s)),
    }
    let response = StatusServiceClient::new(channel)
        .get_last_error(GetLastErrorRequest {})
        .await
        .map_err(|s| CliError::rpc("GetLastError", s))?
        .into_inner();
    Ok(response.error.as_ref().map(ErrorView::from))
}
