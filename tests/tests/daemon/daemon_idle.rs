//! Idle shutdown: the daemon exits by itself after --inactivity-timeout with
//! nothing active, never while a stream is open, and 0 disables it.

use std::time::Duration;

use tokio_stream::StreamExt;
use tonic_health::pb::{HealthCheckRequest, health_client::HealthClient};
use trident_e2e::Daemon;

#[tokio::test]
async fn exits_zero_after_the_inactivity_timeout_and_removes_the_socket() -> anyhow::Result<()> {
    let mut daemon = Daemon::builder()
        .args(["--inactivity-timeout", "1s"])
        .spawn()
        .await?;
    let status = daemon
        .wait_exit(Duration::from_secs(20))
        .await?
        .expect("idle daemon exits by itself");
    assert_eq!(status.code(), Some(0), "{}", daemon.stderr());
    assert!(
        daemon.stderr().contains("idle for 1s"),
        "{}",
        daemon.stderr()
    );
    assert!(!daemon.socket_path().exists());
    Ok(())
}

#[tokio::test]
async fn an_open_server_stream_keeps_the_daemon_alive() -> anyhow::Result<()> {
    let mut daemon = Daemon::builder()
        .args(["--inactivity-timeout", "1s"])
        .spawn()
        .await?;
    let channel = daemon.channel().await?;
    let mut health = HealthClient::new(channel.clone());
    // Watch is a server stream that stays open until the client drops it.
    let mut watch = health
        .watch(HealthCheckRequest {
            service: String::new(),
        })
        .await?
        .into_inner();
    watch.next().await.expect("first health status")?;
    drop(health);
    drop(channel);

    assert!(
        daemon.wait_exit(Duration::from_secs(4)).await?.is_none(),
        "daemon exited while a stream was open:\n{}",
        daemon.stderr()
    );
    trident_e2e::version(daemon.socket_path()).await?;

    drop(watch);
    let status = daemon
        .wait_exit(Duration::from_secs(20))
        .await?
        .expect("daemon exits once the stream is gone");
    assert_eq!(status.code(), Some(0));
    Ok(())
}

#[tokio::test]
async fn zero_inactivity_timeout_never_exits_on_its_own() -> anyhow::Result<()> {
    let mut daemon = Daemon::builder()
        .args(["--inactivity-timeout", "0"])
        .spawn()
        .await?;
    assert!(daemon.wait_exit(Duration::from_secs(3)).await?.is_none());
    trident_e2e::version(daemon.socket_path()).await?;
    Ok(())
}

#[tokio::test]
async fn sigterm_with_an_open_stream_exits_zero_after_the_grace_period() -> anyhow::Result<()> {
    let mut daemon = Daemon::builder()
        .args(["--inactivity-timeout", "0", "--shutdown-grace", "1s"])
        .spawn()
        .await?;
    let mut health = HealthClient::new(daemon.channel().await?);
    let mut watch = health
        .watch(HealthCheckRequest {
            service: String::new(),
        })
        .await?
        .into_inner();
    watch.next().await.expect("first health status")?;

    daemon.signal(nix::sys::signal::Signal::SIGTERM)?;
    let status = daemon
        .wait_exit(Duration::from_secs(20))
        .await?
        .expect("daemon exits after the grace period");
    assert_eq!(status.code(), Some(0), "{}", daemon.stderr());
    assert!(
        daemon.stderr().contains("grace period over"),
        "{}",
        daemon.stderr()
    );
    assert!(!daemon.socket_path().exists());
    Ok(())
}
