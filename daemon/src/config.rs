//! Command-line flags and environment of `tridentd`.
//!
//! Every environment variable the daemon reads is a named constant here, so
//! daemon/README.md, the unit files and the code agree on one spelling.

use std::{path::PathBuf, time::Duration};

use clap::{ArgAction, Parser};
use trident_engine::settings::{BootControlMode, EngineSettings, InstallSafety, RebootMode};
// The bus owns its defaults (ring bounds, journal folder); the flags use them.
use trident_telemetry::config::{DEFAULT_RING_BYTES, DEFAULT_RING_RECORDS};

/// Socket path used when neither `--socket` nor the environment names one.
pub const DEFAULT_SOCKET: &str = "/run/trident/listen.sock";
/// Upstream Trident's socket path, served as well when `--socket` is the
/// default, so clients written for upstream find the daemon unchanged.
pub const DEFAULT_UPSTREAM_SOCKET: &str = "/run/trident/trident.sock";
/// Env var: second socket path (same as `--upstream-socket`).
pub const ENV_UPSTREAM_SOCKET: &str = "TRIDENT_UPSTREAM_SOCKET";
/// State directory used when neither `--state-dir` nor the environment names one.
pub const DEFAULT_STATE_DIR: &str = "/var/lib/trident";
/// Env var: socket path (same as `--socket`).
pub const ENV_SOCKET: &str = "TRIDENT_SOCKET";
/// Env var: state directory (same as `--state-dir`).
pub const ENV_STATE_DIR: &str = "TRIDENT_STATE_DIR";
/// Env var: log filter in `tracing_subscriber::EnvFilter` syntax.
pub const ENV_LOG_FILTER: &str = "RUST_LOG";
/// Default idle time after which the daemon exits.
pub const DEFAULT_INACTIVITY_TIMEOUT: &str = "5m";
/// Default bound on how long shutdown waits for in-flight work.
pub const DEFAULT_SHUTDOWN_GRACE: &str = "10s";
/// File name of the SQLite datastore inside the state directory.
pub const DATASTORE_FILE: &str = "datastore.sqlite";
/// Env var: file the daemon reads its host's boot id from (same as
/// `--boot-id-file`); for containers and tests, where /proc is not the
/// serviced host's.
pub const ENV_BOOT_ID_FILE: &str = "TRIDENT_BOOT_ID_FILE";
/// Env var: upstream Trident's full log (same as `--upstream-log`).
pub const ENV_UPSTREAM_LOG: &str = "TRIDENT_UPSTREAM_LOG";
/// Env var: bound on connecting to an image server (same as `--http-connect-timeout`).
pub const ENV_HTTP_CONNECT_TIMEOUT: &str = "TRIDENT_HTTP_CONNECT_TIMEOUT";
/// Env var: bound on a stalled image download (same as `--http-read-timeout`).
pub const ENV_HTTP_READ_TIMEOUT: &str = "TRIDENT_HTTP_READ_TIMEOUT";
/// Env var: retries of one image download (same as `--download-retries`).
pub const ENV_DOWNLOAD_RETRIES: &str = "TRIDENT_DOWNLOAD_RETRIES";
/// Default of `--download-retries` (trident-cosi's default).
pub const DEFAULT_DOWNLOAD_RETRIES: &str = "10";
/// Default of `--download-retry-backoff` (trident-cosi's default, spelled for clap).
pub const DEFAULT_DOWNLOAD_RETRY_BACKOFF: &str = "500ms";
/// Default of `--download-retry-backoff-max` (trident-cosi's default, spelled for clap).
pub const DEFAULT_DOWNLOAD_RETRY_BACKOFF_MAX: &str = "30s";
/// Default of `--download-deadline` (trident-cosi's default, spelled for clap).
pub const DEFAULT_DOWNLOAD_DEADLINE: &str = "1h";
/// Default of `--download-restarts-without-ranges` (trident-cosi's default).
pub const DEFAULT_DOWNLOAD_RESTARTS_WITHOUT_RANGES: &str = "2";
/// Env var: Docker config file with registry credentials (same as `--registry-auth-file`).
pub const ENV_REGISTRY_AUTH_FILE: &str = "TRIDENT_REGISTRY_AUTH_FILE";
/// Default of `--http-connect-timeout` (trident-cosi's default, spelled for clap).
pub const DEFAULT_HTTP_CONNECT_TIMEOUT: &str = "30s";
/// Default of `--http-read-timeout` (trident-cosi's default, spelled for clap).
pub const DEFAULT_HTTP_READ_TIMEOUT: &str = "2m";
/// File name of the reboot-request log inside the state directory (`--reboot record`).
pub const REBOOT_REQUESTS_FILE: &str = "reboot-requests.log";

