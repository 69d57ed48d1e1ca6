//! `oci://registry/repository:tag` and `oci://registry/repository@sha256:…`
//! image sources, through the ORAS project's `oci-client`.
//!
//! As upstream Trident: the reference names an OCI artifact whose manifest
//! holds exactly one layer, the COSI file (its media type is not checked,
//! so any artifact type a pusher chose works). A `@sha256:` digest names
//! the manifest, as in every OCI tool; a digest that is no manifest but the
//! layer blob itself (upstream's reading of it) is accepted too.
//!
//! The layer is streamed, not copied: a puller thread with its own small
//! runtime (`pull.rs`) forwards the blob stream through a bounded channel
//! into the synchronous reader the COSI reader consumes, so the download
//! runs at the speed the target is written and never holds more than a
//! few chunks in memory; a broken blob download is resumed there.
//! `registry.rs` is the client and the meaning of the registry's errors,
//! `digest.rs` checks the blob's bytes against the layer's digest.

mod digest;
mod pull;
mod registry;

use std::io;
use std::path::Path;

use oci_client::Reference;
use oci_client::secrets::RegistryAuth;

use super::options::SourceOptions;
use super::transport::ImageStream;
use crate::error::CosiError;

/// URL scheme of registry sources.
pub(crate) const OCI_SCHEME: &str = "oci://";

/// Opens the COSI layer of `url` (`oci://…`) as a byte stream, with the
/// credentials, timeouts and resume policy of `options`.
pub(super) fn open(url: &str, options: &SourceOptions) -> Result<ImageStream, CosiError> {
    let reference = parse(url)?;
    let auth = registry_auth(url, &reference, options.registry_auth_file.as_deref())?;
    pull::start(url, reference, auth, options)
}

/// `oci://` stripped and parsed; a reference without a tag or digest
/// means `:latest`, as for `docker pull`.
fn parse(url: &str) -> Result<Reference, CosiError> {
    let rest = url
        .strip_prefix(OCI_SCHEME)
        .ok_or_else(|| CosiError::UnsupportedUrl {
            url: url.to_owned(),
        })?;
    rest.parse::<Reference>()
        .map_err(|e| CosiError::InvalidOciReference {
            url: url.to_owned(),
            reason: e.to_string(),
        })
}

/// Credentials for the reference's registry from the Docker config file
/// `auth_file`, else anonymous. The file is read at each pull, so rotated
/// credentials need no restart.
fn registry_auth(
    url: &str,
    reference: &Reference,
    auth_file: Option<&Path>,
) -> Result<RegistryAuth, CosiError> {
    let Some(path) = auth_file else {
        return Ok(RegistryAuth::Anonymous);
    };
    credentials_from_file(url, path, reference.resolve_registry())
}

fn credentials_from_file(
    url: &str,
    path: &Path,
    registry: &str,
) -> Result<RegistryAuth, CosiError> {
    let auth_file_error = |reason: String| CosiError::RegistryAuthFile {
        url: url.to_owned(),
        path: path.to_owned(),
        reason,
    };
    let file = std::fs::File::open(path).map_err(|e| auth_file_error(e.to_string()))?;
    match docker_credential::get_credential_from_reader(io::BufReader::new(file), registry) {
        Ok(docker_credential::DockerCredential::UsernamePassword(user, password)) => {
            Ok(RegistryAuth::Basic(user, password))
        }
        Ok(docker_credential::DockerCredential::IdentityToken(_)) => Err(auth_file_error(format!(
            "the entry for {registry} is an identity token; only username and password (\"auth\") entries are supported"
        ))),
        // No entry for this registry: pull anonymously, as without a file.
        Err(docker_credential::CredentialRetrievalError::NoCredentialConfigured) => {
            Ok(RegistryAuth::Anonymous)
        }
        // A helper's output may hold a secret: name the helper only.
        Err(docker_credential::CredentialRetrievalError::HelperFailure { helper, .. }) => Err(
            auth_file_error(format!("credential helper {helper:?} failed")),
        ),
        // The crate's other messages name no value.
        Err(e) => Err(auth_file_error(e.to_string())),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn references_parse_with_tag_digest_or_neither() {
        let tagged = parse("oci://127.0.0.1:5000/os/image:v1").unwrap();
        assert_eq!(tagged.registry(), "127.0.0.1:5000");
        assert_eq!(tagged.repository(), "os/image");
        assert_eq!(tagged.tag(), Some("v1"));
        let digest = format!("sha256:{}", "a".repeat(64));
        let pinned = parse(&format!("oci://registry.example/os@{digest}")).unwrap();
        assert_eq!(pinned.digest(), Some(digest.as_str()));
        let err = parse("oci://registry.example/Upper Case").unwrap_err();
        assert_eq!(err.subkind(), "invalid-oci-reference", "{err}");
    }

    #[test]
    fn credentials_come_from_the_registrys_entry_of_the_docker_config() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.json");
        // "puller:s3cret" in base64.
        std::fs::write(
            &path,
            r#"{"auths":{"127.0.0.1:5000":{"auth":"cHVsbGVyOnMzY3JldA=="}}}"#,
        )
        .unwrap();
        let auth = credentials_from_file("oci://x", &path, "127.0.0.1:5000").unwrap();
        assert_eq!(
            auth,
            RegistryAuth::Basic("puller".to_owned(), "s3cret".to_owned())
        );
        let other = credentials_from_file("oci://x", &path, "elsewhere.example").unwrap();
        assert_eq!(other, RegistryAuth::Anonymous);
        std::fs::write(&path, "{not json").unwrap();
        let err = credentials_from_file("oci://x", &path, "127.0.0.1:5000").unwrap_err();
        assert_eq!(err.subkind(), "registry-auth-file", "{err}");
    }
}
