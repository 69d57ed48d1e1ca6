//! `trident offline-initialize HOST_STATUS`: runs in the CLI without the
//! daemon (design document, "Offline Initialize"): reads a Host Status
//! describing a system that Trident did not install, and writes it as the
//! first record of a new datastore.

use std::path::PathBuf;

use trident_host::datastore::Datastore;
use trident_host::status::HostStatus;

use crate::args::OfflineInitializeArgs;
use crate::exit::{CliError, CliResult, Exit};

/// Default datastore path (the daemon's STATE_DIR/datastore.sqlite).
pub const DEFAULT_DATASTORE: &str = "/var/lib/trident/datastore.sqlite";

pub fn run(args: &OfflineInitializeArgs) -> CliResult<Exit> {
    let Some(hs_path) = &args.hs_path else {
        // Upstream infers the Host Status from Image Customizer's
        // history.json, lsblk of --disk and --lazy-partitions; we do not.
        return Err(CliError::Usage(
            "offline-initialize needs a Host Status file: inferring one from Image Customizer's \
             history (--history-path, --disk, --lazy-partitions) is not supported by this CLI; \
             write the Host Status YAML and pass its path"
                .into(),
        ));
    };
    let text = std::fs::read_to_string(hs_path).map_err(|e| CliError::ConfigLoad {
        path: hs_path.clone(),
        detail: e.to_string(),
    })?;
    let status: HostStatus = serde_saphyr::from_str(&text).map_err(|e| CliError::ConfigLoad {
        path: hs_path.clone(),
        detail: format!(
            "not a valid Host Status: {}",
            e.to_string().lines().next().unwrap_or_default()
        ),
    })?;
    if let Some(spec) = &status.spec {
        trident_host::config::validate(spec).map_err(|e| CliError::ConfigLoad {
            path: hs_path.clone(),
            detail: format!("its spec is not a valid Host Configuration: {e}"),
        })?;
    }
    let path = args.datastore.clone().unwrap_or_else(|| {
        status
            .spec
            .as_ref()
            .and_then(|spec| spec.datastore_path())
            .map_or_else(|| PathBuf::from(DEFAULT_DATASTORE), PathBuf::from)
    });
    // Like upstream: never overwrite the state of a host Trident already manages.
    if path.exists() {
        return Err(CliError::Usage(format!(
            "datastore {} already exists; offline-initialize only creates a new one",
            path.display()
        )));
    }
    let mut datastore = Datastore::open(&path).map_err(|e| CliError::Local(format!("{e}")))?;
    datastore
        .save_status(&status, None)
        .map_err(|e| CliError::Local(format!("{e}")))?;
    eprintln!(
        "trident: initialized datastore {} (servicing state {})",
        path.display(),
        status.servicing_state
    );
    Ok(Exit::Success)
}
