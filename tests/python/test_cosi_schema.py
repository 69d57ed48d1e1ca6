"""Indexed COSIs against upstream's COSI metadata schema: the metadata
`mkcosi --chunk-size` and `mkcosi index` write (with our additive
`chunkIndex` field) still validates against upstream's
cosi-metadata-v1.2.schema.json (a verbatim copy in
cosi/tests/vectors/upstream/), and the index member sits right after
metadata.json, where the COSI spec allows extra files."""

import json
import subprocess
import tarfile
from pathlib import Path

import jsonschema

from conftest import REPO, bin_path

SCHEMA = REPO / "cosi" / "tests" / "vectors" / "upstream" / "cosi-metadata-v1.2.schema.json"


def members(cosi: Path) -> tuple[list[str], dict]:
    with tarfile.open(cosi) as tar:
        names = tar.getnames()
        metadata = json.load(tar.extractfile("metadata.json"))
    return names, metadata


def validate(metadata: dict) -> None:
    schema = json.loads(SCHEMA.read_text())
    jsonschema.Draft202012Validator(schema).validate(metadata)


def run(*args: str) -> dict:
    out = subprocess.run([str(bin_path("mkcosi")), *args], check=True, capture_output=True)
    return json.loads(out.stdout)


def test_indexed_metadata_validates_against_upstreams_schema(tmp_path):
    plain = tmp_path / "plain.cosi"
    run("--size", "12MiB", "--esp-size", "2MiB", "--seed", "38", "--out", str(plain))
    direct = tmp_path / "direct.cosi"
    run("--size", "12MiB", "--esp-size", "2MiB", "--seed", "38", "--chunk-size", "256KiB",
        "--out", str(direct))
    indexed = tmp_path / "indexed.cosi"
    summary = run("index", str(plain), "--out", str(indexed))
    for cosi in (plain, direct, indexed):
        names, metadata = members(cosi)
        validate(metadata)
        assert names[:2] == ["cosi-marker", "metadata.json"]
        if cosi != plain:
            assert metadata["chunkIndex"]["path"] == "chunk-index.json"
            assert names[2] == "chunk-index.json"
    names, metadata = members(indexed)
    # The same regions, in the same order, with the same uncompressed sizes.
    _, original = members(plain)
    assert [r["image"]["path"] for r in metadata["disk"]["gptRegions"]] == [
        r["image"]["path"] for r in original["disk"]["gptRegions"]
    ]
    assert [r["image"]["uncompressedSize"] for r in metadata["disk"]["gptRegions"]] == [
        r["image"]["uncompressedSize"] for r in original["disk"]["gptRegions"]
    ]
    assert summary["chunk_size"] == 1 << 20
