//! The agent's configuration: flags, else the YAML file (`--config`,
//! default `/etc/trident/rcp.yaml`, where provisioning writes the
//! orchestrator's address), else defaults. Keys of the file are the flags'
//! names without the dashes in front:
//!
//! ```yaml
//! connect: orchestrator.example:7443
//! server-name: orchestrator.example
//! ca: /etc/trident/rcp/ca.pem
//! cert: /etc/trident/rcp/host.pem
//! key: /etc/trident/rcp/host.key
//! backoff-max: 30s
//! protocol: trident   # or `upstream`: upstream Trident's rcp-agent wire
//! ```

use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::Parser;
use serde::Deserialize;

use crate::agent::AgentConfig;
use crate::error::RcpError;
use crate::state_file::DEFAULT_STATE_FILE;
use crate::tls::{Protocol, TlsFiles, UPSTREAM_SERVER_NAME};
use crate::tunnel::Keepalive;

/// Default configuration file.
pub const DEFAULT_CONFIG: &str = "/etc/trident/rcp.yaml";
/// Default tridentd socket (the CLI's default too).
pub const DEFAULT_SOCKET: &str = "/run/trident/listen.sock";

/// trident-rcp: the reverse-connect proxy agent. Dials the orchestrator,
/// authenticates with mutual TLS, and carries the orchestrator's
/// connections to tridentd's local socket.
#[derive(Debug, Clone, Default, Parser)]
#[command(name = "trident-rcp", version, about)]
pub struct AgentArgs {
    /// YAML configuration file (flags win over it). A missing file is an
    /// error only when this flag is given.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// The orchestrator's listener.
    #[arg(long, value_name = "HOST:PORT")]
    pub connect: Option<String>,
    /// The name the orchestrator's certificate must be valid for [with
    /// `--protocol upstream`, default: reverseconnectproxy, upstream's].
    #[arg(long, value_name = "NAME")]
    pub server_name: Option<String>,
    /// Wire protocol: `trident` (ours: HTTP/2 streams over one TLS session)
    /// or `upstream` (upstream Trident's: TLS 1.3, one raw byte stream per
    /// connection, dialled again after each close) [default: trident].
    #[arg(long, value_enum, value_name = "PROTOCOL")]
    pub protocol: Option<Protocol>,
    /// CA certificate (PEM) that signs both sides' certificates.
    #[arg(long, value_name = "FILE", allow_hyphen_values = true)]
    pub ca: Option<PathBuf>,
    /// This host's certificate (PEM).
    #[arg(long, value_name = "FILE", allow_hyphen_values = true)]
    pub cert: Option<PathBuf>,
    /// This host's private key (PEM, mode 0600).
    #[arg(long, value_name = "FILE", allow_hyphen_values = true)]
    pub key: Option<PathBuf>,
    /// tridentd's Unix socket [default: /run/trident/listen.sock].
    #[arg(long, env = "TRIDENT_SOCKET", value_name = "PATH")]
    pub socket: Option<PathBuf>,
    /// First delay after a failed or closed tunnel [default: 1s].
    #[arg(long, value_parser = humantime::parse_duration, value_name = "DURATION")]
    pub backoff_initial: Option<Duration>,
    /// Longest delay between two dials [default: 60s].
    #[arg(long, value_parser = humantime::parse_duration, value_name = "DURATION")]
    pub backoff_max: Option<Duration>,
    /// Interval of keepalive pings on the tunnel [default: 10s].
    #[arg(long, value_parser = humantime::parse_duration, value_name = "DURATION")]
    pub keepalive_interval: Option<Duration>,
    /// A ping unanswered this long closes the tunnel [default: 20s].
    #[arg(long, value_parser = humantime::parse_duration, value_name = "DURATION")]
    pub keepalive_timeout: Option<Duration>,
    /// Bound on TCP connect plus TLS handshake [default: 10s].
    #[arg(long, value_parser = humantime::parse_duration, value_name = "DURATION")]
    pub connect_timeout: Option<Duration>,
    /// JSON file mirroring the agent's state, read by tridentd to put it on
    /// its bus [default: /run/trident/rcp-agent.json].
    #[arg(long, value_name = "FILE")]
    pub state_file: Option<PathBuf>,
}

