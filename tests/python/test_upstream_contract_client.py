"""A client built only from the upstream-only contract (proto/upstream-contract/:
upstream Trident's wire facts, none of our additions) runs StreamDisk, Install,
Update and Commit against a real tridentd (reboot backend `record`, disk-image
files as targets). By default every stream is exactly upstream's: one Started,
Log messages, one Completed, with no field the contract does not know and no
empty message. With the metadata header `trident-additions: progress` the same
calls also carry progress, which this client sees only as unknown fields 1000 (a phase) and 1002 (overall).
"""

import importlib
import json
import subprocess
import sys
from pathlib import Path

import grpc
import pytest
from google.protobuf.unknown_fields import UnknownFieldSet

sys.path.insert(0, str(Path(__file__).resolve().parent))
from conftest import REPO, Daemon, bin_path  # noqa: E402

CONTRACT_DIR = REPO / "proto" / "upstream-contract"
# Our number of ServicingResponse.progress (proto/README.md: 1000 and up).
PROGRESS_FIELD = 1000
# ServicingResponse.overall_progress, sent with `progress` too.
OVERALL_PROGRESS_FIELD = 1002
CALL_TIMEOUT_S = 300
PROGRESS = (("trident-additions", "progress"),)


def generate_stubs(out: Path) -> Path:
    """*_pb2 / *_pb2_grpc modules from the upstream-only contract alone."""
    import grpc_tools
    from grpc_tools import protoc

    protos = sorted(str(p.relative_to(CONTRACT_DIR)) for p in CONTRACT_DIR.rglob("*.proto"))
    well_known = Path(grpc_tools.__file__).parent / "_proto"
    args = ["protoc", f"-I{CONTRACT_DIR}", f"-I{well_known}",
            f"--python_out={out}", f"--grpc_python_out={out}", *protos]
    assert protoc.main(args) == 0, f"protoc failed: {args}"
    return out


def import_stubs(out: Path):
    """The contract's modules, as one namespace (in the client process only:
    the contract defines the same proto files and packages as proto/trident,
    which one process's descriptor pool cannot hold twice)."""
    sys.path.insert(0, str(out))
    names = ["trident.v1.servicing_pb2", "trident.v1.servicing_pb2_grpc", "trident.v1.common_pb2",
             "trident.v1.update_pb2", "trident.v1.update_pb2_grpc", "trident.v1.commit_pb2",
             "trident.v1.commit_pb2_grpc", "trident.v1preview.install_pb2",
             "trident.v1preview.install_pb2_grpc"]
    return type("Upstream", (), {name.rsplit(".", 1)[1]: importlib.import_module(name) for name in names})


class DiskDaemon(Daemon):
    """A private tridentd that may StreamDisk onto `disk` (besides the
    conftest daemon's flags)."""

    def __init__(self, tmp: Path, disk: Path):
        self.disk = disk
        super().__init__(tmp)

    def start_args(self):
        return ["--disk", str(self.disk), "--inactivity-timeout", "0"]


