//! Hostile COSI images sent to a real tridentd through StreamDisk: entry
//! names and metadata paths that try to leave the archive, and metadata
//! that lies about sizes or regions. Each is refused with a structured
//! error (category, subkind, message, location); what the metadata alone
//! shows to be wrong is refused before anything is written to the target;
//! nothing is ever written outside the target; the daemon keeps serving.

#![allow(clippy::unwrap_used)] // tests fail loudly on purpose

use std::fs;
use std::path::{Path, PathBuf};

use serde_json::Value;
use trident_e2e::fixture::CosiImage;
use trident_e2e::{disk_daemon, stream_disk_file};
use trident_proto::v1::{
    Completed, StatusCode, TridentErrorKind, streaming_service_client::StreamingServiceClient,
};

const DISK: u64 = 12 << 20;
const FILL: u8 = 0xEE;
const METADATA: &str = "metadata.json";

/// The entries of a COSI archive, in order.
fn read_entries(cosi: &Path) -> Vec<(String, Vec<u8>)> {
    let mut archive = tar::Archive::new(fs::File::open(cosi).unwrap());
    archive
        .entries()
        .unwrap()
        .map(|entry| {
            let mut entry = entry.unwrap();
            let path = entry.path().unwrap().to_string_lossy().into_owned();
            let mut data = Vec::new();
            std::io::Read::read_to_end(&mut entry, &mut data).unwrap();
            (path, data)
        })
        .collect()
}

/// Writes entries as a tar archive; names are written raw (GNU long-name
/// records when needed) so `..` and absolute names survive.
fn write_entries(out: &Path, entries: &[(String, Vec<u8>)]) {
    let mut builder = tar::Builder::new(fs::File::create(out).unwrap());
    for (path, data) in entries {
        let mut header = tar::Header::new_gnu();
        header.set_size(data.len() as u64);
        header.set_mode(0o644);
        header.set_entry_type(tar::EntryType::Regular);
        if path.len() < 100 {
            header.as_old_mut().name[..path.len()].copy_from_slice(path.as_bytes());
        } else {
            let mut long = tar::Header::new_gnu();
            long.as_gnu_mut().unwrap().name[..13].copy_from_slice(b"././@LongLink");
            long.set_entry_type(tar::EntryType::GNULongName);
            long.set_size(path.len() as u64 + 1);
            long.set_cksum();
            let mut name = path.as_bytes().to_vec();
            name.push(0);
            builder.append(&long, name.as_slice()).unwrap();
        }
        header.set_cksum();
        builder.append(&header, data.as_slice()).unwrap();
    }
    builder.finish().unwrap();
}

struct Setup {
    dir: tempfile::TempDir,
    entries: Vec<(String, Vec<u8>)>,
    metadata: Value,
}

impl Setup {
    fn new() -> Setup {
        let dir = tempfile::tempdir().unwrap();
        let cosi = dir.path().join("good.cosi");
        CosiImage::new(DISK, 11).esp_bytes(2 << 20).write(&cosi);
        let entries = read_entries(&cosi);
        let metadata = entries
            .iter()
            .find(|(p, _)| p == METADATA)
            .map(|(_, d)| serde_json::from_slice(d).unwrap())
            .unwrap();
        Setup {
            dir,
            entries,
            metadata,
        }
    }

    /// A COSI whose metadata is changed by `edit` and whose entries are
    /// changed by `rename`/`extra`.
    fn variant(
        &self,
        name: &str,
        edit: impl FnOnce(&mut Value),
        rename: &[(&str, &str)],
        extra: &[(&str, &[u8])],
    ) -> PathBuf {
        let mut metadata = self.metadata.clone();
        edit(&mut metadata);
        let mut entries = self.entries.clone();
        for (path, data) in &mut entries {
            if path == METADATA {
                *data = serde_json::to_vec_pretty(&metadata).unwrap();
            }
            if let Some((_, to)) = rename.iter().find(|(from, _)| from == path) {
                *path = (*to).to_owned();
            }
        }
        // Unknown entries go right after metadata.json.
        for (i, (path, data)) in extra.iter().enumerate() {
            entries.insert(2 + i, ((*path).to_owned(), data.to_vec()));
        }
        let out = self.dir.path().join(format!("{name}.cosi"));
        write_entries(&out, &entries);
        out
    }

