//! The servicing stream is built from the bus: on SIGTERM, Watch followers
//! end (so they do not hold the exit), but a servicing stream still runs to
//! its operation's Completed while the operation finishes within the grace.

#![allow(clippy::unwrap_used)]

use std::time::Duration;

use futures::StreamExt;
use nix::sys::signal::Signal;
use trident_e2e::servicing_support::{Clients, Fixture, hc};
use trident_proto::v1::{self, servicing_response};

#[tokio::test(flavor = "multi_thread")]
async fn sigterm_mid_operation_still_ends_the_servicing_stream_with_completed() {
    let fx = Fixture::new();
    let v1 = fx.image("v1", 131, None);
    let v2 = fx.image("v2", 132, None);
    let mut d = trident_e2e::Daemon::builder()
        .arg("--inactivity-timeout")
        .arg("0")
        .arg("--shutdown-grace")
        .arg("60s")
        .spawn()
        .await
        .unwrap();
    let mut c = Clients::new(&d).await;
    c.provision(&fx.config(&v1, "")).await;

    let slow = "scripts:\n  preServicing:\n  - name: slow\n    runOn: [ab-update]\n    content: \"echo waiting; sleep 3\"\n";
    let mut stream = c
        .update
        .update_stage(v1::StageUpdateRequest {
            config: Some(hc(&fx.config(&v2, slow))),
        })
        .await
        .unwrap()
        .into_inner();
    let first = stream.next().await.unwrap().unwrap();
    assert!(matches!(
        first.response,
        Some(servicing_response::Response::Started(_))
    ));
    d.signal(Signal::SIGTERM).unwrap();

    let mut completed = None;
    while let Some(message) = stream.next().await {
        if let Some(servicing_response::Response::Completed(done)) = message.unwrap().response {
            completed = Some(done);
        }
    }
    let completed = completed.expect("the stream ends with Completed");
    assert_eq!(completed.status, v1::StatusCode::Success as i32);
    let exit = d.wait_exit(Duration::from_secs(120)).await.unwrap();
    assert!(exit.is_some_and(|s| s.success()), "{exit:?}");
}
