//! Helpers shared by the end-to-end tests: find the built binaries, start a
//! private `tridentd` on a temp socket + temp state dir, and talk to it over
//! the real Unix socket with a tonic `Channel`.
//!
//! ```no_run
//! # async fn demo() -> anyhow::Result<()> {
//! use trident_e2e::Daemon;
//! let daemon = Daemon::builder().arg("--inactivity-timeout").arg("0").spawn().await?;
//! let channel = daemon.channel().await?;
//! let mut client = trident_proto::v1::version_service_client::VersionServiceClient::new(channel);
//! let version = client.version(trident_proto::v1::VersionRequest {}).await?;
//! # Ok(()) }
//! ```

pub mod crash_support;
pub mod dir_http;
pub mod faulty_http;
pub mod fixture;
pub mod guest_shell;
pub mod image_server;
pub mod mini_os;
pub mod module_graph;
pub mod oci_registry;
pub mod otlp_support;
pub mod overall;
pub mod rcp_support;
pub mod servicing_support;
pub mod test_os;
pub mod throttled_http;
pub mod tmux;
pub mod trusted_stream_disk;
pub mod upstream_sample;
pub mod upstream_status;
pub mod vm;
pub mod vm_orchestrator;
pub mod vm_rcp;
pub mod vm_timeline;

use std::{
    ffi::{OsStr, OsString},
    io::{BufRead, BufReader},
    path::{Path, PathBuf},
    process::{Child, Command, ExitStatus, Output, Stdio},
    sync::{Arc, Mutex},
    thread,
    time::{Duration, Instant},
};

use anyhow::{Context, bail};
use nix::{
    sys::signal::{Signal, kill},
    unistd::Pid,
};
use tempfile::TempDir;

/// Env var: directory holding the built binaries (overrides the default
/// `target/<profile>` derived from the test executable's location).
pub const ENV_BIN_DIR: &str = "TRIDENT_BIN_DIR";
/// How long `spawn()` waits for the daemon to answer.
pub const START_TIMEOUT: Duration = Duration::from_secs(30);
/// How long Drop waits after SIGTERM before SIGKILL.
pub const STOP_TIMEOUT: Duration = Duration::from_secs(5);

/// Directory of the built binaries: `$TRIDENT_BIN_DIR`, else the cargo
/// profile dir the test executable lives in (target/debug/deps/.. ).
pub fn bin_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os(ENV_BIN_DIR) {
        return PathBuf::from(dir);
    }
    let exe = std::env::current_exe().unwrap_or_default();
    let mut dir = exe.parent().map(Path::to_path_buf).unwrap_or_default();
    if dir.ends_with("deps") {
        dir.pop();
    }
    dir
}

/// Path of a built binary, e.g. `bin_path("tridentd")`.
pub fn bin_path(name: &str) -> PathBuf {
    bin_dir().join(name)
}

/// The tests' channel: every call opts in to all of our additions
/// (`trident-additions: all`), as the `trident` CLI does, so tests see our
/// fields (operation ids, progress, error reports). A test of what an
/// upstream client sees uses [`strict_uds_channel`].
pub type Channel = trident_proto::client::OptedInChannel;

/// A tonic channel over the Unix socket at `path` (HTTP/2, authority
/// "localhost"), opted in to all additions (see [`Channel`]).
pub async fn uds_channel(path: impl Into<PathBuf>) -> anyhow::Result<Channel> {
    let channel = trident_proto::client::uds_channel(path).await?;
    Ok(trident_proto::client::opt_in(
        channel,
        trident_proto::ADDITION_ALL,
    ))
}

/// A plain channel, without the additions header: what a client built
/// from upstream's schema sends.
pub async fn strict_uds_channel(
    path: impl Into<PathBuf>,
) -> anyhow::Result<tonic::transport::Channel> {
    Ok(trident_proto::client::uds_channel(path).await?)
}

