//! `trident get [configuration|status|last-error|rollback-chain|rollback-target] [-o FILE]`.
//! YAML by default like upstream; `trident --output json get ...` for JSON.

use trident_proto::v1::GetLastErrorRequest;
use trident_proto::v1::telemetry_service_client::TelemetryServiceClient;
use trident_proto::v1preview::rollback_service_client::RollbackServiceClient;
use trident_proto::v1preview::status_service_client::StatusServiceClient;
use trident_proto::v1preview::{
    GetConfigRequest, GetRollbackChainRequest, GetRollbackTargetRequest,
};

use crate::args::{GetArgs, GetKind, OutputFormat};
use crate::ctx::Ctx;
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
                OutputFormat::Yaml | OutputFormat::Human => output::with_newline(config),
                OutputFormat::Json => output::encode(&output::yaml_value(&config), format)?,
            }
        }
        GetKind::Status => ctx.host_status_text(format).await?,
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

async fn configuration(ctx: &Ctx) -> CliResult<String> {
    let response = StatusServiceClient::new(ctx.channel().await?)
        .get_provisioned_config(GetConfigRequest {})
        .await
        .map_err(|s| CliError::rpc("GetProvisionedConfig", s))?
        .into_inner();
    Ok(response.config.map(|c| c.config).unwrap_or_default())
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
