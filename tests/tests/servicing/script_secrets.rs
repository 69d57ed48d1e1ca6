//! Script environment variables named like secrets (`*PASSWORD*`,
//! `*TOKEN*`, `*SECRET*`, any case) never leave the daemon through the
//! script's output: not in the daemon's log, not on the bus (Watch), not in
//! the error the failed operation reports.

#![allow(clippy::unwrap_used)]

use std::time::Duration;

use prost::Message;
use trident_e2e::servicing_support::{Clients, Fixture};
use trident_e2e::{daemon, uds_channel, watch_snapshot};
use trident_proto::v1::{WatchOptions, telemetry_service_client::TelemetryServiceClient};

const PASSWORD: &str = "hunter2-pw-3f9c";
const TOKEN: &str = "tok-7d1e-secret";

#[tokio::test(flavor = "multi_thread")]
async fn secret_script_variables_are_redacted_from_logs_bus_and_errors() {
    let fixture = Fixture::new();
    let image = fixture.image("v1", 1, None);
    let extra = format!(
        "scripts:\n  preServicing:\n  - name: leaky\n    environmentVariables:\n      DB_PASSWORD: {PASSWORD}\n      api_token: {TOKEN}\n      REGION: eu-west-9\n    content: \"echo pw=$DB_PASSWORD region=$REGION; echo tok=$api_token >&2; exit 3\"\n"
    );
    let config = fixture.config(&image, &extra);
    let daemon = daemon().await;
    let mut clients = Clients::new(&daemon).await;
    let install = clients.install(&config).await;
    assert!(!install.succeeded(), "the script exits 3");
    let error = install.error();
    let reported = format!("{error:?}");
    assert!(!reported.contains(TOKEN), "{reported}");
    assert!(reported.contains("tok=[REDACTED]"), "{reported}");

    let mut telemetry =
        TelemetryServiceClient::new(uds_channel(daemon.socket_path()).await.unwrap());
    let events = watch_snapshot(
        &mut telemetry,
        WatchOptions::default(),
        Duration::from_secs(60),
    )
    .await
    .unwrap();
    let bus: Vec<u8> = events.iter().flat_map(Message::encode_to_vec).collect();
    let bus = String::from_utf8_lossy(&bus);
    assert!(
        bus.contains("pw=[REDACTED] region=eu-west-9"),
        "script output not on the bus"
    );
    for secret in [PASSWORD, TOKEN] {
        assert!(!bus.contains(secret), "{secret} on the bus");
        assert!(
            !daemon.stderr().contains(secret),
            "{secret} in the daemon log"
        );
    }
    let last = clients.last_error().await.unwrap();
    assert!(!format!("{last:?}").contains(TOKEN), "{last:?}");
}
