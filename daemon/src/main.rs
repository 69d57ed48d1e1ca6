//! `tridentd` entry point: parse flags, take the socket, set up logging
//! (which gives the telemetry bus), then run the composition root.

use std::process::ExitCode;

use clap::Parser;
use tridentd::{
    agent_config::{AgentConfig, EXIT_AGENT_CONFIG},
    app,
    config::Config,
    observability, server, state_lock,
};

fn main() -> ExitCode {
    let mut config = Config::parse();
    // Upstream's agent configuration: its DatastorePath= is the datastore
    // unless --datastore names one. Unloadable: exit 4, as upstream.
    let agent = match AgentConfig::load(&config.agent_config) {
        Ok(agent) => agent,
        Err(error) => {
            eprintln!("tridentd: error: failed to load agent configuration: {error}");
            return ExitCode::from(EXIT_AGENT_CONFIG);
        }
    };
    if config.datastore.is_none() {
        config.datastore = agent.datastore_path.clone();
    }
    // The root check first: a wrong start must touch nothing, not even
    // the state dir. Then the state directory and the datastore, checked
    // and locked for the daemon's life before anything reads them (a second
    // daemon on them stops here, before it takes a socket).
    if let Err(error) = server::security::require_root() {
        return fail(&error.into());
    }
    let _state_lock = match state_lock::take(&config.state_dir, &config.datastore_path()) {
        Ok(lock) => lock,
        Err(error) => return fail(&error.into()),
    };
    // Before logging starts threads: the socket set-up, which edits the
    // environment (LISTEN_*) and the umask.
    let listening = match server::prepare(&config) {
        Ok(listening) => listening,
        Err(error) => return fail(&error.into()),
    };
    // Everything created from here on (the state directory, datastore, WAL,
    // journal segments, boot records) is the owner's alone whatever umask
    // we were started with, as the packaged unit's UMask=0077 arranges.
    // After the socket set-up: its parent directory must stay reachable by
    // the socket's group. Still before any thread starts.
    nix::sys::stat::umask(nix::sys::stat::Mode::from_bits_truncate(0o077));
    let mut observability = match observability::init(&config) {
        Ok(observability) => observability,
        Err(error) => return fail(&error.into()),
    };
    if !agent.unknown_keys.is_empty() {
        tracing::info!(
            path = %config.agent_config.display(),
            keys = ?agent.unknown_keys,
            "agent configuration: ignored keys tridentd does not know"
        );
    }
    let bus = observability.bus.clone();
    let replay = || observability.guard.replay_undelivered_export();
    let code = match app::run(config, listening, bus, replay) {
        Ok(_reason) => ExitCode::SUCCESS,
        Err(error) => fail(&error.into()),
    };
    // Flushes OTLP export and the journal.
    drop(observability);
    code
}

/// One line on stderr, so it reads well in `systemctl status` and the journal.
fn fail(error: &anyhow::Error) -> ExitCode {
    eprintln!("tridentd: error: {error:#}");
    ExitCode::FAILURE
}
