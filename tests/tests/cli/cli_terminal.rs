//! `trident watch --progress tty` in a real terminal: tmux runs it in a
//! detached pane of fixed size and the test reads the screen. Also checks
//! that NO_COLOR turns the colours off on a real terminal.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use trident_e2e::tmux::Tmux;

/// Terminal size of the panes (columns, rows).
const SIZE: (u16, u16) = (120, 30);
use trident_e2e::fixture::{InstallFixture, ScriptHook};
use trident_e2e::{Daemon, bin_path};

/// An install whose preServicing script logs a line every 0.1 s for 4 s.
fn fixture() -> (InstallFixture, PathBuf) {
    let fx = InstallFixture::small();
    let config = fx.config("disk").script(
        ScriptHook::PreServicing,
        "slow",
        "i=0; while [ $i -lt 40 ]; do echo tick-$i; i=$((i+1)); sleep 0.1; done",
    );
    let path = fx.write("hc", &config);
    (fx, path)
}

fn spawn_install(socket: &Path, config: &Path) -> Child {
    Command::new(bin_path("trident"))
        .arg("--socket")
        .arg(socket)
        .args(["install", "--progress", "plain"])
        .arg(config)
        .env_remove("TRIDENT_SOCKET")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn install")
}

#[tokio::test(flavor = "multi_thread")]
async fn watch_in_a_real_terminal_draws_bars_the_operation_line_and_log_lines() -> anyhow::Result<()>
{
    let (_fx, config) = fixture();
    let daemon = Daemon::builder()
        .args(["--inactivity-timeout", "0"])
        .spawn()
        .await?;
    let tmux = Tmux::new("watch");
    let watch = format!(
        "{} --socket {} watch --wait --progress tty; echo watch-exit=$?; sleep 60",
        bin_path("trident").display(),
        daemon.socket_path().display()
    );
    tmux.start(
        "color",
        SIZE,
        &format!("env -u NO_COLOR TERM=xterm-256color {watch}"),
    );
    tmux.start("plain", SIZE, &format!("env NO_COLOR=1 {watch}"));
    // Both watches are waiting before the install starts (no fixed sleep).
    for session in ["color", "plain"] {
        tmux.wait_for(session, "watch to wait", |s| {
            s.contains("waiting for the next servicing operation")
        });
    }
    let mut install = spawn_install(daemon.socket_path(), &config);

    // While the script runs: the operation line with elapsed time, the
    // running phase and the last log lines under it.
    let screen = tmux.wait_for("color", "the running phase with log lines", |s| {
        s.contains("▶ Run preServicing scripts") && s.contains("│ info tick-")
    });
    assert!(screen.contains("● Install"), "{screen}");
    assert!(screen.contains("running"), "{screen}");
    let shown_logs = screen
        .lines()
        .filter(|l| l.contains("│ info tick-"))
        .count();
    assert!(
        (1..=5).contains(&shown_logs),
        "last few log lines only:\n{screen}"
    );

    // Later: a bytes bar with rate/ETA, or (if the write was quick) the
    // finished phase line with its size.
    let screen = tmux.wait_for("color", "the write phase", |s| s.contains("root-a"));
    assert!(screen.contains("MiB"), "{screen}");

    let status = install.wait()?;
    assert_eq!(status.code(), Some(0));
    let screen = tmux.wait_for("color", "watch to exit", |s| s.contains("watch-exit="));
    assert!(screen.contains("watch-exit=0"), "{screen}");
    assert!(screen.contains("✔ Install"), "{screen}");
    assert!(screen.contains("succeeded"), "{screen}");
    assert!(screen.contains("✔ Run preServicing scripts"), "{screen}");
    // Each phase once on screen: the frame was redrawn in place.
    let phase_lines = screen
        .lines()
        .filter(|l| l.contains("Run preServicing scripts"))
        .count();
    assert_eq!(phase_lines, 1, "{screen}");

    // Colours on a terminal, none with NO_COLOR.
    assert!(
        tmux.screen("color", true).contains("\u{1b}["),
        "no colour sequences"
    );
    let plain = tmux.wait_for("plain", "the NO_COLOR watch to exit", |s| {
        s.contains("watch-exit=")
    });
    assert!(plain.contains("✔ Install"), "{plain}");
    let escapes = tmux.screen("plain", true);
    assert!(
        !escapes.contains("\u{1b}[3"),
        "NO_COLOR output has colours:\n{escapes:?}"
    );
    Ok(())
}
