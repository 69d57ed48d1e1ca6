//! Servicing scripts (preServicing, postProvision, postConfigure) and
//! health checks: run with `tokio::process`, stdout/stderr streamed line by
//! line as log records with `log.target = "script::<name>"`. Each runs in a
//! PID namespace of its own ([`group`]): when it exits, what it left
//! running is ended (and a record says how many) before servicing goes on.

pub mod group;

use std::collections::{BTreeMap, VecDeque};
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufRead, AsyncBufReadExt, BufReader, Lines};
use tokio::process::{ChildStderr, ChildStdout, Command};
use trident_host::config::{HealthCheck, RunOn, Script};
use trident_host::redact::{LineRedactor, Secrets};
use trident_host::{ResultExt, Subkind, TridentError};

use self::group::ProcessGroup;
use super::new_root::root_dir::RootDir;
use super::systemd_check;

/// Interpreter used when a script names none.
pub const DEFAULT_INTERPRETER: &str = "/bin/sh";
/// Stderr lines kept for the error message of a failed script.
const STDERR_TAIL_LINES: usize = 10;

/// Env vars every script gets.
pub const ENV_SERVICING_TYPE: &str = "TRIDENT_SERVICING_TYPE";
pub const ENV_OPERATION_ID: &str = "TRIDENT_OPERATION_ID";
pub const ENV_TARGET_DISKS: &str = "TRIDENT_TARGET_DISKS";
pub const ENV_SCRIPT_NAME: &str = "TRIDENT_SCRIPT_NAME";
pub const ENV_TARGET_VOLUME: &str = "TRIDENT_TARGET_VOLUME";
/// Upstream's name for the servicing type, with upstream's values
/// ([`ServicingType::upstream_name`]), beside our `TRIDENT_SERVICING_TYPE`.
pub const ENV_UPSTREAM_SERVICING_TYPE: &str = "SERVICING_TYPE";
/// Where the new root is mounted (postProvision / postConfigure), as
/// upstream names it; unset when the new root is not mounted.
pub const ENV_TARGET_ROOT: &str = "TARGET_ROOT";

/// Which servicing a script runs in (its `runOn` filter).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServicingType {
    CleanInstall,
    AbUpdate,
    /// Applied to the running system, no reboot (extensions, netplan).
    RuntimeUpdate,
}

impl ServicingType {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::CleanInstall => "clean-install",
            Self::AbUpdate => "ab-update",
            Self::RuntimeUpdate => "runtime-update",
        }
    }

    /// Upstream's `SERVICING_TYPE` value.
    pub fn upstream_name(self) -> &'static str {
        match self {
            Self::CleanInstall => "clean_install",
            Self::AbUpdate => "ab_update",
            Self::RuntimeUpdate => "runtime_update",
        }
    }

    pub fn selected_by(self, run_on: &[RunOn]) -> bool {
        run_on.iter().any(|r| match r {
            RunOn::All => true,
            RunOn::CleanInstall => self == Self::CleanInstall,
            RunOn::AbUpdate => self == Self::AbUpdate,
            RunOn::RuntimeUpdate => self == Self::RuntimeUpdate,
        })
    }

    /// How many of `scripts` this servicing runs (their group is a
    /// progress phase, and a planned step, only when some are).
    pub fn selected(self, scripts: &[Script]) -> usize {
        scripts
            .iter()
            .filter(|s| self.selected_by(&s.run_on))
            .count()
    }
}

/// What the scripts of one operation share.
#[derive(Debug, Clone)]
pub struct ScriptEnv {
    pub servicing_type: ServicingType,
    pub operation_id: String,
    /// Target disk paths (colon-separated in the env var).
    pub target_disks: Vec<String>,
    /// The volume being serviced (volume-a / volume-b), if any.
    pub target_volume: Option<String>,
    /// The mounted new root (`TARGET_ROOT`), while it is mounted.
    pub target_root: Option<std::path::PathBuf>,
    /// Run chrooted into `target_root` (postConfigure, as upstream: then
    /// `TARGET_ROOT` is `/`, and `/dev`, `/proc`, `/sys` are the caller's
    /// to mount).
    pub chrooted: bool,
}

