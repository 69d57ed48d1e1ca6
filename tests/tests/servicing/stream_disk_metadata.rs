//! Every COSI metadata vector (cosi/tests/vectors/, expectations in its
//! README table) packed as a COSI holding only its metadata and sent
//! through StreamDisk of a real tridentd: each invalid one fails as
//! invalid-image-metadata naming its field; each valid one gets past the
//! metadata (and then fails for the missing region images, as it must).

#![allow(clippy::unwrap_used)] // tests fail loudly on purpose

use std::path::{Path, PathBuf};

use trident_cosi::writer::write_metadata_only_cosi;
use trident_e2e::{disk_daemon, stream_disk_file};
use trident_proto::v1::{
    StatusCode, TridentErrorKind, streaming_service_client::StreamingServiceClient,
};

const METADATA_SUBKIND: &str = "invalid-image-metadata";

fn vectors_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../cosi/tests/vectors")
}

/// `(vector path relative to v1.2/, field named)` from the README table.
fn expectations() -> Vec<(String, String)> {
    let readme = std::fs::read_to_string(vectors_dir().join("README.md")).unwrap();
    readme
        .lines()
        .filter_map(|line| {
            let cols: Vec<&str> = line.split('|').map(str::trim).collect();
            let name = cols.get(1)?;
            (name.starts_with("valid/") || name.starts_with("invalid/"))
                .then(|| (name.to_string(), cols.get(3).unwrap_or(&"").to_string()))
        })
        .collect()
}

#[tokio::test]
async fn every_metadata_vector_is_judged_by_stream_disk_as_the_schema_says() {
    let dir = tempfile::tempdir().unwrap();
    // Sparse and larger than every vector's disk, so only the metadata and
    // the missing regions can fail a valid vector.
    let disk = dir.path().join("disk.img");
    std::fs::File::create(&disk)
        .unwrap()
        .set_len(8 << 30)
        .unwrap();
    let daemon = disk_daemon(&disk).await;
    let mut client = StreamingServiceClient::new(daemon.channel().await.unwrap());

    let vectors = expectations();
    assert_eq!(vectors.len(), 25, "README table of vectors changed?");
    for (name, field) in vectors {
        let json = std::fs::read(vectors_dir().join("v1.2").join(format!("{name}.json"))).unwrap();
        let cosi = dir.path().join(format!("{}.cosi", name.replace('/', "-")));
        write_metadata_only_cosi(&json, &cosi).unwrap();
        let completed = stream_disk_file(&mut client, &cosi).await;
        assert_eq!(
            completed.status(),
            StatusCode::Failure,
            "{name}: {completed:?}"
        );
        let err = completed.error.as_ref().unwrap();
        if name.starts_with("invalid/") {
            assert_eq!(
                err.kind(),
                TridentErrorKind::InvalidInputError,
                "{name}: {err:?}"
            );
            assert_eq!(err.subkind, METADATA_SUBKIND, "{name}: {err:?}");
            assert!(
                err.message.contains(&format!("metadata.json: {field}: ")),
                "{name}: the message must name {field}: {err:?}"
            );
        } else {
            println!("{name}: past the metadata, then {}", err.subkind);
            assert_ne!(err.subkind, METADATA_SUBKIND, "{name}: {err:?}");
        }
    }

    // `COSI_EXTRA_VECTORS=DIR`: also judge DIR/valid/*.json and
    // DIR/invalid/*.json (another vector set laid out the same way).
    if let Some(extra) = std::env::var_os("COSI_EXTRA_VECTORS") {
        let (mut agree, mut total) = (0, 0);
        for kind in ["valid", "invalid"] {
            let mut paths: Vec<PathBuf> = std::fs::read_dir(Path::new(&extra).join(kind))
                .unwrap()
                .map(|e| e.unwrap().path())
                .collect();
            paths.sort();
            for path in paths {
                let cosi = dir.path().join(format!("extra-{kind}.cosi"));
                write_metadata_only_cosi(&std::fs::read(&path).unwrap(), &cosi).unwrap();
                let completed = stream_disk_file(&mut client, &cosi).await;
                let err = completed.error.unwrap_or_default();
                println!("{kind} {}: {} {}", path.display(), err.subkind, err.message);
                total += 1;
                if (err.subkind == METADATA_SUBKIND) == (kind == "invalid") {
                    agree += 1;
                }
            }
        }
        println!("{agree} of {total} extra vectors agree");
        assert_eq!(agree, total);
    }
}
