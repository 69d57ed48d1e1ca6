//! What the test OS's ready marker and the lines printed before it say
//! about how a boot started: the loader (`entry=`, `boot=`), `BootOrder`
//! and the UEFI boot options (`TRIDENT-TEST-OS-EFIBOOTMGR`, one line per
//! `Boot####` of `efibootmgr -v`).

use crate::test_os::{TestBootloader, TestOs};
use crate::vm::READY_MARKER;

/// The installer's first boot: the image's own loader on the removable-media
/// path started its own entry.
pub fn image_boot(os: &TestOs, line: &str) {
    let wanted = match os.bootloader {
        // systemd-boot's entry (LoaderEntrySelected).
        TestBootloader::SystemdBoot => format!("entry=trident-{}.conf", os.version),
        TestBootloader::Uki => format!("entry=trident-test-{}.efi", os.version),
        // GRUB sets no loader variable: no systemd-boot entry booted.
        TestBootloader::Grub => "entry= ".to_owned(),
    };
    assert!(line.contains(&wanted), "{wanted} in {line}");
}

/// What the marker of a boot of installed `volume` (`a`, `b`) says
/// started it: its own UEFI boot option (GRUB), or its systemd-boot entry.
pub fn volume_loader(bootloader: TestBootloader, volume: &str) -> String {
    match bootloader {
        TestBootloader::Grub => format!("boot=AZL{} ", volume.to_uppercase()),
        _ => format!("entry=trident-volume-{volume}.conf"),
    }
}

/// The `Boot####` lines of `serial`: (number, label, the rest).
fn efibootmgr_lines(serial: &str) -> impl Iterator<Item = (&str, &str, &str)> {
    // "TRIDENT-TEST-OS-EFIBOOTMGR Boot0003* AZLB<TAB>HD(1,GPT,...)"
    serial
        .lines()
        .filter_map(|l| l.split("TRIDENT-TEST-OS-EFIBOOTMGR Boot").nth(1))
        .filter_map(|rest| {
            let number = rest.get(..4)?;
            let text = rest.get(4..)?.trim_start_matches('*').trim_start();
            let end = text
                .find(|c: char| !c.is_ascii_alphanumeric())
                .unwrap_or(text.len());
            Some((number, &text[..end], &text[end..]))
        })
}

/// GRUB volumes: the UEFI boot option the firmware booted (`boot=`, its
/// label) and `BootOrder` at that boot, from the ready marker `line`, with
/// the option numbers of `AZLA` and `AZLB` from the efibootmgr lines the
/// guest printed before it in `serial`. Returns (order, A's number, B's).
pub fn boot_options(serial: &str, line: &str) -> (Vec<String>, String, String) {
    let order: Vec<String> = line
        .split_whitespace()
        .find_map(|w| w.strip_prefix("bootorder="))
        .unwrap_or_default()
        .split(',')
        .map(str::to_owned)
        .collect();
    let number_of = |label: &str| {
        efibootmgr_lines(serial)
            .filter(|(_, l, _)| *l == label)
            .map(|(n, _, _)| n)
            .last()
            .unwrap_or_default()
            .to_owned()
    };
    (order, number_of("AZLA"), number_of("AZLB"))
}

/// The options labelled `label` at the boot whose ready marker is `line`
/// (the efibootmgr lines between the previous marker and it): each one's
/// number and the partition GUID of its `HD()` node, lowercase.
pub fn options_of_boot(serial: &str, line: &str, label: &str) -> Vec<(String, String)> {
    let end = serial.rfind(line).unwrap_or(serial.len());
    let start = serial[..end].rfind(READY_MARKER).unwrap_or(0);
    efibootmgr_lines(&serial[start..end])
        .filter(|(_, l, _)| *l == label)
        .map(|(number, _, rest)| {
            // HD(1,GPT,<guid>,0x800,0x50000)
            let guid = rest
                .split("HD(")
                .nth(1)
                .and_then(|hd| hd.split(',').nth(2))
                .unwrap_or_default()
                .to_lowercase();
            (number.to_owned(), guid)
        })
        .collect()
}
