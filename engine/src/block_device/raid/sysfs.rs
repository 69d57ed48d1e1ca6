//! What the kernel says about md arrays and partitions, read from sysfs
//! (`/sys/block/mdN/md/...`, `/sys/class/block/<disk>/<partition>`). Every
//! reader takes the sysfs root, so the parsing is tested on a copy of the
//! files; the daemon passes `/sys`.

use std::fs;
use std::path::{Path, PathBuf};

/// Where the kernel's view of devices is read: sysfs and `/dev` (tests
/// give copies of both).
#[derive(Debug, Clone)]
pub struct Kernel {
    pub sys: PathBuf,
    pub dev: PathBuf,
}

impl Kernel {
    /// This host's `/sys` and `/dev`.
    pub fn host() -> Kernel {
        Kernel {
            sys: PathBuf::from("/sys"),
            dev: PathBuf::from("/dev"),
        }
    }

    /// The md device (`md127`) of array `name` (`/dev/md/<name>`).
    pub fn md_of(&self, name: &str) -> Option<String> {
        kernel_name(&self.dev.join("md").join(name))
    }

    /// The state of array `name`, if it runs.
    pub fn array(&self, name: &str) -> Option<ArrayState> {
        array_state(&self.sys, &self.md_of(name)?)
    }
}

/// One array's state as the kernel reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArrayState {
    /// `raid1`, ...
    pub level: String,
    /// `clean`, `active`, `inactive`, ... (`md/array_state`).
    pub array_state: String,
    /// Members the array is missing (`md/degraded`; 0 for raid0).
    pub degraded: u32,
    /// `idle`, `resync`, `recover`, `check`, ... (`md/sync_action`; `idle`
    /// for levels without one).
    pub sync_action: String,
    /// Sectors done and to do of the running sync (`md/sync_completed`:
    /// `"done / total"`; `none` when idle, `delayed` when waiting for
    /// another array on the same disks).
    pub sync_progress: Option<(u64, u64)>,
    /// Usable size in bytes (`size`, in 512-byte sectors).
    pub size: u64,
    /// Member block devices now in the array (`md/dev-*/block` names).
    pub members: Vec<String>,
}

impl ArrayState {
    /// Whether a sync or recovery is running or pending.
    pub fn syncing(&self) -> bool {
        self.sync_action != "idle" && self.sync_action != "frozen"
    }

    /// One word for the Host Status: `clean`, `degraded (1 missing)`,
    /// `resync 42%`, `recover 42%`, `recover pending`, or the kernel's
    /// `array_state` when the array does not run.
    pub fn summary(&self) -> String {
        if matches!(self.array_state.as_str(), "inactive" | "clear" | "") {
            return self.array_state.clone();
        }
        if self.syncing() {
            return match self.sync_progress {
                Some((done, total)) if total > 0 => {
                    format!("{} {}%", self.sync_action, done * 100 / total)
                }
                _ => format!("{} pending", self.sync_action),
            };
        }
        match self.degraded {
            0 => "clean".to_owned(),
            n => format!("degraded ({n} missing)"),
        }
    }
}

fn read_trim(path: &Path) -> Option<String> {
    fs::read_to_string(path).ok().map(|s| s.trim().to_owned())
}

/// `"123 / 456"` → (123, 456); `none`, `delayed` and the rest → None.
pub fn parse_sync_completed(text: &str) -> Option<(u64, u64)> {
    let (done, total) = text.split_once('/')?;
    Some((done.trim().parse().ok()?, total.trim().parse().ok()?))
}

/// The state of md device `md` (`md127`), or None if it does not exist.
pub fn array_state(sys: &Path, md: &str) -> Option<ArrayState> {
    let block = sys.join("block").join(md);
    let dir = block.join("md");
    let level = read_trim(&dir.join("level"))?;
    let mut members: Vec<String> = fs::read_dir(&dir)
        .ok()?
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("dev-"))
        .filter_map(|e| {
            let target = fs::read_link(e.path().join("block")).ok()?;
            Some(target.file_name()?.to_string_lossy().into_owned())
        })
        .collect();
    members.sort();
    Some(ArrayState {
        level,
        array_state: read_trim(&dir.join("array_state")).unwrap_or_default(),
        degraded: read_trim(&dir.join("degraded"))
            .and_then(|d| d.parse().ok())
            .unwrap_or(0),
        sync_action: read_trim(&dir.join("sync_action")).unwrap_or_else(|| "idle".to_owned()),
        sync_progress: read_trim(&dir.join("sync_completed"))
            .as_deref()
            .and_then(parse_sync_completed),
        size: read_trim(&block.join("size"))
            .and_then(|s| s.parse::<u64>().ok())
            .map_or(0, |sectors| sectors * 512),
        members,
    })
}

/// Every md device the kernel has (`md127`, ...).
pub fn arrays(sys: &Path) -> Vec<String> {
    let mut out: Vec<String> = fs::read_dir(sys.join("block"))
        .map(|dir| {
            dir.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|name| {
                    name.starts_with("md") && sys.join("block").join(name).join("md").is_dir()
                })
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}

/// The block devices under md device `md` (`slaves/`), e.g. `vda2`.
pub fn slaves(sys: &Path, md: &str) -> Vec<String> {
    let mut out: Vec<String> = fs::read_dir(sys.join("block").join(md).join("slaves"))
        .map(|dir| {
            dir.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}

/// The whole disk a block device belongs to: a partition's parent (the
/// directory it sits in under `/sys/class/block/<disk>/`), a disk itself.
pub fn disk_of(sys: &Path, block: &str) -> Option<String> {
    let real = fs::canonicalize(sys.join("class/block").join(block)).ok()?;
    if real.join("partition").exists() {
        Some(real.parent()?.file_name()?.to_string_lossy().into_owned())
    } else {
        Some(block.to_owned())
    }
}

/// The kernel's name of partition `number` of disk `disk` (`vda`, 2 →
/// `vda2`; `nvme0n1`, 2 → `nvme0n1p2`), if the kernel has it.
pub fn partition_name(sys: &Path, disk: &str, number: u32) -> Option<String> {
    let dir = sys.join("class/block").join(disk);
    fs::read_dir(&dir).ok()?.flatten().find_map(|e| {
        let name = e.file_name().to_string_lossy().into_owned();
        let n = read_trim(&e.path().join("partition"))?;
        (name.starts_with(disk) && n == number.to_string()).then_some(name)
    })
}

/// Byte offset and size of partition `name` as the kernel has it
/// (`start` and `size`, in 512-byte sectors).
pub fn partition_range(sys: &Path, name: &str) -> Option<(u64, u64)> {
    let dir = sys.join("class/block").join(name);
    let sectors = |file: &str| read_trim(&dir.join(file))?.parse::<u64>().ok();
    Some((sectors("start")? * 512, sectors("size")? * 512))
}

/// Device number (`major:minor`) of block device `name`.
pub fn dev_number(sys: &Path, name: &str) -> Option<String> {
    read_trim(&sys.join("class/block").join(name).join("dev"))
}

/// The kernel name behind a device path (`/dev/md/root` → `md127`,
/// `/dev/disk/by-path/...` → `vda`).
pub fn kernel_name(path: &Path) -> Option<String> {
    let real: PathBuf = fs::canonicalize(path).ok()?;
    Some(real.file_name()?.to_string_lossy().into_owned())
}