/// Where `trident-rcp` mirrors its state by default (its `--state-file`).
pub const DEFAULT_RCP_STATE_FILE: &str = "/run/trident/rcp-agent.json";

/// `tridentd`: the Trident servicing daemon, serving gRPC on a Unix socket.
///
/// Started by systemd socket activation (LISTEN_FDS) or directly, in which
/// case it creates the socket itself. Must run as root.
#[derive(Debug, Clone, Parser)]
#[command(name = "tridentd", version, about, long_about = None)]
pub struct Config {
    /// Unix socket to create and serve (ignored under socket activation,
    /// where systemd hands over the listening socket).
    #[arg(long, env = ENV_SOCKET, default_value = DEFAULT_SOCKET, value_name = "PATH")]
    pub socket: PathBuf,

    /// Second socket to create and serve beside --socket (manual start
    /// only), for clients that use upstream Trident's path. Default:
    /// /run/trident/trident.sock when --socket is the default, none
    /// otherwise.
    #[arg(long, env = ENV_UPSTREAM_SOCKET, value_name = "PATH", conflicts_with = "no_upstream_socket")]
    pub upstream_socket: Option<PathBuf>,

    /// Do not create the second (upstream-path) socket.
    #[arg(long)]
    pub no_upstream_socket: bool,

    /// Group allowed to use the API besides root. When creating the socket:
    /// mode 0660, owner root:NAME. Under socket activation the group of the
    /// socket file is used when this is not given.
    #[arg(long, value_name = "NAME")]
    pub socket_group: Option<String>,

    /// Exit after this long with no connection, request or operation
    /// ("0" disables). Humantime syntax: 30s, 5m, 1h.
    #[arg(long, default_value = DEFAULT_INACTIVITY_TIMEOUT, value_parser = humantime::parse_duration, value_name = "DUR")]
    pub inactivity_timeout: Duration,

    /// On SIGTERM/SIGINT, how long in-flight requests and operations may
    /// still run before the daemon exits anyway.
    #[arg(long, default_value = DEFAULT_SHUTDOWN_GRACE, value_parser = humantime::parse_duration, value_name = "DUR")]
    pub shutdown_grace: Duration,

    /// At most one "denied RPC" warning per refused peer (uid, pid) per
    /// this interval; the next warning counts the suppressed ones.
    #[arg(long, default_value = crate::server::refusal_log::DEFAULT_REFUSED_PEER_LOG_INTERVAL, value_parser = humantime::parse_duration, value_name = "DUR")]
    pub refused_peer_log_interval: Duration,

    /// Directory for the daemon's state (bus journal, datastore, reboot log).
    #[arg(long, env = ENV_STATE_DIR, default_value = DEFAULT_STATE_DIR, value_name = "DIR")]
    pub state_dir: PathBuf,

    /// SQLite datastore (default: DatastorePath= of the agent
    /// configuration, else STATE_DIR/datastore.sqlite). The Host
    /// Configuration's trident.datastorePath overrides it for servicing.
    #[arg(long, value_name = "PATH")]
    pub datastore: Option<PathBuf>,

