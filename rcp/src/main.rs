//! `trident-rcp`: the reverse-connect proxy agent of a host.

use std::process::ExitCode;

use clap::Parser;
use trident_rcp::agent::Agent;
use trident_rcp::config::AgentArgs;
use trident_rcp::state_file;

fn main() -> ExitCode {
    let args = match AgentArgs::try_parse() {
        Ok(args) => args,
        Err(err) => return refuse_arguments(&err),
    };
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("TRIDENT_RCP_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .init();
    let resolved = args
        .resolve_with_state_file()
        .and_then(|(config, state_file)| Ok((Agent::new(config.clone())?, config, state_file)));
    let (agent, config, state_file) = match resolved {
        Ok(resolved) => resolved,
        Err(err) => {
            eprintln!("trident-rcp: error: {err}");
            return ExitCode::from(1);
        }
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("trident-rcp: error: cannot start the async runtime: {err}");
            return ExitCode::from(1);
        }
    };
    runtime.block_on(async {
        tracing::info!(identity = %agent.identity(), "trident-rcp starting");
        tokio::select! {
            _ = agent.run() => {}
            _ = state_file::mirror(&agent, state_file.clone(), config.connect.clone()) => {}
            _ = shutdown_signal() => tracing::info!("trident-rcp stopping"),
        }
        state_file::write_stopped(&state_file, agent.identity(), &config.connect);
    });
    ExitCode::SUCCESS
}

/// Prints clap's error and exits with its code, unless the error quotes a
/// private key (pasted where a path belongs): clap echoes the offending
/// argument, and stderr ends in the journal.
fn refuse_arguments(err: &clap::Error) -> ExitCode {
    let rendered = err.to_string();
    if !rendered.contains("PRIVATE KEY") {
        err.exit();
    }
    eprintln!(
        "trident-rcp: error: invalid arguments: one holds a private key block (not shown); --key takes the path of the key file"
    );
    ExitCode::from(2)
}

/// SIGTERM (systemd) or SIGINT.
async fn shutdown_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    match signal(SignalKind::terminate()) {
        Ok(mut term) => {
            tokio::select! {
                _ = term.recv() => {}
                _ = tokio::signal::ctrl_c() => {}
            }
        }
        Err(_) => {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}