/// Whether a failure is a script failure or a health-check failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    Script,
    HealthCheck,
}

/// One thing to run.
#[derive(Debug)]
struct Runnable<'a> {
    role: Role,
    name: &'a str,
    interpreter: Option<&'a str>,
    content: Option<&'a str>,
    path: Option<&'a str>,
    arguments: &'a [String],
    env: &'a BTreeMap<String, String>,
    timeout: Option<Duration>,
}

/// Runs the scripts of one group selected for this servicing, in order.
pub async fn run_scripts(
    group: &str,
    scripts: &[Script],
    env: &ScriptEnv,
) -> Result<(), TridentError> {
    for s in scripts
        .iter()
        .filter(|s| env.servicing_type.selected_by(&s.run_on))
    {
        tracing::info!(group, script = %s.name, "running script");
        run(
            &Runnable {
                role: Role::Script,
                name: &s.name,
                interpreter: s.interpreter.as_deref(),
                content: s.content.as_deref(),
                path: s.path.as_deref(),
                arguments: &s.arguments,
                env: &s.environment_variables,
                timeout: None,
            },
            env,
        )
        .await?;
    }
    Ok(())
}

/// Runs the health checks selected for this servicing, in order.
pub async fn run_health_checks(
    checks: &[HealthCheck],
    env: &ScriptEnv,
) -> Result<(), TridentError> {
    for c in checks
        .iter()
        .filter(|c| env.servicing_type.selected_by(&c.run_on))
    {
        if let Some(units) = &c.systemd_services {
            let timeout = c
                .timeout_seconds
                .unwrap_or(systemd_check::DEFAULT_TIMEOUT_SECONDS);
            tracing::info!(check = %c.name, timeout_s = timeout, "running systemd health check");
            let timeout = Duration::from_secs(timeout);
            systemd_check::wait_active(&c.name, units, timeout, systemd_check::SYSTEMCTL).await?;
            continue;
        }
        let timeout = Duration::from_secs(
            c.timeout_seconds
                .unwrap_or(trident_host::config::DEFAULT_HEALTH_CHECK_TIMEOUT_SECONDS),
        );
        tracing::info!(check = %c.name, timeout_s = timeout.as_secs(), "running health check");
        run(
            &Runnable {
                role: Role::HealthCheck,
                name: &c.name,
                interpreter: c.interpreter.as_deref(),
                content: c.content.as_deref(),
                path: c.path.as_deref(),
                arguments: &c.arguments,
                env: &c.environment_variables,
                timeout: Some(timeout),
            },
            env,
        )
        .await?;
    }
    Ok(())
}

/// How long output is still read after the script's processes ended.
const DRAIN: Duration = Duration::from_secs(5);

