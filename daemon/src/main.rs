//! `tridentd` entry point: parse flags, take the socket, set up logging,
//! serve.

use std::process::ExitCode;

use clap::Parser;
use tridentd::{ShutdownHooks, config::Config, server};

fn main() -> ExitCode {
    let config = Config::parse();
    // Before logging starts threads: the root check (a wrong start must
    // touch nothing, not even the state dir) and the socket set-up, which
    // edits the environment (LISTEN_*) and the umask.
    let listening = match server::prepare(&config) {
        Ok(listening) => listening,
        Err(error) => return fail(&error.into()),
    };
    let _observability = server::observability::init(&config);
    match server::run(config, listening, ShutdownHooks::default()) {
        Ok(_reason) => ExitCode::SUCCESS,
        Err(error) => fail(&error.into()),
    }
}

/// One line on stderr, so it reads well in `systemctl status` and the journal.
fn fail(error: &anyhow::Error) -> ExitCode {
    eprintln!("tridentd: error: {error:#}");
    ExitCode::FAILURE
}
