//! The GRUB backend through the real daemon with `--boot-control uefi` on
//! a disk-image file: an image whose COSI says `bootloader: grub` installs
//! shim, GRUB and a grub.cfg per volume in `EFI/AZLA` / `EFI/AZLB` (the
//! binaries from the image's ESP: on an A/B update, the ESP copied out of
//! the COSI), and one UEFI boot option per volume in the EFI variables:
//! `BootNext` for the trial, `BootOrder` at commit, left as it was by a
//! failed trial. The EFI variables live in a directory standing in for
//! efivarfs; "which option booted" is told as the firmware does
//! (`BootCurrent`). An image whose bootloader metadata names something not
//! done is refused before anything is written. Needs root.

#![allow(clippy::unwrap_used)]

use trident_cosi::writer::FixtureOutput;
use trident_e2e::Daemon;
use trident_e2e::mini_os::{self, MiniBoot, fake_loader};
use trident_e2e::servicing_support::{Clients, Fixture};
use trident_proto::v1::ServicingKind;
use trident_proto::v1preview::ServicingState;

/// (label, `\EFI\...` path) of a `Boot####` load option, read from the
/// UEFI spec layout: attributes, path length, UTF-16 description, path.
fn option(dir: &std::path::Path, number: u16) -> Option<(String, String)> {
    let data = mini_os::global_var(dir, &format!("Boot{number:04X}"))?;
    let utf16 = |bytes: &[u8]| -> String {
        let units: Vec<u16> = bytes
            .chunks_exact(2)
            .map(|c| u16::from_le_bytes([c[0], c[1]]))
            .take_while(|u| *u != 0)
            .collect();
        String::from_utf16(&units).unwrap()
    };
    assert_eq!(&data[..4], &[1, 0, 0, 0], "LOAD_OPTION_ACTIVE");
    let label = utf16(&data[6..]);
    let path = &data[6 + 2 * (label.encode_utf16().count() + 1)..];
    // HD() first (type 4, subtype 1, 42 bytes), then File().
    assert_eq!(&path[..4], &[4, 1, 42, 0], "HD() node");
    assert_eq!(&path[42..44], &[4, 4], "File() node");
    Some((label, utf16(&path[46..])))
}

fn u16s(bytes: Option<Vec<u8>>) -> Vec<u16> {
    bytes
        .unwrap_or_default()
        .chunks_exact(2)
        .map(|c| u16::from_le_bytes([c[0], c[1]]))
        .collect()
}

