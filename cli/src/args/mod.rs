//! Command-line arguments (clap derive). Upstream commands keep upstream's
//! names, arguments and defaults; ours (watch, logs, traces, diagnose,
//! completions, version) follow the same style.
//!
//! Adding a command: a variant here, a module in `commands/`, one arm in
//! `commands::run`.

mod rcp_listen;

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

pub use self::rcp_listen::RcpListenArgs;
use crate::client::{DEFAULT_SOCKET, SOCKET_ENV};

/// Default Host Configuration path of upstream Trident.
pub const DEFAULT_CONFIG: &str = "/etc/trident/config.yaml";

/// trident: the command-line client of the Trident servicing daemon (tridentd).
#[derive(Debug, Parser)]
#[command(name = "trident", version, about, propagate_version = true)]
pub struct Cli {
    /// Unix socket of tridentd.
    #[arg(long, global = true, env = SOCKET_ENV, default_value = DEFAULT_SOCKET, value_name = "PATH")]
    pub socket: PathBuf,

    /// Logging verbosity of the daemon's log lines shown by this command
    /// [OFF, ERROR, WARN, INFO, DEBUG, TRACE].
    #[arg(short, long, global = true, default_value = "DEBUG", value_parser = parse_verbosity)]
    pub verbosity: Verbosity,

    /// Format of data output (version, get, logs, traces, validate, operations).
    /// Commands whose -o takes a file accept --output only in this position:
    /// `trident --output json get last-error`.
    #[arg(short = 'o', long, value_enum)]
    pub output: Option<OutputFormat>,

    #[command(subcommand)]
    pub command: Command,
}

/// Every subcommand.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Initiate an install of Azure Linux.
    Install(ServicingConfigArgs),
    /// Start or continue an A/B update from an existing install.
    Update(ServicingConfigArgs),
    /// Detect whether an install or update succeeded, and update the boot order accordingly.
    Commit(ServicingArgs),
    /// Manually roll back to the previous state.
    Rollback(RollbackArgs),
    /// Rebuild software RAID arrays managed by Trident.
    #[command(name = "rebuild-raid")]
    RebuildRaid(RebuildRaidArgs),
    /// Stream a COSI image onto a disk of the host.
    #[command(name = "stream-disk", alias = "stream-image")]
    StreamDisk(StreamDiskArgs),
    /// Validate the provided Host Configuration.
    Validate(ValidateArgs),
    /// Query the current state of the system.
    Get(GetArgs),
    /// Initialize the datastore for a system that wasn't installed by Trident
    /// (runs in the CLI, without the daemon).
    #[command(name = "offline-initialize")]
    OfflineInitialize(OfflineInitializeArgs),
    /// Write a support bundle (one archive): report, recent records, datastore.
    Diagnose(DiagnoseArgs),
    /// Attach to the running servicing operation and show its live progress.
    Watch(WatchArgs),
    /// Show the daemon's log records, like journalctl (after upstream
    /// Trident's from /var/log/trident-full.log, marked "upstream").
    Logs(LogsArgs),
    /// Show the span tree of a servicing operation with durations and status.
    Traces(TracesArgs),
    /// Show the versions of this client and of the daemon.
    Version,
    /// Print a shell completion script.
    Completions(CompletionsArgs),
    /// Accept hosts' reverse-connect proxies (trident-rcp) and give each a local socket.
    #[command(name = "rcp-listen")]
    RcpListen(RcpListenArgs),
    /// Apply the configuration's netplan to this system (`netplan apply`);
    /// runs in the CLI, without the daemon (upstream's provisioning network).
    #[command(name = "start-network", hide = true)]
    StartNetwork(StartNetworkArgs),
}

/// Log verbosity filter (upstream's LevelFilter names).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Verbosity {
    Off,
    Error,
    Warn,
    Info,
    Debug,
    Trace,
}

fn parse_verbosity(text: &str) -> Result<Verbosity, String> {
    match text.to_ascii_lowercase().as_str() {
        "off" => Ok(Verbosity::Off),
        "error" => Ok(Verbosity::Error),
        "warn" | "warning" => Ok(Verbosity::Warn),
        "info" => Ok(Verbosity::Info),
        "debug" => Ok(Verbosity::Debug),
        "trace" => Ok(Verbosity::Trace),
        _ => Err(format!(
            "unknown verbosity {text:?}; use OFF, ERROR, WARN, INFO, DEBUG or TRACE"
        )),
    }
}