async fn run(r: &Runnable<'_>, env: &ScriptEnv) -> Result<(), TridentError> {
    let (failed, timed_out) = match r.role {
        Role::Script => (Subkind::ScriptFailed, Subkind::ScriptFailed),
        Role::HealthCheck => (Subkind::HealthCheckFailed, Subkind::HealthCheckTimedOut),
    };
    let mut group = ProcessGroup::start().await.structured_msg(
        failed,
        format!(
            "Cannot start a process group (PID namespace) for '{}'",
            r.name
        ),
    )?;
    let (mut cmd, _staged) = command(r, env, &group)?;
    let mut child = cmd
        .spawn()
        .structured_msg(failed, format!("Cannot start script '{}'", r.name))?;
    // Its own secrets and every other known one (a script may print
    // another script's token).
    let mut secrets = Secrets::of_env(r.env);
    secrets.extend(&trident_host::redact::known::snapshot());
    let mut tail: VecDeque<String> = VecDeque::new();
    let (stdout, stderr) = (child.stdout.take(), child.stderr.take());
    let (status, ended) = {
        let logging = log_output(stdout, stderr, r.name, &secrets, &mut tail);
        tokio::pin!(logging);
        let mut logged = false;
        let waiting = async {
            loop {
                tokio::select! {
                    status = child.wait() => break status,
                    () = &mut logging, if !logged => logged = true,
                }
            }
        };
        let status = match r.timeout {
            Some(limit) => tokio::time::timeout(limit, waiting).await.ok(),
            None => Some(waiting.await),
        };
        // What the script left running (timed out: the script too) is
        // ended before anything else happens: a process chrooted in the
        // new root would keep it from being unmounted.
        let ended = group.end().await;
        if !logged {
            let _ = tokio::time::timeout(DRAIN, &mut logging).await;
        }
        (status, ended)
    };
    let ended = ended.structured_msg(
        failed,
        format!("The processes '{}' started could not be ended", r.name),
    )?;
    if !ended.is_empty() {
        tracing::warn!(
            script = r.name,
            processes_ended = ended.len(),
            "{} process(es) left running by '{}' ended: {}",
            ended.len(),
            r.name,
            group::describe(&ended)
        );
    }
    let Some(status) = status else {
        let limit = r.timeout.unwrap_or_default();
        return Err(TridentError::new(
            timed_out,
            format!(
                "'{}' did not finish within {}s (killed); last stderr lines: {}",
                r.name,
                limit.as_secs(),
                render_tail(&tail)
            ),
        ));
    };
    let status = status.structured_msg(failed, format!("Waiting for '{}' failed", r.name))?;
    if status.success() {
        tracing::info!(script = r.name, "finished successfully");
        return Ok(());
    }
    Err(TridentError::new(
        failed,
        format!(
            "'{}' failed with {}; last stderr lines: {}",
            r.name,
            status,
            render_tail(&tail)
        ),
    ))
}

/// The script's command line and environment, inside `group`;
/// chrooted, the copy of a `path` script inside the new root (kept until
/// the script ends).
fn command(
    r: &Runnable<'_>,
    env: &ScriptEnv,
    group: &ProcessGroup,
) -> Result<(Command, Option<StagedScript>), TridentError> {
    let interpreter = r.interpreter.unwrap_or(DEFAULT_INTERPRETER);
    let chroot = env.target_root.as_deref().filter(|_| env.chrooted);
    let mut cmd = match chroot {
        Some(root) => {
            let mut cmd = group.command("chroot");
            cmd.arg(root).arg(interpreter).env(ENV_TARGET_ROOT, "/");
            cmd
        }
        None => {
            let mut cmd = group.command(interpreter);
            if let Some(root) = &env.target_root {
                cmd.env(ENV_TARGET_ROOT, root);
            }
            cmd
        }
    };
    let mut staged = None;
    match (r.content, r.path, chroot) {
        (Some(content), _, _) => {
            cmd.arg("-c").arg(content).arg(r.name);
        }
        // The path names a file of this host, as upstream reads it.
        (None, Some(path), Some(root)) => {
            let copy = StagedScript::copy_into(root, path, r.name)?;
            cmd.arg(&copy.inside);
            staged = Some(copy);
        }
        (None, Some(path), None) => {
            cmd.arg(path);
        }
        (None, None, _) => {
            return Err(TridentError::new(
                Subkind::InvalidHostConfiguration,
                format!("script '{}' has neither content nor path", r.name),
            ));
        }
    }
    cmd.args(r.arguments)
        .envs(r.env)
        .env(ENV_SERVICING_TYPE, env.servicing_type.as_str())
        .env(
            ENV_UPSTREAM_SERVICING_TYPE,
            env.servicing_type.upstream_name(),
        )
        .env(ENV_OPERATION_ID, &env.operation_id)
        .env(ENV_TARGET_DISKS, env.target_disks.join(":"))
        .env(ENV_SCRIPT_NAME, r.name)
        .env(
            ENV_TARGET_VOLUME,
            env.target_volume.as_deref().unwrap_or(""),
        )
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // Its own process group (a terminal's signals are not its); its
        // namespace ends everything it started.
        .process_group(0)
        .kill_on_drop(true);
    Ok((cmd, staged))
}

/// A host script file copied to the top of the new root for a chrooted run,
/// through the new root's directory handle (resolved inside it); removed
/// when dropped.
#[derive(Debug)]
struct StagedScript {
    root: RootDir,
    /// The copy, seen from inside the chroot.
    inside: String,
}

