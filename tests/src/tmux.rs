//! A private tmux server for tests of the CLI in a real terminal: each
//! test gets its own server (own socket name), runs commands in detached
//! sessions of a fixed size and reads their screens. Killed on drop.

use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// How long [`Tmux::wait_for`] waits for a screen (generous: the machine
/// may be loaded; a test never asserts on how long it took).
pub const WAIT: Duration = Duration::from_secs(120);

/// A private tmux server.
#[derive(Debug)]
pub struct Tmux {
    server: String,
}

impl Tmux {
    /// A server named after `test` and this process (tests run in parallel).
    pub fn new(test: &str) -> Tmux {
        Tmux {
            server: format!("trident-e2e-{test}-{}", std::process::id()),
        }
    }

    /// Runs `tmux ARGS` against this server.
    ///
    /// # Panics
    /// When tmux cannot be run (not installed: scripts/test.sh installs it).
    pub fn cmd(&self, args: &[&str]) -> Output {
        Command::new("tmux")
            .args(["-u", "-L", &self.server])
            .args(args)
            .output()
            .unwrap_or_else(|e| panic!("cannot run tmux: {e}"))
    }

    /// Starts `command` in a detached session `session` of `width` x
    /// `height` cells.
    ///
    /// # Panics
    /// When tmux refuses the session.
    pub fn start(&self, session: &str, (width, height): (u16, u16), command: &str) {
        let (width, height) = (width.to_string(), height.to_string());
        let out = self.cmd(&[
            "new-session",
            "-d",
            "-s",
            session,
            "-x",
            &width,
            "-y",
            &height,
            command,
        ]);
        assert!(
            out.status.success(),
            "tmux new-session: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// The visible screen of `session`; with `escapes`, including colour
    /// sequences.
    pub fn screen(&self, session: &str, escapes: bool) -> String {
        let mut args = vec!["capture-pane", "-p", "-t", session];
        if escapes {
            args.push("-e");
        }
        String::from_utf8_lossy(&self.cmd(&args).stdout).into_owned()
    }

    /// Polls the screen of `session` until `pred` holds; returns it.
    ///
    /// # Panics
    /// After [`WAIT`], with `what` and the last screen.
    pub fn wait_for(&self, session: &str, what: &str, pred: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + WAIT;
        loop {
            let screen = self.screen(session, false);
            if pred(&screen) {
                return screen;
            }
            assert!(
                Instant::now() < deadline,
                "timed out waiting for {what}; screen:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.cmd(&["kill-server"]);
    }
}
