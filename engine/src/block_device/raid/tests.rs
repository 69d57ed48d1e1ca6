//! The RAID layer's reading of the kernel (on a copy of the sysfs and
//! `/dev` files it reads: md is not in this machine's kernel), its mdadm
//! command line, and rebuild-raid's refusals on disk-image files: each
//! one names what is wrong and leaves the disks as they were.
#![allow(clippy::unwrap_used)] // tests fail loudly on purpose

use std::fs;
use std::os::unix::fs::symlink;
use std::path::Path;

use trident_host::Subkind;
use trident_host::config::{HostConfiguration, RaidLevel};
use trident_host::status::{HostStatus, RaidArrayStatus, ServicingState};

use super::super::layer::BlockDeviceLayer;
use super::super::partition::PartitionLayer;
use super::sysfs::{self, parse_sync_completed};
use super::{Kernel, mdadm, rebuild, sync};

const MIB: u64 = 1 << 20;

/// Records, as the RAID layer would, RAID1 arrays `(id = name, members)`
/// of `size` usable bytes, clean.
pub(crate) fn record_mirrors(status: &mut HostStatus, arrays: &[(&str, [&str; 2])], size: u64) {
    for (id, members) in arrays {
        status.raid_arrays.insert(
            (*id).to_owned(),
            RaidArrayStatus {
                name: (*id).to_owned(),
                level: RaidLevel::Raid1,
                members: members.map(str::to_owned).to_vec(),
                uuid: "0:0:0:0".to_owned(),
                size,
                state: "clean".to_owned(),
            },
        );
    }
}

/// A copy of what sysfs and `/dev` say about one md array `md127` named
/// `name`, with `members` (`vda2`, partitions of the disk before the
/// digits) and the given md attributes.
struct FakeKernel {
    dir: tempfile::TempDir,
}

impl FakeKernel {
    fn new() -> FakeKernel {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir_all(dir.path().join("sys/block")).unwrap();
        fs::create_dir_all(dir.path().join("sys/class/block")).unwrap();
        fs::create_dir_all(dir.path().join("dev/md")).unwrap();
        FakeKernel { dir }
    }

    fn kernel(&self) -> Kernel {
        Kernel {
            sys: self.dir.path().join("sys"),
            dev: self.dir.path().join("dev"),
        }
    }

    /// A partition `name` of disk `disk` (entry `number`), 1 GiB at
    /// `number` GiB.
    fn partition(&self, disk: &str, name: &str, number: u32) {
        let real = self.dir.path().join("sys/devices").join(disk).join(name);
        fs::create_dir_all(&real).unwrap();
        fs::write(real.join("partition"), format!("{number}\n")).unwrap();
        fs::write(real.join("start"), format!("{}\n", u64::from(number) << 21)).unwrap();
        fs::write(real.join("size"), format!("{}\n", 1u64 << 21)).unwrap();
        let class = self.dir.path().join("sys/class/block");
        let disk_dir = self.dir.path().join("sys/devices").join(disk);
        let _ = symlink(&disk_dir, class.join(disk));
        symlink(&real, class.join(name)).unwrap();
    }

    fn array(&self, md: &str, name: &str, attrs: &[(&str, &str)], members: &[&str]) {
        let block = self.dir.path().join("sys/block").join(md);
        let dir = block.join("md");
        fs::create_dir_all(&dir).unwrap();
        fs::write(block.join("size"), "2097152\n").unwrap(); // 1 GiB
        for (file, value) in attrs {
            fs::write(dir.join(file), format!("{value}\n")).unwrap();
        }
        for member in members {
            let dev = dir.join(format!("dev-{member}"));
            fs::create_dir_all(&dev).unwrap();
            symlink(format!("../../../{member}"), dev.join("block")).unwrap();
            let slaves = block.join("slaves");
            fs::create_dir_all(&slaves).unwrap();
            symlink(format!("../../{member}"), slaves.join(member)).unwrap();
        }
        fs::write(self.dir.path().join("dev").join(md), "").unwrap();
        symlink(
            format!("../{md}"),
            self.dir.path().join("dev/md").join(name),
        )
        .unwrap();
    }
}

const CLEAN: &[(&str, &str)] = &[
    ("level", "raid1"),
    ("array_state", "clean"),
    ("degraded", "0"),
    ("sync_action", "idle"),
    ("sync_completed", "none"),
];