/// The YAML file: every key optional, unknown keys refused.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct FileConfig {
    connect: Option<String>,
    server_name: Option<String>,
    protocol: Option<Protocol>,
    ca: Option<PathBuf>,
    cert: Option<PathBuf>,
    key: Option<PathBuf>,
    socket: Option<PathBuf>,
    backoff_initial: Option<String>,
    backoff_max: Option<String>,
    keepalive_interval: Option<String>,
    keepalive_timeout: Option<String>,
    connect_timeout: Option<String>,
    state_file: Option<PathBuf>,
}

fn load_file(path: &Path, explicit: bool) -> Result<FileConfig, RcpError> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(err) if !explicit && err.kind() == std::io::ErrorKind::NotFound => {
            return Ok(FileConfig::default());
        }
        Err(err) => return Err(RcpError::io(format!("cannot read {}", path.display()), err)),
    };
    if text.trim().is_empty() {
        return Ok(FileConfig::default());
    }
    serde_saphyr::from_str(&text).map_err(|e| {
        // The parser's message quotes the file around the error: not when
        // the file holds a private key (pasted where a path belongs).
        let detail = if text.contains("PRIVATE KEY") {
            format!(
                "{} (the file holds a private key block, so its text is not shown; a key belongs in its own file named by `key:`)",
                location_only(&e.to_string())
            )
        } else {
            e.to_string()
        };
        RcpError::Config(format!("{}: {detail}", path.display()))
    })
}

/// `line N column M` of a parser message, without the message itself.
fn location_only(message: &str) -> String {
    message
        .find("line ")
        .map(|at| &message[at..])
        .and_then(|rest| rest.split(':').next())
        .map_or_else(|| "invalid".to_owned(), |loc| format!("invalid at {loc}"))
}

fn duration(
    key: &str,
    flag: Option<Duration>,
    file: Option<String>,
    default: Duration,
) -> Result<Duration, RcpError> {
    match (flag, file) {
        (Some(value), _) => Ok(value),
        (None, Some(text)) => humantime::parse_duration(&text)
            .map_err(|e| RcpError::Config(format!("{key}: {text:?}: {e}"))),
        (None, None) => Ok(default),
    }
}

/// A PEM file's path. A value holding PEM content (a key pasted where its
/// path belongs) is refused without echoing it: the error reaches the log.
fn pem_path(key: &str, value: Option<PathBuf>) -> Result<PathBuf, RcpError> {
    let path = required(key, value)?;
    let text = path.to_string_lossy();
    if text.contains("-----BEGIN") || text.contains('\n') {
        return Err(RcpError::Config(format!(
            "{key}: expects the path of a PEM file, not PEM content (the value is not shown)"
        )));
    }
    Ok(path)
}

fn required<T>(key: &str, value: Option<T>) -> Result<T, RcpError> {
    value.ok_or_else(|| {
        RcpError::Config(format!(
            "--{key} is required (flag or `{key}:` in the configuration file)"
        ))
    })
}

impl AgentArgs {
    /// Merges flags over the file over defaults.
    pub fn resolve(self) -> Result<AgentConfig, RcpError> {
        self.resolve_with_state_file().map(|(config, _)| config)
    }

