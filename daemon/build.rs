//! Records the git commit the daemon is built from, for `VersionService`.
//! Falls back to "unknown" outside a git checkout (e.g. a source tarball).

use std::process::Command;

const UNKNOWN_COMMIT: &str = "unknown";

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8(out.stdout).ok()?;
    let text = text.trim();
    (!text.is_empty()).then(|| text.to_owned())
}

fn main() {
    let commit =
        git(&["rev-parse", "--short", "HEAD"]).unwrap_or_else(|| UNKNOWN_COMMIT.to_owned());
    println!("cargo:rustc-env=TRIDENTD_GIT_COMMIT={commit}");
    // Re-run when HEAD moves (new commit or branch switch).
    if let Some(git_dir) = git(&["rev-parse", "--absolute-git-dir"]) {
        println!("cargo:rerun-if-changed={git_dir}/HEAD");
        println!("cargo:rerun-if-changed={git_dir}/logs/HEAD");
    }
    println!("cargo:rerun-if-changed=build.rs");
}