def mkcosi(out: Path, seed: int) -> Path:
    result = subprocess.run(
        [str(bin_path("mkcosi")), "--size", "24MiB", "--esp-size", "4MiB", "--seed", str(seed), "--out", str(out)],
        capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    return out


def disk_file(path: Path, size: int) -> Path:
    with open(path, "wb") as f:
        f.truncate(size)
    return path


def host_config(image: Path, disk: Path) -> str:
    return f"""image:
  url: file://{image}
  sha384: ignored
storage:
  disks:
  - id: os
    device: {disk}
    partitions:
    - {{ id: esp, type: esp, size: 8M }}
    - {{ id: root-a, type: root, size: 32M }}
    - {{ id: root-b, type: root, size: 32M }}
  abUpdate:
    volumePairs:
    - {{ id: root, volumeAId: root-a, volumeBId: root-b }}
  filesystems:
  - {{ deviceId: esp, mountPoint: {{ path: /boot/efi, options: umask=0077 }} }}
  - {{ deviceId: root, mountPoint: / }}
"""


def unknown_numbers(message) -> list:
    """Field numbers `message` (and every message inside it) carried that
    the contract does not know."""
    numbers = [field.field_number for field in UnknownFieldSet(message)]
    for descriptor, value in message.ListFields():
        if descriptor.message_type is None:
            continue
        values = value if descriptor.is_repeated else [value]
        for inner in values:
            numbers += unknown_numbers(inner)
    return numbers


def read_stream(stream, allow_progress: bool) -> dict:
    """Reads a servicing stream, asserting upstream's shape: Started first,
    Completed last and once, Log between (and, if allowed, messages that are
    only our unknown progress field). Returns what it saw."""
    kinds, progress, completed = [], 0, None
    for message in stream:
        kind = message.WhichOneof("response")
        if kind is None:
            # Not in upstream's oneof: only our progress (a phase's or the
            # overall one), for a client that asked.
            assert allow_progress, f"empty or unknown message in a default stream: {message}"
            numbers = [field.field_number for field in UnknownFieldSet(message)]
            assert numbers in ([PROGRESS_FIELD], [OVERALL_PROGRESS_FIELD]), numbers
            progress += 1
            continue
        assert unknown_numbers(message) == [], f"fields the contract does not know: {message}"
        kinds.append(kind)
        if kind == "completed":
            completed = message.completed
    assert kinds[0] == "started" and kinds[-1] == "completed", kinds
    assert kinds.count("started") == 1 and kinds.count("completed") == 1, kinds
    assert set(kinds[1:-1]) <= {"log"}, kinds
    assert kinds.count("log") > 0, kinds
    return {"completed": completed, "progress": progress, "kinds": kinds}


def succeeded(up, seen: dict) -> dict:
    completed = seen["completed"]
    assert completed.status == up.common_pb2.STATUS_CODE_SUCCESS, completed
    return seen


def open_channel(socket: str) -> grpc.Channel:
    return grpc.insecure_channel(f"unix:{socket}", options=[("grpc.default_authority", "localhost")])


def run_calls(up, socket: str, stream_socket: str, work: Path, metadata=()) -> dict:
    """StreamDisk, then Install, Commit, Update, Commit; returns each stream."""
    v1_image, v2_image = work / "v1.cosi", work / "v2.cosi"
    target = work / "install.img"
    opts = {"timeout": CALL_TIMEOUT_S, "metadata": metadata}
    allow = bool(metadata)
    seen = {}
    with open_channel(stream_socket) as channel:
        client = up.servicing_pb2_grpc.StreamingServiceStub(channel)
        request = up.servicing_pb2.StreamDiskRequest(image_url=f"file://{v1_image}")
        seen["StreamDisk"] = succeeded(up, read_stream(client.StreamDisk(request, **opts), allow))
    with open_channel(socket) as channel:
        install = up.install_pb2_grpc.InstallServiceStub(channel)
        commit = up.commit_pb2_grpc.CommitServiceStub(channel)
        update = up.update_pb2_grpc.UpdateServiceStub(channel)
        hc = up.common_pb2.HostConfiguration
        request = up.install_pb2.InstallRequest(
            stage=up.install_pb2.StageInstallRequest(config=hc(config=host_config(v1_image, target))),
            finalize=up.install_pb2.FinalizeInstallRequest())
        seen["Install"] = succeeded(up, read_stream(install.Install(request, **opts), allow))
        seen["Commit"] = succeeded(up, read_stream(commit.Commit(up.commit_pb2.CommitRequest(), **opts), allow))
        request = up.update_pb2.UpdateRequest(
            stage=up.update_pb2.StageUpdateRequest(config=hc(config=host_config(v2_image, target))),
            finalize=up.update_pb2.FinalizeUpdateRequest())
        seen["Update"] = succeeded(up, read_stream(update.Update(request, **opts), allow))
        seen["Commit after update"] = succeeded(
            up, read_stream(commit.Commit(up.commit_pb2.CommitRequest(), **opts), allow))
    return seen


def start(daemon: Daemon) -> Daemon:
    try:
        daemon.wait_ready()
    except Exception:
        daemon.stop()
        raise
    return daemon


def client_main(argv) -> None:
    """The client process: stubs dir, socket, StreamDisk socket, work dir,
    "progress" or "default". Prints each call's progress count as JSON."""
    stubs, socket, stream_socket, work, mode = argv
    up = import_stubs(Path(stubs))
    metadata = PROGRESS if mode == "progress" else ()
    seen = run_calls(up, socket, stream_socket, Path(work), metadata)
    print(json.dumps({call: s["progress"] for call, s in seen.items()}))


@pytest.mark.parametrize("opted_in", [False, True], ids=["default", "progress"])
def test_upstream_client_sees_upstream_streams(tmp_path, opted_in):
    for name in ("stubs", "a", "b"):
        (tmp_path / name).mkdir()
    stubs = generate_stubs(tmp_path / "stubs")
    mkcosi(tmp_path / "v1.cosi", 1)
    mkcosi(tmp_path / "v2.cosi", 2)
    disk_file(tmp_path / "install.img", 96 << 20)
    stream_disk = disk_file(tmp_path / "stream.img", 64 << 20)
    daemon = start(DiskDaemon(tmp_path / "a", tmp_path / "unused.img"))
    try:
        stream_daemon = start(DiskDaemon(tmp_path / "b", stream_disk))
        try:
            client = subprocess.run(
                [sys.executable, __file__, str(stubs), str(daemon.socket), str(stream_daemon.socket),
                 str(tmp_path), "progress" if opted_in else "default"],
                capture_output=True, text=True, timeout=CALL_TIMEOUT_S * 5, check=False)
        finally:
            stream_daemon.stop()
    finally:
        daemon.stop()
    assert client.returncode == 0, f"client failed:\n{client.stderr}\ndaemon:\n{daemon.stderr()}"
    progress = json.loads(client.stdout)
    if opted_in:
        # Every call that writes a disk reports progress to a client that asked.
        for call in ("StreamDisk", "Install", "Update"):
            assert progress[call] > 0, progress
    else:
        assert set(progress.values()) == {0}, progress


if __name__ == "__main__":
    client_main(sys.argv[1:])