impl StagedScript {
    fn copy_into(root: &std::path::Path, path: &str, name: &str) -> Result<Self, TridentError> {
        let inside = format!("/.trident-script-{}", uuid::Uuid::new_v4());
        let failed = format!("Cannot copy script '{name}' ({path}) into the new root");
        let root = RootDir::open(root).structured_msg(Subkind::ScriptFailed, failed.clone())?;
        root.copy_in(
            std::path::Path::new(path),
            std::path::Path::new(&inside),
            0o700,
        )
        .structured_msg(Subkind::ScriptFailed, failed)?;
        Ok(StagedScript { root, inside })
    }
}

impl Drop for StagedScript {
    fn drop(&mut self) {
        let _ = self.root.remove_file(std::path::Path::new(&self.inside));
    }
}

/// Logs each output line of the script (target `script::<name>`) until
/// both streams end, keeping the last stderr lines in `tail` for the error.
/// Lines are redacted (secret environment values, PEM private key blocks
/// printed line by line): a line becomes a log record, a bus record, an
/// OTLP log and, for stderr, part of the error message.
async fn log_output(
    stdout: Option<ChildStdout>,
    stderr: Option<ChildStderr>,
    name: &str,
    secrets: &Secrets,
    tail: &mut VecDeque<String>,
) {
    let target = format!("script::{name}");
    let (mut out_lines, mut err_lines) = (LineRedactor::new(secrets), LineRedactor::new(secrets));
    let mut out = stdout.map(|s| BufReader::new(s).lines());
    let mut err = stderr.map(|s| BufReader::new(s).lines());
    while out.is_some() || err.is_some() {
        tokio::select! {
            line = next_line(&mut out), if out.is_some() => {
                match line {
                    Some(line) => {
                        let line = out_lines.line(&line);
                        tracing::info!(log.target = %target, stream = "stdout", "{line}");
                    }
                    _ => out = None,
                }
            }
            line = next_line(&mut err), if err.is_some() => {
                match line {
                    Some(line) => {
                        let line = err_lines.line(&line).into_owned();
                        tracing::warn!(log.target = %target, stream = "stderr", "{line}");
                        if tail.len() == STDERR_TAIL_LINES {
                            tail.pop_front();
                        }
                        tail.push_back(line);
                    }
                    _ => err = None,
                }
            }
        }
    }
}

/// Next line of a stream still open; `None` at its end (or on a read error).
async fn next_line<R: AsyncBufRead + Unpin>(lines: &mut Option<Lines<R>>) -> Option<String> {
    match lines {
        Some(lines) => lines.next_line().await.ok().flatten(),
        None => std::future::pending().await,
    }
}

