//! Upstream's agent configuration file, `/etc/trident/trident.conf`: one
//! `Key=Value` per line. The one key upstream defines, `DatastorePath=`,
//! names the datastore. A missing file means defaults (as upstream); a file
//! that exists but cannot be read or says something invalid stops the
//! daemon with exit code 4 (upstream's "failed to load agent configuration").

use std::{
    io::ErrorKind,
    path::{Path, PathBuf},
};

/// Default location of the agent configuration.
pub const DEFAULT_AGENT_CONFIG: &str = "/etc/trident/trident.conf";
/// Env var: agent configuration path (same as `--agent-config`).
pub const ENV_AGENT_CONFIG: &str = "TRIDENT_AGENT_CONFIG";
/// Exit code when the agent configuration cannot be loaded (upstream's).
pub const EXIT_AGENT_CONFIG: u8 = 4;

const DATASTORE_PATH_KEY: &str = "DatastorePath";

/// What the agent configuration says.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AgentConfig {
    /// `DatastorePath=`, if given.
    pub datastore_path: Option<PathBuf>,
    /// Keys we do not know, for a start-up log line (upstream ignores them).
    pub unknown_keys: Vec<String>,
}

/// Why the agent configuration could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum AgentConfigError {
    #[error("cannot read agent configuration {}: {source}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("agent configuration {}:{line}: {problem}", path.display())]
    Invalid {
        path: PathBuf,
        line: usize,
        problem: String,
    },
}

impl AgentConfig {
    /// Loads `path`; a missing file gives the defaults.
    pub fn load(path: &Path) -> Result<Self, AgentConfigError> {
        match std::fs::read_to_string(path) {
            Ok(text) => Self::parse(path, &text),
            Err(error) if error.kind() == ErrorKind::NotFound => Ok(Self::default()),
            Err(source) => Err(AgentConfigError::Read {
                path: path.to_owned(),
                source,
            }),
        }
    }

    fn parse(path: &Path, text: &str) -> Result<Self, AgentConfigError> {
        let mut config = Self::default();
        for (index, raw) in text.lines().enumerate() {
            let line = raw.trim();
            if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
                continue;
            }
            let invalid = |problem: String| AgentConfigError::Invalid {
                path: path.to_owned(),
                line: index + 1,
                problem,
            };
            let Some((key, value)) = line.split_once('=') else {
                return Err(invalid(format!("expected Key=Value, found {line:?}")));
            };
            let (key, value) = (key.trim(), value.trim());
            if key == DATASTORE_PATH_KEY {
                if value.is_empty() {
                    return Err(invalid(format!("{DATASTORE_PATH_KEY}= is empty")));
                }
                config.datastore_path = Some(PathBuf::from(value));
            } else {
                config.unknown_keys.push(key.to_owned());
            }
        }
        Ok(config)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn datastore_path_is_read_and_other_keys_are_noted() {
        let config = AgentConfig::parse(
            Path::new("t.conf"),
            "# comment\nDatastorePath=/data/ds.sqlite\nOther=1\n",
        )
        .unwrap();
        assert_eq!(
            config.datastore_path,
            Some(PathBuf::from("/data/ds.sqlite"))
        );
        assert_eq!(config.unknown_keys, vec!["Other".to_owned()]);
    }

    #[test]
    fn a_missing_file_gives_defaults_and_bad_lines_are_errors() {
        let missing = AgentConfig::load(Path::new("/nonexistent/trident.conf")).unwrap();
        assert_eq!(missing, AgentConfig::default());
        let error = AgentConfig::parse(Path::new("t.conf"), "DatastorePath=\n").unwrap_err();
        assert!(error.to_string().contains("t.conf:1"), "{error}");
        assert!(AgentConfig::parse(Path::new("t.conf"), "garbage\n").is_err());
    }
}
