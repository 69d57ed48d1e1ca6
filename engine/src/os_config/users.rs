//! `os.users`: accounts created (or updated) in the new root's
//! /etc/passwd with `useradd`/`usermod --root`, their password locked (the
//! only password mode upstream offers outside its dangerous-options build),
//! their `sshPublicKeys` in `~/.ssh/authorized_keys` (0700/0600, owned by
//! the uid and gid the new root gives them), and `sshMode` as an sshd
//! drop-in included first by the new root's sshd_config.

use std::path::Path;

use trident_host::config::{SshMode, User};

use super::root_fs::{OsConfigError, in_root, run, write_file};
use crate::new_root::root_dir::RootDir;

/// sshd drop-in holding the `sshMode` of the configured users.
pub const SSHD_DROP_IN: &str = "/etc/ssh/sshd_config.d/50-trident-users.conf";
const SSHD_CONFIG: &str = "/etc/ssh/sshd_config";

/// One line of an /etc/passwd.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PasswdEntry {
    pub name: String,
    pub uid: u32,
    pub gid: u32,
    pub home: String,
}

/// The entry of `name` in the new root's /etc/passwd.
pub fn passwd_entry(root: &RootDir, name: &str) -> std::io::Result<Option<PasswdEntry>> {
    let text = root.read_to_string(Path::new("/etc/passwd"))?;
    Ok(text.lines().find_map(|line| {
        let f: Vec<&str> = line.split(':').collect();
        (f.len() >= 7 && f[0] == name).then(|| PasswdEntry {
            name: f[0].to_owned(),
            uid: f[2].parse().unwrap_or(u32::MAX),
            gid: f[3].parse().unwrap_or(u32::MAX),
            home: f[5].to_owned(),
        })
    }))
}

fn group_exists(root: &RootDir, name: &str) -> std::io::Result<bool> {
    let text = root.read_to_string(Path::new("/etc/group"))?;
    Ok(text.lines().any(|l| l.split(':').next() == Some(name)))
}

/// `useradd`, `usermod` and `groupadd` run with `--root`, chrooted into
/// the new root (its symlinks resolve there); the keys and the sshd files
/// are written through `root`, resolved inside it.
pub fn apply(root: &RootDir, users: &[User]) -> Result<(), OsConfigError> {
    for (i, user) in users.iter().enumerate() {
        let key = format!("os.users[{i}]");
        apply_user(root, user, &key)?;
    }
    apply_ssh_modes(root, users)
}

fn apply_user(root: &RootDir, user: &User, key: &str) -> Result<(), OsConfigError> {
    let root_arg = root.path().to_string_lossy();
    for (g, group) in user.secondary_groups.iter().enumerate() {
        let group_key = format!("{key}.secondaryGroups[{g}]");
        let exists = group_exists(root, group)
            .map_err(|e| OsConfigError::io(&group_key, "cannot read /etc/group", e))?;
        if !exists {
            run(&group_key, "groupadd", &["--root", &root_arg, group])?;
        }
    }
    let existing = passwd_entry(root, &user.name)
        .map_err(|e| OsConfigError::io(key, "cannot read /etc/passwd", e))?;
    let uid = user.uid.map(|u| u.to_string());
    let groups = user.secondary_groups.join(",");
    let mut args: Vec<&str> = vec!["--root", &root_arg];
    if let Some(uid) = &uid {
        args.extend(["--uid", uid]);
    }
    if let Some(primary) = &user.primary_group {
        args.extend(["--gid", primary]);
    }
    if !groups.is_empty() {
        args.extend(["--groups", &groups]);
    }
    if let Some(home) = &user.home_directory {
        args.extend(["--home", home]);
    }
    if let Some(shell) = &user.startup_command {
        args.extend(["--shell", shell]);
    }
    if existing.is_some() {
        if args.len() > 2 {
            args.push(&user.name);
            run(key, "usermod", &args)?;
        }
    } else {
        // A user group of its own unless a primary group is named.
        args.push(if user.primary_group.is_some() {
            "--no-user-group"
        } else {
            "--user-group"
        });
        args.extend(["--create-home", &user.name]);
        run(key, "useradd", &args)?;
    }
    // `password: {type: locked}`, the only mode: lock an existing password.
    run(
        &format!("{key}.password"),
        "usermod",
        &["--root", &root_arg, "--lock", &user.name],
    )?;
    if !user.ssh_public_keys.is_empty() {
        write_authorized_keys(root, user, &format!("{key}.sshPublicKeys"))?;
    }
    Ok(())
}

