//! `trident completions SHELL`: a completion script on stdout.

use clap::CommandFactory;

use crate::args::{Cli, CompletionsArgs};
use crate::exit::{CliResult, Exit};

pub fn run(args: &CompletionsArgs) -> CliResult<Exit> {
    let mut command = Cli::command();
    clap_complete::generate(args.shell, &mut command, "trident", &mut std::io::stdout());
    Ok(Exit::Success)
}
