"""A stock grpcio client (stubs generated from proto/) talks to tridentd over
its Unix socket: Version and the standard health check."""

from pathlib import Path

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc


def test_version_answers_crate_version_git_commit_and_boot_id(stubs, daemon):
    """git_commit and boot_id (our fields 1000, 1001) only for a client that
    opted in to `ids`; the boot id is this host's by default."""
    from trident.v1 import version_pb2, version_pb2_grpc

    with daemon.channel() as channel:
        client = version_pb2_grpc.VersionServiceStub(channel)
        strict = client.Version(version_pb2.VersionRequest(), timeout=10)
        response = client.Version(
            version_pb2.VersionRequest(), metadata=(("trident-additions", "ids"),), timeout=10
        )
    assert strict.version.count(".") == 2, strict
    assert strict.git_commit == "", strict
    assert strict.boot_id == "", strict
    assert response.version == strict.version, response
    assert response.git_commit, response
    own = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    assert response.boot_id == own, response


def test_health_check_reports_serving_overall_and_for_version_service(stubs, daemon):
    with daemon.channel() as channel:
        health = health_pb2_grpc.HealthStub(channel)
        for service in ("", "trident.v1.VersionService"):
            response = health.Check(health_pb2.HealthCheckRequest(service=service), timeout=10)
            assert response.status == health_pb2.HealthCheckResponse.SERVING, service


def test_servicing_state_of_a_fresh_daemon_is_not_provisioned(stubs, daemon):
    """The preview surface answers a stock client too: a daemon on an empty
    state directory reports NOT_PROVISIONED and NO_VOLUME."""
    from trident.v1preview import status_pb2, status_pb2_grpc

    with daemon.channel() as channel:
        client = status_pb2_grpc.StatusServiceStub(channel)
        state = client.GetServicingState(status_pb2.GetServicingStateRequest(), timeout=10)
        assert state.state == status_pb2.NOT_PROVISIONED, state
        volume = client.GetActiveVolume(status_pb2.GetActiveVolumeRequest(), timeout=10)
        assert volume.active_volume == status_pb2.NO_VOLUME, volume


def test_sigterm_exits_zero_and_removes_socket(daemon):
    assert daemon.stop() == 0, daemon.stderr()
    assert not daemon.socket.exists()
