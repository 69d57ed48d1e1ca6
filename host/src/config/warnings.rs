//! What a valid Host Configuration says that the daemon will not do, told
//! to the user instead of dropped without a word, and choices that are
//! valid but risky (a mirror's members sharing a disk). Never quotes a
//! value a secret could be in.

use super::{HostConfiguration, spans};

/// One sentence per ignored setting or risky choice, naming its key and
/// line.
///
/// `{type: locked, value: X}`: a locked password takes no value (upstream's
/// only mode outside its "dangerous-options" build); `X` is ignored and the
/// user's password stays locked.
pub fn warnings(hc: &HostConfiguration, yaml: &str) -> Vec<String> {
    let users = (hc.os.users.iter().enumerate()).map(|(i, _)| format!("os.users[{i}]"));
    let management = (hc.management_os.users.iter().enumerate())
        .map(|(i, _)| format!("managementOs.users[{i}]"));
    let mut out: Vec<String> = users
        .chain(management)
        .filter_map(|user| {
            let key = format!("{user}.password.value");
            let (line, column) = spans::locate(yaml, &key)?;
            Some(format!(
                "Host Configuration key '{key}' (line {line}, column {column}) is ignored: \
                 a password of type 'locked' takes no value, the password stays locked"
            ))
        })
        .collect();
    out.extend(super::raid::shared_disk_warnings(hc, yaml));
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::config::parse::parse_syntax as parse;

    const BASE: &str = "storage: {disks: [], filesystems: []}\n";

    #[test]
    fn a_value_given_with_a_locked_password_is_reported_without_the_value() {
        let yaml = format!(
            "{BASE}os:\n  users:\n  - name: ok\n  - name: admin\n    password: {{type: locked, value: LockedVALUE-5521}}\n\
             managementOs:\n  users:\n  - name: mos\n    password:\n      type: locked\n      value: [MosVALUE-1]\n"
        );
        let hc = parse(&yaml).unwrap();
        let found = warnings(&hc, &yaml);
        assert_eq!(found.len(), 2, "{found:?}");
        assert!(
            found[0].starts_with("Host Configuration key 'os.users[1].password.value' (line 6,"),
            "{found:?}"
        );
        assert!(
            found[1].contains("'managementOs.users[0].password.value' (line 12,"),
            "{found:?}"
        );
        for warning in &found {
            assert!(warning.contains("is ignored"), "{warning}");
            assert!(
                !warning.contains("VALUE"),
                "the value is never quoted: {warning}"
            );
        }
    }

    #[test]
    fn a_locked_password_alone_gives_no_warning() {
        let yaml =
            format!("{BASE}os:\n  users:\n  - name: admin\n    password: {{type: locked}}\n");
        assert!(warnings(&parse(&yaml).unwrap(), &yaml).is_empty());
    }
}
