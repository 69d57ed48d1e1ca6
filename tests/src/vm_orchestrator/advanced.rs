//! Upstream's `advanced` sample as the VM scenario's Host Configuration
//! (`tests/vm/advanced.yaml`: the sample with the disks, sizes, sync
//! timeout and image rewritten for two small virtio disks; its header says
//! what): RAID1 arrays on two disks, `/home` on a LUKS2 volume over an
//! array sealed to the TPM 2.0, swap on both disks, A/B pairs of arrays,
//! and the checks of its boots' ready markers.

use std::path::Path;

use crate::test_os::TestOs;

/// The sample's user, whose placeholder key the scenario's key replaces.
pub const USER: &str = "my-custom-user";

/// Where the sample reads its recovery key (`recoveryKeyUrl`).
pub const RECOVERY_KEY: &str = "/recovery.key";

/// The sample's RAID arrays (their `name`s: `/dev/md/NAME`), sorted.
pub const ARRAYS: [&str; 12] = [
    "boot-a",
    "boot-b",
    "home",
    "root-data-a",
    "root-data-b",
    "root-hash-a",
    "root-hash-b",
    "trident",
    "trident-overlay-a",
    "trident-overlay-b",
    "var-a",
    "var-b",
];

/// How the sample's root is applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Root {
    /// No `storage.verity` (the test OS's image has only the ESP and `/`):
    /// the `root-data` pair is a plain A/B root, writable as the image's
    /// root is (`ro` belongs to a verity root), and the `boot` and `var`
    /// pairs have no filesystem (the image has none for them): their
    /// arrays are made and synced, nothing is written to them.
    Plain,
    /// The sample as it is: the verity test OS's root (read-only,
    /// `/dev/mapper/root` over `root-data` with its hash tree on
    /// `root-hash`), `/boot` and `/var` from the image, `/etc` an overlay
    /// on `trident-overlay`.
    Verity,
}

/// The sample for this VM: `os` over HTTP at `http_port`, the scenario's
/// SSH key, `hostname` and a health check on `units` within `timeout_s`
/// (as the plain scenario's Host Configuration), and a preServicing
/// script that makes the recovery key file the sample names (random
/// bytes, 0400) on the installer before the install reads it.
#[derive(Debug)]
pub struct AdvancedConfig<'a> {
    pub http_port: u16,
    pub os: &'a TestOs,
    pub ssh_key: &'a str,
    pub hostname: &'a str,
    pub health_units: &'a [&'a str],
    pub health_timeout_s: u64,
    pub root: Root,
}

impl AdvancedConfig<'_> {
    pub fn yaml(&self) -> String {
        let fixture =
            std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("vm/advanced.yaml"))
                .unwrap();
        let cosi = self.os.cosi.path.file_name().unwrap().to_string_lossy();
        let mut text = replace_once(
            &fixture,
            "  url: {image_url}\n",
            &format!("  url: http://10.0.2.2:{}/{cosi}\n", self.http_port),
        );
        text = replace_once(
            &text,
            "  sha384: {image_sha384}\n",
            &format!("  sha384: {}\n", self.os.cosi.metadata_sha384),
        );
        text = replace_once(&text, "<MY_PUBLIC_SSH_KEY>", self.ssh_key);
        text = replace_once(
            &text,
            "\nos:\n",
            &format!("\nos:\n  hostname: {}\n", self.hostname),
        );
        text = replace_once(
            &text,
            "\nscripts:\n",
            &format!("\nscripts:\n{}", recovery_key_script()),
        );
        text.push_str(&format!(
            "health:\n  checks:\n  - name: units-up\n    systemdServices: [{}]\n    \
             timeoutSeconds: {}\n",
            self.health_units.join(", "),
            self.health_timeout_s
        ));
        match self.root {
            Root::Plain => plain_root(&text),
            Root::Verity => text,
        }
    }
}

/// Makes the recovery key file on the installer (clean install only: an
/// A/B update opens the volume with the TPM).
fn recovery_key_script() -> String {
    format!(
        "  preServicing:\n  - name: make-recovery-key\n    runOn: [clean-install]\n    \
         content: umask 077 && head -c 48 /dev/urandom | base64 -w0 > {RECOVERY_KEY} && \
         chmod 0400 {RECOVERY_KEY}\n"
    )
}

/// [`Root::Plain`]: the sample without its verity section.
fn plain_root(text: &str) -> String {
    let start = text
        .find("  verity:\n")
        .expect("the sample's verity section");
    let end = start + text[start..].find("  swap:\n").expect("swap after verity");
    let mut text = format!("{}{}", &text[..start], &text[end..]);
    text = replace_once(
        &text,
        "  - deviceId: root\n    mountPoint:\n      path: /\n      options: ro\n",
        "  - deviceId: root-data\n    mountPoint:\n      path: /\n      options: defaults\n",
    );
    for (device, path) in [("boot", "/boot"), ("var", "/var")] {
        text = replace_once(
            &text,
            &format!(
                "  - deviceId: {device}\n    mountPoint:\n      path: {path}\n      options: defaults\n"
            ),
            "",
        );
    }
    text
}

/// `text` with `old`, which it has exactly once, replaced by `new`.
fn replace_once(text: &str, old: &str, new: &str) -> String {
    assert_eq!(text.matches(old).count(), 1, "exactly one {old:?}");
    text.replacen(old, new, 1)
}

