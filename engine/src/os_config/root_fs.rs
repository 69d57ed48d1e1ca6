//! What every key module of `os_config` shares: the error naming the key
//! path, and the file and tool helpers that act on the new root. A leaf
//! below the key modules and their dispatcher.

use std::path::Path;
use std::process::Command;

use trident_host::{Subkind, TridentError};

use crate::new_root::root_dir::RootDir;

/// Why a key of `os` could not be applied. Every variant carries the key
/// path (`os.users[0].sshPublicKeys`, [`OsConfigError::key`]); the
/// conversion to [`TridentError`] puts it first in the message.
#[derive(Debug, thiserror::Error)]
pub enum OsConfigError {
    /// A value breaks a rule that needs only the document.
    #[error("{message}")]
    Document { key: String, message: String },
    /// The configuration asks for something the new root cannot take (a
    /// path escaping the root, SELinux on an image without it).
    #[error("{message}")]
    Refused { key: String, message: String },
    /// Reading or writing a file of the new root failed.
    #[error("{message}")]
    Io {
        key: String,
        message: String,
        #[source]
        source: std::io::Error,
    },
    /// A tool run on the new root failed.
    #[error("`{command}` failed: {detail}")]
    Tool {
        key: String,
        command: String,
        detail: String,
    },
}

impl OsConfigError {
    /// The Host Configuration key path the error is about.
    pub fn key(&self) -> &str {
        match self {
            Self::Document { key, .. }
            | Self::Refused { key, .. }
            | Self::Io { key, .. }
            | Self::Tool { key, .. } => key,
        }
    }

    /// A value breaks a rule of the document (`trident_host`'s
    /// `document_rules`, which validation applies first).
    pub(crate) fn document(key: impl Into<String>, rule: String) -> Self {
        Self::Document {
            key: key.into(),
            message: rule,
        }
    }

    pub(crate) fn refused(key: impl Into<String>, message: impl Into<String>) -> Self {
        Self::Refused {
            key: key.into(),
            message: message.into(),
        }
    }

    pub(crate) fn io(key: &str, message: impl Into<String>, source: std::io::Error) -> Self {
        Self::Io {
            key: key.to_owned(),
            message: message.into(),
            source,
        }
    }
}

impl From<OsConfigError> for TridentError {
    fn from(e: OsConfigError) -> Self {
        let message = format!("Host Configuration key '{}': {e}", e.key());
        match e {
            // Validation refuses these first; here only as defence in depth.
            OsConfigError::Document { .. } => {
                TridentError::new(Subkind::InvalidHostConfiguration, message)
            }
            // The image lacks what the configuration needs: the request
            // does not match the image, not a servicing fault.
            OsConfigError::Refused { .. } => {
                TridentError::new(Subkind::ImageDoesNotMatchConfiguration, message)
            }
            OsConfigError::Tool { .. } => TridentError::new(Subkind::ApplyOsConfig, message),
            OsConfigError::Io { source, .. } => {
                TridentError::with_source(Subkind::ApplyOsConfig, message, source)
            }
        }
    }
}

/// `abs`, an absolute path of the new root (e.g. `/etc/hostname`), checked:
/// relative paths and `..` are refused naming the key. Where it lands is
/// [`RootDir`]'s to resolve, inside the root.
pub(crate) fn in_root<'a>(abs: &'a str, key: &str) -> Result<&'a Path, OsConfigError> {
    trident_host::config::document_rules::check_absolute_path(abs)
        .map_err(|rule| OsConfigError::document(key, rule))?;
    Ok(Path::new(abs))
}

/// Writes `content` to `path` of the new root (parents created) with
/// exactly `mode`, replacing what was there; resolved inside the root.
pub(crate) fn write_file(
    root: &RootDir,
    path: &Path,
    content: &[u8],
    mode: u32,
    key: &str,
) -> Result<(), OsConfigError> {
    root.write_file(path, content, mode)
        .map_err(|e| OsConfigError::io(key, format!("cannot write {}", path.display()), e))
}

/// Runs `program args`, failing with its stderr.
pub(crate) fn run(key: &str, program: &str, args: &[&str]) -> Result<(), OsConfigError> {
    let command = format!("{program} {}", args.join(" "));
    tracing::debug!(%command, "os config: running");
    let output = Command::new(program)
        .args(args)
        .output()
        .map_err(|e| OsConfigError::Tool {
            key: key.to_owned(),
            command: command.clone(),
            detail: e.to_string(),
        })?;
    if output.status.success() {
        return Ok(());
    }
    Err(OsConfigError::Tool {
        key: key.to_owned(),
        command,
        detail: format!(
            "{}: {}",
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        ),
    })
}
