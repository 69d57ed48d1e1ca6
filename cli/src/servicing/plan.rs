//! What a servicing command asks for before any RPC: the Host
//! Configuration (read and syntax-checked here), the allowed steps, and
//! the reboot management.

use std::path::Path;

use trident_proto::v1::{HostConfiguration, RebootHandling, RebootManagement};

use super::error_file::fail;
use crate::args::{AllowedOperation, ServicingConfigArgs};
use crate::exit::{CliError, CliResult};

/// Reads and syntax-checks a Host Configuration file (exit 2 on failure).
pub fn load_config(path: &Path) -> CliResult<String> {
    let text = std::fs::read_to_string(path).map_err(|e| CliError::ConfigLoad {
        path: path.to_path_buf(),
        detail: e.to_string(),
    })?;
    serde_saphyr::from_str::<serde_json::Value>(&text).map_err(|e| CliError::ConfigLoad {
        path: path.to_path_buf(),
        detail: format!(
            "not valid YAML: {}",
            e.to_string().lines().next().unwrap_or_default()
        ),
    })?;
    Ok(text)
}

/// The reboot management of CLI-driven servicing: like upstream, Trident
/// handles the reboot.
pub fn reboot() -> Option<RebootManagement> {
    Some(RebootManagement {
        handling: RebootHandling::TridentHandlesReboot as i32,
    })
}

/// Which of stage/finalize the user allowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Steps {
    Both,
    StageOnly,
    FinalizeOnly,
    Nothing,
}

impl Steps {
    pub fn from_allowed(allowed: &[AllowedOperation]) -> Steps {
        let stage = allowed.contains(&AllowedOperation::Stage);
        let finalize = allowed.contains(&AllowedOperation::Finalize);
        match (stage, finalize) {
            (true, true) => Steps::Both,
            (true, false) => Steps::StageOnly,
            (false, true) => Steps::FinalizeOnly,
            (false, false) => Steps::Nothing,
        }
    }
}

/// What a stage/finalize command (install, update) is asked to do: the
/// steps and, when staging, the Host Configuration read from `args.config`.
/// `None` when `--allowed-operations` allows nothing (said on stderr).
pub fn plan(args: &ServicingConfigArgs) -> CliResult<Option<(Steps, Option<HostConfiguration>)>> {
    if args.multiboot {
        // Refused, never ignored: the user asked for something we do not do.
        return Err(CliError::Usage(
            "--multiboot: installing beside another operating system is not supported by \
             tridentd (it lays out the disks the Host Configuration names); drop the flag"
                .into(),
        ));
    }
    let steps = Steps::from_allowed(&args.allowed_operations);
    if steps == Steps::Nothing {
        eprintln!("trident: no operation allowed (--allowed-operations is empty); nothing to do");
        return Ok(None);
    }
    let config = if steps == Steps::FinalizeOnly {
        None
    } else {
        let config = load_config(&args.config).map_err(|e| fail(&args.servicing, e))?;
        Some(HostConfiguration { config })
    };
    Ok(Some((steps, config)))
}