/// Format of data output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    /// Text for people.
    Human,
    /// JSON (one object per record for streams).
    Json,
    /// YAML.
    Yaml,
}

/// How live progress is shown (like BuildKit's --progress).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ProgressMode {
    /// tty when stderr is a terminal, plain otherwise.
    Auto,
    /// Bars per phase, the operation line, the last log lines.
    Tty,
    /// One line per phase change, progress lines at most every 5 s or 5 %.
    Plain,
    /// One JSON object per record on stdout.
    Json,
}

/// The operations Trident is allowed to perform.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum AllowedOperation {
    Stage,
    Finalize,
}

/// Options of every command that runs a servicing operation.
#[derive(Debug, Clone, Args)]
pub struct ServicingArgs {
    /// Path to save the resulting Host Status.
    #[arg(short, long, value_name = "FILE")]
    pub status: Option<PathBuf>,
    /// Path to save an eventual fatal error.
    #[arg(short, long, value_name = "FILE")]
    pub error: Option<PathBuf>,
    /// How to show live progress.
    #[arg(long, value_enum, default_value = "auto")]
    pub progress: ProgressMode,
    /// How long to wait for a servicing operation already running in the
    /// daemon (e.g. the commit at boot) to end before starting this one,
    /// following its progress; `0` refuses at once, as upstream's CLI.
    #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration, default_value = "5m")]
    pub wait: std::time::Duration,
}

/// install / update arguments.
#[derive(Debug, Clone, Args)]
pub struct ServicingConfigArgs {
    /// The new configuration to apply.
    #[arg(index = 1, default_value = DEFAULT_CONFIG)]
    pub config: PathBuf,
    /// Comma-separated list of operations that Trident will be allowed to perform.
    #[arg(long, value_delimiter = ',', num_args = 0.., default_value = "stage,finalize")]
    pub allowed_operations: Vec<AllowedOperation>,
    /// Allow a multiboot install (beside another OS): not supported by
    /// tridentd, so the command refuses it rather than ignore it.
    #[arg(long)]
    pub multiboot: bool,
    #[command(flatten)]
    pub servicing: ServicingArgs,
}

/// rollback arguments.
#[derive(Debug, Clone, Args)]
pub struct RollbackArgs {
    /// Only print which rollback would be performed.
    #[arg(long)]
    pub check: bool,
    /// Roll back only if the next available rollback is a runtime rollback.
    #[arg(long, conflicts_with = "ab")]
    pub runtime: bool,
    /// Roll back only if the next available rollback is an A/B rollback.
    #[arg(long, conflicts_with = "runtime")]
    pub ab: bool,
    /// Comma-separated list of operations that Trident will be allowed to perform.
    #[arg(long, value_delimiter = ',', num_args = 0.., default_value = "stage,finalize")]
    pub allowed_operations: Vec<AllowedOperation>,
    #[command(flatten)]
    pub servicing: ServicingArgs,
}

/// rebuild-raid arguments.
#[derive(Debug, Clone, Args)]
pub struct RebuildRaidArgs {
    /// The configuration to work from. RebuildRaid takes none on the wire:
    /// the file is checked and the daemon's Host Configuration is used (said
    /// on stderr).
    #[arg(short, long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    #[command(flatten)]
    pub servicing: ServicingArgs,
}

/// stream-disk arguments.
#[derive(Debug, Clone, Args)]
pub struct StreamDiskArgs {
    /// file://, http://, https:// or oci:// URL of the COSI image.
    #[arg(index = 1, value_name = "URL")]
    pub url: String,
    /// SHA-384 of the image's metadata.json (96 hex digits, optionally "sha384:"-prefixed).
    #[arg(long)]
    pub hash: Option<String>,
    /// How much of what was written the daemon reads back from the disk
    /// before it writes the partition tables (see docs/reliability.md for
    /// what `full` costs).
    #[arg(long, value_enum, default_value_t = VerifyWrites::Sampled)]
    pub verify_writes: VerifyWrites,
    #[command(flatten)]
    pub servicing: ServicingArgs,
}

