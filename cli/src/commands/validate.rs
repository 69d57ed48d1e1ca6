//! `trident validate [CONFIG]`: ValidationService (v1preview).
//! Exit 0 when valid; 4 when the file cannot be loaded or is invalid.
//! A document this daemon accepts but upstream Trident refuses is valid
//! here, with one warning per upstream rule it breaks
//! (`super::validate_upstream`).

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
    /// Upstream Trident's rules the document breaks (accepted here).
    upstream_warnings: Vec<String>,
    /// What the daemon will ignore in a valid configuration.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    warnings: Vec<String>,
}

pub async fn run(ctx: &Ctx, args: &ValidateArgs) -> CliResult<Exit> {
    let config = load_config(&args.config)?;
    let upstream_warnings = serde_saphyr::from_str::<serde_json::Value>(&config)
        .map(|document| super::validate_upstream::upstream_refusals(&document))
        .unwrap_or_default();
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
                upstream_warnings,
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
            for warning in result.warnings.iter().chain(&result.upstream_warnings) {
                eprintln!("trident: warning: {warning}");
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
