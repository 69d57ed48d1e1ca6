//! Every retry of an image download (`http(s)://` or `oci://`, COSI or
//! extension image) as a warning on the telemetry bus: the image source
//! (trident-cosi, which logs nothing itself) reports each retry to the
//! observer in the engine's `SourceOptions`, on the thread that reads the
//! image, so the record belongs to the running operation and shows in
//! `trident watch`, `trident logs` and the servicing stream.

use std::time::Duration;

use trident_cosi::{RetryNotice, RetryObserver};
use trident_host::redact::url::{redact_url, redact_urls};

/// The observer the engine opens image sources with.
pub fn observer() -> RetryObserver {
    RetryObserver::new(log_retry)
}

/// One retry as a structured warning: the URL without its credentials,
/// the attempt, the byte the download resumes at and why.
fn log_retry(notice: &RetryNotice) {
    let url = redact_url(&notice.url);
    // A reason may quote a URL (a redirect, the registry's blob URL).
    let reason = redact_urls(&notice.reason);
    let message = message(notice, &url, &reason);
    tracing::warn!(
        url = %url,
        attempt = notice.attempt,
        max_retries = notice.max_retries,
        offset = notice.offset,
        total = notice.total,
        delay_ms = u64::try_from(notice.delay.as_millis()).unwrap_or(u64::MAX),
        restart = notice.restart,
        reason = %reason,
        "{message}"
    );
}

/// The line a person reads in `trident watch`.
fn message(notice: &RetryNotice, url: &str, reason: &str) -> String {
    let at = match notice.total {
        Some(total) => format!("byte {} of {total}", notice.offset),
        None => format!("byte {}", notice.offset),
    };
    if notice.restart {
        return format!(
            "download of {url}: the server does not serve ranges, reading it again from byte 0 and skipping the {} bytes already received",
            notice.offset
        );
    }
    format!(
        "download of {url} broke at {at}: {reason}; retry {} of {} in {}, resuming at byte {}",
        notice.attempt,
        notice.max_retries,
        seconds(notice.delay),
        notice.offset
    )
}

/// "750 ms" under a second, else "1.5 s".
fn seconds(delay: Duration) -> String {
    if delay < Duration::from_secs(1) {
        format!("{} ms", delay.as_millis())
    } else {
        format!("{:.1} s", delay.as_secs_f64())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn notice(url: &str) -> RetryNotice {
        RetryNotice {
            url: url.to_owned(),
            attempt: 2,
            max_retries: 10,
            offset: 4096,
            total: Some(8192),
            reason: "connection reset".to_owned(),
            delay: Duration::from_millis(1500),
            restart: false,
        }
    }

    #[test]
    fn the_line_says_where_the_download_resumes_and_why_without_credentials() {
        let n = notice("https://u:pa55@host/i.cosi?sig=s3cr3t");
        let url = redact_url(&n.url);
        let line = message(&n, &url, &n.reason);
        assert_eq!(
            line,
            "download of https://u:[REDACTED]@host/i.cosi?sig=[REDACTED] broke at byte 4096 of 8192: connection reset; retry 2 of 10 in 1.5 s, resuming at byte 4096"
        );
        let restart = RetryNotice {
            restart: true,
            ..notice("http://host/i.cosi")
        };
        let line = message(&restart, &restart.url, &restart.reason);
        assert!(line.contains("does not serve ranges"), "{line}");
        assert!(line.contains("skipping the 4096 bytes"), "{line}");
    }
}