#[test]
fn the_kernels_view_of_an_array_reads_level_state_members_and_sync_progress() {
    let fake = FakeKernel::new();
    fake.partition("vda", "vda2", 2);
    fake.partition("vdb", "vdb2", 2);
    fake.array(
        "md127",
        "root",
        &[
            ("level", "raid1"),
            ("array_state", "active"),
            ("degraded", "0"),
            ("sync_action", "resync"),
            ("sync_completed", "524288 / 2097152"),
        ],
        &["vda2", "vdb2"],
    );
    let kernel = fake.kernel();
    assert_eq!(kernel.md_of("root").as_deref(), Some("md127"));
    let state = kernel.array("root").unwrap();
    assert_eq!(state.level, "raid1");
    assert_eq!(state.size, 1 << 30);
    assert_eq!(state.members, ["vda2", "vdb2"]);
    assert!(state.syncing());
    assert_eq!(state.sync_progress, Some((524288, 2097152)));
    assert_eq!(state.summary(), "resync 25%");
    assert_eq!(sysfs::arrays(&kernel.sys), ["md127"]);
    assert_eq!(sysfs::slaves(&kernel.sys, "md127"), ["vda2", "vdb2"]);
    assert_eq!(sysfs::disk_of(&kernel.sys, "vdb2").as_deref(), Some("vdb"));
    assert_eq!(
        sysfs::partition_name(&kernel.sys, "vdb", 2).as_deref(),
        Some("vdb2")
    );
    assert_eq!(sysfs::partition_name(&kernel.sys, "vdb", 3), None);
    assert_eq!(
        sysfs::partition_range(&kernel.sys, "vdb2"),
        Some((2 << 30, 1 << 30))
    );
    assert!(kernel.array("nope").is_none());
}

#[test]
fn an_array_summary_says_clean_degraded_or_what_sync_runs() {
    let fake = FakeKernel::new();
    fake.array("md1", "clean", CLEAN, &[]);
    fake.array(
        "md2",
        "degraded",
        &[
            ("level", "raid1"),
            ("array_state", "clean"),
            ("degraded", "1"),
            ("sync_action", "idle"),
        ],
        &[],
    );
    fake.array(
        "md3",
        "waiting",
        &[
            ("level", "raid1"),
            ("array_state", "active"),
            ("degraded", "1"),
            ("sync_action", "recover"),
            ("sync_completed", "delayed"),
        ],
        &[],
    );
    // raid0 has no sync_action at all.
    fake.array(
        "md4",
        "stripe",
        &[("level", "raid0"), ("array_state", "clean")],
        &[],
    );
    let kernel = fake.kernel();
    let summary = |name| kernel.array(name).unwrap().summary();
    assert_eq!(summary("clean"), "clean");
    assert_eq!(summary("degraded"), "degraded (1 missing)");
    assert_eq!(summary("waiting"), "recover pending");
    assert_eq!(summary("stripe"), "clean");
    assert_eq!(parse_sync_completed("10 / 20"), Some((10, 20)));
    assert_eq!(parse_sync_completed("none"), None);
    assert_eq!(parse_sync_completed("delayed"), None);
}

#[test]
fn arrays_are_created_with_metadata_1_0_for_any_homehost_without_questions() {
    let args = mdadm::create_args(
        "esp",
        RaidLevel::Raid1,
        &["/dev/vda1".to_owned(), "/dev/vdb1".to_owned()],
    );
    assert_eq!(
        args.join(" "),
        "--create /dev/md/esp --run --level=1 --raid-devices=2 --metadata=1.0 --homehost=any /dev/vda1 /dev/vdb1"
    );
    assert_eq!(
        mdadm::create_args("r", RaidLevel::Raid10, &[]).join(" "),
        "--create /dev/md/r --run --level=10 --raid-devices=0 --metadata=1.0 --homehost=any"
    );
    assert_eq!(
        mdadm::conf_line("root", "a:b:c:d"),
        "ARRAY /dev/md/root metadata=1.0 UUID=a:b:c:d name=root"
    );
    let export =
        "MD_LEVEL=raid1\nMD_DEVICES=2\nMD_UUID=5a9e1c2b:0f3d4e5f:11223344:55667788\nMD_NAME=root\n";
    assert_eq!(
        mdadm::export_value(export, "MD_UUID").as_deref(),
        Some("5a9e1c2b:0f3d4e5f:11223344:55667788")
    );
}

