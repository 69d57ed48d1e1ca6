//! What every servicing command shares: loading the Host Configuration,
//! running the servicing stream through the live view, resuming through
//! Watch if the stream breaks, writing -s/-e files, and the exit code.

use std::future::Future;
use std::path::Path;

use std::time::Duration;
use tokio_stream::StreamExt;
use tonic::Streaming;
use tonic::transport::Channel;

use trident_proto::v1::telemetry_service_client::TelemetryServiceClient;
use trident_proto::v1::version_service_client::VersionServiceClient;
use trident_proto::v1::{
    Cursor, HostConfiguration, RebootHandling, RebootManagement, RebootStatus, ServicingResponse,
    TridentErrorKind, VersionRequest,
};

use super::Ctx;
use super::follow::{Dedup, Followed, follow_operation};
use super::progress::Progress;
use crate::args::{AllowedOperation, OutputFormat, ServicingArgs, ServicingConfigArgs};
use crate::client::TraceParent;
use crate::exit::{CliError, CliResult, Exit};
use crate::render::error::ErrorView;
use crate::render::event::Event;

/// Reads and syntax-checks a Host Configuration file (exit 2 on failure).
pub fn load_config(path: &Path) -> CliResult<String> {
    let text = std::fs::read_to_string(path).map_err(|e| CliError::ConfigLoad {
        path: path.to_path_buf(),
        detail: e.to_string(),
    })?;
    serde_saphyr::from_str::<serde_json::Value>(&text).map_err(|e| CliError::ConfigLoad {
        path: path.to_path_buf(),
        detail: format!(
            "not valid YAML: {}",
            e.to_string().lines().next().unwrap_or_default()
        ),
    })?;
    Ok(text)
}

/// The reboot management of CLI-driven servicing: like upstream, Trident
/// handles the reboot.
pub fn reboot() -> Option<RebootManagement> {
    Some(RebootManagement {
        handling: RebootHandling::TridentHandlesReboot as i32,
    })
}

/// Which of stage/finalize the user allowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Steps {
    Both,
    StageOnly,
    FinalizeOnly,
    Nothing,
}

impl Steps {
    pub fn from_allowed(allowed: &[AllowedOperation]) -> Steps {
        let stage = allowed.contains(&AllowedOperation::Stage);
        let finalize = allowed.contains(&AllowedOperation::Finalize);
        match (stage, finalize) {
            (true, true) => Steps::Both,
            (true, false) => Steps::StageOnly,
            (false, true) => Steps::FinalizeOnly,
            (false, false) => Steps::Nothing,
        }
    }
}

/// What a stage/finalize command (install, update) is asked to do: the
/// steps and, when staging, the Host Configuration read from `args.config`.
/// `None` when `--allowed-operations` allows nothing (said on stderr).
pub fn plan(args: &ServicingConfigArgs) -> CliResult<Option<(Steps, Option<HostConfiguration>)>> {
    if args.multiboot {
        // Refused, never ignored: the user asked for something we do not do.
        return Err(CliError::Usage(
            "--multiboot: installing beside another operating system is not supported by \
             tridentd (it lays out the disks the Host Configuration names); drop the flag"
                .into(),
        ));
    }
    let steps = Steps::from_allowed(&args.allowed_operations);
    if steps == Steps::Nothing {
        eprintln!("trident: no operation allowed (--allowed-operations is empty); nothing to do");
        return Ok(None);
    }
    let config = if steps == Steps::FinalizeOnly {
        None
    } else {
        let config = load_config(&args.config).map_err(|e| fail(&args.servicing, e))?;
        Some(HostConfiguration { config })
    };
    Ok(Some((steps, config)))
}

