"""Property test: every document our Host Configuration schema accepts
(host/schema/host-config-schema.json, generated from the Rust model and
mirroring upstream Trident's schema) is parsed by a real tridentd. Each
generated document is sent to ValidationService.ValidateHostConfiguration
over the Unix socket; it may be refused (unsupported feature, broken
reference, missing image, ...) but never as a parse or unknown-key error.

Also: our fixtures mirroring upstream's eight samples
(host/tests/fixtures/host-config/) through the same RPC.

HOST_CONFIG_SCHEMA=FILE generates from another schema;
HOST_CONFIG_EXAMPLES=N sets the number of documents (default 100)."""

import json
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis_jsonschema import from_schema

from conftest import REPO, Daemon

SCHEMA = Path(os.environ.get("HOST_CONFIG_SCHEMA") or REPO / "host" / "schema" / "host-config-schema.json")
FIXTURES = REPO / "host" / "tests" / "fixtures" / "host-config"
EXAMPLES = int(os.environ.get("HOST_CONFIG_EXAMPLES", "100"))
# Refusals that would mean the model does not cover the schema.
PARSE_SUBKINDS = {"parse-host-configuration", "unknown-key"}


@pytest.fixture(scope="module")
def validator(stubs, tmp_path_factory):
    """One daemon for every generated document (hypothesis runs the test
    body many times; a daemon each would be slow)."""
    from trident.v1preview import validation_pb2_grpc

    daemon = Daemon(tmp_path_factory.mktemp("validator"))
    try:
        daemon.wait_ready()
        with daemon.channel() as channel:
            yield validation_pb2_grpc.ValidationServiceStub(channel)
    finally:
        daemon.stop()


def validate(validator, text: str):
    from trident.v1 import common_pb2
    from trident.v1preview import validation_pb2

    request = validation_pb2.ValidateHostConfigurationRequest(config=common_pb2.HostConfiguration(config=text))
    return validator.ValidateHostConfiguration(request, timeout=30)


def test_every_document_the_schema_accepts_parses(validator):
    counts = {}

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(from_schema(json.loads(SCHEMA.read_text())))
    def check(document):
        # JSON is YAML; the daemon reads it as it reads any YAML document.
        response = validate(validator, json.dumps(document))
        outcome = "ok" if response.ok else response.error.subkind
        counts[outcome] = counts.get(outcome, 0) + 1
        assert response.ok or response.error.subkind not in PARSE_SUBKINDS, (
            f"{response.error.subkind}: {response.error.error_message}\n{json.dumps(document, indent=2)}"
        )

    check()
    print(f"\n{sum(counts.values())} documents from {SCHEMA.name}: {counts}")


@pytest.mark.parametrize("name", ["basic", "simple"])
def test_basic_and_simple_fixtures_are_valid(validator, name):
    response = validate(validator, (FIXTURES / f"{name}.yaml").read_text())
    assert response.ok, response.error.message


@pytest.mark.parametrize("name", ["base", "advanced", "raid", "raid-mirrored", "encryption", "verity"])
def test_other_fixtures_are_valid_or_refused_only_as_unsupported(validator, name):
    from trident.v1 import common_pb2

    response = validate(validator, (FIXTURES / f"{name}.yaml").read_text())
    if not response.ok:
        assert response.error.kind == common_pb2.UNSUPPORTED_CONFIGURATION_ERROR, response.error.message
        assert "(line " in response.error.error_message, response.error.error_message