    /// Upstream's agent configuration file (`DatastorePath=`). Missing
    /// means defaults; unreadable or invalid stops the daemon with exit 4.
    #[arg(
        long,
        env = crate::agent_config::ENV_AGENT_CONFIG,
        default_value = crate::agent_config::DEFAULT_AGENT_CONFIG,
        value_name = "PATH"
    )]
    pub agent_config: PathBuf,

    /// Disk (block device or image file) StreamDisk may write to. Repeatable.
    /// Anything else that exists (a directory, a character device) is
    /// refused when the flags are parsed; a path that does not exist yet is
    /// checked when StreamDisk picks a disk.
    #[arg(long = "disk", value_name = "PATH", value_parser = parse_disk)]
    pub disks: Vec<PathBuf>,

    /// Bound on connecting (TCP and TLS) to an http(s):// image server.
    #[arg(long, env = ENV_HTTP_CONNECT_TIMEOUT, default_value = DEFAULT_HTTP_CONNECT_TIMEOUT, value_parser = humantime::parse_duration, value_name = "DUR")]
    pub http_connect_timeout: Duration,

    /// An image download (response head or body) fails after this long
    /// without receiving a byte.
    #[arg(long, env = ENV_HTTP_READ_TIMEOUT, default_value = DEFAULT_HTTP_READ_TIMEOUT, value_parser = humantime::parse_duration, value_name = "DUR")]
    pub http_read_timeout: Duration,

    /// Retries of one image download (http(s):// or oci://) after a
    /// dropped connection, a stall, a short body or a 5xx answer, each
    /// resuming at the last byte received; 0: the first failure fails.
    #[arg(long, env = ENV_DOWNLOAD_RETRIES, default_value = DEFAULT_DOWNLOAD_RETRIES, value_name = "N")]
    pub download_retries: u32,

    /// Wait before the first retry of a download; doubled per retry (the
    /// second half of each wait random), up to `--download-retry-backoff-max`.
    #[arg(long, default_value = DEFAULT_DOWNLOAD_RETRY_BACKOFF, value_parser = humantime::parse_duration, value_name = "DUR")]
    pub download_retry_backoff: Duration,

    /// Cap on the wait between two retries of a download.
    #[arg(long, default_value = DEFAULT_DOWNLOAD_RETRY_BACKOFF_MAX, value_parser = humantime::parse_duration, value_name = "DUR")]
    pub download_retry_backoff_max: Duration,

    /// No retry of a download starts once it has run this long.
    #[arg(long, default_value = DEFAULT_DOWNLOAD_DEADLINE, value_parser = humantime::parse_duration, value_name = "DUR")]
    pub download_deadline: Duration,

    /// Of a download's retries, how many may read the file again from
    /// byte 0 when the server ignores byte ranges.
    #[arg(long, default_value = DEFAULT_DOWNLOAD_RESTARTS_WITHOUT_RANGES, value_name = "N")]
    pub download_restarts_without_ranges: u32,

    /// Let a clean install repartition the disk that holds the running
    /// OS's root filesystem (refused otherwise, unless the kernel command
    /// line says the daemon runs from installer media: `root=live:`,
    /// `root=/dev/ram0` or no `root=`).
    #[arg(long)]
    pub allow_install_on_running_disk: bool,

    /// The running system's mount table, where the clean-install safety
    /// check finds the root's disk. Another file only for containers (the
    /// host's `/proc/1/mountinfo`) and tests.
    #[arg(long, default_value = "/proc/self/mountinfo", value_name = "PATH")]
    pub host_mountinfo: PathBuf,

    /// The running kernel's command line, where the clean-install safety
    /// check sees installer media. Another file only for tests.
    #[arg(long, default_value = "/proc/cmdline", value_name = "PATH")]
    pub kernel_cmdline_file: PathBuf,

    /// The running system's root directory, where a runtime update places
    /// extension images (`os.sysexts`, `os.confexts`) and netplan, and
    /// which `systemd-sysext`/`systemd-confext refresh --root` merge.
    /// Another directory only for containers (the host's `/` mounted
    /// elsewhere) and tests.
    #[arg(long, default_value = "/", value_name = "DIR")]
    pub host_root: PathBuf,

    /// Docker config file (`config.json`: `auths` entries with `auth` or
    /// `username`/`password`, or credential helpers) whose credentials
    /// `oci://` image pulls use for the registries it lists. Without it
    /// every registry is pulled from anonymously, as upstream does. Read at
    /// each pull; its values never appear in logs or errors.
    #[arg(long, env = ENV_REGISTRY_AUTH_FILE, value_name = "PATH")]
    pub registry_auth_file: Option<PathBuf>,

    /// File holding the host's boot id, which Version tells clients that
    /// opted in to `ids` (the CLI tells a remote daemon from a local one
    /// by it). Another file only for containers and tests, where /proc is
    /// not the serviced host's; unreadable means "unknown" (empty).
    #[arg(long, env = ENV_BOOT_ID_FILE, default_value = trident_host::boot_id::BOOT_ID_PATH, value_name = "PATH")]
    pub boot_id_file: PathBuf,

    /// Upstream Trident's full log, whose records `trident logs` shows
    /// before the daemon's own, marked as upstream's (read only, when
    /// asked; a missing file is a host upstream never serviced). Another
    /// file only for containers and tests.
    #[arg(long, env = ENV_UPSTREAM_LOG, default_value = trident_telemetry::upstream_log::DEFAULT_UPSTREAM_LOG, value_name = "PATH")]
    pub upstream_log: PathBuf,

    /// What to do when servicing requires a reboot.
    #[arg(long, value_enum, default_value_t = RebootMode::Record)]
    pub reboot: RebootMode,

    /// How the next boot is chosen: `record` (a file; disk-image targets,
    /// nothing boots) or `uefi` (systemd-boot entries on the ESP, EFI
    /// variables).
    #[arg(long, value_enum, default_value_t = BootControlMode::Record)]
    pub boot_control: BootControlMode,

    /// efivarfs, where `--boot-control uefi` sets LoaderEntryOneShot.
    #[arg(long, default_value = "/sys/firmware/efi/efivars", value_name = "DIR")]
    pub efivars: PathBuf,

    /// The kernel's statistics, whose `btime` (when it booted) tells
    /// `--boot-control uefi` whether the host has rebooted since a
    /// finalize. Another file only for tests, which simulate the reboot.
    #[arg(long, default_value = "/proc/stat", value_name = "PATH")]
    pub kernel_stat_file: PathBuf,

    /// Records the in-memory telemetry bus ring keeps.
    #[arg(long, default_value_t = DEFAULT_RING_RECORDS, value_name = "N")]
    pub bus_ring_records: usize,

    /// Encoded bytes the in-memory telemetry bus ring keeps.
    #[arg(long, default_value_t = DEFAULT_RING_BYTES, value_name = "N")]
    pub bus_ring_bytes: usize,

    /// Export traces, logs and metrics over OTLP to this collector URL
    /// (off when unset), e.g. http://127.0.0.1:4317.
    #[arg(long, env = trident_otlp::config::ENV_OTLP_ENDPOINT, value_name = "URL")]
    pub otlp_endpoint: Option<String>,

    /// OTLP wire protocol: grpc (default) or http/protobuf.
    #[arg(long, env = trident_otlp::config::ENV_OTLP_PROTOCOL, value_name = "PROTOCOL")]
    pub otlp_protocol: Option<String>,

    /// Bound on one OTLP export request (default 5s).
    #[arg(long, value_parser = humantime::parse_duration, value_name = "DUR")]
    pub otlp_timeout: Option<Duration>,

    /// State file of the reverse-connect proxy agent (`trident-rcp
    /// --state-file`), whose changes are put on the bus.
    #[arg(long, default_value = DEFAULT_RCP_STATE_FILE, value_name = "PATH")]
    pub rcp_state_file: PathBuf,

    /// More log output on stderr (-v debug, -vv trace). RUST_LOG wins when set.
    #[arg(short, long, action = ArgAction::Count)]
    pub verbose: u8,
}