/// What `GetRequiredServicingType` says of the Host Configuration
/// `config` (YAML) on the daemon at `socket`.
pub async fn required_servicing_type(
    socket: &Path,
    config: &str,
) -> anyhow::Result<trident_proto::v1preview::ServicingType> {
    use trident_proto::v1preview::{
        GetRequiredServicingTypeRequest, validation_service_client::ValidationServiceClient,
    };
    let mut client = ValidationServiceClient::new(uds_channel(socket).await?);
    let response = client
        .get_required_servicing_type(GetRequiredServicingTypeRequest {
            config: Some(trident_proto::v1::HostConfiguration {
                config: config.to_owned(),
            }),
        })
        .await?
        .into_inner();
    Ok(response.servicing_type())
}

/// Asks the daemon at `socket` for its version.
pub async fn version(socket: &Path) -> anyhow::Result<trident_proto::v1::VersionResponse> {
    let channel = uds_channel(socket).await?;
    let mut client = trident_proto::v1::version_service_client::VersionServiceClient::new(channel);
    Ok(client
        .version(trident_proto::v1::VersionRequest {})
        .await?
        .into_inner())
}

/// Configures a private daemon; see [`Daemon::builder`].
#[derive(Debug, Clone)]
pub struct DaemonBuilder {
    program: PathBuf,
    wrapper: Vec<OsString>,
    args: Vec<OsString>,
    env: Vec<(OsString, OsString)>,
    socket: Option<PathBuf>,
    state_dir: Option<PathBuf>,
    upstream_log: Option<PathBuf>,
    wait_for_answer: bool,
    /// Whether `spawn` creates the state dir (else the daemon must).
    create_state_dir: bool,
}

impl DaemonBuilder {
    /// Adds one argument after the default `--socket`/`--state-dir`.
    pub fn arg(mut self, arg: impl AsRef<OsStr>) -> Self {
        self.args.push(arg.as_ref().to_owned());
        self
    }

