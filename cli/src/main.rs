//! `trident`: parse arguments, run one command, exit with its code.

use std::process::ExitCode;

use clap::Parser;
use trident_cli::args::Cli;
use trident_cli::exit::Exit;

fn main() -> ExitCode {
    // A usage error exits 2, as clap (and so upstream's CLI) does; help and
    // --version exit 0.
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) => {
            let _ = err.print();
            return if err.use_stderr() {
                Exit::ServicingFailed.into()
            } else {
                Exit::Success.into()
            };
        }
    };
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