/// A blank disk, the mini OS v1 (GRUB) and v2 (booting as `v2_boot`),
/// and a daemon with `--boot-control uefi`.
async fn setup(v2_boot: MiniBoot) -> (Fixture, [FixtureOutput; 2], Daemon) {
    let f = Fixture::new();
    let v1 = mini_os::build_with(f.dir.path(), "v1", MiniBoot::Grub);
    let v2 = mini_os::build_with(f.dir.path(), "v2", v2_boot);
    let d = mini_os::uefi_daemon(f.dir.path()).await;
    (f, [v1, v2], d)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_grub_image_gets_a_directory_and_a_boot_option_per_volume() {
    if !mini_os::running_as_root() {
        eprintln!("SKIP: needs root (loop devices, mount)");
        return;
    }
    let (f, [v1, v2], d) = setup(MiniBoot::Grub).await;
    let dir = f.dir.path();
    let mut c = Clients::new(&d).await;
    let os = "os:\n  kernelCommandLine:\n    extraCommandLine: [quiet]\n";
    let installed = c.install(&f.config(&v1, os)).await;
    installed.assert_success();
    // The boot-files phase counts what was written: shim, GRUB, grub.cfg.
    let boot_files = installed
        .progress
        .iter()
        .rfind(|p| p.phase_id == "boot-files")
        .unwrap();
    assert_eq!((boot_files.current, boot_files.total), (3, None));

    let esp = |path: &str| mini_os::esp_file(&f.disk, path);
    assert_eq!(esp("EFI/AZLA/bootx64.efi"), Some(fake_loader("shim", "v1")));
    assert_eq!(esp("EFI/AZLA/grubx64.efi"), Some(fake_loader("grub", "v1")));
    let config = esp("EFI/AZLA/grub.cfg").unwrap();
    let root_a = mini_os::partition(&f.disk, "root-a").part_uuid;
    assert!(
        config.contains(&format!(
            "root=PARTUUID={root_a} rw console=ttyS0 quiet quiet"
        )),
        "the image's arguments, then extraCommandLine: {config}"
    );
    assert!(
        config.contains("linux /boot/vmlinuz-6.1.0-mini "),
        "{config}"
    );
    assert!(
        config.contains("search --no-floppy --fs-uuid --set=root "),
        "{config}"
    );
    assert_eq!(
        esp("loader/entries/trident-volume-a.conf"),
        None,
        "no systemd-boot entry for a GRUB volume"
    );
    // Install: A's option, BootNext and first in BootOrder.
    let a = u16s(mini_os::global_var(dir, "BootNext"))[0];
    assert_eq!(
        option(dir, a),
        Some(("AZLA".to_owned(), r"\EFI\AZLA\bootx64.efi".to_owned()))
    );
    assert_eq!(u16s(mini_os::global_var(dir, "BootOrder")), vec![a]);
    // The default fallback (conservative): A's loaders on the removable path.
    assert_eq!(esp("EFI/BOOT/BOOTX64.EFI"), Some(fake_loader("shim", "v1")));
    assert_eq!(esp("EFI/BOOT/grub.cfg"), Some(config));

    // The installer's commit service, before the reboot: nothing to
    // check yet (the installer runs on no volume), nothing changed.
    let early = c.commit().await;
    early.assert_success();
    assert_eq!(
        early.completed().servicing_kind,
        Some(ServicingKind::NoneRequired as i32)
    );
    assert_eq!(u16s(mini_os::global_var(dir, "BootNext")), vec![a]);
    assert_eq!(c.state().await, ServicingState::InstallFinalized);

    // The firmware booted A (and consumed BootNext).
    mini_os::set_boot_current(dir, a);
    std::fs::remove_file(dir.join("efivars/BootNext-8be4df61-93ca-11d2-aa0d-00e098032b8c"))
        .unwrap();
    c.commit().await.assert_success();

    // A/B update: B's loaders come from v2's ESP, copied out of the COSI.
    c.update_stage(&f.config(&v2, os)).await.assert_success();
    c.update_finalize().await.assert_success();
    assert_eq!(esp("EFI/AZLB/bootx64.efi"), Some(fake_loader("shim", "v2")));
    assert_eq!(esp("EFI/AZLB/grubx64.efi"), Some(fake_loader("grub", "v2")));
    let b = u16s(mini_os::global_var(dir, "BootNext"))[0];
    assert_eq!(
        option(dir, b),
        Some(("AZLB".to_owned(), r"\EFI\AZLB\bootx64.efi".to_owned()))
    );
    assert_eq!(
        u16s(mini_os::global_var(dir, "BootOrder")),
        vec![a, b],
        "the trial is BootNext: A still leads"
    );

    // The trial boot came up on B: commit puts B first.
    mini_os::set_boot_current(dir, b);
    std::fs::remove_file(dir.join("efivars/BootNext-8be4df61-93ca-11d2-aa0d-00e098032b8c"))
        .unwrap();
    c.commit().await.assert_success();
    assert_eq!(u16s(mini_os::global_var(dir, "BootOrder")), vec![b, a]);
    assert_eq!(esp("EFI/BOOT/BOOTX64.EFI"), Some(fake_loader("shim", "v2")));

    // An update to v1 whose trial boot never reaches A (the firmware came
    // back on B): the commit finds B and rolls back; BootOrder stays.
    c.update_stage(&f.config(&v1, os)).await.assert_success();
    c.update_finalize().await.assert_success();
    assert_eq!(u16s(mini_os::global_var(dir, "BootNext")), vec![a]);
    std::fs::remove_file(dir.join("efivars/BootNext-8be4df61-93ca-11d2-aa0d-00e098032b8c"))
        .unwrap();
    mini_os::reboot(dir);
    let failed = c.commit().await;
    assert!(!failed.succeeded(), "booted B, expected A");
    assert_eq!(u16s(mini_os::global_var(dir, "BootOrder")), vec![b, a]);
    assert_eq!(mini_os::global_var(dir, "BootNext"), None);
    assert_eq!(mini_os::loop_devices_on(&f.disk), "");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_update_cannot_switch_from_grub_to_systemd_boot_and_writes_nothing() {
    if !mini_os::running_as_root() {
        eprintln!("SKIP: needs root (loop devices, mount)");
        return;
    }
    let (f, [v1, v2], d) = setup(MiniBoot::Type1).await;
    let dir = f.dir.path();
    let mut c = Clients::new(&d).await;
    c.install(&f.config(&v1, "")).await.assert_success();
    mini_os::set_boot_current(dir, u16s(mini_os::global_var(dir, "BootNext"))[0]);
    c.commit().await.assert_success();
    let root_b = f.partition_hash("root-b");

    let refused = c.update_stage(&f.config(&v2, "")).await;
    assert!(!refused.succeeded());
    let error = refused.error();
    assert_eq!(error.subkind, "unsupported-bootloader", "{error:?}");
    assert!(
        error.message.contains("bootloader.type"),
        "{}",
        error.message
    );
    assert_eq!(f.partition_hash("root-b"), root_b, "nothing written to B");
}
