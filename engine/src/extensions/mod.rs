//! System and configuration extensions (`os.sysexts`, `os.confexts`):
//! images that systemd-sysext / systemd-confext merge over `/usr` and
//! `/opt`, or `/etc`. Each is downloaded and checked against its SHA-384
//! (of the whole file) into a staging directory ([`fetch`]), its name read
//! from its `extension-release.NAME` ([`release`]; a filesystem image or a
//! GPT disk image, [`ddi`]), then placed ([`place`]):
//! at install and A/B update into the new root, where the updated OS
//! merges it when it boots; at a runtime update onto the running system,
//! whose merge is then refreshed. An image the running OS already has
//! (same hash) is copied from there rather than downloaded again, as
//! upstream does.
//!
//! Where an image goes is upstream's rule: `path` if given (`NAME.raw` in
//! one of the kind's directories, checked by validation), else the kind's
//! default directory and the NAME its `extension-release.NAME` gives. The
//! Host Status records the path each image was placed at.

pub mod ddi;
pub mod fetch;
pub mod kind;
pub mod place;
pub mod release;

use std::path::{Path, PathBuf};

#[cfg(test)]
use trident_host::config::Extension;
use trident_host::config::Os;

pub use self::kind::{ExtensionKind, Staged, changed, under};
use trident_cosi::SourceOptions;
use trident_host::{ResultExt, Subkind, TridentError};
use trident_telemetry::progress::{Phase, Unit};

/// The step (progress phase) that downloads and checks extension images.
pub const EXTENSIONS_STEP: &str = "extensions";

/// Every extension image of `os`, staged: the ones the running OS's
/// configuration `running` already placed (same hash, file present under
/// `host_root`) are used from there, the others downloaded into `dir`
/// (created here) as `sources` says. One progress phase
/// ([`EXTENSIONS_STEP`], bytes), none when there is no image. Blocking.
pub fn stage(
    os: &Os,
    running: Option<&Os>,
    host_root: &Path,
    dir: &Path,
    sources: &SourceOptions,
) -> Result<Vec<Staged>, TridentError> {
    let count: usize = ExtensionKind::ALL.iter().map(|k| k.list(os).len()).sum();
    if count == 0 {
        return Ok(Vec::new());
    }
    let phase = Phase::start(
        EXTENSIONS_STEP,
        "Download and check extension images",
        Unit::Bytes,
        None,
    );
    std::fs::create_dir_all(dir).structured_msg(
        Subkind::Io,
        format!("Cannot create the staging directory {}", dir.display()),
    )?;
    let mut staged = Vec::with_capacity(count);
    for kind in ExtensionKind::ALL {
        for (index, ext) in kind.list(os).iter().enumerate() {
            let key = format!("{}[{index}]", kind.key());
            let sha384 = ext.sha384.to_ascii_lowercase();
            let file = match running.and_then(|r| present(kind, r, &sha384, host_root)) {
                Some(existing) => {
                    tracing::info!(key = %key, file = %existing.display(),
                        "extension image already on the running OS: not downloaded again");
                    existing
                }
                None => {
                    let file = dir.join(format!("{sha384}.raw"));
                    fetch::download(&key, &ext.url, &sha384, &file, &phase, sources)?;
                    file
                }
            };
            let name = release::name_of(kind, &key, &file, &dir.join("mnt"))?;
            let path = match &ext.path {
                Some(path) if !path.ends_with(&format!("/{name}.raw")) => {
                    return Err(TridentError::new(
                        Subkind::InvalidExtension,
                        format!(
                            "Host Configuration key '{key}.path': '{path}' must end with \
                             '{name}.raw', as the image's extension-release.{name} says"
                        ),
                    ));
                }
                Some(path) => path.clone(),
                None => format!("{}/{name}.raw", kind.default_dir()),
            };
            tracing::info!(key = %key, name = %name, path = %path, "extension image checked");
            staged.push(Staged {
                kind,
                index,
                sha384,
                file,
                path,
            });
        }
    }
    phase.done();
    Ok(staged)
}

/// The running OS's copy of the image of hash `sha384` of `kind`, if its
/// configuration recorded one that is still there.
fn present(kind: ExtensionKind, running: &Os, sha384: &str, host_root: &Path) -> Option<PathBuf> {
    kind.list(running)
        .iter()
        .filter(|e| e.sha384.eq_ignore_ascii_case(sha384))
        .find_map(|e| e.path.as_deref())
        .map(|path| under(host_root, path))
        .filter(|file| file.is_file())
}

/// `os` with each extension's `path` set to where it was placed.
pub fn with_paths(os: &Os, staged: &[Staged]) -> Os {
    let mut os = os.clone();
    for s in staged {
        if let Some(ext) = s.kind.list_mut(&mut os).get_mut(s.index) {
            ext.path = Some(s.path.clone());
        }
    }
    os
}

/// An operation's staging directory; removed (with what it holds) when
/// dropped, on every path, errors included.
#[derive(Debug)]
pub struct StagingDir(PathBuf);

impl StagingDir {
    pub fn new(path: PathBuf) -> StagingDir {
        StagingDir(path)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for StagingDir {
    fn drop(&mut self) {
        if let Err(e) = std::fs::remove_dir_all(&self.0)
            && e.kind() != std::io::ErrorKind::NotFound
        {
            tracing::warn!(dir = %self.0.display(), error = %e, "staging directory not removed");
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests fail loudly on purpose
mod tests {
    use super::*;

    fn ext(sha: char) -> Extension {
        Extension {
            url: "http://x/e.raw".into(),
            sha384: sha.to_string().repeat(96),
            path: None,
        }
    }

    #[test]
    fn placed_paths_are_recorded_by_kind_and_index() {
        let mut new = Os {
            sysexts: vec![ext('a'), ext('b')],
            ..Os::default()
        };
        new.confexts = vec![ext('c')];
        let staged = [
            Staged {
                kind: ExtensionKind::Sysext,
                index: 1,
                sha384: "b".repeat(96),
                file: PathBuf::from("/staging/b.raw"),
                path: "/var/lib/extensions/tool.raw".into(),
            },
            Staged {
                kind: ExtensionKind::Confext,
                index: 0,
                sha384: "c".repeat(96),
                file: PathBuf::from("/staging/c.raw"),
                path: "/var/lib/confexts/conf.raw".into(),
            },
        ];
        let recorded = with_paths(&new, &staged);
        assert_eq!(recorded.sysexts[0].path, None);
        assert_eq!(
            recorded.sysexts[1].path.as_deref(),
            Some("/var/lib/extensions/tool.raw")
        );
        assert_eq!(
            recorded.confexts[0].path.as_deref(),
            Some("/var/lib/confexts/conf.raw")
        );
    }
}
