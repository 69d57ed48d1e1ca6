//! A clean install opens its image and checks it against the Host
//! Configuration before the first write to the disk: an image that cannot
//! be reached, or lacks a filesystem the configuration takes from it,
//! fails the install with the disk exactly as it was (a previous install
//! on it intact). It used to replace the partition table first.

#![allow(clippy::unwrap_used)] // tests fail loudly on purpose

use std::path::Path;

use sha2::{Digest, Sha256};
use trident_e2e::fixture::{AbHostConfig, CosiImage, InstallFixture};
use trident_e2e::{Daemon, trident_cli};

fn digest(path: &Path) -> String {
    hex::encode(Sha256::digest(std::fs::read(path).unwrap()))
}

fn output(out: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[tokio::test]
async fn an_install_whose_image_is_unreachable_or_lacks_a_filesystem_leaves_the_installed_disk_as_it_was()
 {
    let fx = InstallFixture::new(&CosiImage::small(5));
    let config = fx.config("target");
    let disk = fx.path("target.img");
    let daemon = Daemon::start().await.unwrap();
    // A first install: the disk holds an installed OS.
    let good = fx.write("good", &config);
    let first = trident_cli(daemon.socket_path(), &["install", good.to_str().unwrap()]);
    assert!(first.status.success(), "{}", output(&first));
    let installed = digest(&disk);

    let unreachable = AbHostConfig::new("http://127.0.0.1:9/none.cosi", &disk)
        .sizes("8M", "32M")
        .sha384("ignored");
    let file = fx.write("unreachable", &unreachable);
    let out = trident_cli(daemon.socket_path(), &["install", file.to_str().unwrap()]);
    assert!(!out.status.success(), "{}", output(&out));
    assert!(output(&out).contains("download-image"), "{}", output(&out));
    assert_eq!(
        digest(&disk),
        installed,
        "the unreachable image's install wrote the disk"
    );

    // A filesystem from the image on a partition of its own, at a mount
    // point the image does not have.
    let missing = config
        .yaml()
        .replacen(
            "    - { id: root-b, type: root, size: 32M }\n",
            "    - { id: root-b, type: root, size: 32M }\n    - { id: data, type: linux-generic, size: 8M }\n",
            1,
        )
        .replacen(
            "  - { deviceId: root, mountPoint: / }\n",
            "  - { deviceId: root, mountPoint: / }\n  - { deviceId: data, source: image, mountPoint: /srv }\n",
            1,
        );
    assert!(missing.contains("mountPoint: /srv"), "{missing}");
    let file = fx.path("missing.yaml");
    std::fs::write(&file, &missing).unwrap();
    let out = trident_cli(daemon.socket_path(), &["install", file.to_str().unwrap()]);
    assert!(!out.status.success(), "{}", output(&out));
    let text = output(&out);
    assert!(
        text.contains("image-does-not-match-configuration")
            && text.contains("storage.filesystems[2]")
            && text.contains("/srv"),
        "{text}"
    );
    assert_eq!(
        digest(&disk),
        installed,
        "the mismatched image's install wrote the disk"
    );
}
