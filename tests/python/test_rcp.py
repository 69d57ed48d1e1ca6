"""A stock grpcio client reaches tridentd through the reverse-connect proxy:
trident-rcp (host side) dials trident rcp-listen (orchestrator side), and
the per-host socket the listener creates serves several clients at once."""

import json
import queue
import subprocess
import threading
from concurrent.futures import ThreadPoolExecutor

from conftest import _channel, bin_path
from grpc_health.v1 import health_pb2, health_pb2_grpc

WAIT_S = 60


def _events(process):
    """JSON lines of the listener's stdout, on a queue."""
    lines = queue.Queue()

    def pump():
        for line in process.stdout:
            lines.put(json.loads(line))

    threading.Thread(target=pump, daemon=True).start()
    return lines


def _next(lines, kind):
    while True:
        event = lines.get(timeout=WAIT_S)
        if event["event"] == kind:
            return event


def test_grpcio_reaches_tridentd_through_the_host_socket(stubs, daemon, tmp_path):
    from trident.v1 import version_pb2, version_pb2_grpc

    pki = tmp_path / "pki"
    pki.mkdir()
    subprocess.run([str(bin_path("trident-e2e-pki")), str(pki), "host-1"], check=True)
    hosts = tmp_path / "hosts"
    tls = lambda name: ["--ca", str(pki / "ca.pem"), "--cert", str(pki / f"{name}.pem"), "--key", str(pki / f"{name}.key")]
    listener = subprocess.Popen(
        [str(bin_path("trident")), "rcp-listen", "--listen", "127.0.0.1:0", "--sockets-dir", str(hosts), *tls("orchestrator")],
        stdout=subprocess.PIPE,
        text=True,
    )
    agent = None
    try:
        lines = _events(listener)
        addr = _next(lines, "listening")["addr"]
        agent = subprocess.Popen(
            [str(bin_path("trident-rcp")), "--config", "/dev/null", "--connect", addr,
             "--server-name", "orchestrator.test", "--socket", str(daemon.socket), *tls("host-1")],
            stderr=subprocess.DEVNULL,
        )
        connected = _next(lines, "connected")
        assert connected["host"] == "host-1", connected

        def version(_):
            with _channel(connected["socket"]) as channel:
                return version_pb2_grpc.VersionServiceStub(channel).Version(version_pb2.VersionRequest(), timeout=WAIT_S)

        with ThreadPoolExecutor(4) as pool:
            answers = list(pool.map(version, range(4)))
        assert all(a.version.count(".") == 2 for a in answers), answers
        with _channel(connected["socket"]) as channel:
            health = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(service=""), timeout=WAIT_S)
        assert health.status == health_pb2.HealthCheckResponse.SERVING
    finally:
        for process in (agent, listener):
            if process is not None:
                process.kill()
                process.wait()