/// stream-disk --verify-writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum VerifyWrites {
    /// Both partition tables and every region's first and last 4 KiB block.
    Sampled,
    /// Every byte written, and both partition tables.
    Full,
}

/// validate arguments.
#[derive(Debug, Clone, Args)]
pub struct ValidateArgs {
    /// Path to a Host Configuration file.
    #[arg(index = 1, default_value = DEFAULT_CONFIG)]
    pub config: PathBuf,
}

/// start-network arguments (upstream's).
#[derive(Debug, Args)]
pub struct StartNetworkArgs {
    /// Path to a Host Configuration file: its `managementOs.netplan`, else
    /// its `os.netplan`.
    #[arg(index = 1, default_value = DEFAULT_CONFIG)]
    pub config: PathBuf,
}

/// What `get` retrieves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum GetKind {
    /// The Host Configuration in effect.
    Configuration,
    /// The full Host Status (upstream's keys).
    Status,
    /// The last error, or null.
    LastError,
    /// The chain of rollback targets.
    RollbackChain,
    /// The next rollback target.
    RollbackTarget,
}

/// get arguments.
#[derive(Debug, Clone, Args)]
pub struct GetArgs {
    /// What data to retrieve.
    #[arg(default_value = "status")]
    pub kind: GetKind,
    /// Path to save the resulting output.
    #[arg(short, long, value_name = "FILE")]
    pub outfile: Option<PathBuf>,
}

/// offline-initialize arguments.
#[derive(Debug, Clone, Args)]
pub struct OfflineInitializeArgs {
    /// Path to a Host Status file (YAML) describing the installed system.
    /// Without it, upstream infers one from Image Customizer's history: not
    /// supported here (the command says so and exits 2).
    #[arg(index = 1, value_name = "HOST_STATUS")]
    pub hs_path: Option<PathBuf>,
    /// Lazy partition overrides `<b-partition>:<partuuid>`, comma-separated
    /// (upstream's Host Status inference; refused, see HOST_STATUS).
    #[arg(long, value_delimiter = ',', num_args = 0.., conflicts_with = "hs_path")]
    pub lazy_partitions: Vec<String>,
    /// Disk to inspect (upstream's Host Status inference; refused, see HOST_STATUS).
    #[arg(long, conflicts_with = "hs_path")]
    pub disk: Option<String>,
    /// Image Customizer history.json (upstream's Host Status inference;
    /// refused, see HOST_STATUS).
    #[arg(long, value_name = "PATH", conflicts_with = "hs_path")]
    pub history_path: Option<PathBuf>,
    /// Datastore to create (default: the Host Status spec's
    /// trident.datastorePath, else /var/lib/trident/datastore.sqlite).
    #[arg(long, value_name = "PATH")]
    pub datastore: Option<PathBuf>,
}

/// diagnose arguments.
#[derive(Debug, Clone, Args)]
pub struct DiagnoseArgs {
    /// Archive to write (tar).
    #[arg(short, long, visible_alias = "outfile", value_name = "FILE")]
    pub output: PathBuf,
    /// Include the full system journal of this boot and the kernel ring
    /// buffer (journalctl, dmesg).
    #[arg(long)]
    pub journal: bool,
    /// Include the SELinux audit log (/var/log/audit/audit.log).
    #[arg(long)]
    pub selinux: bool,
    /// State directory of the daemon (journal, datastore), read directly
    /// when the daemon is down.
    #[arg(
        long,
        env = "TRIDENT_STATE_DIR",
        default_value = "/var/lib/trident",
        value_name = "DIR"
    )]
    pub state_dir: PathBuf,
    /// Datastore to include (default STATE_DIR/datastore.sqlite).
    #[arg(long, value_name = "PATH")]
    pub datastore: Option<PathBuf>,
    /// How many recent operations' records to include.
    #[arg(long, default_value_t = 3)]
    pub operations: usize,
}

/// watch arguments.
#[derive(Debug, Clone, Args)]
pub struct WatchArgs {
    /// Wait for the next operation when none is running.
    #[arg(long)]
    pub wait: bool,
    /// Watch this operation (running or finished) instead of the running one.
    #[arg(long, value_name = "ID")]
    pub operation: Option<String>,
    /// How to show live progress.
    #[arg(long, value_enum, default_value = "auto")]
    pub progress: ProgressMode,
}

