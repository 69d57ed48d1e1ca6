"""Fixtures for the Python client tests: Python stubs generated from proto/
at test time, and a private tridentd on a temp socket."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import grpc
import pytest

REPO = Path(__file__).resolve().parents[2]
PROTO_DIR = REPO / "proto"
ENV_BIN_DIR = "TRIDENT_BIN_DIR"
START_TIMEOUT_S = 30.0


def bin_path(name: str) -> Path:
    """Built binary: $TRIDENT_BIN_DIR/<name>, else target/debug/<name>."""
    bin_dir = os.environ.get(ENV_BIN_DIR) or str(REPO / "target" / "debug")
    return Path(bin_dir) / name


@pytest.fixture(scope="session")
def stubs(tmp_path_factory):
    """Generates *_pb2 / *_pb2_grpc modules for every .proto file and makes
    them importable (as trident.v1.version_pb2, ...)."""
    import grpc_tools
    from grpc_tools import protoc

    out = tmp_path_factory.mktemp("stubs")
    # proto/trident only: proto/upstream-contract/ is the buf baseline and
    # defines the same packages.
    protos = sorted(
        str(p.relative_to(PROTO_DIR)) for p in (PROTO_DIR / "trident").rglob("*.proto")
    )
    well_known = Path(grpc_tools.__file__).parent / "_proto"
    args = [
        "protoc",
        f"-I{PROTO_DIR}",
        f"-I{well_known}",
        f"--python_out={out}",
        f"--grpc_python_out={out}",
        *protos,
    ]
    assert protoc.main(args) == 0, f"protoc failed: {args}"
    sys.path.insert(0, str(out))
    return out


def _channel(socket: Path) -> grpc.Channel:
    # The authority must be a host name; the default for unix: targets is
    # the socket path, which HTTP/2 servers may reject.
    return grpc.insecure_channel(
        f"unix:{socket}", options=[("grpc.default_authority", "localhost")]
    )


class Daemon:
    """A private tridentd process."""

    def __init__(self, tmp: Path, args=()):
        self.socket = tmp / "trident.sock"
        self.state_dir = tmp / "state"
        self.state_dir.mkdir()
        self.stderr_path = tmp / "tridentd.stderr"
        env = {k: v for k, v in os.environ.items() if k not in ("TRIDENT_SOCKET", "NOTIFY_SOCKET", "LISTEN_FDS", "LISTEN_PID")}
        with open(self.stderr_path, "wb") as stderr:
            self.process = subprocess.Popen(
                [str(bin_path("tridentd")), "--socket", str(self.socket), "--state-dir", str(self.state_dir),
                 *args, *self.start_args()],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=stderr,
                env=env,
            )

    def start_args(self) -> list:
        """More tridentd flags (subclasses add their own)."""
        return []

    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace")

    def channel(self) -> grpc.Channel:
        return _channel(self.socket)

    def wait_ready(self):
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"tridentd exited with {self.process.returncode}:\n{self.stderr()}")
            if self.socket.exists():
                with self.channel() as channel:
                    try:
                        grpc.channel_ready_future(channel).result(timeout=1)
                        return
                    except grpc.FutureTimeoutError:
                        pass
            time.sleep(0.05)
        raise RuntimeError(f"tridentd did not answer on {self.socket}:\n{self.stderr()}")

    def stop(self) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        return self.process.returncode


@pytest.fixture
def daemon(tmp_path):
    started = Daemon(tmp_path)
    try:
        started.wait_ready()
        yield started
    finally:
        started.stop()