/// `--disk`: only a block device or a regular file. A directory would
/// otherwise pass the candidate size check (which seeks to its end) and
/// fail only when StreamDisk tries to write it.
fn parse_disk(arg: &str) -> Result<PathBuf, String> {
    use std::os::unix::fs::FileTypeExt;
    let path = PathBuf::from(arg);
    let file_type = match std::fs::metadata(&path) {
        Ok(metadata) => metadata.file_type(),
        // Not there yet (an image file created later, a device that
        // appears): StreamDisk reports it as unusable when it picks a disk.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(path),
        Err(e) => return Err(format!("cannot use '{arg}' as a disk: {e}")),
    };
    if file_type.is_block_device() || file_type.is_file() {
        return Ok(path);
    }
    let what = if file_type.is_dir() {
        "a directory"
    } else if file_type.is_char_device() {
        "a character device"
    } else {
        "neither a block device nor a regular file"
    };
    Err(format!(
        "cannot use '{arg}' as a disk: it is {what}; give a block device or a disk-image file"
    ))
}

impl Config {
    /// Datastore path: `--datastore` or STATE_DIR/datastore.sqlite.
    pub fn datastore_path(&self) -> PathBuf {
        self.datastore
            .clone()
            .unwrap_or_else(|| self.state_dir.join(DATASTORE_FILE))
    }

