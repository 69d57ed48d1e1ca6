//! A manually started daemon answers Version over its Unix socket.

use trident_e2e::Daemon;

#[tokio::test]
async fn manual_start_answers_version_with_crate_version_and_commit() -> anyhow::Result<()> {
    let daemon = Daemon::start().await?;
    let version = trident_e2e::version(daemon.socket_path()).await?;
    assert_eq!(version.version, env!("CARGO_PKG_VERSION"));
    assert!(!version.git_commit.is_empty(), "git commit is empty");
    Ok(())
}