#[test]
fn following_a_sync_ends_when_every_array_is_whole_and_times_out_naming_each_state() {
    let fake = FakeKernel::new();
    fake.array("md1", "esp", CLEAN, &[]);
    fake.array(
        "md2",
        "root",
        &[
            ("level", "raid1"),
            ("array_state", "active"),
            ("degraded", "0"),
            ("sync_action", "resync"),
            ("sync_completed", "1024 / 2097152"),
        ],
        &[],
    );
    let kernel = fake.kernel();
    let one = |name: &str| vec![(name.to_owned(), name.to_owned(), 1u64 << 30)];
    let esp = sync::md_names(&kernel, &one("esp"), Subkind::CreateRaid).unwrap();
    sync::follow(
        &kernel.sys,
        &esp,
        sync::Limit::Total(std::time::Duration::ZERO),
        "raid-sync",
        "sync",
        Subkind::CreateRaid,
    )
    .expect("a clean array needs no wait");
    let root = sync::md_names(&kernel, &one("root"), Subkind::CreateRaid).unwrap();
    let err = sync::follow(
        &kernel.sys,
        &root,
        sync::Limit::Total(std::time::Duration::ZERO),
        "raid-sync",
        "sync",
        Subkind::CreateRaid,
    )
    .unwrap_err();
    assert_eq!(err.subkind(), Subkind::CreateRaid);
    assert!(
        err.message().contains(
            "did not finish syncing within 0 s (storage.raid.syncTimeout): root: resync 0%"
        ),
        "{}",
        err.message()
    );
    let missing = sync::md_names(&kernel, &one("gone"), Subkind::CreateRaid).unwrap_err();
    assert!(
        missing.message().contains("/dev/md/gone does not exist"),
        "{}",
        missing.message()
    );
}

/// Two 64 MiB disk-image files partitioned by the partition layer for a
/// mirror `root` over `r1`/`r2` (and a mirrored ESP), recorded as
/// provisioned, and the kernel's view of both arrays.
struct Installed {
    dir: tempfile::TempDir,
    hc: HostConfiguration,
    status: HostStatus,
    fake: FakeKernel,
}

fn installed(root_attrs: &[(&str, &str)], root_members: &[&str]) -> Installed {
    let dir = tempfile::tempdir().unwrap();
    let disk = |n: u32| {
        let path = dir.path().join(format!("d{n}.img"));
        fs::File::create(&path).unwrap().set_len(64 * MIB).unwrap();
        path.display().to_string()
    };
    let (d1, d2) = (disk(1), disk(2));
    let yaml = format!(
        r#"image: {{ url: "file:///img.cosi", sha384: ignored }}
storage:
  disks:
  - id: disk1
    device: {d1}
    partitions:
    - {{ id: esp1, type: esp, size: 8M }}
    - {{ id: r1, type: root, size: 32M }}
  - id: disk2
    device: {d2}
    partitions:
    - {{ id: esp2, type: esp, size: 8M }}
    - {{ id: r2, type: root, size: 32M }}
  raid:
    software:
    - {{ id: esp, name: esp, level: raid1, devices: [esp1, esp2] }}
    - {{ id: root, name: root, level: raid1, devices: [r1, r2] }}
  filesystems:
  - {{ deviceId: esp, mountPoint: /boot/efi }}
  - {{ deviceId: root, mountPoint: / }}
"#
    );
    let hc = trident_host::config::parse(&yaml).unwrap();
    let mut status = HostStatus::default();
    PartitionLayer.create(&hc, &mut status).unwrap();
    record_mirrors(
        &mut status,
        &[("esp", ["esp1", "esp2"]), ("root", ["r1", "r2"])],
        8 * MIB,
    );
    status.spec = Some(hc.clone());
    status.servicing_state = ServicingState::Provisioned;
    let fake = FakeKernel::new();
    fake.partition("vda", "vda1", 1);
    fake.partition("vda", "vda2", 2);
    fake.array(
        "md1",
        "esp",
        &[
            ("level", "raid1"),
            ("array_state", "clean"),
            ("degraded", "1"),
            ("sync_action", "idle"),
        ],
        &["vda1"],
    );
    fake.array("md2", "root", root_attrs, root_members);
    Installed {
        dir,
        hc,
        status,
        fake,
    }
}

const DEGRADED: &[(&str, &str)] = &[
    ("level", "raid1"),
    ("array_state", "clean"),
    ("degraded", "1"),
    ("sync_action", "idle"),
];

impl Installed {
    fn disk(&self, n: u32) -> std::path::PathBuf {
        self.dir.path().join(format!("d{n}.img"))
    }

