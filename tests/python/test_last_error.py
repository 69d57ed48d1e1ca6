"""A stock grpcio client asks TelemetryService.GetLastError and gets the
Host Status's lastError when the daemon's bus never saw that error: here a
datastore made by `trident offline-initialize` from a Host Status carrying
lastError (as one handed back after an A/B commit failed on the other
volume), served by a daemon with a fresh journal."""

import os
import subprocess

from conftest import Daemon, bin_path

HOST_STATUS = """\
servicingState: ab-update-health-check-failed
abActiveVolume: volume-a
lastError:
  category: health-checks
  subkind: health-check-failed
  message: Health check never-healthy failed
  location: { file: daemon/src/servicing/health.rs, line: 42 }
  context:
  - message: Committing the A/B update
    location: { file: daemon/src/servicing/engine/commit.rs, line: 7 }
  causes: [service never came up]
  operationId: 0193a1b2-0000-7000-8000-000000000001
  timestamp: "2026-11-23T21:00:00Z"
"""


def _datastore_with_last_error(tmp_path):
    host_status = tmp_path / "host-status.yaml"
    host_status.write_text(HOST_STATUS)
    datastore = tmp_path / "datastore.sqlite"
    env = {k: v for k, v in os.environ.items() if k not in ("TRIDENT_SOCKET", "TRIDENT_STATE_DIR")}
    subprocess.run(
        [str(bin_path("trident")), "--socket", str(tmp_path / "unused.sock"),
         "offline-initialize", str(host_status), "--datastore", str(datastore)],
        check=True, env=env, capture_output=True, timeout=60,
    )
    return datastore


def test_get_last_error_answers_from_the_host_status_when_the_bus_has_none(stubs, tmp_path):
    from trident.v1 import common_pb2, telemetry_pb2, telemetry_pb2_grpc

    datastore = _datastore_with_last_error(tmp_path)
    daemon_dir = tmp_path / "daemon"
    daemon_dir.mkdir()
    daemon = Daemon(daemon_dir, args=("--datastore", str(datastore)))
    try:
        daemon.wait_ready()
        with daemon.channel() as channel:
            client = telemetry_pb2_grpc.TelemetryServiceStub(channel)
            response = client.GetLastError(telemetry_pb2.GetLastErrorRequest(), timeout=10)
    finally:
        daemon.stop()

    assert response.origin == telemetry_pb2.LAST_ERROR_ORIGIN_HOST_STATUS, response
    error = response.error
    assert error.category == common_pb2.HEALTH_CHECKS_ERROR, error
    assert error.subkind == "health-check-failed", error
    assert error.message == "Health check never-healthy failed", error
    assert (error.location.path, error.location.line) == ("daemon/src/servicing/health.rs", 42)
    assert [c.message for c in error.context] == ["Committing the A/B update"], error
    assert list(error.causes) == ["service never came up"], error
    assert error.operation_id == "0193a1b2-0000-7000-8000-000000000001", error
    assert error.timestamp.seconds > 0, error
    assert "health-check-failed" in error.report, error


def test_get_last_error_of_a_fresh_daemon_is_empty_with_no_origin(stubs, daemon):
    from trident.v1 import telemetry_pb2, telemetry_pb2_grpc

    with daemon.channel() as channel:
        client = telemetry_pb2_grpc.TelemetryServiceStub(channel)
        response = client.GetLastError(telemetry_pb2.GetLastErrorRequest(), timeout=10)
    assert not response.HasField("error"), response
    assert response.origin == telemetry_pb2.LAST_ERROR_ORIGIN_UNSPECIFIED, response