/// A ready marker's `FIELD=` value (`md`, `crypt`, `swap`, ...).
pub fn marker_field<'a>(line: &'a str, field: &str) -> &'a str {
    let prefix = format!("{field}=");
    line.split_whitespace()
        .find_map(|w| w.strip_prefix(prefix.as_str()))
        .unwrap_or("missing")
}

/// Checks a boot of `volume` (`a`, `b`) with the sample: `/` on
/// the array `root-data-{volume}` (with verity: `/dev/mapper/root` over it,
/// see [`assert_verity_root`]); every array running, a mirror, none
/// degraded; `/home` unlocked by the TPM (nothing types a passphrase on
/// the serial console) and mounted, with nothing under its mount point on
/// the root filesystem; swap on both disks. `line`: the boot's
/// ready marker, `serial`: the console so far, `root_hash`: with verity,
/// the booted version's (its COSI's).
pub fn assert_boot(root: Root, root_hash: &str, line: &str, volume: &str, serial: &str) {
    match root {
        Root::Plain => {
            let root = format!("root-md=root-data-{volume} ");
            assert!(line.contains(&root), "{root} in {line}");
        }
        Root::Verity => assert_verity_root(root_hash, line, volume, serial),
    }
    let mut arrays: Vec<(&str, &str)> = marker_field(line, "md")
        .split(',')
        .filter(|a| !a.is_empty())
        .map(|a| a.split_once(':').unwrap_or((a, "")))
        .collect();
    arrays.sort();
    let names: Vec<&str> = arrays.iter().map(|(name, _)| *name).collect();
    assert_eq!(names, ARRAYS, "every array of the sample: {line}");
    for (name, rest) in arrays {
        // LEVEL:STATE:DEGRADED; read-auto: assembled, not written yet.
        let fields: Vec<&str> = rest.split(':').collect();
        assert!(
            fields.len() == 3
                && fields[0] == "raid1"
                && ["clean", "active", "read-auto"].contains(&fields[1])
                && fields[2] == "0",
            "{name} a clean mirror: {rest} in {line}"
        );
    }
    assert_eq!(
        marker_field(line, "crypt"),
        "home:active:/home,",
        "/home unlocked by the TPM and mounted: {line}"
    );
    assert!(
        !serial.contains("Please enter passphrase"),
        "a passphrase was asked for on the console"
    );
    // Servicing wrote the user's home into the shared /home, not under its
    // mount point in the volume's root (the A/B update binds the running
    // system's shared filesystems into the new root).
    assert_eq!(
        marker_field(line, "home-under"),
        "empty",
        "nothing under /home's mount point on the root filesystem: {line}"
    );
    // The marker names each active swap area by its GPT partition name.
    let swap = marker_field(line, "swap");
    for partition in ["swap1", "swap2"] {
        assert!(
            swap.split(',').any(|s| s == partition),
            "swap on {partition}: {line}"
        );
    }
}

/// The verity test OS's probe line, printed before each ready marker.
const VERITY_PROBE: &str = "TRIDENT-TEST-OS-VERITY ";

/// A verity root booted from `volume`: the kernel's command line opens
/// `/dev/mapper/root` from `root-data-{volume}` and `root-hash-{volume}`
/// with `root_hash` and mounts `/etc` as an overlay on
/// `trident-overlay-{volume}`; the probe says `veritysetup status root` is
/// verified, `/` read-only from `/dev/mapper/root` (a write fails with
/// EROFS), `/etc` an overlay and a file of the root reads.
fn assert_verity_root(root_hash: &str, line: &str, volume: &str, serial: &str) {
    // This boot's part of the console: from the previous ready marker on.
    let end = serial.rfind(line).unwrap_or(serial.len());
    let start = serial[..end].rfind(crate::vm::READY_MARKER).unwrap_or(0);
    let boot = &serial[start..end];
    let cmdline = boot
        .lines()
        .rfind(|l| l.contains("Command line:") && l.contains("roothash="))
        .unwrap_or_else(|| panic!("no verity command line before {line}"));
    for wanted in [
        "root=/dev/mapper/root ro ".to_owned(),
        format!("roothash={root_hash} "),
        format!("systemd.verity_root_data=/dev/md/root-data-{volume} "),
        format!("systemd.verity_root_hash=/dev/md/root-hash-{volume} "),
        format!("rd.overlayfs=etc,etc/upper,etc/work,/dev/md/trident-overlay-{volume}"),
    ] {
        assert!(cmdline.contains(&wanted), "{wanted} in {cmdline}");
    }
    let probe = boot
        .lines()
        .rfind(|l| l.contains(VERITY_PROBE))
        .unwrap_or_else(|| panic!("no verity probe before {line}"));
    println!("verity probe of {volume}: {probe}");
    for (key, value) in [
        ("status", "verified"),
        ("root-source", "/dev/mapper/root"),
        ("root-opts", "ro"),
        ("root-write", "erofs"),
        ("etc", "overlay"),
        ("canary", "ok"),
        ("corrupted-logs", "0"),
    ] {
        assert_eq!(marker_field(probe, key), value, "{key} in {probe}");
    }
    assert!(
        boot.contains("TRIDENT-TEST-OS-VERITY-STATUS /dev/mapper/root is active"),
        "veritysetup status root on the console: {line}"
    );
}
