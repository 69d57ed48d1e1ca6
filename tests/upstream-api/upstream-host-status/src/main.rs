//! `upstream-host-status DATASTORE`: the Host Status upstream Trident's
//! agent (v0.27.0) would find in a datastore, printed as upstream's
//! `trident get status` prints it; a row upstream's agent could not load is
//! an error (stderr, exit 1).
//!
//! Ours, not upstream's: the tests of tridentd's writes into upstream's
//! table (host/tests/it/upstream_datastores/) run it, so that upstream's own
//! deserializer, not our reading of its format, judges what tridentd wrote,
//! without upstream's whole binary. Each step is upstream's, cited:
//!
//! - the row: `DataStore::open` (crates/trident/src/datastore.rs) takes
//!   `SELECT contents FROM hoststatus ORDER BY id DESC LIMIT 1`, parses its
//!   text with `serde_yaml::from_str` into a `serde_yaml::Value` and that
//!   with `trident_api::status::decode_host_status` (serde_yaml::from_value,
//!   retried after its fix-up of old formats); no row is a default Host
//!   Status with `isManagementOs: true`;
//! - the output: `Trident::get` (crates/trident/src/lib.rs), `GetKind::Status`,
//!   is `println!("{yaml}")` of `serde_yaml::to_string(&host_status)`.
//!
//! Where it differs, on purpose: the datastore is opened read-only (upstream
//! opens it read-write, and would create a missing file), and the row's id
//! is read beside its contents, for the error messages.

use std::path::Path;
use std::process::ExitCode;

use trident_api::status::{decode_host_status, HostStatus};

fn main() -> ExitCode {
    let mut args = std::env::args_os().skip(1);
    let (Some(path), None) = (args.next(), args.next()) else {
        eprintln!("usage: upstream-host-status DATASTORE");
        return ExitCode::from(2);
    };
    match current_status(Path::new(&path)).and_then(|status| {
        serde_yaml::to_string(&status)
            .map_err(|e| format!("upstream's serializer failed on the Host Status: {e}"))
    }) {
        Ok(yaml) => {
            // As upstream's `get` prints it: println!, so one more newline.
            println!("{yaml}");
            ExitCode::SUCCESS
        }
        Err(why) => {
            eprintln!(
                "upstream-host-status: {}: {why}",
                Path::new(&path).display()
            );
            ExitCode::FAILURE
        }
    }
}

/// The Host Status upstream's `DataStore::open` loads from `path`.
fn current_status(path: &Path) -> Result<HostStatus, String> {
    let db = sqlite::Connection::open_with_flags(path, sqlite::OpenFlags::new().with_read_only())
        .map_err(|e| format!("cannot open the datastore read-only: {e}"))?;
    // Upstream's query, with the id read too (column 1) for the messages.
    let statement = db
        .prepare("SELECT contents, id FROM hoststatus ORDER BY id DESC LIMIT 1")
        .map_err(|e| format!("cannot query table hoststatus: {e}"))?;
    let Some(row) = statement.into_iter().next() else {
        // No row: what upstream's agent assumes of a new host.
        return Ok(HostStatus {
            is_management_os: true,
            ..Default::default()
        });
    };
    let row = row.map_err(|e| format!("cannot read the newest hoststatus row: {e}"))?;
    let id: i64 = row.try_read(1).map_err(|e| format!("row id: {e}"))?;
    // Upstream reads the column as text (`row.read::<&str, _>(0)`, which
    // panics on anything else): an error here, not a panic.
    let contents: &str = row
        .try_read(0)
        .map_err(|e| format!("row {id} of table hoststatus: contents is not text: {e}"))?;
    let yaml: serde_yaml::Value = serde_yaml::from_str(contents).map_err(|e| {
        format!("row {id} of table hoststatus: upstream fails to parse Host Status as YAML: {e}")
    })?;
    decode_host_status(yaml).map_err(|e| {
        format!("row {id} of table hoststatus: upstream's deserializer refuses it as a Host Status: {e}")
    })
}
