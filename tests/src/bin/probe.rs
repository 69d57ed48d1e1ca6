//! `trident-e2e-probe SOCKET`: calls Version on the daemon at SOCKET and
//! prints `ok <version> <commit>` (exit 0) or `status <code> <message>`
//! (exit 1) / `error <message>` (exit 2). The e2e tests run it as other
//! users to see what the daemon's peer check answers.

use std::process::ExitCode;

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let Some(socket) = std::env::args().nth(1) else {
        eprintln!("usage: trident-e2e-probe SOCKET");
        return ExitCode::from(2);
    };
    let channel = match trident_e2e::uds_channel(socket).await {
        Ok(channel) => channel,
        Err(error) => {
            println!("error {error:#}");
            return ExitCode::from(2);
        }
    };
    let mut client = trident_proto::v1::version_service_client::VersionServiceClient::new(channel);
    match client.version(trident_proto::v1::VersionRequest {}).await {
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