fn render_tail(tail: &VecDeque<String>) -> String {
    if tail.is_empty() {
        "(none)".to_owned()
    } else {
        tail.iter().cloned().collect::<Vec<_>>().join(" | ")
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use trident_host::Category;

    fn env() -> ScriptEnv {
        ScriptEnv {
            servicing_type: ServicingType::AbUpdate,
            operation_id: "op-7".to_owned(),
            target_disks: vec!["/tmp/a.img".to_owned()],
            target_volume: Some("volume-b".to_owned()),
            target_root: None,
            chrooted: false,
        }
    }

    fn check(name: &str, content: &str, timeout: Option<u64>) -> HealthCheck {
        HealthCheck {
            name: name.to_owned(),
            run_on: vec![RunOn::All],
            interpreter: None,
            content: Some(content.to_owned()),
            path: None,
            arguments: Vec::new(),
            environment_variables: BTreeMap::new(),
            timeout_seconds: timeout,
            ..HealthCheck::default()
        }
    }

    #[test]
    fn run_on_selects_by_servicing_type() {
        assert!(ServicingType::AbUpdate.selected_by(&[RunOn::All]));
        assert!(ServicingType::AbUpdate.selected_by(&[RunOn::AbUpdate]));
        assert!(!ServicingType::AbUpdate.selected_by(&[RunOn::CleanInstall]));
        assert!(ServicingType::CleanInstall.selected_by(&[RunOn::AbUpdate, RunOn::CleanInstall]));
    }

    #[tokio::test]
    async fn scripts_see_the_servicing_environment() {
        let c = check(
            "env",
            "test \"$TRIDENT_SERVICING_TYPE\" = ab-update && test \"$TRIDENT_OPERATION_ID\" = op-7 \
             && test \"$SERVICING_TYPE\" = ab_update \
             && test \"$TRIDENT_TARGET_VOLUME\" = volume-b && test \"$0\" = env",
            Some(5),
        );
        run_health_checks(&[c], &env()).await.unwrap();
    }

    #[tokio::test]
    async fn failing_check_names_script_exit_status_and_last_stderr_lines() {
        let c = check("db", "echo first >&2; echo second >&2; exit 4", Some(5));
        let err = run_health_checks(&[c], &env()).await.unwrap_err();
        assert_eq!(err.category(), Category::HealthChecks);
        assert_eq!(err.subkind(), Subkind::HealthCheckFailed);
        for part in ["'db'", "exit status: 4", "first | second"] {
            assert!(err.message().contains(part), "{part} in {}", err.message());
        }
    }

    #[tokio::test]
    async fn check_exceeding_its_timeout_is_killed_and_reported() {
        let c = check("slow", "echo started >&2; sleep 30", Some(1));
        let err = run_health_checks(&[c], &env()).await.unwrap_err();
        assert_eq!(err.subkind(), Subkind::HealthCheckTimedOut);
        assert!(err.message().contains("within 1s"), "{}", err.message());
        assert!(err.message().contains("started"), "{}", err.message());
    }

    #[tokio::test]
    async fn failing_script_is_a_servicing_error() {
        let script = Script {
            name: "pre".to_owned(),
            run_on: vec![RunOn::AbUpdate],
            interpreter: None,
            content: Some("exit 1".to_owned()),
            path: None,
            arguments: Vec::new(),
            environment_variables: BTreeMap::new(),
        };
        let err = run_scripts("preServicing", &[script], &env())
            .await
            .unwrap_err();
        assert_eq!(err.category(), Category::Servicing);
        assert_eq!(err.subkind(), Subkind::ScriptFailed);
    }

    /// Command lines of running processes holding `needle`.
    fn running_with(needle: &str) -> Vec<String> {
        std::fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
            .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
            .filter(|c| c.contains(needle))
            .collect()
    }

    /// Issue 37: a script that backgrounds processes (one keeping its
    /// output open, one not) returns when it exits, and nothing it started
    /// is left running.
    #[tokio::test]
    async fn what_a_script_leaves_running_is_ended_when_it_exits() {
        let marker = format!("100000.{}", std::process::id());
        let script = Script {
            name: "leaves-children".to_owned(),
            run_on: vec![RunOn::All],
            interpreter: None,
            content: Some(format!(
                "(sleep {marker} &) ; (sleep {marker} >/dev/null 2>&1 &) ; echo started; exit 0"
            )),
            path: None,
            arguments: Vec::new(),
            environment_variables: BTreeMap::new(),
        };
        let ran = tokio::time::timeout(
            Duration::from_secs(60),
            run_scripts("postConfigure", &[script], &env()),
        )
        .await;
        let left = running_with(&format!("sleep {marker}"));
        assert!(
            ran.is_ok(),
            "the script's run did not return; running: {left:?}"
        );
        ran.unwrap().unwrap();
        assert!(left.is_empty(), "left running: {left:?}");
    }

    /// A health check that times out is ended with everything it started,
    /// a child that left its process group (`setsid`) too.
    #[tokio::test]
    async fn a_timed_out_check_is_ended_with_its_children() {
        let marker = format!("100001.{}", std::process::id());
        let c = check(
            "slow-tree",
            &format!("setsid sleep {marker} & sleep {marker}"),
            Some(1),
        );
        let err = run_health_checks(&[c], &env()).await.unwrap_err();
        assert_eq!(err.subkind(), Subkind::HealthCheckTimedOut);
        let left = running_with(&format!("sleep {marker}"));
        assert!(left.is_empty(), "left running: {left:?}");
    }
}