    /// The telemetry bus's settings: the ring bounds from the flags, the
    /// journal in the bus's folder under the state directory (STATE_DIR/journal).
    pub fn bus_config(&self) -> trident_telemetry::BusConfig {
        trident_telemetry::BusConfig {
            ring_records: self.bus_ring_records,
            ring_bytes: self.bus_ring_bytes,
            boot_id: trident_host::boot_id::read_boot_id(&self.boot_id_file).unwrap_or_default(),
            ..trident_telemetry::BusConfig::with_state_dir(&self.state_dir)
        }
    }

    /// Timeouts of http(s):// image sources from the flags.
    pub fn http_timeouts(&self) -> trident_cosi::HttpTimeouts {
        trident_cosi::HttpTimeouts {
            connect: self.http_connect_timeout,
            read: self.http_read_timeout,
        }
    }

    /// How broken downloads are resumed, from the `--download-*` flags.
    pub fn resume_policy(&self) -> trident_cosi::ResumePolicy {
        trident_cosi::ResumePolicy {
            max_retries: self.download_retries,
            initial_backoff: self.download_retry_backoff,
            max_backoff: self.download_retry_backoff_max,
            deadline: self.download_deadline,
            max_restarts_without_ranges: self.download_restarts_without_ranges,
        }
    }

    /// How the engine opens image sources: the HTTP timeouts, the resume
    /// policy and `--registry-auth-file`.
    pub fn source_options(&self) -> trident_cosi::SourceOptions {
        trident_cosi::SourceOptions {
            http_timeouts: self.http_timeouts(),
            resume: self.resume_policy(),
            registry_auth_file: self.registry_auth_file.clone(),
            // The engine ties both to itself: its interrupt, its log.
            cancel: Default::default(),
            on_retry: Default::default(),
        }
    }

    /// Reboot-request log: STATE_DIR/reboot-requests.log.
    pub fn reboot_requests_path(&self) -> PathBuf {
        self.state_dir.join(REBOOT_REQUESTS_FILE)
    }

    /// The servicing engine's settings from the flags.
    pub fn engine_settings(&self) -> EngineSettings {
        EngineSettings {
            state_dir: self.state_dir.clone(),
            datastore_path: self.datastore_path(),
            boot_control: self.boot_control,
            efivars: self.efivars.clone(),
            kernel_stat: self.kernel_stat_file.clone(),
            reboot: self.reboot,
            reboot_requests_path: self.reboot_requests_path(),
            install_safety: InstallSafety {
                allow_running_disk: self.allow_install_on_running_disk,
                mountinfo: self.host_mountinfo.clone(),
                cmdline: self.kernel_cmdline_file.clone(),
                sysfs: PathBuf::from("/sys"),
            },
            host_root: self.host_root.clone(),
            sources: self.source_options(),
        }
    }

    /// OTLP export settings from the flags (the `OTEL_*` variables fill the rest).
    pub fn otlp_flags(&self) -> trident_otlp::OtlpFlags {
        trident_otlp::OtlpFlags {
            endpoint: self.otlp_endpoint.clone(),
            protocol: self.otlp_protocol.clone(),
            timeout: self.otlp_timeout,
        }
    }

    /// The second socket a manual start creates, if any: `--upstream-socket`,
    /// else upstream's path when `--socket` is the default one (an explicit
    /// `--socket` elsewhere, e.g. a test's temp dir, gets no second socket
    /// unless asked), never the same path as `--socket`.
    pub fn upstream_socket_path(&self) -> Option<PathBuf> {
        if self.no_upstream_socket {
            return None;
        }
        let path = match &self.upstream_socket {
            Some(path) => path.clone(),
            None if self.socket == std::path::Path::new(DEFAULT_SOCKET) => {
                PathBuf::from(DEFAULT_UPSTREAM_SOCKET)
            }
            None => return None,
        };
        (path != self.socket).then_some(path)
    }

