//! `trident start-network [CONFIG]`: upstream's provisioning network (its
//! network-initialisation unit on installer media runs it before an
//! install). Runs in the CLI, without the daemon, as upstream's does: reads
//! the Host Configuration, takes its `managementOs.netplan` (the network
//! of the OS running now), else its `os.netplan`, writes it to
//! `/etc/netplan/99-trident.yaml` (mode 0600) and runs `netplan apply`.
//! Without netplan on PATH it fails before writing anything; without a
//! netplan section it says so and does nothing (upstream relies on the
//! image's default network then).

use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::args::StartNetworkArgs;
use crate::exit::{CliError, CliResult, Exit};

pub fn run(args: &StartNetworkArgs) -> CliResult<Exit> {
    let text = std::fs::read_to_string(&args.config).map_err(|e| CliError::ConfigLoad {
        path: args.config.clone(),
        detail: e.to_string(),
    })?;
    let hc = trident_host::config::parse(&text)
        .map_err(|e| CliError::ConfigInvalid(format!("{}: {e}", args.config.display())))?;
    let (key, netplan) = match (&hc.management_os.netplan, &hc.os.netplan) {
        (Some(netplan), _) => ("managementOs.netplan", netplan),
        (None, Some(netplan)) => ("os.netplan", netplan),
        (None, None) => {
            eprintln!(
                "trident: {} has no netplan (managementOs.netplan or os.netplan): the network is left as it is",
                args.config.display()
            );
            return Ok(Exit::Success);
        }
    };
    let file_text = trident_host::config::netplan_file_text(netplan)
        .map_err(|why| CliError::ConfigInvalid(format!("Host Configuration key '{key}': {why}")))?;
    let netplan_bin = find_on_path("netplan").ok_or_else(|| {
        CliError::StartNetwork(format!(
            "'netplan' is not installed (not on PATH): cannot apply '{key}'; nothing was written"
        ))
    })?;
    let target = Path::new("/").join(trident_host::config::NETPLAN_FILE);
    write_private(&target, file_text.as_bytes())
        .map_err(|e| CliError::StartNetwork(format!("cannot write {}: {e}", target.display())))?;
    let output = Command::new(&netplan_bin)
        .arg("apply")
        .output()
        .map_err(|e| {
            CliError::StartNetwork(format!("cannot run {}: {e}", netplan_bin.display()))
        })?;
    if !output.status.success() {
        return Err(CliError::StartNetwork(format!(
            "'netplan apply' failed ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        )));
    }
    eprintln!(
        "trident: {key} applied ({} written, netplan apply done)",
        target.display()
    );
    Ok(Exit::Success)
}

/// `program` in a directory of PATH, if any.
fn find_on_path(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|candidate| candidate.is_file())
}

/// Writes `bytes` to `path` with mode 0600 (netplan refuses files others
/// can read: they may hold Wi-Fi keys), creating its directory.
fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)?;
    // An existing file keeps its mode on open: set it.
    file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    file.write_all(bytes)?;
    file.sync_all()
}