/// Runs one servicing RPC. `open` starts the stream on a channel, with the
/// CLI's trace context. `config_rpc` says whether INVALID_ARGUMENT refers to
/// the Host Configuration (exit 2).
pub async fn run<F, Fut>(
    ctx: &Ctx,
    args: &ServicingArgs,
    what: &'static str,
    config_rpc: bool,
    open: F,
) -> CliResult<Exit>
where
    F: FnOnce(Channel, TraceParent) -> Fut,
    Fut: Future<Output = Result<tonic::Response<Streaming<ServicingResponse>>, tonic::Status>>,
{
    let channel = ctx.channel().await?;
    let trace = TraceParent::from_env_or_generate();
    let stream = match open(channel, trace).await {
        Ok(response) => response.into_inner(),
        Err(status) => {
            let err = if config_rpc && status.code() == tonic::Code::InvalidArgument {
                CliError::ConfigInvalid(format!(
                    "{what} failed: the daemon rejected the Host Configuration: {}",
                    status.message()
                ))
            } else {
                CliError::rpc(what, status)
            };
            write_error_file(args, &error_view_of(&err))?;
            return Err(err);
        }
    };
    let mut progress = Progress::new(args.progress, ctx.verbosity);
    let result = drive(ctx, &mut progress, stream, what).await;
    full_error_report(ctx, &mut progress).await;
    progress.finish();
    let exit = match result {
        Ok(()) => progress.model.exit().unwrap_or(Exit::ServicingFailed),
        Err(err) => {
            write_error_file(args, &error_view_of(&err))?;
            return Err(err);
        }
    };
    let error = progress.model.outcome.as_ref().and_then(|o| {
        (exit != Exit::Success).then(|| match (&progress.model.error, &o.error) {
            (Some(report), _) => Some(ErrorView::from(report)),
            (None, Some(e)) => Some(ErrorView::from(e)),
            (None, None) => None,
        })?
    });
    if let Some(view) = &error {
        write_error_file(args, view)?;
    }
    if let Some(path) = &args.status {
        let text = super::get::host_status_text(ctx, OutputFormat::Yaml).await?;
        crate::output::emit(&text, Some(path))?;
    }
    let rebooting = progress
        .model
        .outcome
        .as_ref()
        .is_some_and(|o| o.reboot_status == RebootStatus::RebootStarted);
    if exit == Exit::Success && rebooting {
        return wait_for_reboot(ctx).await;
    }
    // The daemon found the Host Configuration invalid: say so in one line
    // (exit 2, as upstream's CLI).
    let config_rejected = config_rpc
        && exit == Exit::ServicingFailed
        && error.as_ref().is_some_and(|e| {
            e.category == crate::render::format::category(TridentErrorKind::InvalidInputError)
        });
    if config_rejected {
        return Err(CliError::ConfigInvalid(format!(
            "{what} failed: the daemon rejected the Host Configuration (error above)"
        )));
    }
    match exit {
        Exit::Success => Ok(Exit::Success),
        Exit::RebootUnsuccessful => Err(CliError::RebootUnsuccessful(
            "the reboot Trident was to perform did not happen".into(),
        )),
        _ => Err(CliError::ServicingFailed),
    }
}

/// Environment variable: how long to wait for the host to go down after
/// the daemon started a reboot (humantime, default [`REBOOT_TIMEOUT`]).
pub const REBOOT_TIMEOUT_ENV: &str = "TRIDENT_REBOOT_TIMEOUT";
/// Default wait for the reboot Trident started.
pub const REBOOT_TIMEOUT: Duration = Duration::from_secs(120);
const REBOOT_POLL: Duration = Duration::from_millis(500);

/// Like upstream: once Trident started the reboot, this process should not
/// outlive the host. Still running (and the daemon still answering) after
/// the timeout means the reboot did not happen: exit 3.
async fn wait_for_reboot(ctx: &Ctx) -> CliResult<Exit> {
    let timeout = std::env::var(REBOOT_TIMEOUT_ENV)
        .ok()
        .and_then(|v| humantime::parse_duration(&v).ok())
        .unwrap_or(REBOOT_TIMEOUT);
    eprintln!(
        "trident: the host is rebooting; waiting up to {}",
        humantime::format_duration(timeout)
    );
    let deadline = tokio::time::Instant::now() + timeout;
    while tokio::time::Instant::now() < deadline {
        tokio::time::sleep(REBOOT_POLL).await;
    }
    // The daemon answering now proves the host did not go down.
    let answered = match ctx.channel().await {
        Ok(channel) => VersionServiceClient::new(channel)
            .version(VersionRequest {})
            .await
            .is_ok(),
        Err(_) => false,
    };
    if answered {
        Err(CliError::RebootUnsuccessful(format!(
            "the daemon started a reboot, but the host is still up after {}",
            humantime::format_duration(timeout)
        )))
    } else {
        Err(CliError::RebootUnsuccessful(format!(
            "the daemon started a reboot and went away, but this host is still running after {}",
            humantime::format_duration(timeout)
        )))
    }
}

