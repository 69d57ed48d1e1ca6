//! Credentials inside URLs: the password of `scheme://user:PASSWORD@host`
//! and the values of query parameters that sign or authorise a request
//! (Azure SAS `sig`, AWS and GCS signatures and credentials, tokens, API
//! keys). Image, extension, recovery-key and legacy-bridge URLs carry them;
//! they are secrets like any other ([`super::Secrets::of_config`] collects
//! them) and every text that may quote a URL goes through [`redact_urls`].
//! Other parts of a URL stay: an operator needs to see which host and file
//! were asked for.

use std::borrow::Cow;

use super::{REDACTED, is_secret_name};

/// Query parameter names (compared lowercased) whose values are
/// credentials, besides names that look secret ([`is_secret_name`]).
const SECRET_QUERY_NAMES: [&str; 12] = [
    "sig",
    "signature",
    "x-amz-signature",
    "x-amz-credential",
    "x-amz-security-token",
    "x-goog-signature",
    "x-goog-credential",
    "key",
    "apikey",
    "api-key",
    "api_key",
    "code",
];

/// Whether a query parameter named `name` carries a credential.
pub fn is_secret_query_name(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    SECRET_QUERY_NAMES.contains(&lower.as_str()) || is_secret_name(name)
}

/// The pieces of one URL (byte ranges into it) that are credentials.
fn secret_ranges(url: &str) -> Vec<(usize, usize)> {
    let mut ranges = Vec::new();
    let Some(scheme_end) = url.find("://") else {
        return ranges;
    };
    let authority_start = scheme_end + 3;
    let authority_end = url[authority_start..]
        .find(['/', '?', '#'])
        .map_or(url.len(), |i| authority_start + i);
    let authority = &url[authority_start..authority_end];
    if let Some(at) = authority.rfind('@') {
        let userinfo = &authority[..at];
        if let Some(colon) = userinfo.find(':')
            && colon + 1 < userinfo.len()
        {
            ranges.push((authority_start + colon + 1, authority_start + at));
        }
    }
    if let Some(q) = url[authority_end..].find('?') {
        let query_start = authority_end + q + 1;
        let query_end = url[query_start..]
            .find('#')
            .map_or(url.len(), |i| query_start + i);
        let mut at = query_start;
        for pair in url[query_start..query_end].split('&') {
            if let Some(eq) = pair.find('=')
                && eq + 1 < pair.len()
                && is_secret_query_name(&pair[..eq])
            {
                ranges.push((at + eq + 1, at + pair.len()));
            }
            at += pair.len() + 1;
        }
    }
    ranges
}

/// The credentials of `url`, as written (for value redaction).
pub fn secret_parts(url: &str) -> Vec<String> {
    secret_ranges(url)
        .into_iter()
        .map(|(start, end)| url[start..end].to_owned())
        .collect()
}

/// `url` with its credentials replaced by [`REDACTED`].
pub fn redact_url(url: &str) -> Cow<'_, str> {
    let ranges = secret_ranges(url);
    if ranges.is_empty() {
        return Cow::Borrowed(url);
    }
    let mut out = String::with_capacity(url.len());
    let mut from = 0;
    for (start, end) in ranges {
        out.push_str(&url[from..start]);
        out.push_str(REDACTED);
        from = end;
    }
    out.push_str(&url[from..]);
    Cow::Owned(out)
}

/// Characters that end a URL quoted in free text.
fn ends_url(c: char) -> bool {
    c.is_whitespace() || matches!(c, '"' | '\'' | '<' | '>' | '`' | ')' | ']' | '}' | ',')
}

/// `text` with the credentials of every URL in it redacted.
pub fn redact_urls(text: &str) -> Cow<'_, str> {
    if !text.contains("://") {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    let mut changed = false;
    while let Some(sep) = rest.find("://") {
        // Back over the scheme's characters.
        let start = rest[..sep]
            .rfind(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')))
            .map_or(0, |i| i + 1);
        let end = rest[sep..].find(ends_url).map_or(rest.len(), |i| sep + i);
        out.push_str(&rest[..start]);
        let url = &rest[start..end];
        let redacted = redact_url(url);
        changed |= matches!(redacted, Cow::Owned(_));
        out.push_str(&redacted);
        rest = &rest[end..];
    }
    if !changed {
        return Cow::Borrowed(text);
    }
    out.push_str(rest);
    Cow::Owned(out)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn userinfo_passwords_and_signature_parameters_are_redacted_the_rest_kept() {
        assert_eq!(
            redact_url("http://user:PASS@host:8080/a.cosi"),
            "http://user:[REDACTED]@host:8080/a.cosi"
        );
        assert_eq!(
            redact_url(
                "https://acct.blob.core.windows.net/c/img.cosi?sv=2022-11-02&se=2026-12-08&sp=r&sig=abc%2Fdef%3D"
            ),
            "https://acct.blob.core.windows.net/c/img.cosi?sv=2022-11-02&se=2026-12-08&sp=r&sig=[REDACTED]"
        );
        assert_eq!(
            redact_url("https://s3/x?X-Amz-Credential=AKIA&X-Amz-Signature=f00&a=1#frag"),
            "https://s3/x?X-Amz-Credential=[REDACTED]&X-Amz-Signature=[REDACTED]&a=1#frag"
        );
        assert_eq!(
            redact_url("oci://reg/repo:tag"),
            "oci://reg/repo:tag",
            "a tag is not a password"
        );
        assert!(matches!(redact_url("file:///a/b.cosi"), Cow::Borrowed(_)));
        assert_eq!(
            secret_parts("http://u:p%40ss@h/x?token=t1&sig=s1"),
            ["p%40ss", "t1", "s1"]
        );
    }

    #[test]
    fn urls_in_free_text_are_redacted_wherever_they_stand() {
        let text = "GET \"http://u:hunter2@10.0.0.1/img.cosi?sig=XYZ\" failed; retry https://h/x?api-key=K.";
        assert_eq!(
            redact_urls(text),
            "GET \"http://u:[REDACTED]@10.0.0.1/img.cosi?sig=[REDACTED]\" failed; retry https://h/x?api-key=[REDACTED]"
        );
        assert!(matches!(
            redact_urls("no url, only a:// odd word"),
            Cow::Borrowed(_)
        ));
    }
}