/// logs arguments.
#[derive(Debug, Clone, Args)]
pub struct LogsArgs {
    /// Follow: keep printing new records as they arrive.
    #[arg(short, long)]
    pub follow: bool,
    /// Show the last N matching records first.
    #[arg(short = 'n', long, value_name = "N")]
    pub lines: Option<u32>,
    /// Show only records newer than TIME (RFC 3339, or a duration ago like "10m").
    #[arg(long, value_name = "TIME")]
    pub since: Option<String>,
    /// Minimum level (error, warn, info, debug, trace).
    #[arg(long, value_name = "LEVEL", value_parser = parse_verbosity)]
    pub level: Option<Verbosity>,
    /// Keep only records whose target starts with PREFIX (repeatable).
    #[arg(long, value_name = "PREFIX")]
    pub target: Vec<String>,
    /// Keep only records of this servicing operation.
    #[arg(long, value_name = "ID")]
    pub operation: Option<String>,
    /// Resume strictly after this cursor (`<run_id>:<sequence>`).
    #[arg(long, value_name = "C", conflicts_with = "cursor_file")]
    pub after_cursor: Option<String>,
    /// Resume after the cursor stored in FILE and update it as records are shown.
    #[arg(long, value_name = "FILE")]
    pub cursor_file: Option<PathBuf>,
    /// Show only records of one boot of the host: 0 (the default value) is
    /// the current boot, -1 the one before, ...; or a boot id (as journalctl -b).
    #[arg(short = 'b', long, value_name = "ID|-N", num_args = 0..=1,
          default_missing_value = "0", allow_negative_numbers = true)]
    pub boot: Option<String>,
    /// List the host's boots the daemon's journal knows, oldest first, with
    /// their first and last record (as journalctl --list-boots).
    #[arg(long, conflicts_with_all = ["follow", "boot", "lines", "after_cursor", "cursor_file"])]
    pub list_boots: bool,
    /// Output format (human or json).
    #[arg(short = 'o', long, value_enum)]
    pub output: Option<OutputFormat>,
}

/// traces arguments.
#[derive(Debug, Clone, Args)]
pub struct TracesArgs {
    /// The operation whose spans to show (default: the most recent one).
    #[arg(long, value_name = "ID")]
    pub operation: Option<String>,
    /// Output format of the tree (human or json).
    #[arg(short = 'o', long, value_enum)]
    pub output: Option<OutputFormat>,
    /// What to write: the span tree (default), or Chrome trace-event JSON
    /// for Perfetto / chrome://tracing.
    #[arg(long, value_enum, default_value_t = TraceFormat::Tree)]
    pub format: TraceFormat,
}

/// `trident traces --format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum TraceFormat {
    /// The span tree, in the --output format.
    Tree,
    /// Chrome trace-event JSON: one complete ("X") event per span.
    Chrome,
}

/// completions arguments.
#[derive(Debug, Clone, Args)]
pub struct CompletionsArgs {
    /// The shell to generate the script for.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn argument_definitions_are_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn every_flag_has_help_text() {
        fn check(cmd: &clap::Command, path: &str) {
            for arg in cmd.get_arguments() {
                let id = arg.get_id().as_str();
                if id == "help" || id == "version" || arg.is_hide_set() {
                    continue;
                }
                assert!(
                    arg.get_help().is_some() || arg.get_long_help().is_some(),
                    "{path} --{id} has no help"
                );
            }
            for sub in cmd.get_subcommands() {
                check(sub, &format!("{path} {}", sub.get_name()));
            }
        }
        check(&Cli::command(), "trident");
    }

    #[test]
    fn update_takes_upstream_allowed_operations() {
        let cli = Cli::try_parse_from([
            "trident",
            "update",
            "/tmp/c.yaml",
            "--allowed-operations",
            "stage",
            "-s",
            "/tmp/hs",
        ])
        .expect("parse");
        let Command::Update(args) = cli.command else {
            panic!("not update")
        };
        assert_eq!(args.allowed_operations, vec![AllowedOperation::Stage]);
        assert_eq!(args.servicing.status, Some(PathBuf::from("/tmp/hs")));
    }
}
