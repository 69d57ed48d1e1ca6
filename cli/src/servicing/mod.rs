//! What every servicing command shares: opening the servicing stream with
//! the CLI's trace context, following it in the live view, writing the
//! -s/-e files, and the exit code. The plan (Host Configuration, steps) is
//! in [`plan`], the -e file in `error_file`, the reboot wait in [`reboot`].

mod error_file;
mod plan;
mod reboot;
mod wait;

use std::future::Future;

use crate::client::Channel;
use tonic::Streaming;
use trident_host::{Category, KebabName};
use trident_proto::v1::{RebootStatus, ServicingKind, ServicingResponse};

pub use error_file::fail;
pub use plan::{Steps, load_config, plan, reboot};

use crate::args::{OutputFormat, ServicingArgs};
use crate::client::TraceParent;
use crate::ctx::Ctx;
use crate::exit::{CliError, CliResult, Exit};
use crate::live::progress::{Mode, Progress};
use crate::live::servicing_stream::follow_servicing_stream;
use error_file::{error_view_of, write_error_file};
use reboot::DaemonHost;

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
    F: Fn(Channel, TraceParent) -> Fut,
    Fut: Future<Output = Result<tonic::Response<Streaming<ServicingResponse>>, tonic::Status>>,
{
    let (stream, host) = open_stream(ctx, args, what, config_rpc, open).await?;
    let mut progress = Progress::new(args.progress, ctx.verbosity);
    let followed = follow_servicing_stream(ctx, &mut progress, stream, what).await;
    progress.finish();
    if let Err(err) = followed {
        write_error_file(args, &error_view_of(&err))?;
        return Err(err);
    }
    let model = &progress.model;
    let exit = model.exit().unwrap_or(Exit::ServicingFailed);
    let error = model.error_view();
    if let Some(view) = &error {
        write_error_file(args, view)?;
    }
    if let Some(path) = &args.status {
        let text = ctx.host_status_text(OutputFormat::Yaml).await?;
        crate::output::emit(&text, Some(path))?;
    }
    let started = model
        .outcome
        .as_ref()
        .filter(|o| o.reboot_status == RebootStatus::RebootStarted);
    if let Some(outcome) = started.filter(|_| exit == Exit::Success) {
        // A daemon that took charge of the reboot but does not perform it
        // (`tridentd --reboot record|none`) said so: nothing goes down, so
        // there is nothing to wait for.
        if let Some(words) = reboot::not_performed(outcome.reboot_action) {
            eprintln!("trident: {words}");
            return Ok(Exit::Success);
        }
        let json = Mode::resolve(args.progress) == Mode::Json;
        return reboot::wait_for_reboot(ctx, &host, json).await;
    }
    // rebuild-raid ends NoneRequired (no servicing of the OS, no reboot)
    // after rebuilding: it did something.
    if exit == Exit::Success
        && what != "rebuild-raid"
        && model.outcome.as_ref().and_then(|o| o.servicing_kind)
            == Some(ServicingKind::NoneRequired)
    {
        eprintln!("trident: {}", nothing_done(what));
    }
    // The daemon found the Host Configuration invalid: say so in one line
    // (exit 2, as upstream's CLI).
    let config_rejected = config_rpc
        && exit == Exit::ServicingFailed
        && error
            .as_ref()
            .is_some_and(|e| e.category == Category::InvalidInput.kebab_name());
    if config_rejected {
        return Err(CliError::ConfigInvalid(format!(
            "{what} failed: the daemon rejected the Host Configuration (error above)"
        )));
    }
    exit_result(exit)
}

/// Opens the servicing stream; a refusal (busy, invalid) is the command's
/// error, with the -e file written. Asks the daemon first where it runs
/// ([`DaemonHost`]): after `Completed` it may be gone. Refused because
/// another operation runs: waits for it (up to `--wait`) and asks again.
async fn open_stream<F, Fut>(
    ctx: &Ctx,
    args: &ServicingArgs,
    what: &'static str,
    config_rpc: bool,
    open: F,
) -> CliResult<(Streaming<ServicingResponse>, DaemonHost)>
where
    F: Fn(Channel, TraceParent) -> Fut,
    Fut: Future<Output = Result<tonic::Response<Streaming<ServicingResponse>>, tonic::Status>>,
{
    let channel = ctx.channel().await?;
    let host = DaemonHost::locate(&channel).await;
    let trace = TraceParent::from_env_or_generate();
    let deadline = tokio::time::Instant::now() + args.wait;
    let mut opened = open(channel.clone(), trace.clone()).await;
    while let Err(status) = opened.as_ref()
        && wait::is_busy(status)
        && !args.wait.is_zero()
    {
        let refusal = status.clone();
        if let Err(err) = wait::wait_for_running(ctx, args, what, refusal, deadline).await {
            write_error_file(args, &error_view_of(&err))?;
            return Err(err);
        }
        opened = open(channel.clone(), trace.clone()).await;
    }
    match opened {
        Ok(response) => Ok((response.into_inner(), host)),
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
            Err(err)
        }
    }
}

/// The words for an operation that succeeded with nothing to do
/// (`Completed.servicing_kind` `SERVICING_KIND_NONE_REQUIRED`).
fn nothing_done(what: &str) -> &'static str {
    match what {
        "rollback" => {
            "rollback: nothing to roll back to (no earlier A/B update to return to); nothing changed"
        }
        "commit" => "commit: nothing to commit; nothing changed",
        _ => "nothing to do; nothing changed",
    }
}

/// The command's result for the operation's exit code.
pub fn exit_result(exit: Exit) -> CliResult<Exit> {
    match exit {
        Exit::Success => Ok(Exit::Success),
        Exit::RebootUnsuccessful => Err(CliError::RebootUnsuccessful(
            "the reboot Trident was to perform did not happen".into(),
        )),
        _ => Err(CliError::ServicingFailed),
    }
}
