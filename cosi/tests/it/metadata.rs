//! metadata.json parsing and validation errors name what and where.

#![allow(clippy::unwrap_used)] // tests fail loudly on purpose

use std::fs;

use trident_cosi::metadata::{Metadata, MetadataError, RegionType};

use crate::common::*;

fn valid() -> Metadata {
    let f = fixture(&spec(1));
    let bytes = fs::read(&f.cosi.path).unwrap();
    let mut archive = tar::Archive::new(&bytes[..]);
    for entry in archive.entries().unwrap() {
        let mut entry = entry.unwrap();
        if entry.path().unwrap().to_str() == Some("metadata.json") {
            let mut json = Vec::new();
            std::io::Read::read_to_end(&mut entry, &mut json).unwrap();
            return Metadata::from_json(&json).unwrap();
        }
    }
    panic!("fixture has no metadata.json");
}

fn error_of(m: &Metadata) -> String {
    m.validate().unwrap_err().to_string()
}

#[test]
fn fixture_metadata_is_valid_and_unknown_fields_are_ignored() {
    let m = valid();
    m.validate().unwrap();
    let mut v = serde_json::to_value(&m).unwrap();
    v["futureField"] = serde_json::json!({"x": 1});
    v["disk"]["gptRegions"][0]["image"]["extra"] = serde_json::json!(true);
    let back = Metadata::from_json(&serde_json::to_vec(&v).unwrap()).unwrap();
    assert_eq!(back, m);
}

#[test]
fn partition_region_without_image_path_names_its_location() {
    let mut m = valid();
    let disk = m.disk.as_mut().unwrap();
    disk.gpt_regions[2].number = Some(5);
    disk.gpt_regions[2].image.path = String::new();
    assert_eq!(
        error_of(&m),
        "metadata.json: disk.gptRegions[2]: partition number 5 has no image"
    );
}

#[test]
fn validation_errors_point_at_the_offending_field() {
    let mut m = valid();
    m.images[1].part_type = "not-a-uuid".into();
    assert!(error_of(&m).starts_with("metadata.json: images[1].partType:"));

    let mut m = valid();
    m.disk.as_mut().unwrap().lba_size = 1024;
    assert!(error_of(&m).starts_with("metadata.json: disk.lbaSize:"));

    let mut m = valid();
    m.disk.as_mut().unwrap().gpt_regions[0].region_type = RegionType::Partition;
    assert!(error_of(&m).starts_with("metadata.json: disk.gptRegions[0]:"));

    let mut m = valid();
    m.images[0].image.sha384 = "ABC".into();
    assert!(error_of(&m).starts_with("metadata.json: images[0].image.sha384:"));

    let mut m = valid();
    m.images[0].image.compressed_size += 1;
    assert!(error_of(&m).contains("differs from its disk.gptRegions entry"));

    let mut m = valid();
    m.version = "1.1".into();
    assert!(error_of(&m).starts_with("metadata.json: version:"));

    let mut m = valid();
    m.disk.as_mut().unwrap().gpt_regions[2].number = Some(1);
    assert!(error_of(&m).contains("partition number 1 appears twice"));
}

#[test]
fn malformed_json_reports_line_and_column() {
    let err = Metadata::from_json(b"{\n  \"version\": \"1.2\",\n  ]").unwrap_err();
    assert!(matches!(err, MetadataError::Parse { line: 3, .. }), "{err}");
    assert!(err.to_string().starts_with("metadata.json: line 3"));
    // A value of the wrong type is invalid metadata naming the field.
    let err = Metadata::from_json(b"{\"version\": 1.2}").unwrap_err();
    assert!(
        matches!(&err, MetadataError::Invalid { location, .. } if location == "version"),
        "{err}"
    );
}