/// `~/.ssh/authorized_keys` of `user` in the new root (0700 / 0600, owned
/// by the user's uid and gid there). The home is the new root's: a
/// symlink on the way to it (`/root -> /...`) is followed inside the root.
fn write_authorized_keys(root: &RootDir, user: &User, key: &str) -> Result<(), OsConfigError> {
    let entry = passwd_entry(root, &user.name)
        .map_err(|e| OsConfigError::io(key, "cannot read /etc/passwd", e))?
        .ok_or_else(|| {
            OsConfigError::refused(key, format!("user '{}' is not in /etc/passwd", user.name))
        })?;
    let ssh_dir = in_root(&entry.home, key)?.join(".ssh");
    let file = ssh_dir.join("authorized_keys");
    let mut text = user.ssh_public_keys.join("\n");
    text.push('\n');
    write_file(root, &file, text.as_bytes(), 0o600, key)?;
    root.set_mode(&ssh_dir, 0o700).map_err(|e| {
        OsConfigError::io(
            key,
            format!("cannot set the mode of {}", ssh_dir.display()),
            e,
        )
    })?;
    for path in [&ssh_dir, &file] {
        root.chown(path, entry.uid, entry.gid).map_err(|e| {
            OsConfigError::io(
                key,
                format!("cannot give {} to uid {}", path.display(), entry.uid),
                e,
            )
        })?;
    }
    Ok(())
}

/// The sshd drop-in text for `users`: who may not log in over SSH
/// (`sshMode: block`) and, when root is configured, how root may.
pub fn sshd_drop_in(users: &[User]) -> String {
    let mut lines = vec!["# Written by Trident from os.users[].sshMode.".to_owned()];
    if let Some(root) = users.iter().find(|u| u.name == "root") {
        let permit = match root.ssh_mode {
            SshMode::Block => "no",
            SshMode::KeyOnly => "prohibit-password",
        };
        lines.push(format!("PermitRootLogin {permit}"));
    }
    let blocked: Vec<&str> = users
        .iter()
        .filter(|u| u.ssh_mode == SshMode::Block)
        .map(|u| u.name.as_str())
        .collect();
    if !blocked.is_empty() {
        lines.push(format!("DenyUsers {}", blocked.join(" ")));
    }
    lines.push(String::new());
    lines.join("\n")
}

