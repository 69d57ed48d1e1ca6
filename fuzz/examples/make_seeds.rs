//! Writes the seed corpus (`corpus/TARGET/seed-*`) from our own fixtures:
//! `cargo +nightly run --example make_seeds` in fuzz/. The seeds are
//! committed; run this again only when a format changes.

use std::path::Path;

use prost::Message;
use trident_cosi::writer::{self, FixtureSpec};
use trident_proto::{v1, v1preview};

type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;

fn put(target: &str, name: &str, bytes: &[u8]) -> Result<()> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("corpus")
        .join(target);
    std::fs::create_dir_all(&dir)?;
    std::fs::write(dir.join(format!("seed-{name}")), bytes)?;
    Ok(())
}

fn repo(path: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(path)
}

fn host_config() -> Result<()> {
    for entry in std::fs::read_dir(repo("host/tests/fixtures/host-config"))? {
        let path = entry?.path();
        if path.extension().is_some_and(|e| e == "yaml") {
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("hc");
            put("host_config", name, &std::fs::read(&path)?)?;
        }
    }
    Ok(())
}

fn cosi_and_gpt() -> Result<()> {
    let dir = tempfile::tempdir()?;
    for vector in ["grub-two-partitions", "systemd-boot-uki-verity"] {
        let json = std::fs::read(repo(&format!(
            "cosi/tests/vectors/v1.2/valid/{vector}.json"
        )))?;
        let out = dir.path().join("meta.cosi");
        writer::write_metadata_only_cosi(&json, &out)?;
        put(
            "cosi_reader",
            &format!("metadata-only-{vector}"),
            &std::fs::read(&out)?,
        )?;
    }
    // The GPT of a small fixture disk (a whole COSI of it would be a
    // megabyte of incompressible content: too big for a seed).
    let spec = FixtureSpec {
        esp_size: 256 << 10,
        ..FixtureSpec::new(4 << 20, 1)
    };
    let gpt = spec.gpt()?;
    put("gpt_reader", "primary-512", &gpt.primary_bytes())?;
    Ok(())
}

fn frame(out: &mut Vec<u8>, record: &v1::Record) {
    let bytes = record.encode_to_vec();
    out.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
    out.extend_from_slice(&bytes);
}

fn journal() -> Result<()> {
    let cursor = |sequence| {
        Some(v1::Cursor {
            run_id: "7d1c4d4e-93a4-4d51-a3a7-0e6c1a1f3b21".to_owned(),
            sequence,
        })
    };
    let operation = |event: v1::OperationEvent, sequence| v1::Record {
        cursor: cursor(sequence),
        boot_id: String::new(),
        timestamp: None,
        record: Some(v1::record::Record::Operation(v1::OperationRecord {
            event: event as i32,
            operation_id: "op-1".to_owned(),
            rpc: "StreamDisk".to_owned(),
            ..Default::default()
        })),
    };
    let mut segment = Vec::new();
    frame(&mut segment, &operation(v1::OperationEvent::Started, 1));
    frame(
        &mut segment,
        &v1::Record {
            cursor: cursor(2),
            boot_id: String::new(),
            timestamp: None,
            record: Some(v1::record::Record::Log(v1::LogRecord {
                message: "writing region 1".to_owned(),
                ..Default::default()
            })),
        },
    );
    frame(&mut segment, &operation(v1::OperationEvent::Completed, 3));
    put("journal_frames", "three-records", &segment)?;
    segment.extend_from_slice(&100u32.to_le_bytes());
    segment.extend_from_slice(b"torn");
    put("journal_frames", "torn-tail", &segment)?;
    Ok(())
}

fn requests() -> Result<()> {
    let hc = std::fs::read_to_string(repo("host/tests/fixtures/host-config/simple.yaml"))?;
    let config = Some(v1::HostConfiguration { config: hc });
    // The index is the message's row in request_decode.rs's table.
    let seeds: Vec<(u8, &str, Vec<u8>)> = vec![
        (
            0,
            "commit",
            v1::CommitRequest {
                reboot: Some(v1::RebootManagement { handling: 1 }),
            }
            .encode_to_vec(),
        ),
        (
            3,
            "stream-disk",
            v1::StreamDiskRequest {
                image_url: "file:///srv/os.cosi".into(),
                image_hash: None,
                reboot: None,
                ..Default::default()
            }
            .encode_to_vec(),
        ),
        (
            5,
            "stage-update",
            v1::StageUpdateRequest {
                config: config.clone(),
            }
            .encode_to_vec(),
        ),
        (
            11,
            "watch",
            v1::WatchRequest {
                options: Some(v1::WatchOptions {
                    tail: Some(10),
                    min_level: 2,
                    ..Default::default()
                }),
                kinds: vec![1, 2],
            }
            .encode_to_vec(),
        ),
        (
            30,
            "validate",
            v1preview::ValidateHostConfigurationRequest { config }.encode_to_vec(),
        ),
    ];
    for (pick, name, body) in seeds {
        let mut bytes = vec![pick];
        bytes.extend_from_slice(&body);
        put("request_decode", name, &bytes)?;
    }
    Ok(())
}

fn main() -> Result<()> {
    host_config()?;
    cosi_and_gpt()?;
    journal()?;
    requests()?;
    Ok(())
}
