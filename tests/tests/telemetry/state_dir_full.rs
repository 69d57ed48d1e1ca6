//! A full state directory (datastore, WAL and journal on a small tmpfs
//! that fills up): servicing fails cleanly, and the two views of the last
//! error agree: `trident get status` shows the same `lastError` as
//! `trident get last-error`, and says that the datastore could not record
//! it. Once space is back, the next failure is recorded as usual.

#![allow(clippy::unwrap_used)]

use std::path::Path;

use trident_e2e::crash_support::{Tmpfs, fill};
use trident_e2e::servicing_support::{Clients, Fixture};
use trident_e2e::{daemon_on, trident_cli};

fn text(socket: &Path, args: &[&str]) -> String {
    let out = trident_cli(socket, args);
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn with_a_full_state_dir_status_and_last_error_agree() {
    let fx = Fixture::new();
    let v1 = fx.image("v1", 801, None);
    let state = fx.dir.path().join("state");
    let mount = Tmpfs::mount(&state, "16m");
    let d = daemon_on(&state, &[]).await;
    let mut c = Clients::new(&d).await;
    c.provision(&fx.config(&v1, "")).await;

    let filler = fill(&mount.0);
    // Any state change fails now (the operation cannot even be recorded
    // as started); the daemon still knows the failure.
    let bad = fx.config(&v1, "").replace("size: 8M", "size: 8Q");
    let out = c.update_stage(&bad).await;
    assert!(!out.succeeded(), "a bad configuration was accepted");
    let subkind = out.error().subkind.clone();
    let socket = d.socket_path();

    let last = text(socket, &["--output", "json", "get", "last-error"]);
    let last: serde_json::Value = serde_json::from_str(&last)
        .unwrap_or_else(|e| panic!("get last-error is JSON ({e}):\n{last}"));
    let message = last["message"].as_str().unwrap().to_owned();
    assert_eq!(last["error"], subkind.as_str(), "{last}");
    let status = text(socket, &["--output", "json", "get", "status"]);
    let status: serde_json::Value = serde_json::from_str(&status)
        .unwrap_or_else(|e| panic!("get status is JSON ({e}):\n{status}"));
    let last_error = &status["lastError"];
    assert!(
        !last_error.is_null(),
        "get status says lastError: null while get last-error shows {message}"
    );
    let shown = last_error.to_string();
    assert!(
        shown.contains(&message) && shown.contains(&subkind),
        "the same error ({subkind}: {message}): {shown}"
    );
    assert!(
        shown.contains("not recorded in the datastore") && shown.contains("full"),
        "says why the datastore lacks it: {shown}"
    );

    // Space is back: the next failure is recorded, and the note is gone.
    std::fs::remove_file(&filler).unwrap();
    let bad = fx.config(&v1, "").replace("size: 8M", "size: 8Z");
    assert!(!c.update_stage(&bad).await.succeeded());
    let status = text(socket, &["--output", "json", "get", "status"]);
    assert!(status.contains("8Z"), "{status}");
    assert!(
        !status.contains("not recorded in the datastore"),
        "{status}"
    );
    drop(mount);
}
