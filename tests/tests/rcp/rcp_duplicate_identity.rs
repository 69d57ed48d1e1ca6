//! Two agents with the same host identity (issue 28, case 4), with the real
//! binaries: two `trident-rcp` processes holding one certificate against
//! one `trident rcp-listen`, in both protocols. The newer connection wins:
//! the older tunnel and every stream through it (a `trident logs -f`) are
//! closed when it is reported `disconnected`; identities that keep
//! replacing each other are reported once as a duplicate and the listener
//! stops the flapping (see rcp/README.md, "Two agents with one identity").

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use trident_e2e::rcp_support::{AgentProc, Lines, ListenerProc, ORCHESTRATOR, Pki, host_daemon};
use trident_e2e::{Daemon, bin_path};
use trident_rcp::TlsFiles;
use trident_rcp::pki::LeafSpec;

const UPSTREAM: [&str; 2] = ["--protocol", "upstream"];
/// How long after the `disconnected` event the old stream's end may show
/// in the client (its own reaction time; the tunnel is closed before).
const CLIENT_REACTION: Duration = Duration::from_secs(3);

struct Setup {
    pki: Pki,
    daemon: Daemon,
    files: TlsFiles,
}

async fn setup() -> Setup {
    let pki = Pki::new();
    let daemon = host_daemon().await;
    let files = pki.host("host-1", &LeafSpec::dns("host-1"));
    Setup { pki, daemon, files }
}

fn agent(s: &Setup, listener: &ListenerProc, name: &str, protocol: &[&str]) -> AgentProc {
    let state = s.pki.dir.path().join(format!("{name}.state.json"));
    AgentProc::start_with_args(
        listener.addr,
        ORCHESTRATOR,
        &s.files,
        s.daemon.socket_path(),
        &state,
        protocol,
    )
}

/// `trident logs -f` through the host's socket, stderr followed.
struct Follower {
    child: Child,
    stderr: Lines,
}

impl Follower {
    fn start(socket: &str) -> Follower {
        let mut child = Command::new(bin_path("trident"))
            .args(["--socket", socket, "logs", "-f"])
            .env_remove("TRIDENT_SOCKET")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = Lines::follow(child.stderr.take().unwrap());
        Follower { child, stderr }
    }
}

impl Drop for Follower {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// How long until `lines` has a line containing `needle` (at most `limit`).
fn shows_within(lines: &Lines, needle: &str, limit: Duration) -> Option<Duration> {
    let started = Instant::now();
    while started.elapsed() < limit {
        if lines.all().iter().any(|l| l.contains(needle)) {
            return Some(started.elapsed());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    None
}

fn events_of(listener: &ListenerProc, kind: &str) -> Vec<Value> {
    listener
        .all_events()
        .into_iter()
        .filter(|e| e["event"] == kind)
        .collect()
}

/// The first agent is connected and a `logs -f` follows through its
/// tunnel; a second agent with the same certificate connects: the first
/// tunnel is reported replaced, and by then the follower's stream has ended.
fn newer_wins_and_closes_the_old_stream(s: &Setup, protocol: &[&str], listener: &ListenerProc) {
    let _first = agent(s, listener, "first", protocol);
    let connected = listener.nth_event("connected", 0, |e| e["host"] == "host-1");
    let socket = connected["socket"].as_str().unwrap().to_owned();
    let follower = Follower::start(&socket);
    // The follower is streaming once the daemon has served it for a while.
    std::thread::sleep(Duration::from_secs(2));
    assert!(
        !follower.stderr.text().contains("reconnecting"),
        "{}",
        follower.stderr.text()
    );

    let _second = agent(s, listener, "second", protocol);
    let replaced = listener.nth_event("disconnected", 0, |e| e["host"] == "host-1");
    let reason = replaced["reason"].as_str().unwrap();
    assert!(
        reason.contains("replaced by a newer connection from"),
        "{replaced}"
    );
    assert_eq!(replaced["addr"], connected["addr"], "{replaced}");
    let ended = shows_within(&follower.stderr, "reconnecting", CLIENT_REACTION);
    let Some(ended) = ended else {
        panic!(
            "the follower's stream through the replaced tunnel did not end:\n{}",
            follower.stderr.text()
        );
    };
    eprintln!("the follower showed its stream's end {ended:?} after the event was read");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_newer_connection_replaces_the_tunnel_and_ends_its_streams_before_it_is_reported() {
    let s = setup().await;
    let listener = ListenerProc::start(&s.pki, &[]);
    newer_wins_and_closes_the_old_stream(&s, &[], &listener);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upstream_protocol_a_newer_connection_replaces_the_one_in_use_and_ends_its_stream() {
    let s = setup().await;
    let listener = ListenerProc::start(&s.pki, &UPSTREAM);
    newer_wins_and_closes_the_old_stream(&s, &UPSTREAM, &listener);
}

/// Two agents with one certificate for `observe`: exactly one duplicate
/// event naming the host and both peers, at most `limit` replacements,
/// and the host still reachable through its socket.
fn flapping_is_reported_once_and_bounded(s: &Setup, protocol: &[&str]) {
    let limit = 3;
    let mut args = vec!["--duplicate-limit", "3", "--duplicate-backoff", "120s"];
    args.extend_from_slice(protocol);
    let listener = ListenerProc::start(&s.pki, &args);
    let _a = agent(s, &listener, "a", protocol);
    listener.nth_event("connected", 0, |e| e["host"] == "host-1");
    let _b = agent(s, &listener, "b", protocol);
    let duplicate = listener.nth_event("duplicate", 0, |e| e["host"] == "host-1");
    let (kept, other) = (
        duplicate["addr"].as_str().unwrap(),
        duplicate["other_addr"].as_str().unwrap(),
    );
    assert_ne!(kept, other, "{duplicate}");
    assert_eq!(duplicate["replacements"], limit, "{duplicate}");

    // The agents go on dialling; the listener no longer lets them flap.
    let connects_then = events_of(&listener, "connected").len();
    std::thread::sleep(Duration::from_secs(6));
    let events = listener.all_events();
    let replaced = events
        .iter()
        .filter(|e| {
            e["event"] == "disconnected"
                && e["reason"].as_str().is_some_and(|r| r.contains("replaced"))
        })
        .count();
    assert_eq!(replaced, limit as usize, "{events:#?}");
    eprintln!(
        "{replaced} replacements, 1 duplicate event; {} events in all",
        events.len()
    );
    assert_eq!(events_of(&listener, "duplicate").len(), 1, "{events:#?}");
    let connected = events_of(&listener, "connected");
    assert_eq!(connected.len(), connects_then, "{events:#?}");

    // The connection kept still serves the host.
    let socket = connected.last().unwrap()["socket"]
        .as_str()
        .unwrap()
        .to_owned();
    let out = Command::new(bin_path("trident"))
        .args(["--socket", &socket, "version"])
        .env_remove("TRIDENT_SOCKET")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_agents_with_one_identity_are_reported_once_as_duplicate_and_stop_flapping() {
    let s = setup().await;
    flapping_is_reported_once_and_bounded(&s, &[]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upstream_protocol_two_agents_with_one_identity_are_reported_once_and_stop_flapping() {
    let s = setup().await;
    flapping_is_reported_once_and_bounded(&s, &UPSTREAM);
}
