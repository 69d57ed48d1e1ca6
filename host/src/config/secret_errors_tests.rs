//! A parse error never quotes the value of a secret key, whatever its
//! shape; errors at other keys still quote theirs (they help the user).

use super::parse;

const BASE: &str = "storage: {disks: [], filesystems: []}\n";

fn message_of(extra: &str) -> String {
    let yaml = format!("{BASE}{extra}");
    match parse(&yaml) {
        Ok(_) => panic!("expected an error for:\n{yaml}"),
        Err(e) => e.record().message,
    }
}

#[test]
fn a_secret_value_of_any_shape_is_never_quoted() {
    let cases = [
        // Upstream's report: a plain string where a tagged value is wanted.
        (
            "os:\n  users:\n  - name: a\n    password: PwPlainVALUE-7731\n",
            "os.users[0].password",
        ),
        (
            "os:\n  users:\n  - name: a\n    password: 77310042\n",
            "os.users[0].password",
        ),
        (
            "os:\n  users:\n  - name: a\n    password: [PwListVALUE-1, two]\n",
            "os.users[0].password",
        ),
        (
            "os:\n  users:\n  - name: a\n    password: {type: PwTagVALUE-9}\n",
            "os.users[0].password",
        ),
        (
            "managementOs:\n  users:\n  - name: a\n    password: \"PwQuoted, expected VALUE\"\n",
            "managementOs.users[0].password",
        ),
        (
            "scripts:\n  postConfigure:\n  - name: s\n    content: x\n    environmentVariables: {DB_PASSWORD: {nested: EnvMapVALUE-3}}\n",
            "environmentVariables",
        ),
        (
            "scripts:\n  postConfigure:\n  - name: s\n    content: x\n    environmentVariables: \"API_TOKEN=EnvStrVALUE-4\"\n",
            "environmentVariables",
        ),
    ];
    for (extra, key) in cases {
        let message = message_of(extra);
        assert!(
            !message.contains("VALUE"),
            "a secret value quoted: {message}"
        );
        assert!(message.contains(key), "names the key {key}: {message}");
        assert!(
            message.contains("value not shown: the key holds a secret"),
            "says why: {message}"
        );
    }
    // What was expected still helps the user.
    let message = message_of("os:\n  users:\n  - name: a\n    password: PwPlainVALUE-7731\n");
    assert!(message.contains("invalid type: string"), "{message}");
    assert!(
        message.contains("expected internally tagged enum Password"),
        "{message}"
    );
}

#[test]
fn a_private_key_pasted_anywhere_is_not_quoted() {
    let message = message_of(
        "os:\n  selinux: {mode: \"-----BEGIN PRIVATE KEY-----\\nKeyBodyVALUE\\n-----END PRIVATE KEY-----\"}\n",
    );
    assert!(!message.contains("KeyBodyVALUE"), "{message}");
}

#[test]
fn a_value_at_an_ordinary_key_is_still_quoted() {
    let message = message_of("os:\n  selinux: {mode: enforcingg}\n");
    assert!(message.contains("enforcingg"), "{message}");
}