    /// As [`resolve`](Self::resolve), plus where to mirror the state.
    pub fn resolve_with_state_file(self) -> Result<(AgentConfig, PathBuf), RcpError> {
        let explicit = self.config.is_some();
        let path = self.config.unwrap_or_else(|| PathBuf::from(DEFAULT_CONFIG));
        let file = load_file(&path, explicit)?;
        let state_file = self
            .state_file
            .or(file.state_file)
            .unwrap_or_else(|| PathBuf::from(DEFAULT_STATE_FILE));
        let defaults = Keepalive::default();
        let protocol = self.protocol.or(file.protocol).unwrap_or_default();
        let server_name = self
            .server_name
            .or(file.server_name)
            .or_else(|| (protocol == Protocol::Upstream).then(|| UPSTREAM_SERVER_NAME.to_owned()));
        let config = AgentConfig {
            connect: required("connect", self.connect.or(file.connect))?,
            server_name: required("server-name", server_name)?,
            protocol,
            tls: TlsFiles {
                ca: pem_path("ca", self.ca.or(file.ca))?,
                cert: pem_path("cert", self.cert.or(file.cert))?,
                key: pem_path("key", self.key.or(file.key))?,
            },
            socket: self
                .socket
                .or(file.socket)
                .unwrap_or_else(|| PathBuf::from(DEFAULT_SOCKET)),
            backoff_initial: duration(
                "backoff-initial",
                self.backoff_initial,
                file.backoff_initial,
                Duration::from_secs(1),
            )?,
            backoff_max: duration(
                "backoff-max",
                self.backoff_max,
                file.backoff_max,
                Duration::from_secs(60),
            )?,
            keepalive: Keepalive {
                interval: duration(
                    "keepalive-interval",
                    self.keepalive_interval,
                    file.keepalive_interval,
                    defaults.interval,
                )?,
                timeout: duration(
                    "keepalive-timeout",
                    self.keepalive_timeout,
                    file.keepalive_timeout,
                    defaults.timeout,
                )?,
            },
            connect_timeout: duration(
                "connect-timeout",
                self.connect_timeout,
                file.connect_timeout,
                Duration::from_secs(10),
            )?,
        };
        Ok((config, state_file))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_win_over_the_file_and_defaults_fill_the_rest() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("rcp.yaml");
        std::fs::write(
            &path,
            "connect: file:1\nserver-name: orch\nca: /ca.pem\ncert: /c.pem\nkey: /k.pem\nbackoff-max: 5s\n",
        )
        .expect("write");
        let args = AgentArgs {
            config: Some(path),
            connect: Some("flag:2".into()),
            ..AgentArgs::default()
        };
        let config = args.resolve().expect("resolve");
        assert_eq!(config.connect, "flag:2");
        assert_eq!(config.server_name, "orch");
        assert_eq!(config.backoff_max, Duration::from_secs(5));
        assert_eq!(config.backoff_initial, Duration::from_secs(1));
        assert_eq!(config.socket, PathBuf::from(DEFAULT_SOCKET));
    }

    #[test]
    fn unknown_keys_and_missing_required_values_are_errors() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("rcp.yaml");
        std::fs::write(&path, "conect: typo:1\n").expect("write");
        let args = AgentArgs {
            config: Some(path.clone()),
            ..AgentArgs::default()
        };
        assert!(args.resolve().is_err());
        std::fs::write(&path, "connect: a:1\n").expect("write");
        let args = AgentArgs {
            config: Some(path),
            ..AgentArgs::default()
        };
        let err = args.resolve().expect_err("server-name missing").to_string();
        assert!(err.contains("--server-name"), "{err}");
    }

    /// A private key body pasted into the file (where a path belongs, or
    /// under a mistyped key) never appears in the error the agent logs.
    #[test]
    fn pem_content_in_the_file_is_refused_without_being_shown() {
        const BODY: &str = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQ";
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("rcp.yaml");
        let pem =
            format!("|\n  -----BEGIN PRIVATE KEY-----\n  {BODY}\n  -----END PRIVATE KEY-----\n");
        let base = "connect: a:1\nserver-name: orch\nca: /ca.pem\ncert: /c.pem\n";
        for text in [
            format!("{base}key: {pem}"),
            format!("{base}key: /k.pem\nkee: {pem}"),
        ] {
            std::fs::write(&path, &text).expect("write");
            let args = AgentArgs {
                config: Some(path.clone()),
                ..AgentArgs::default()
            };
            let err = args.resolve().expect_err("refused").to_string();
            assert!(!err.contains(BODY), "key material in: {err}");
            assert!(err.contains("key"), "the error names the key: {err}");
        }
    }
}