    /// Idle timeout, `None` when disabled with 0.
    pub fn idle_timeout(&self) -> Option<Duration> {
        (!self.inactivity_timeout.is_zero()).then_some(self.inactivity_timeout)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn defaults_match_the_documented_contract() {
        let config = Config::try_parse_from(["tridentd"]).unwrap();
        assert_eq!(config.state_dir, PathBuf::from(DEFAULT_STATE_DIR));
        assert_eq!(config.inactivity_timeout, Duration::from_secs(300));
        assert_eq!(config.reboot, RebootMode::Record);
        assert_eq!(
            config.datastore_path(),
            PathBuf::from("/var/lib/trident/datastore.sqlite")
        );
    }

    #[test]
    fn bus_defaults_are_the_telemetry_crates() {
        let bus = Config::try_parse_from(["tridentd"]).unwrap().bus_config();
        let defaults = trident_telemetry::BusConfig::with_state_dir(DEFAULT_STATE_DIR);
        assert_eq!(bus.ring_records, defaults.ring_records);
        assert_eq!(bus.ring_bytes, defaults.ring_bytes);
        assert_eq!(
            bus.journal_dir,
            Some(PathBuf::from("/var/lib/trident/journal"))
        );
    }

    #[test]
    fn upstream_socket_defaults_only_beside_the_default_socket() {
        let default = Config::try_parse_from(["tridentd"]).unwrap();
        assert_eq!(
            default.upstream_socket_path(),
            Some(PathBuf::from(DEFAULT_UPSTREAM_SOCKET))
        );
        let elsewhere = Config::try_parse_from(["tridentd", "--socket", "/tmp/x.sock"]).unwrap();
        assert_eq!(elsewhere.upstream_socket_path(), None);
        let asked = Config::try_parse_from([
            "tridentd",
            "--socket",
            "/tmp/x.sock",
            "--upstream-socket",
            "/tmp/y.sock",
        ])
        .unwrap();
        assert_eq!(
            asked.upstream_socket_path(),
            Some(PathBuf::from("/tmp/y.sock"))
        );
        let off = Config::try_parse_from(["tridentd", "--no-upstream-socket"]).unwrap();
        assert_eq!(off.upstream_socket_path(), None);
    }

    #[test]
    fn http_timeout_defaults_are_trident_cosis() {
        let config = Config::try_parse_from(["tridentd"]).unwrap();
        assert_eq!(
            config.http_timeouts(),
            trident_cosi::HttpTimeouts::default()
        );
        let config = Config::try_parse_from([
            "tridentd",
            "--http-connect-timeout",
            "2s",
            "--http-read-timeout",
            "500ms",
        ])
        .unwrap();
        assert_eq!(config.http_connect_timeout, Duration::from_secs(2));
        assert_eq!(config.http_read_timeout, Duration::from_millis(500));
    }

    #[test]
    fn download_resume_defaults_are_trident_cosis() {
        let config = Config::try_parse_from(["tridentd"]).unwrap();
        assert_eq!(
            config.resume_policy(),
            trident_cosi::ResumePolicy::default()
        );
        let config = Config::try_parse_from([
            "tridentd",
            "--download-retries",
            "3",
            "--download-retry-backoff",
            "20ms",
            "--download-retry-backoff-max",
            "1s",
            "--download-deadline",
            "5m",
            "--download-restarts-without-ranges",
            "0",
        ])
        .unwrap();
        let policy = config.resume_policy();
        assert_eq!(policy.max_retries, 3);
        assert_eq!(policy.initial_backoff, Duration::from_millis(20));
        assert_eq!(policy.max_backoff, Duration::from_secs(1));
        assert_eq!(policy.deadline, Duration::from_secs(300));
        assert_eq!(policy.max_restarts_without_ranges, 0);
    }

    #[test]
    fn zero_inactivity_timeout_disables_idle_exit() {
        let config = Config::try_parse_from(["tridentd", "--inactivity-timeout", "0"]).unwrap();
        assert_eq!(config.idle_timeout(), None);
    }
}