    /// Adds several arguments.
    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.args
            .extend(args.into_iter().map(|arg| arg.as_ref().to_owned()));
        self
    }

    /// Sets an environment variable for the daemon.
    pub fn env(mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> Self {
        self.env
            .push((key.as_ref().to_owned(), value.as_ref().to_owned()));
        self
    }

    /// Runs the daemon in host boot `boot`: writes it to `file`, given as
    /// its boot id file (`TRIDENT_BOOT_ID_FILE`). A daemon restarted on the
    /// same state with another boot stands in for a reboot.
    pub fn boot(self, file: &Path, boot: &str) -> Self {
        std::fs::write(file, format!("{boot}\n")).expect("write the boot id file");
        self.env("TRIDENT_BOOT_ID_FILE", file)
    }

    /// Uses this state dir instead of `<tempdir>/state` (e.g. to restart a
    /// daemon on the journal and datastore of a previous one).
    pub fn state_dir(mut self, path: impl Into<PathBuf>) -> Self {
        self.state_dir = Some(path.into());
        self
    }

    /// Reads upstream Trident's full log from this file instead of
    /// `<tempdir>/trident-full.log` (absent), never the host's
    /// `/var/log/trident-full.log`.
    pub fn upstream_log(mut self, path: impl Into<PathBuf>) -> Self {
        self.upstream_log = Some(path.into());
        self
    }

    /// Leaves the state dir for the daemon to create (e.g. to check the
    /// mode it creates it with).
    pub fn state_dir_created_by_daemon(mut self) -> Self {
        self.create_state_dir = false;
        self
    }

    /// Serves this socket path instead of `<tempdir>/trident.sock`.
    pub fn socket(mut self, path: impl Into<PathBuf>) -> Self {
        self.socket = Some(path.into());
        self
    }

    /// Runs the daemon through a wrapper command, e.g.
    /// `["systemd-socket-activate", "-l", sock]` or `["setpriv", "--reuid=nobody"]`.
    pub fn wrapper<I, S>(mut self, wrapper: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.wrapper = wrapper
            .into_iter()
            .map(|arg| arg.as_ref().to_owned())
            .collect();
        self
    }

    /// Don't wait for a Version answer in `spawn()` (for start-up failures).
    pub fn no_wait(mut self) -> Self {
        self.wait_for_answer = false;
        self
    }

    /// Starts the daemon; unless `no_wait()`, returns once it answers Version.
    pub async fn spawn(self) -> anyhow::Result<Daemon> {
        let dir = tempfile::Builder::new().prefix("tridentd-e2e-").tempdir()?;
        let socket = self
            .socket
            .clone()
            .unwrap_or_else(|| dir.path().join("trident.sock"));
        let state_dir = self
            .state_dir
            .clone()
            .unwrap_or_else(|| dir.path().join("state"));
        let upstream_log = self
            .upstream_log
            .clone()
            .unwrap_or_else(|| dir.path().join("trident-full.log"));
        if self.create_state_dir {
            std::fs::create_dir_all(&state_dir)?;
        }

        let mut command = match self.wrapper.split_first() {
            Some((first, rest)) => {
                let mut command = Command::new(first);
                command.args(rest).arg(&self.program);
                command
            }
            None => Command::new(&self.program),
        };
        command
            .arg("--socket")
            .arg(&socket)
            .arg("--state-dir")
            .arg(&state_dir)
            .arg("--upstream-log")
            .arg(&upstream_log)
            .args(&self.args)
            .env_remove("TRIDENT_SOCKET")
            .env_remove("TRIDENT_UPSTREAM_SOCKET")
            .env_remove("TRIDENT_AGENT_CONFIG")
            .env_remove("TRIDENT_STATE_DIR")
            .env_remove("TRIDENT_BOOT_ID_FILE")
            .env_remove("TRIDENT_UPSTREAM_LOG")
            .env_remove("NOTIFY_SOCKET")
            .env_remove("LISTEN_FDS")
            .env_remove("LISTEN_PID")
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let mut child = command
            .spawn()
            .with_context(|| format!("start {}", self.program.display()))?;
        let stderr = Arc::new(Mutex::new(String::new()));
        let reader = child.stderr.take().map(|pipe| {
            let stderr = stderr.clone();
            thread::spawn(move || {
                for line in BufReader::new(pipe).lines() {
                    let Ok(line) = line else { break };
                    if let Ok(mut text) = stderr.lock() {
                        text.push_str(&line);
                        text.push('\n');
                    }
                }
            })
        });
        let mut daemon = Daemon {
            child: Some(child),
            exit: None,
            socket,
            state_dir,
            stderr,
            reader,
            dir,
        };
        if self.wait_for_answer {
            daemon.wait_until_answering(START_TIMEOUT).await?;
        }
        Ok(daemon)
    }
}

/// A private `tridentd` process. Stopped (SIGTERM, then SIGKILL) on drop.
#[derive(Debug)]
pub struct Daemon {
    child: Option<Child>,
    exit: Option<ExitStatus>,
    socket: PathBuf,
    state_dir: PathBuf,
    stderr: Arc<Mutex<String>>,
    reader: Option<thread::JoinHandle<()>>,
    // Last: removed after the process is gone.
    dir: TempDir,
}

impl Daemon {
    /// A builder for `target/debug/tridentd` on a temp socket and state dir.
    pub fn builder() -> DaemonBuilder {
        DaemonBuilder {
            program: bin_path("tridentd"),
            wrapper: Vec::new(),
            args: Vec::new(),
            env: Vec::new(),
            socket: None,
            state_dir: None,
            upstream_log: None,
            wait_for_answer: true,
            create_state_dir: true,
        }
    }

    /// Starts a daemon with default settings and waits until it answers.
    pub async fn start() -> anyhow::Result<Self> {
        Self::builder().spawn().await
    }

