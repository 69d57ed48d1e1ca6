//! `trident validate [CONFIG]`: ValidationService (v1preview).
//! Exit 0 when valid; 4 when the file cannot be loaded or is invalid.

use serde::Serialize;
use trident_proto::v1::HostConfiguration;
use trident_proto::v1preview::ValidateHostConfigurationRequest;
use trident_proto::v1preview::validation_service_client::ValidationServiceClient;

use crate::args::{OutputFormat, ValidateArgs};
use crate::ctx::Ctx;
use crate::exit::{CliError, CliResult, Exit};
use crate::output;
use crate::render::error::ErrorView;
use crate::servicing::load_config;

#[derive(Debug, Serialize)]
struct Validation {
    ok: bool,
    error: Option<ErrorView>,
    /// What the daemon will ignore in a valid configuration.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    warnings: Vec<String>,
}

pub async fn run(ctx: &Ctx, args: &ValidateArgs) -> CliResult<Exit> {
    let config = load_config(&args.config)?;
    let response = ValidationServiceClient::new(ctx.channel().await?)
        .validate_host_configuration(ValidateHostConfigurationRequest {
            config: Some(HostConfiguration { config }),
        })
        .await;
    let result = match response {
        Ok(r) => {
            let r = r.into_inner();
            Validation {
                ok: r.ok,
                error: r.error.as_ref().map(ErrorView::from),
                warnings: r.warnings,
            }
        }
        Err(s) if s.code() == tonic::Code::InvalidArgument => {
            return Err(CliError::ConfigInvalid(format!(
                "{} is not a valid Host Configuration: {}",
                args.config.display(),
                s.message()
            )));
        }
        Err(s) => return Err(CliError::rpc("ValidateHostConfiguration", s)),
    };
    match ctx.format(None, OutputFormat::Human) {
        OutputFormat::Human => {
            for warning in &result.warnings {
                eprintln!("warning: {warning}");
            }
            if result.ok {
                output::emit(
                    &format!("{}: valid Host Configuration\n", args.config.display()),
                    None,
                )?;
            } else if let Some(view) = &result.error {
                eprintln!("{}", view.text_lines().join("\n"));
            }
        }
        format => output::emit(&output::encode(&result, format)?, None)?,
    }
    if result.ok {
        Ok(Exit::Success)
    } else {
        Err(CliError::ConfigInvalid(format!(
            "{} is not a valid Host Configuration",
            args.config.display()
        )))
    }
}
