//! `tridentd` entry point: parse flags, set up logging, run the server.

use std::process::ExitCode;

use clap::Parser;
use tridentd::{ShutdownHooks, config::Config, server};

fn main() -> ExitCode {
    let config = Config::parse();
    let _observability = server::observability::init(&config);
    match run(config) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            // One line, so it reads well in `systemctl status` and the journal.
            eprintln!("tridentd: error: {error:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(config: Config) -> anyhow::Result<()> {
    server::run(config, ShutdownHooks::default())?;
    Ok(())
}
