//! PEM private key blocks (`-----BEGIN ... PRIVATE KEY-----`, any key type,
//! encrypted or not): their base64 body is replaced by [`REDACTED`], the
//! BEGIN and END lines stay so a reader still sees that a key was there.
//! Certificates and public keys are not secret and are left alone.

use std::borrow::Cow;

use super::REDACTED;

const BEGIN: &str = "-----BEGIN ";
const DASHES: &str = "-----";
const PRIVATE_KEY: &str = "PRIVATE KEY";

/// `text` with the body of every PEM private key block replaced. A block
/// without its END line is redacted to the end of `text` (a cut key is
/// still key material).
pub fn redact_private_keys(text: &str) -> Cow<'_, str> {
    if !text.contains(PRIVATE_KEY) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    let mut changed = false;
    while let Some((before, label, body_and_after)) = next_private_key(rest) {
        out.push_str(before);
        out.push_str(BEGIN);
        out.push_str(label);
        out.push_str(DASHES);
        out.push_str(REDACTED);
        changed = true;
        let end = format!("-----END {label}-----");
        match body_and_after.find(&end) {
            Some(at) => rest = &body_and_after[at..],
            None => {
                rest = "";
                break;
            }
        }
    }
    if !changed {
        return Cow::Borrowed(text);
    }
    out.push_str(rest);
    Cow::Owned(out)
}

/// The next BEGIN line of a private key in `text`: what precedes it, its
/// label (e.g. `RSA PRIVATE KEY`) and what follows the BEGIN line's dashes.
fn next_private_key(text: &str) -> Option<(&str, &str, &str)> {
    let mut searched = 0;
    while let Some(at) = text[searched..].find(BEGIN) {
        let start = searched + at;
        let label_start = start + BEGIN.len();
        let after_label = &text[label_start..];
        let label_len = after_label.find(DASHES)?;
        let label = &after_label[..label_len];
        if label.ends_with(PRIVATE_KEY) && !label.contains('\n') {
            let body = &after_label[label_len + DASHES.len()..];
            return Some((&text[..start], label, body));
        }
        searched = label_start;
    }
    None
}

/// Whether `line` opens a private key block (for line-by-line output,
/// where BEGIN and END arrive as separate lines).
pub fn opens_private_key(line: &str) -> bool {
    next_private_key(line)
        .is_some_and(|(_, label, rest)| !rest.contains(&format!("-----END {label}-----")))
}

/// Whether `line` closes a private key block.
pub fn closes_private_key(line: &str) -> bool {
    line.contains("-----END ") && line.contains(PRIVATE_KEY)
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIBsecretbase64\nAwEHoUQDQg==\n-----END EC PRIVATE KEY-----\n";
    const CERT: &str = "-----BEGIN CERTIFICATE-----\nMIIBcertbody\n-----END CERTIFICATE-----\n";

    #[test]
    fn a_private_key_body_is_redacted_and_a_certificate_kept() {
        let text = format!("cert:\n{CERT}key:\n{KEY}tail");
        let out = redact_private_keys(&text);
        assert!(!out.contains("secretbase64"), "{out}");
        assert!(!out.contains("AwEHoUQDQg"), "{out}");
        assert!(out.contains("MIIBcertbody"), "{out}");
        assert!(
            out.contains("-----BEGIN EC PRIVATE KEY-----[REDACTED]-----END EC PRIVATE KEY-----"),
            "{out}"
        );
        assert!(out.ends_with("\ntail"), "{out}");
    }

    #[test]
    fn every_block_and_a_cut_block_are_redacted() {
        let cut = "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkq";
        let text = format!("{KEY}{KEY}{cut}");
        let out = redact_private_keys(&text);
        assert!(!out.contains("secretbase64"), "{out}");
        assert!(!out.contains("MIIEvQ"), "{out}");
        assert_eq!(out.matches(REDACTED).count(), 3, "{out}");
    }

    #[test]
    fn text_without_a_key_is_borrowed() {
        assert!(matches!(redact_private_keys(CERT), Cow::Borrowed(_)));
        assert!(matches!(
            redact_private_keys("a PRIVATE KEY is mentioned"),
            Cow::Borrowed(_)
        ));
    }

    #[test]
    fn line_by_line_block_edges_are_recognised() {
        assert!(opens_private_key("-----BEGIN OPENSSH PRIVATE KEY-----"));
        assert!(!opens_private_key("-----BEGIN CERTIFICATE-----"));
        assert!(!opens_private_key(KEY.trim_end()));
        assert!(closes_private_key("-----END OPENSSH PRIVATE KEY-----"));
        assert!(!closes_private_key("-----END CERTIFICATE-----"));
    }
}