    /// Disk `n` replaced by a blank one of `size` bytes.
    fn replace(&self, n: u32, size: u64) {
        let path = self.disk(n);
        fs::remove_file(&path).unwrap();
        fs::File::create(&path).unwrap().set_len(size).unwrap();
    }

    /// The refusal of rebuild-raid; the disks are untouched.
    fn refusal(&self) -> trident_host::TridentError {
        let before: Vec<Vec<u8>> = [1, 2].map(|n| fs::read(self.disk(n)).unwrap()).to_vec();
        let err = rebuild::plan(&self.hc, &self.status, &self.fake.kernel()).unwrap_err();
        let after: Vec<Vec<u8>> = [1, 2].map(|n| fs::read(self.disk(n)).unwrap()).to_vec();
        assert!(before == after, "a refused rebuild touched a disk");
        err
    }
}

fn assert_refused(err: &trident_host::TridentError, wanted: &str) {
    assert_eq!(
        err.subkind(),
        Subkind::ValidateRebuildRaid,
        "{}",
        err.message()
    );
    assert!(
        err.message().contains(wanted),
        "{wanted} in: {}",
        err.message()
    );
}

#[test]
fn rebuild_raid_refuses_when_every_disk_is_still_the_installed_one() {
    let host = installed(DEGRADED, &["vda2"]);
    assert_refused(&host.refusal(), "No disk was replaced");
}

#[test]
fn rebuild_raid_refuses_a_replacement_too_small_for_the_partitions() {
    let host = installed(DEGRADED, &["vda2"]);
    host.replace(2, 16 * MIB);
    assert_refused(
        &host.refusal(),
        "The replacement of disk 'disk2' cannot hold the configuration's partitions",
    );
}

#[test]
fn rebuild_raid_refuses_an_array_that_is_not_degraded() {
    let host = installed(CLEAN, &["vda2", "vdb2"]);
    host.replace(2, 64 * MIB);
    let err = host.refusal();
    assert_refused(
        &err,
        "Array 'root' (/dev/md/root) is not degraded (state: clean",
    );
    assert!(
        err.message().contains("nothing was touched"),
        "{}",
        err.message()
    );
}

#[test]
fn rebuild_raid_refuses_when_an_array_lost_every_member() {
    let host = installed(DEGRADED, &[]);
    host.replace(1, 64 * MIB);
    host.replace(2, 64 * MIB);
    assert_refused(
        &host.refusal(),
        "cannot be recovered: 2 of its 2 members were on the replaced disks",
    );
}

#[test]
fn rebuild_raid_plans_the_members_of_a_replaced_disk_and_needs_a_block_device_to_run() {
    let host = installed(DEGRADED, &["vda2"]);
    host.replace(2, 64 * MIB);
    // Everything checks out but the kind of disk: a file has no partitions
    // the kernel could add to an array.
    assert_refused(&host.refusal(), "Disk 'disk2' (");
    assert_refused(&host.refusal(), "is not a block device");
    // And the state: only a provisioned (or A/B staged) host is rebuilt.
    let mut staged = installed(DEGRADED, &["vda2"]);
    staged.replace(2, 64 * MIB);
    staged.status.servicing_state = ServicingState::CleanInstallStaged;
    let err = rebuild::plan(&staged.hc, &staged.status, &staged.fake.kernel()).unwrap_err();
    assert_eq!(err.subkind(), Subkind::InvalidServicingState);
}

#[test]
fn a_partition_that_holds_something_else_than_a_member_cannot_be_rebuilt() {
    let mut host = installed(DEGRADED, &["vda2"]);
    // esp2 is no longer a member: the ESP filesystem sits on it directly.
    let mut hc = host.hc.clone();
    hc.storage.raid.software.retain(|a| a.id != "esp");
    hc.storage.filesystems[0].device_id = "esp2".to_owned();
    host.status.raid_arrays.remove("esp");
    host.hc = hc;
    host.replace(2, 64 * MIB);
    assert_refused(
        &host.refusal(),
        "Partition 'esp2' of disk 'disk2' is neither a member of a software RAID array nor an unformatted partition",
    );
}

#[test]
fn the_partition_layer_records_each_disks_guid_as_written() {
    let host = installed(CLEAN, &[]);
    for (id, n) in [("disk1", 1), ("disk2", 2)] {
        let on_disk = super::super::disk_guids::disk_guid(host.disk(n).to_str().unwrap()).unwrap();
        assert_eq!(host.status.disk_uuids[id], on_disk);
    }
    assert!(Path::new(&host.disk(1)).exists());
}