    /// The socket the daemon serves.
    pub fn socket_path(&self) -> &Path {
        &self.socket
    }

    /// The daemon's state directory (`--state-dir`).
    pub fn state_dir(&self) -> &Path {
        &self.state_dir
    }

    /// The temp dir holding socket and state dir (removed on drop).
    pub fn temp_dir(&self) -> &Path {
        self.dir.path()
    }

    /// Process id (of the wrapper, if one was used).
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Everything the daemon wrote to stderr so far.
    pub fn stderr(&self) -> String {
        self.stderr
            .lock()
            .map(|text| text.clone())
            .unwrap_or_default()
    }

    /// Waits until the daemon's stderr holds `needle` (the thread reading
    /// the pipe may lag what the daemon already did) and returns all of it.
    pub async fn wait_for_stderr(&self, needle: &str, timeout: Duration) -> anyhow::Result<String> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let text = self.stderr();
            if text.contains(needle) {
                return Ok(text);
            }
            if tokio::time::Instant::now() >= deadline {
                anyhow::bail!("{needle:?} not in the daemon's stderr after {timeout:?}:\n{text}");
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// A new tonic channel to the daemon, opted in to all additions.
    pub async fn channel(&self) -> anyhow::Result<Channel> {
        uds_channel(&self.socket).await
    }

    /// A new plain channel to the daemon (no additions header).
    pub async fn strict_channel(&self) -> anyhow::Result<tonic::transport::Channel> {
        strict_uds_channel(&self.socket).await
    }

    /// Sends a signal to the daemon process.
    pub fn signal(&self, signal: Signal) -> anyhow::Result<()> {
        let pid = self.pid().context("daemon already reaped")?;
        kill(Pid::from_raw(i32::try_from(pid)?), signal)?;
        Ok(())
    }

    /// Exit status, if the process has exited.
    pub fn try_exit_status(&mut self) -> anyhow::Result<Option<ExitStatus>> {
        if self.exit.is_none()
            && let Some(child) = self.child.as_mut()
        {
            self.exit = child.try_wait()?;
        }
        Ok(self.exit)
    }

    /// Waits up to `timeout` for the process to exit on its own.
    pub async fn wait_exit(&mut self, timeout: Duration) -> anyhow::Result<Option<ExitStatus>> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = self.try_exit_status()? {
                self.join_reader();
                return Ok(Some(status));
            }
            if Instant::now() >= deadline {
                return Ok(None);
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    }

    /// Waits until the daemon answers a Version call, or fails with its stderr.
    pub async fn wait_until_answering(&mut self, timeout: Duration) -> anyhow::Result<()> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = self.try_exit_status()? {
                self.join_reader();
                bail!(
                    "tridentd exited with {status} before answering; stderr:\n{}",
                    self.stderr()
                );
            }
            let attempt = tokio::time::timeout(Duration::from_secs(2), version(&self.socket)).await;
            if let Ok(Ok(_)) = attempt {
                return Ok(());
            }
            if Instant::now() >= deadline {
                bail!(
                    "tridentd did not answer on {} within {timeout:?}; last error: {attempt:?}; stderr:\n{}",
                    self.socket.display(),
                    self.stderr()
                );
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// SIGTERM, then SIGKILL after [`STOP_TIMEOUT`]; returns the exit status.
    pub fn stop(&mut self) -> Option<ExitStatus> {
        if self.exit.is_some() {
            return self.exit;
        }
        let child = self.child.as_mut()?;
        if let Ok(pid) = i32::try_from(child.id()) {
            let _ = kill(Pid::from_raw(pid), Signal::SIGTERM);
        }
        let deadline = Instant::now() + STOP_TIMEOUT;
        while Instant::now() < deadline {
            if let Ok(Some(status)) = child.try_wait() {
                self.exit = Some(status);
                break;
            }
            thread::sleep(Duration::from_millis(20));
        }
        if self.exit.is_none() {
            let _ = child.kill();
            self.exit = child.wait().ok();
        }
        self.join_reader();
        self.exit
    }

    fn join_reader(&mut self) {
        if let Some(reader) = self.reader.take() {
            let _ = reader.join();
        }
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        self.stop();
        if thread::panicking() {
            eprintln!("--- tridentd stderr ---\n{}", self.stderr());
        }
    }
}

/// A private `tridentd` (temp socket and state dir) that stays up while
/// idle (`--inactivity-timeout 0`): the daemon most tests talk to.
pub async fn daemon() -> Daemon {
    start(staying_up()).await
}

/// [`daemon`] whose StreamDisk target is the disk-image file `disk`
/// (`--disk`).
pub async fn disk_daemon(disk: &Path) -> Daemon {
    start(staying_up().arg("--disk").arg(disk)).await
}

/// [`daemon`] on the state directory `state_dir`, with `extra` arguments:
/// the state directory outlives every daemon of a test (restarts, kills).
pub async fn daemon_on(state_dir: &Path, extra: &[&OsStr]) -> Daemon {
    start(staying_up().state_dir(state_dir).args(extra)).await
}

fn staying_up() -> DaemonBuilder {
    Daemon::builder().args(["--inactivity-timeout", "0"])
}

async fn start(builder: DaemonBuilder) -> Daemon {
    builder.spawn().await.expect("start tridentd")
}

/// Every event of a snapshot `Watch` (all kinds) with `options`: what the
/// bus holds up to the head at the time of the call. Fails if the stream
/// stalls for `timeout` before it ends.
pub async fn watch_snapshot(
    client: &mut trident_proto::v1::telemetry_service_client::TelemetryServiceClient<Channel>,
    options: trident_proto::v1::WatchOptions,
    timeout: Duration,
) -> anyhow::Result<Vec<trident_proto::v1::StreamEvent>> {
    use tokio_stream::StreamExt;
    let mut stream = client
        .watch(trident_proto::v1::WatchRequest {
            options: Some(trident_proto::v1::WatchOptions {
                snapshot: true,
                ..options
            }),
            kinds: vec![],
        })
        .await?
        .into_inner();
    let mut events = Vec::new();
    while let Some(response) = tokio::time::timeout(timeout, stream.next())
        .await
        .context("snapshot stream stalled")?
    {
        events.extend(response?.events);
    }
    Ok(events)
}

/// `trident --socket SOCKET ARGS...` (the real CLI) with a clean
/// environment: no socket, state dir or trace context inherited, no colour.
pub fn trident_cli(socket: &Path, args: &[&str]) -> Output {
    trident_command(socket)
        .args(args)
        .output()
        .expect("run trident")
}

/// [`trident_cli`] that must succeed: its standard output.
pub fn trident_cli_ok(socket: &Path, args: &[&str]) -> String {
    let out = trident_cli(socket, args);
    assert!(
        out.status.success(),
        "trident {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8 output")
}

/// The standard error of a finished process, as text (lossy UTF-8).
pub fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// The standard output of a finished process, as text (lossy UTF-8).
pub fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// StreamDisk of the local COSI file `cosi` (no image hash) through
/// `client`: the `Completed` the stream ends with.
pub async fn stream_disk_file(
    client: &mut trident_proto::v1::streaming_service_client::StreamingServiceClient<Channel>,
    cosi: &Path,
) -> trident_proto::v1::Completed {
    use tokio_stream::StreamExt;
    use trident_proto::v1::servicing_response::Response;
    let request = trident_proto::v1::StreamDiskRequest {
        image_url: format!("file://{}", cosi.display()),
        image_hash: None,
        reboot: None,
        ..Default::default()
    };
    let mut stream = client
        .stream_disk(request)
        .await
        .expect("StreamDisk call")
        .into_inner();
    let mut completed = None;
    while let Some(item) = stream.next().await {
        if let Some(Response::Completed(c)) = item.expect("StreamDisk stream").response {
            completed = Some(c);
        }
    }
    completed.expect("stream ended without Completed")
}

/// The servicing operations the daemon at `socket` knows
/// (`ListOperations`), oldest first.
pub async fn list_operations(
    socket: &Path,
) -> anyhow::Result<Vec<trident_proto::v1::OperationSummary>> {
    let mut client = trident_proto::v1::telemetry_service_client::TelemetryServiceClient::new(
        uds_channel(socket).await?,
    );
    Ok(client
        .list_operations(trident_proto::v1::ListOperationsRequest {})
        .await?
        .into_inner()
        .operations)
}

/// The [`trident_cli`] command before its arguments, for a test that
/// needs more than `output()` (spawn with pipes, extra env, stdin).
pub fn trident_command(socket: &Path) -> Command {
    trident_command_via(&[], socket)
}

/// [`trident_command`] run through `wrapper` (e.g. `setpriv --reuid=...`).
pub fn trident_command_via(wrapper: &[&str], socket: &Path) -> Command {
    let mut command = match wrapper.split_first() {
        Some((first, rest)) => {
            let mut command = Command::new(first);
            command.args(rest).arg(bin_path("trident"));
            command
        }
        None => Command::new(bin_path("trident")),
    };
    command
        .arg("--socket")
        .arg(socket)
        .env_remove("TRIDENT_SOCKET")
        .env_remove("TRIDENT_UPSTREAM_SOCKET")
        .env_remove("TRIDENT_STATE_DIR")
        .env_remove("TRACEPARENT")
        .env("NO_COLOR", "1");
    command
}

/// A Host Configuration that parses, for a host never installed: staging
/// an update with it fails at once (invalid servicing state), leaving a
/// whole operation's records on the bus without touching any disk.
pub const FAILING_UPDATE_CONFIG: &str =
    "image:\n  url: file:///nonexistent/image.cosi\n  sha384: ignored\nstorage:\n  disks: []\n";

/// Stages an update with [`FAILING_UPDATE_CONFIG`]; returns the servicing
/// stream's messages. Fails if the stream stalls for `timeout`.
pub async fn failing_update_stage(
    channel: Channel,
    timeout: Duration,
) -> anyhow::Result<Vec<trident_proto::v1::servicing_response::Response>> {
    use tokio_stream::StreamExt;
    let mut update = trident_proto::v1::update_service_client::UpdateServiceClient::new(channel);
    let mut stream = update
        .update_stage(trident_proto::v1::StageUpdateRequest {
            config: Some(trident_proto::v1::HostConfiguration {
                config: FAILING_UPDATE_CONFIG.into(),
            }),
        })
        .await?
        .into_inner();
    let mut messages = Vec::new();
    while let Some(message) = tokio::time::timeout(timeout, stream.next())
        .await
        .context("servicing stream stalled")?
    {
        messages.extend(message?.response);
    }
    Ok(messages)
}

/// Every node of a `trident traces -o json` span tree, depth first.
pub fn trace_nodes(tree: &[serde_json::Value]) -> Vec<&serde_json::Value> {
    let mut out = Vec::new();
    for node in tree {
        out.push(node);
        if let Some(children) = node["children"].as_array() {
            out.extend(trace_nodes(children));
        }
    }
    out
}

/// The operation root span of `rpc` among `nodes` (see [`trace_nodes`]).
pub fn trace_operation_node<'a>(
    nodes: &[&'a serde_json::Value],
    rpc: &str,
) -> &'a serde_json::Value {
    nodes
        .iter()
        .copied()
        .find(|n| n["name"] == "servicing_operation" && n["rpc"] == rpc)
        .unwrap_or_else(|| panic!("no {rpc} root span in {nodes:#?}"))
}
