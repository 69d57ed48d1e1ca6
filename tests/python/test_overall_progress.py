"""A Python client reads the daemon's overall progress of a StreamDisk from
TelemetryService.WatchProgress, and sees the same figures the CLI's JSON
view prints for the same operation (`trident watch --operation ID
--progress json`): the numbers are derived once, in the daemon."""

import json
import subprocess

import grpc

from conftest import Daemon, bin_path

DISK = 24 << 20


def _stream_disk(stubs, daemon, image, sha384):
    from trident.v1 import servicing_pb2, servicing_pb2_grpc

    with daemon.channel() as channel:
        client = servicing_pb2_grpc.StreamingServiceStub(channel)
        request = servicing_pb2.StreamDiskRequest(image_url=f"file://{image}", image_hash=f"sha384:{sha384}")
        operation_id = ""
        status = None
        # `ids`: Started carries the operation id (an opt-in addition).
        metadata = (("trident-additions", "ids"),)
        for message in client.StreamDisk(request, timeout=120, metadata=metadata):
            kind = message.WhichOneof("response")
            if kind == "started":
                operation_id = message.started.operation_id
            elif kind == "completed":
                status = message.completed.status
        return operation_id, status


def _overall_records(stubs, daemon, operation_id):
    from trident.v1 import telemetry_pb2, telemetry_pb2_grpc

    with daemon.channel() as channel:
        client = telemetry_pb2_grpc.TelemetryServiceStub(channel)
        options = telemetry_pb2.WatchOptions(operation_id=operation_id, snapshot=True)
        records = []
        for response in client.WatchProgress(telemetry_pb2.WatchProgressRequest(options=options), timeout=60):
            for event in response.events:
                if event.WhichOneof("event") == "record" and event.record.WhichOneof("record") == "overall_progress":
                    records.append(event.record.overall_progress)
        return records


def test_python_client_and_cli_see_the_same_overall_progress(stubs, tmp_path):
    image = tmp_path / "image.cosi"
    made = subprocess.run(
        [str(bin_path("mkcosi")), "--out", str(image), "--size", str(DISK), "--seed", "5"],
        check=True,
        capture_output=True,
        text=True,
    )
    sha384 = json.loads(made.stdout)["metadata_sha384"]
    target = tmp_path / "target.img"
    with open(target, "wb") as f:
        f.truncate(DISK)
    (tmp_path / "daemon").mkdir()
    daemon = Daemon(tmp_path / "daemon", ["--inactivity-timeout", "0", "--disk", str(target)])
    try:
        daemon.wait_ready()
        operation_id, status = _stream_disk(stubs, daemon, image, sha384)
        assert operation_id and status == 1, (operation_id, status, daemon.stderr())

        records = _overall_records(stubs, daemon, operation_id)
        assert records, "no overall progress on WatchProgress"
        last = records[-1]
        assert last.finished and last.operation_id == operation_id
        assert last.HasField("bytes_total") and last.bytes_done == last.bytes_total > 0
        assert (last.steps_done, last.steps_planned) == (3, 3)
        # The plan (validate, download, verify) is declared before the first step.
        assert all(r.steps_planned == 3 for r in records), [r.steps_planned for r in records]
        assert all(r.bytes_done <= last.bytes_total for r in records)

        cli = subprocess.run(
            [str(bin_path("trident")), "--socket", str(daemon.socket), "watch", "--operation", operation_id, "--progress", "json"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert cli.returncode == 0, cli.stderr
        shown = [json.loads(line) for line in cli.stdout.splitlines() if '"type":"overall"' in line]
        python = [
            (r.bytes_done, r.bytes_total if r.HasField("bytes_total") else None, r.steps_done, r.steps_planned, r.finished)
            for r in records
        ]
        cli_figures = [
            (o["bytes_done"], o["bytes_total"], o["steps_done"], o["steps_planned"], o["finished"]) for o in shown
        ]
        assert cli_figures == python
        rates = [r.bytes_per_second if r.HasField("bytes_per_second") else None for r in records]
        assert [o["bytes_per_second"] for o in shown] == rates
    finally:
        daemon.stop()
