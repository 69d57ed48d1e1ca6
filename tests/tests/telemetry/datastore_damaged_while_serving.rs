//! A datastore destroyed while the daemon serves: random bytes written
//! over the datastore file and its WAL (in place, as a bad disk or a stray
//! `dd` would) after a host was provisioned and an update staged. The next
//! state change (`trident commit`, an update stage) fails with the error a
//! start on that file gives (`open-datastore`, naming the file), nothing
//! is acknowledged, and `get status` says the datastore is damaged instead
//! of serving what it cached.

#![allow(clippy::unwrap_used)]

use std::io::{Seek, SeekFrom, Write};
use std::path::Path;

use trident_e2e::servicing_support::{Clients, Fixture};
use trident_e2e::{daemon_on, trident_cli};

/// Overwrites `path` in place with as many pseudo-random bytes as it holds.
fn overwrite_with_random_bytes(path: &Path, seed: u64) {
    let len = std::fs::metadata(path).unwrap().len();
    let mut state = seed;
    let bytes: Vec<u8> = (0..len)
        .map(|_| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (state >> 33) as u8
        })
        .collect();
    let mut file = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    file.seek(SeekFrom::Start(0)).unwrap();
    file.write_all(&bytes).unwrap();
    file.sync_all().unwrap();
}

fn text(socket: &Path, args: &[&str]) -> (bool, String) {
    let out = trident_cli(socket, args);
    let shown = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), shown)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_datastore_destroyed_while_serving_fails_the_next_state_change_and_queries_say_so() {
    let fx = Fixture::new();
    let v1 = fx.image("v1", 901, None);
    let v2 = fx.image("v2", 902, None);
    let state = fx.dir.path().join("state");
    let d = daemon_on(&state, &[]).await;
    let mut c = Clients::new(&d).await;
    c.provision(&fx.config(&v1, "")).await;
    c.update_stage(&fx.config(&v2, "")).await.assert_success();

    let datastore = state.join("datastore.sqlite");
    let wal = state.join("datastore.sqlite-wal");
    assert!(
        std::fs::metadata(&wal).unwrap().len() > 0,
        "a WAL to destroy"
    );
    overwrite_with_random_bytes(&datastore, 1);
    overwrite_with_random_bytes(&wal, 2);
    let named = datastore.display().to_string();

    let socket = d.socket_path();
    let (ok, shown) = text(socket, &["commit"]);
    assert!(
        !ok,
        "trident commit acknowledged on a destroyed datastore:\n{shown}"
    );
    assert!(
        shown.contains("open-datastore") && shown.contains(&named) && shown.contains("damaged"),
        "the error a start gives, naming the file:\n{shown}"
    );

    let out = c.update_stage(&fx.config(&v2, "")).await;
    assert!(!out.succeeded(), "an update stage acknowledged");
    assert_eq!(out.error().subkind, "open-datastore", "{:?}", out.error());
    assert!(out.error().message.contains(&named), "{:?}", out.error());

    let (ok, shown) = text(socket, &["get", "status"]);
    assert!(!ok, "get status served a cached status:\n{shown}");
    assert!(
        shown.contains("damaged") && shown.contains(&named),
        "get status says the datastore is damaged:\n{shown}"
    );
}
