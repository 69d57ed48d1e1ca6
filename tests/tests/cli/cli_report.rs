//! What a support engineer opens, through the real CLI and daemon:
//! `trident traces --format chrome` (Chrome trace-event JSON whose events
//! nest like the spans) and `trident diagnose`'s self-contained
//! `report.html`, opened in headless Chromium (its DOM shows the error and
//! the phases, a `<script>` in a log message stays text; the screenshot is
//! kept under target/<profile>/test-artifacts/).

#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;
use trident_e2e::fixture::{InstallFixture, ScriptHook};
use trident_e2e::{bin_dir, daemon, trident_cli};

/// A log line the failing script prints: markup that must stay text.
const INJECTION: &str = "<script>document.title='owned'</script>";

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn ok(socket: &Path, args: &[&str], code: i32) -> String {
    let out = trident_cli(socket, args);
    assert_eq!(
        out.status.code(),
        Some(code),
        "{args:?}: {}",
        text(&out.stderr)
    );
    text(&out.stdout)
}

/// The complete events of a trace document.
fn complete_events(doc: &Value) -> Vec<&Value> {
    doc["traceEvents"]
        .as_array()
        .expect("traceEvents")
        .iter()
        .filter(|e| e["ph"] == "X")
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn traces_format_chrome_writes_nested_complete_events_named_after_the_phases() {
    let fx = InstallFixture::small();
    let d = daemon().await;
    let s = d.socket_path();
    let config = fx.write("ok", &fx.config("ok"));
    ok(
        s,
        &["install", config.to_str().unwrap(), "--progress", "plain"],
        0,
    );

    let doc: Value = serde_json::from_str(&ok(s, &["traces", "--format", "chrome"], 0))
        .expect("the trace is JSON");
    let events = complete_events(&doc);
    assert!(events.len() > 3, "{doc}");
    let by_id = |id: &str| events.iter().find(|e| e["args"]["span_id"] == id);
    let mut nested = 0;
    for event in &events {
        for key in ["ts", "dur", "pid", "tid"] {
            assert!(event[key].is_u64(), "{key} in {event}");
        }
        let Some(parent) = by_id(event["args"]["parent_span_id"].as_str().unwrap()) else {
            continue;
        };
        let (ts, end) = (
            event["ts"].as_u64().unwrap(),
            event["ts"].as_u64().unwrap() + event["dur"].as_u64().unwrap(),
        );
        let (pts, pend) = (
            parent["ts"].as_u64().unwrap(),
            parent["ts"].as_u64().unwrap() + parent["dur"].as_u64().unwrap(),
        );
        assert!(pts <= ts && end <= pend, "{event} inside {parent}");
        nested += 1;
    }
    assert!(nested > 0, "some events have parents: {doc}");

    // The names are the phases `traces` shows as a tree.
    let tree = ok(s, &["traces"], 0);
    let names: Vec<&str> = events.iter().map(|e| e["name"].as_str().unwrap()).collect();
    assert!(names.contains(&"servicing_operation"), "{names:?}");
    for name in &names {
        assert!(tree.contains(name), "{name} in {tree}");
    }
    assert!(
        names.iter().any(|n| n.contains("finalize")),
        "a finalize phase: {names:?}"
    );
    let root = events
        .iter()
        .find(|e| e["name"] == "servicing_operation")
        .unwrap();
    assert!(
        root["args"].as_object().unwrap().len() > 4,
        "span fields in args: {root}"
    );
}

/// Runs headless Chromium on `page` with `flags`.
fn chromium(page: &Path, flags: &[String]) -> Output {
    let profile = tempfile::tempdir().expect("tempdir");
    Command::new("chromium")
        .args(["--headless", "--no-sandbox", "--disable-gpu"])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(flags)
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("run chromium (scripts/test.sh installs it)")
}

#[tokio::test(flavor = "multi_thread")]
async fn diagnose_report_html_shows_the_error_and_phases_in_headless_chromium() {
    let fx = InstallFixture::small();
    let d = daemon().await;
    let s = d.socket_path();
    // Fails after the image is written, so the operation has byte phases.
    let script = format!("echo \"{INJECTION}\"; echo failing now >&2; exit 7");
    let config = fx.write(
        "fail",
        &fx.config("fail")
            .script(ScriptHook::PostProvision, "breaks", &script),
    );
    ok(
        s,
        &["install", config.to_str().unwrap(), "--progress", "plain"],
        2,
    );

    let bundle = fx.path("bundle.tar");
    let state_dir = d.state_dir().to_str().unwrap().to_string();
    ok(
        s,
        &[
            "diagnose",
            "-o",
            bundle.to_str().unwrap(),
            "--state-dir",
            &state_dir,
        ],
        0,
    );
    let out = Command::new("tar")
        .arg("-xf")
        .arg(&bundle)
        .arg("-C")
        .arg(fx.dir.path())
        .arg("report.html")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let page = fx.path("report.html");
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(
        !html.contains("<script"),
        "no script, and the injected one is escaped"
    );
    assert!(
        html.contains("&lt;script&gt;"),
        "the log line is there as text"
    );
    for external in ["src=\"http", "href=\"http", "<link", "@import"] {
        assert!(!html.contains(external), "self-contained: {external}");
    }

    let out = chromium(&page, &["--dump-dom".to_string()]);
    let dom = text(&out.stdout);
    assert!(
        out.status.success() && dom.contains("</html>"),
        "{}",
        text(&out.stderr)
    );
    assert!(
        dom.contains("<title>Trident operation"),
        "the title is ours: {dom}"
    );
    assert!(!dom.contains("owned</title>"), "no script ran");
    assert!(dom.contains("id=\"error-subkind\""), "{dom}");
    assert!(
        dom.contains("script-failed") || dom.contains("breaks"),
        "the error names the script: {dom}"
    );
    assert!(dom.contains("failing now"), "recent logs: {dom}");
    assert!(dom.contains("class=\"phase\""), "phase rows: {dom}");
    assert!(dom.contains("bytes/s"), "a byte phase's throughput: {dom}");
    assert!(dom.contains("<svg id=\"waterfall\""), "{dom}");
    assert!(dom.contains("servicing_operation"), "{dom}");
    assert!(dom.contains("id=\"host-status\""), "{dom}");

    let artifacts = bin_dir().join("test-artifacts");
    std::fs::create_dir_all(&artifacts).unwrap();
    let shot = artifacts.join("diagnose-report.png");
    let _ = std::fs::remove_file(&shot);
    let out = chromium(
        &page,
        &[
            format!("--screenshot={}", shot.display()),
            "--window-size=1280,1600".to_string(),
        ],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let png = std::fs::read(&shot).expect("screenshot written");
    assert!(
        png.starts_with(b"\x89PNG") && png.len() > 10_000,
        "a real screenshot"
    );
}
