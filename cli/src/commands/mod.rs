//! One module per command; [`run`] dispatches.

pub mod boots;
pub mod commit;
pub mod completions;
pub mod diagnose;
pub mod diagnose_system;
pub mod get;
pub mod install;
pub mod logs;
pub mod offline_initialize;
pub mod rcp_listen;
pub mod rebuild_raid;
pub mod rollback;
pub mod start_network;
pub mod stream_disk;
pub mod traces;
pub mod update;
mod upstream_log;
pub mod validate;
mod validate_upstream;
pub mod version;
pub mod watch;

use crate::args::{Cli, Command};
use crate::ctx::Ctx;
use crate::exit::{CliError, CliResult, Exit};

/// Runs the command line. Ctrl-C detaches: the CLI stops showing, the
/// daemon's operation goes on (it runs in the daemon, not in this process).
pub async fn run(cli: Cli) -> CliResult<Exit> {
    // rcp-listen is a server, not a client of an operation: Ctrl-C is its
    // normal stop (exit 0, host sockets removed), handled in the command.
    if let Command::RcpListen(args) = &cli.command {
        return rcp_listen::run(args).await;
    }
    tokio::select! {
        result = dispatch(cli) => result,
        _ = tokio::signal::ctrl_c() => {
            // Leave the cursor below a tty frame.
            eprintln!();
            Err(CliError::Interrupted)
        }
    }
}

async fn dispatch(cli: Cli) -> CliResult<Exit> {
    let ctx = Ctx {
        socket: cli.socket,
        verbosity: cli.verbosity,
        output: cli.output,
    };
    match cli.command {
        Command::Install(args) => install::run(&ctx, &args).await,
        Command::Update(args) => update::run(&ctx, &args).await,
        Command::Commit(args) => commit::run(&ctx, &args).await,
        Command::Rollback(args) => rollback::run(&ctx, &args).await,
        Command::RebuildRaid(args) => rebuild_raid::run(&ctx, &args).await,
        Command::StreamDisk(args) => stream_disk::run(&ctx, &args).await,
        Command::Validate(args) => validate::run(&ctx, &args).await,
        Command::Get(args) => get::run(&ctx, &args).await,
        Command::Watch(args) => watch::run(&ctx, &args).await,
        Command::Logs(args) => logs::run(&ctx, &args).await,
        Command::Traces(args) => traces::run(&ctx, &args).await,
        Command::OfflineInitialize(args) => offline_initialize::run(&args),
        Command::Diagnose(args) => diagnose::run(&ctx, &args).await,
        Command::Version => version::run(&ctx).await,
        Command::Completions(args) => completions::run(&args),
        Command::RcpListen(args) => rcp_listen::run(&args).await,
        Command::StartNetwork(args) => start_network::run(&args),
    }
}
