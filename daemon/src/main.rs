//! `tridentd` entry point: parse flags, take the socket, set up logging
//! (which gives the telemetry bus), then run the composition root.

use std::process::ExitCode;

use clap::Parser;
use tridentd::{app, config::Config, observability, server};

fn main() -> ExitCode {
    let config = Config::parse();
    // Before logging starts threads: the root check (a wrong start must
    // touch nothing, not even the state dir) and the socket set-up, which
    // edits the environment (LISTEN_*) and the umask.
    let listening = match server::prepare(&config) {
        Ok(listening) => listening,
        Err(error) => return fail(&error.into()),
    };
    let observability = match observability::init(&config) {
        Ok(observability) => observability,
        Err(error) => return fail(&error.into()),
    };
    let bus = observability.bus.clone();
    let code = match app::run(config, listening, bus) {
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
