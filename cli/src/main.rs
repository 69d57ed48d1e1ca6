//! `trident`: parse arguments, run one command, exit with its code.

use std::process::ExitCode;

use clap::Parser;
use trident_cli::args::Cli;
use trident_cli::exit::Exit;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("trident: error: cannot start the async runtime: {err}");
            return Exit::SetupFailed.into();
        }
    };
    match runtime.block_on(trident_cli::commands::run(cli)) {
        Ok(exit) => exit.into(),
        Err(err) => {
            // ServicingFailed was already rendered with its structured error.
            if !matches!(err, trident_cli::exit::CliError::ServicingFailed) {
                eprintln!("trident: error: {err}");
            }
            err.exit().into()
        }
    }
}
