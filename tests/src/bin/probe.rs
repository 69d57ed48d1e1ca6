//! `trident-e2e-probe SOCKET [CALLS [PAUSE_MS]]`: calls Version on the
//! daemon at SOCKET (CALLS times on one connection, default 1; with
//! PAUSE_MS, once more after that pause) and prints the last answer:
//! `ok <version> <commit>` (exit 0) or `status <code> <message>` (exit 1) /
//! `error <message>` (exit 2). The e2e tests run it as other users to see
//! what the daemon's peer check answers.

use std::process::ExitCode;
use std::time::Duration;

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let Some(socket) = args.next() else {
        eprintln!("usage: trident-e2e-probe SOCKET [CALLS [PAUSE_MS]]");
        return ExitCode::from(2);
    };
    let calls: u32 = args.next().and_then(|n| n.parse().ok()).unwrap_or(1);
    let pause: Option<u64> = args.next().and_then(|n| n.parse().ok());
    let channel = match trident_e2e::uds_channel(socket).await {
        Ok(channel) => channel,
        Err(error) => {
            println!("error {error:#}");
            return ExitCode::from(2);
        }
    };
    let mut client = trident_proto::v1::version_service_client::VersionServiceClient::new(channel);
    let mut result = client.version(trident_proto::v1::VersionRequest {}).await;
    for _ in 1..calls {
        result = client.version(trident_proto::v1::VersionRequest {}).await;
    }
    if let Some(ms) = pause {
        tokio::time::sleep(Duration::from_millis(ms)).await;
        result = client.version(trident_proto::v1::VersionRequest {}).await;
    }
    match result {
        Ok(response) => {
            let response = response.into_inner();
            println!("ok {} {}", response.version, response.git_commit);
            ExitCode::SUCCESS
        }
        Err(status) => {
            println!("status {:?} {}", status.code(), status.message());
            ExitCode::from(1)
        }
    }
}