    fn region_path(&self, index: usize) -> String {
        self.metadata["disk"]["gptRegions"][index]["image"]["path"]
            .as_str()
            .unwrap()
            .to_owned()
    }

    fn regions(&self) -> usize {
        self.metadata["disk"]["gptRegions"]
            .as_array()
            .unwrap()
            .len()
    }

    fn disk(&self, name: &str) -> PathBuf {
        let p = self.dir.path().join(name);
        fs::write(&p, vec![FILL; DISK as usize]).unwrap();
        p
    }
}

fn untouched(p: &Path) -> bool {
    fs::read(p).unwrap().iter().all(|&b| b == FILL)
}

/// A change to metadata.json.
type Edit = Box<dyn Fn(&mut Value)>;

/// Points region `index` (and its `images[]` twin) at `path`.
fn set_region_path(m: &mut Value, index: usize, path: &str) {
    let old = m["disk"]["gptRegions"][index]["image"]["path"].clone();
    m["disk"]["gptRegions"][index]["image"]["path"] = Value::from(path);
    for fs in m["images"].as_array_mut().unwrap() {
        if fs["image"]["path"] == old {
            fs["image"]["path"] = Value::from(path);
        }
    }
}

/// Adds `delta` to a size field of region `index` (and its twin).
fn shift_size(m: &mut Value, index: usize, field: &str, delta: i64) {
    let path = m["disk"]["gptRegions"][index]["image"]["path"].clone();
    let apply = |image: &mut Value| {
        let v = image[field].as_i64().unwrap();
        image[field] = Value::from(v + delta);
    };
    apply(&mut m["disk"]["gptRegions"][index]["image"]);
    for fs in m["images"].as_array_mut().unwrap() {
        if fs["image"]["path"] == path {
            apply(&mut fs["image"]);
        }
    }
}

