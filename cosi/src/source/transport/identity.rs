//! What an HTTP answer says about the file it carries (its strong ETag,
//! Last-Modified and length) and about the range it holds, so a resumed
//! request asks for the same file (`If-Range`) and a different one is
//! told apart.

/// What the first answer said about the file, to ask for (and check) the
/// same file again.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Identity {
    /// A strong `ETag` (a weak one cannot be used with `If-Range`).
    pub(super) etag: Option<String>,
    pub(super) last_modified: Option<String>,
    /// The whole file's length (`Content-Length` of a `200`).
    pub(super) length: Option<u64>,
}

impl Identity {
    pub(super) fn of(response: &ureq::http::Response<ureq::Body>, length: Option<u64>) -> Identity {
        Identity {
            etag: header(response, "etag").filter(|tag| !tag.starts_with("W/")),
            last_modified: header(response, "last-modified"),
            length,
        }
    }

    /// The `If-Range` value: the strong ETag, else the date.
    pub(super) fn validator(&self) -> Option<&str> {
        self.etag.as_deref().or(self.last_modified.as_deref())
    }

    /// How `later` (another answer for the same URL) shows a different
    /// file, if it does: a validator or length both answers carry differs.
    pub(super) fn changed(&self, later: &Identity) -> Option<String> {
        let differs = |what: &str, a: &Option<String>, b: &Option<String>| match (a, b) {
            (Some(a), Some(b)) if a != b => Some(format!("its {what} was {a} and is now {b}")),
            _ => None,
        };
        differs("ETag", &self.etag, &later.etag)
            .or_else(|| differs("Last-Modified", &self.last_modified, &later.last_modified))
            .or_else(|| match (self.length, later.length) {
                (Some(a), Some(b)) if a != b => {
                    Some(format!("its length was {a} bytes and is now {b}"))
                }
                _ => None,
            })
    }
}

pub(super) fn header(response: &ureq::http::Response<ureq::Body>, name: &str) -> Option<String> {
    response
        .headers()
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(|v| v.trim().to_owned())
        .filter(|v| !v.is_empty())
}

/// `Content-Range: bytes FIRST-LAST/TOTAL` as (FIRST, TOTAL); TOTAL may be `*`.
pub(super) fn content_range(value: &str) -> Option<(u64, Option<u64>)> {
    let rest = value.trim().strip_prefix("bytes ")?;
    let (range, total) = rest.split_once('/')?;
    let (first, _last) = range.split_once('-')?;
    let total = match total.trim() {
        "*" => None,
        n => Some(n.parse().ok()?),
    };
    Some((first.trim().parse().ok()?, total))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn content_range_gives_the_first_byte_and_the_total() {
        assert_eq!(content_range("bytes 100-199/200"), Some((100, Some(200))));
        assert_eq!(content_range("bytes 5-9/*"), Some((5, None)));
        assert_eq!(content_range("items 1-2/3"), None);
        assert_eq!(content_range("bytes x-9/10"), None);
    }

    #[test]
    fn a_different_validator_or_length_is_a_changed_file() {
        let first = Identity {
            etag: Some("\"a\"".to_owned()),
            last_modified: Some("Mon, 01 Jan 2024 00:00:00 GMT".to_owned()),
            length: Some(10),
        };
        assert_eq!(first.validator(), Some("\"a\""));
        assert_eq!(first.changed(&first.clone()), None);
        // A header one answer lacks says nothing.
        assert_eq!(first.changed(&Identity::default()), None);
        let retagged = Identity {
            etag: Some("\"b\"".to_owned()),
            ..first.clone()
        };
        assert!(first.changed(&retagged).unwrap().contains("ETag"));
        let longer = Identity {
            length: Some(11),
            ..first.clone()
        };
        assert!(first.changed(&longer).unwrap().contains("length"));
        let dated = Identity {
            etag: None,
            ..first.clone()
        };
        assert_eq!(dated.validator(), first.last_modified.as_deref());
    }
}