/// Writes the drop-in and makes sshd_config include it first (sshd keeps
/// the first value it reads). Without sshd_config in the image, a user
/// with `sshMode: key-only` is refused: nobody could log in as asked.
fn apply_ssh_modes(root: &RootDir, users: &[User]) -> Result<(), OsConfigError> {
    if users.is_empty() {
        return Ok(());
    }
    let config = Path::new(SSHD_CONFIG);
    if !root.exists(config) {
        if let Some(i) = users.iter().position(|u| u.ssh_mode == SshMode::KeyOnly) {
            return Err(OsConfigError::refused(
                format!("os.users[{i}].sshMode"),
                format!("key-only SSH access needs sshd, but the image has no {SSHD_CONFIG}"),
            ));
        }
        tracing::warn!("the new root has no {SSHD_CONFIG}: os.users[].sshMode left as is");
        return Ok(());
    }
    let key = "os.users[].sshMode";
    let drop_in = Path::new(SSHD_DROP_IN);
    write_file(root, drop_in, sshd_drop_in(users).as_bytes(), 0o644, key)?;
    let text = root
        .read_to_string(config)
        .map_err(|e| OsConfigError::io(key, format!("cannot read {SSHD_CONFIG}"), e))?;
    let include = format!("Include {SSHD_DROP_IN}");
    if !text.lines().any(|l| l.trim() == include) {
        let text = format!("# Trident: os.users[].sshMode\n{include}\n\n{text}");
        write_file(root, config, text.as_bytes(), 0o644, key)?;
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::fs;
    use std::os::unix::fs::{MetadataExt, PermissionsExt};

    use trident_host::config::Password;

    use super::super::test_root::TestRoot;
    use super::*;

    fn user(name: &str, mode: SshMode, keys: &[&str]) -> User {
        User {
            name: name.to_owned(),
            password: Password::Locked,
            uid: None,
            primary_group: None,
            secondary_groups: vec!["wheel".to_owned()],
            ssh_public_keys: keys.iter().map(|k| (*k).to_owned()).collect(),
            ssh_mode: mode,
            startup_command: None,
            home_directory: None,
        }
    }

    #[test]
    fn a_user_gets_an_account_its_groups_and_its_key() {
        let root = TestRoot::new();
        root.write("etc/ssh/sshd_config", "PasswordAuthentication no\n");
        let op = user(
            "operator",
            SshMode::KeyOnly,
            &["ssh-ed25519 AAAAkey op@lab"],
        );
        apply(&root.dir(), &[op, user("svc", SshMode::Block, &[])]).unwrap();

        let entry = passwd_entry(&root.dir(), "operator").unwrap().unwrap();
        assert_eq!(entry.home, "/home/operator");
        assert!(root.read("etc/group").contains("wheel:x:"));
        assert!(
            root.read("etc/group")
                .lines()
                .any(|l| l.starts_with("wheel:") && l.contains("operator"))
        );
        let shadow = root.read("etc/shadow");
        let line = shadow.lines().find(|l| l.starts_with("operator:")).unwrap();
        assert!(
            line.split(':').nth(1).unwrap().starts_with('!'),
            "password not locked: {line}"
        );

        let keys = root.path().join("home/operator/.ssh/authorized_keys");
        assert_eq!(
            fs::read_to_string(&keys).unwrap(),
            "ssh-ed25519 AAAAkey op@lab\n"
        );
        let meta = fs::metadata(&keys).unwrap();
        assert_eq!(meta.permissions().mode() & 0o777, 0o600);
        assert_eq!((meta.uid(), meta.gid()), (entry.uid, entry.gid));
        let dir = fs::metadata(root.path().join("home/operator/.ssh")).unwrap();
        assert_eq!(dir.permissions().mode() & 0o777, 0o700);
        assert_eq!(dir.uid(), entry.uid);

        let config = root.read("etc/ssh/sshd_config");
        assert!(config.starts_with("# Trident"), "{config}");
        assert!(config.contains(&format!("Include {SSHD_DROP_IN}")));
        assert!(config.ends_with("PasswordAuthentication no\n"));
        let drop_in = root.read(SSHD_DROP_IN.trim_start_matches('/'));
        assert!(drop_in.contains("DenyUsers svc\n"), "{drop_in}");
        assert!(!drop_in.contains("operator"), "{drop_in}");
    }

    #[test]
    fn applying_twice_updates_and_does_not_repeat_the_include() {
        let root = TestRoot::new();
        root.write("etc/ssh/sshd_config", "");
        let mut op = user("root", SshMode::KeyOnly, &["ssh-ed25519 AAAAone"]);
        op.secondary_groups.clear();
        apply(&root.dir(), std::slice::from_ref(&op)).unwrap();
        op.ssh_public_keys = vec!["ssh-ed25519 AAAAtwo".to_owned()];
        apply(&root.dir(), &[op]).unwrap();
        assert_eq!(
            root.read("root/.ssh/authorized_keys"),
            "ssh-ed25519 AAAAtwo\n"
        );
        assert_eq!(
            root.read("etc/ssh/sshd_config").matches("Include").count(),
            1
        );
        let drop_in = root.read(SSHD_DROP_IN.trim_start_matches('/'));
        assert!(
            drop_in.contains("PermitRootLogin prohibit-password"),
            "{drop_in}"
        );
    }

    #[test]
    fn key_only_without_sshd_is_refused_naming_the_key() {
        let root = TestRoot::new();
        let err = apply(&root.dir(), &[user("op", SshMode::KeyOnly, &[])]).unwrap_err();
        assert_eq!(err.key(), "os.users[0].sshMode");
    }

    #[test]
    fn a_missing_primary_group_fails_naming_the_user() {
        let root = TestRoot::new();
        let mut op = user("op", SshMode::Block, &[]);
        op.primary_group = Some("nosuchgroup".to_owned());
        let err = apply(&root.dir(), &[op]).unwrap_err();
        assert_eq!(err.key(), "os.users[0]");
        assert!(err.to_string().contains("useradd"), "{err}");
        // The machine running the test is untouched.
        assert!(
            passwd_entry(&RootDir::open(Path::new("/")).unwrap(), "op")
                .unwrap()
                .is_none()
        );
    }
}