fn assert_refused(done: &Completed, what: &str) {
    assert_eq!(done.status(), StatusCode::Failure, "{what}: {done:?}");
    let err = done
        .error
        .as_ref()
        .unwrap_or_else(|| panic!("{what}: no error"));
    assert_ne!(err.kind(), TridentErrorKind::Unspecified, "{what}: {err:?}");
    assert!(
        !err.subkind.is_empty() && !err.message.is_empty(),
        "{what}: {err:?}"
    );
    let location = err
        .location
        .as_ref()
        .unwrap_or_else(|| panic!("{what}: no location"));
    assert!(
        !location.path.is_empty() && location.line > 0,
        "{what}: {location:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn path_traversal_and_absolute_paths_in_metadata_are_refused_before_writing() {
    let s = Setup::new();
    let root = s.region_path(s.regions() - 1);
    let cases = [
        (
            "traversal",
            "images/../../../../etc/trident-escape".to_owned(),
        ),
        ("absolute", "/etc/trident-escape".to_owned()),
        ("dot-component", "images/./root.img.zst".to_owned()),
    ];
    let disk = s.disk("target.img");
    let d = disk_daemon(&disk).await;
    let mut client = StreamingServiceClient::new(d.channel().await.unwrap());
    for (what, bad) in cases {
        let cosi = s.variant(
            what,
            |m| set_region_path(m, s.regions() - 1, &bad),
            &[(root.as_str(), bad.as_str())],
            &[],
        );
        let done = stream_disk_file(&mut client, &cosi).await;
        assert_refused(&done, what);
        let err = done.error.as_ref().unwrap();
        assert_eq!(
            err.kind(),
            TridentErrorKind::InvalidInputError,
            "{what}: {err:?}"
        );
        assert_eq!(err.subkind, "invalid-image-metadata", "{what}: {err:?}");
        assert!(
            err.message.contains("path"),
            "{what}: names the field: {err:?}"
        );
        assert!(untouched(&disk), "{what}: the target was written");
    }
    assert!(!Path::new("/etc/trident-escape").exists());
}

#[tokio::test(flavor = "multi_thread")]
async fn hostile_entry_names_are_never_used_as_paths() {
    let s = Setup::new();
    let escape = s.dir.path().join("escaped-entry");
    let relative = format!(
        "../../../../../../..{}",
        s.dir.path().join("escaped-relative").display()
    );
    let absolute = escape.display().to_string();
    // Unknown entries, which the spec says readers ignore: ignored, and
    // never created anywhere.
    let cosi = s.variant(
        "hostile-names",
        |_| {},
        &[],
        &[(relative.as_str(), b"x"), (absolute.as_str(), b"y")],
    );
    let disk = s.disk("target.img");
    let d = disk_daemon(&disk).await;
    let mut client = StreamingServiceClient::new(d.channel().await.unwrap());
    let done = stream_disk_file(&mut client, &cosi).await;
    assert_eq!(done.status(), StatusCode::Success, "{done:?}");
    assert!(!escape.exists());
    assert!(!s.dir.path().join("escaped-relative").exists());
}

#[tokio::test(flavor = "multi_thread")]
async fn metadata_that_lies_about_sizes_or_regions_gets_a_structured_error() {
    let s = Setup::new();
    let last = s.regions() - 1;
    let disk = s.disk("target.img");
    let d = disk_daemon(&disk).await;
    let mut client = StreamingServiceClient::new(d.channel().await.unwrap());

    // Wrong only in ways metadata.json shows by itself: refused before
    // the target is opened for writing.
    let disk_size = s.metadata["disk"]["size"].as_u64().unwrap();
    let before_writing: Vec<(&str, Edit)> = vec![
        (
            "region larger than the disk",
            Box::new(move |m| {
                let grow = disk_size as i64;
                shift_size(m, last, "uncompressedSize", grow);
            }),
        ),
        (
            "disk size not a multiple of the LBA size",
            Box::new(move |m| m["disk"]["size"] = Value::from(disk_size + 7)),
        ),
        (
            "partition number twice",
            Box::new(move |m| {
                let n = m["disk"]["gptRegions"][1]["number"].clone();
                m["disk"]["gptRegions"][last]["number"] = n;
            }),
        ),
        (
            "no regions",
            Box::new(|m| m["disk"]["gptRegions"] = Value::Array(vec![])),
        ),
    ];
    for (what, edit) in before_writing {
        let cosi = s.variant(what, |m| edit(m), &[], &[]);
        let done = stream_disk_file(&mut client, &cosi).await;
        assert_refused(&done, what);
        assert!(untouched(&disk), "{what}: the target was written");
    }

    // Wrong in ways only the data shows: refused when the data disagrees,
    // with a structured error.
    let while_reading: Vec<(&str, Edit)> = vec![
        (
            "compressed size one byte short",
            Box::new(move |m| shift_size(m, last, "compressedSize", -1)),
        ),
        (
            "uncompressed size 4 KiB short",
            Box::new(move |m| shift_size(m, last, "uncompressedSize", -4096)),
        ),
        (
            "uncompressed size 4 KiB long",
            Box::new(move |m| shift_size(m, last, "uncompressedSize", 4096)),
        ),
        (
            "partition number not in the GPT",
            Box::new(move |m| m["disk"]["gptRegions"][last]["number"] = Value::from(77)),
        ),
    ];
    for (what, edit) in while_reading {
        let cosi = s.variant(what, |m| edit(m), &[], &[]);
        let done = stream_disk_file(&mut client, &cosi).await;
        assert_refused(&done, what);
    }

    // The daemon serves a good image afterwards.
    let good = s.variant("good", |_| {}, &[], &[]);
    let done = stream_disk_file(&mut client, &good).await;
    assert_eq!(done.status(), StatusCode::Success, "{done:?}");
}