/// The servicing stream's Completed carries the upstream error; the bus has
/// the full report (context chain, recent log lines). Fetch it for a failed
/// operation so the failure block shows everything.
async fn full_error_report(ctx: &Ctx, progress: &mut Progress) {
    let model = &progress.model;
    let failed = model
        .outcome
        .as_ref()
        .is_some_and(|o| o.status != trident_proto::v1::StatusCode::Success);
    if !failed || model.error.is_some() {
        return;
    }
    let Some(operation_id) = model.operation.as_ref().map(|o| o.id.clone()) else {
        return;
    };
    let Ok(channel) = ctx.channel().await else {
        return;
    };
    let Ok(response) = TelemetryServiceClient::new(channel)
        .get_last_error(trident_proto::v1::GetLastErrorRequest {})
        .await
    else {
        return;
    };
    if let Some(report) = response.into_inner().error
        && report.operation_id == operation_id
    {
        progress.model.apply(&Event::Error {
            cursor: None,
            report: Box::new(report),
        });
    }
}

/// Reads the servicing stream to its Completed; on a break, resumes
/// through Watch.
async fn drive(
    ctx: &Ctx,
    progress: &mut Progress,
    mut stream: Streaming<ServicingResponse>,
    what: &str,
) -> CliResult<()> {
    let mut started: Option<(String, Option<Cursor>)> = None;
    let mut dedup = Dedup::default();
    let mut ticker = tokio::time::interval(std::time::Duration::from_millis(200));
    let reason = loop {
        tokio::select! {
            message = stream.next() => match message {
                None => break "the servicing stream ended before the operation completed".to_string(),
                Some(Err(status)) => {
                    // Refused before it started (busy, invalid): not a break.
                    if started.is_none() {
                        return Err(CliError::rpc("servicing", status));
                    }
                    break crate::exit::describe_status(&status);
                }
                Some(Ok(response)) => {
                    let Some(mut event) = Event::from_servicing(&response) else { continue };
                    if let Event::Started { operation_id, cursor, rpc, .. } = &mut event {
                        started = Some((operation_id.clone(), cursor.clone()));
                        // The servicing stream does not name the RPC; the command does.
                        if rpc.is_empty() {
                            *rpc = title_case(what);
                        }
                    }
                    dedup.note(&event);
                    progress.feed(&event);
                    if matches!(event, Event::Completed { .. }) {
                        return Ok(());
                    }
                }
            },
            _ = ticker.tick() => progress.tick(),
        }
    };
    let Some((operation_id, cursor)) = started.filter(|(id, _)| !id.is_empty()) else {
        return Err(CliError::StreamLost(format!(
            "{reason}, and the daemon gave no operation id to resume with"
        )));
    };
    progress.feed(&Event::Reconnecting {
        attempt: 0,
        reason: reason.clone(),
    });
    match follow_operation(ctx, progress, &operation_id, cursor, dedup, true).await? {
        Followed::Completed => Ok(()),
        Followed::Interrupted => Err(CliError::StreamLost(format!(
            "operation {operation_id} was interrupted: the daemon stopped before it completed"
        ))),
    }
}

/// An error view for a failure that happened outside the stream.
fn error_view_of(err: &CliError) -> ErrorView {
    let (category, subkind) = match err {
        CliError::Connect { .. } => ("execution-environment-misconfiguration", "connect-daemon"),
        CliError::ConfigLoad { .. } | CliError::ConfigInvalid(_) => {
            ("invalid-input", "load-host-configuration")
        }
        CliError::Rpc { status, .. } if status.code() == tonic::Code::Unavailable => {
            ("servicing", "daemon-busy")
        }
        _ => ("servicing", "client"),
    };
    ErrorView {
        message: err.to_string(),
        error: subkind.to_string(),
        category: category.to_string(),
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

/// Upstream's -e/--error: the fatal error as YAML.
fn write_error_file(args: &ServicingArgs, view: &ErrorView) -> CliResult<()> {
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

/// "rebuild-raid" -> "RebuildRaid", like the bus's RPC names.
fn title_case(command: &str) -> String {
    command
        .split('-')
        .map(|word| {
            let mut chars = word.chars();
            chars.next().map_or_else(String::new, |first| {
                first.to_ascii_uppercase().to_string() + chars.as_str()
            })
        })
        .collect()
}
