//! Upstream's `-e/--error FILE`: the fatal error of a servicing command as
//! YAML, written on every failure path (refused, broken, failed).

use trident_host::{KebabName, Subkind};

use crate::args::{OutputFormat, ServicingArgs};
use crate::exit::{CliError, CliResult};
use crate::render::error::ErrorView;

/// An error view for a failure that happened outside the stream.
pub fn error_view_of(err: &CliError) -> ErrorView {
    let subkind = match err {
        CliError::Connect { .. } => Subkind::ConnectDaemon,
        CliError::ConfigLoad { .. } | CliError::ConfigInvalid(_) => Subkind::LoadHostConfiguration,
        CliError::Rpc { status, .. } if status.code() == tonic::Code::Unavailable => {
            Subkind::DaemonBusy
        }
        CliError::Busy(_) => Subkind::DaemonBusy,
        _ => Subkind::Client,
    };
    ErrorView {
        message: err.to_string(),
        error: subkind.kebab_name().to_string(),
        category: subkind.category().kebab_name().to_string(),
        location: String::new(),
        cause: None,
        causes: Vec::new(),
        context: Vec::new(),
        operation_id: None,
        trace_id: None,
        timestamp: Some(crate::render::format::timestamp(
            std::time::SystemTime::now(),
        )),
        recent_logs: Vec::new(),
    }
}

/// Writes `view` to the -e file, if one was asked for.
pub fn write_error_file(args: &ServicingArgs, view: &ErrorView) -> CliResult<()> {
    let Some(path) = &args.error else {
        return Ok(());
    };
    let text = crate::output::encode(view, OutputFormat::Yaml)?;
    crate::output::emit(&text, Some(path))
}

/// Writes the -e file for an error raised before the stream (then returns
/// the error), so scripts find the error file on every failure path.
pub fn fail(args: &ServicingArgs, err: CliError) -> CliError {
    match write_error_file(args, &error_view_of(&err)) {
        Ok(()) => err,
        Err(write_err) => write_err,
    }
}
