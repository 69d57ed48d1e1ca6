"""Upstream's reboot handshake against a hand-started tridentd (`--reboot
record` or `none`: nothing reboots), with a client built only from the
upstream-only contract (proto/upstream-contract/).

Upstream's client always asks TRIDENT_HANDLES_REBOOT and reboots the machine
it runs on when it hears REBOOT_REQUIRED. So a Trident-handles request must
be answered as upstream's server answers when it takes charge of the
reboot, REBOOT_STARTED, in every mode; `record` still writes its record and
`none` writes nothing. CALLER_HANDLES_REBOOT still gets REBOOT_REQUIRED.
A client that opts in to `reboot-action` also gets Completed field 1000
(unknown to the contract) saying the reboot was recorded or not performed.
"""

import json
import subprocess
import sys
from pathlib import Path

import grpc
import pytest
from google.protobuf.unknown_fields import UnknownFieldSet

sys.path.insert(0, str(Path(__file__).resolve().parent))
from conftest import Daemon  # noqa: E402
from test_upstream_contract_client import (  # noqa: E402
    CALL_TIMEOUT_S, disk_file, generate_stubs, host_config, import_stubs, mkcosi, open_channel,
    read_stream, start, unknown_numbers)

# Completed.reboot_action (proto/trident/v1/servicing.proto), our addition.
REBOOT_ACTION_FIELD = 1000
# RebootAction values (proto/trident/v1/common.proto).
REBOOT_ACTION = {"record": 2, "none": 3}


class RebootDaemon(Daemon):
    """A private tridentd with an explicit `--reboot` mode."""

    def __init__(self, tmp: Path, mode: str):
        self.mode = mode
        super().__init__(tmp)

    def start_args(self):
        return ["--reboot", self.mode, "--inactivity-timeout", "0"]


def install(up, socket: str, work: Path, name: str, handling, metadata=()):
    """One Install onto its own disk-image file; returns Completed."""
    target = disk_file(work / f"{name}.img", 96 << 20)
    hc = up.common_pb2.HostConfiguration
    request = up.install_pb2.InstallRequest(
        stage=up.install_pb2.StageInstallRequest(config=hc(config=host_config(work / "v1.cosi", target))),
        finalize=up.install_pb2.FinalizeInstallRequest(
            reboot=up.common_pb2.RebootManagement(handling=handling)))
    with open_channel(socket) as channel:
        stub = up.install_pb2_grpc.InstallServiceStub(channel)
        stream = stub.Install(request, timeout=CALL_TIMEOUT_S, metadata=metadata)
        if metadata:
            # Opted in: Completed carries our field, which read_stream's
            # strict upstream check refuses.
            completed = [m.completed for m in stream if m.WhichOneof("response") == "completed"][-1]
        else:
            completed = read_stream(stream, allow_progress=False)["completed"]
    assert completed.status == up.common_pb2.STATUS_CODE_SUCCESS, completed
    return completed


def client_main(argv) -> None:
    """The client process (the contract's stubs cannot share a process with
    proto/trident's): stubs dir, socket, work dir, call name. Prints what
    Completed said as JSON."""
    stubs, socket, work, call = argv
    up = import_stubs(Path(stubs))
    common = up.common_pb2
    if call == "trident-handles":
        completed = install(up, socket, Path(work), call, common.TRIDENT_HANDLES_REBOOT)
    elif call == "trident-handles-opted-in":
        completed = install(up, socket, Path(work), call, common.TRIDENT_HANDLES_REBOOT,
                            metadata=(("trident-additions", "reboot-action"),))
    else:
        completed = install(up, socket, Path(work), call, common.CALLER_HANDLES_REBOOT)
    unknown = {field.field_number: field.data for field in UnknownFieldSet(completed)}
    print(json.dumps({
        "reboot_status": common.RebootStatus.Name(completed.reboot_status),
        "unknown": {str(number): data for number, data in unknown.items()},
        "unknown_inside": unknown_numbers(completed),
    }))


def run_client(stubs: Path, daemon: Daemon, work: Path, call: str) -> dict:
    client = subprocess.run(
        [sys.executable, __file__, str(stubs), str(daemon.socket), str(work), call],
        capture_output=True, text=True, timeout=CALL_TIMEOUT_S * 2, check=False)
    assert client.returncode == 0, f"client failed:\n{client.stderr}\ndaemon:\n{daemon.stderr()}"
    return json.loads(client.stdout)


@pytest.mark.parametrize("mode", ["record", "none"])
def test_trident_handles_reboot_is_reboot_started_in_modes_that_never_reboot(tmp_path, mode):
    (tmp_path / "stubs").mkdir()
    stubs = generate_stubs(tmp_path / "stubs")
    mkcosi(tmp_path / "v1.cosi", 1)
    seen = {}
    for call in ("trident-handles", "trident-handles-opted-in", "caller-handles"):
        (tmp_path / call).mkdir()
        daemon = start(RebootDaemon(tmp_path / call, mode))
        try:
            seen[call] = run_client(stubs, daemon, tmp_path, call)
            log = daemon.state_dir / "reboot-requests.log"
            records = log.read_text().splitlines() if log.exists() else []
            seen[call]["records"] = len(records)
            # The daemon never went down: it still answers.
            with daemon.channel() as channel:
                grpc.channel_ready_future(channel).result(timeout=10)
        finally:
            daemon.stop()

    # Upstream's client never hears REBOOT_REQUIRED for a Trident-handles
    # request, and by default sees nothing it does not know.
    handles = seen["trident-handles"]
    assert handles["reboot_status"] == "REBOOT_STARTED", seen
    assert handles["unknown"] == {} and handles["unknown_inside"] == [], seen
    # What the mode promises: record writes one line, none writes nothing.
    assert handles["records"] == (1 if mode == "record" else 0), seen

    # Opted in: field 1000 says the reboot was recorded / not performed.
    opted = seen["trident-handles-opted-in"]
    assert opted["reboot_status"] == "REBOOT_STARTED", seen
    assert opted["unknown"] == {str(REBOOT_ACTION_FIELD): REBOOT_ACTION[mode]}, seen

    # The caller handles it: REBOOT_REQUIRED, nothing recorded.
    caller = seen["caller-handles"]
    assert caller["reboot_status"] == "REBOOT_REQUIRED", seen
    assert caller["unknown"] == {} and caller["records"] == 0, seen


if __name__ == "__main__":
    client_main(sys.argv[1:])
