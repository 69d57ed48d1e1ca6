"""A stock grpcio client follows tridentd's logs through TelemetryService
over the Unix socket: the records a connection produces arrive in order,
each with a cursor, and a resume after a cursor continues exactly there."""

import threading

import grpc


def _connect_once(daemon):
    """Opens a new connection and makes one call: the daemon logs it."""
    from trident.v1 import version_pb2, version_pb2_grpc

    # grpcio shares connections between channels to one target unless told
    # otherwise; a local subchannel pool makes this a new connection.
    options = [("grpc.default_authority", "localhost"), ("grpc.use_local_subchannel_pool", 1)]
    with grpc.insecure_channel(f"unix:{daemon.socket}", options=options) as channel:
        version_pb2_grpc.VersionServiceStub(channel).Version(version_pb2.VersionRequest(), timeout=10)


def _records(responses, want, predicate):
    found = []
    for response in responses:
        for event in response.events:
            if event.WhichOneof("event") == "record" and predicate(event.record):
                found.append(event.record)
        if len(found) >= want:
            return found
    return found


def _accepted(record):
    return record.WhichOneof("record") == "log" and record.log.message == "connection accepted"


def test_python_client_follows_connection_logs_in_order_with_cursors(stubs, daemon):
    from trident.v1 import common_pb2, telemetry_pb2, telemetry_pb2_grpc, telemetry_records_pb2

    with daemon.channel() as channel:
        client = telemetry_pb2_grpc.TelemetryServiceStub(channel)
        # Follow from the current head: exactly what happens from now on.
        status = client.GetBusStatus(telemetry_pb2.GetBusStatusRequest(), timeout=10)
        head = telemetry_records_pb2.Cursor(run_id=status.run_id, sequence=status.head_sequence)
        options = telemetry_pb2.WatchOptions(after=head, min_level=common_pb2.LOG_LEVEL_INFO)
        responses = client.WatchLogs(telemetry_pb2.WatchLogsRequest(options=options), timeout=60)
        producer = threading.Thread(target=lambda: [_connect_once(daemon) for _ in range(3)])
        producer.start()
        records = _records(responses, 3, _accepted)
        producer.join()
        responses.cancel()

    assert len(records) == 3
    sequences = [r.cursor.sequence for r in records]
    assert sequences == sorted(set(sequences)), sequences
    assert all(r.cursor.run_id == status.run_id for r in records)
    assert all(r.log.level == common_pb2.LOG_LEVEL_INFO for r in records)
    assert all(r.log.target.startswith("tridentd") for r in records)


def test_python_client_resumes_after_a_cursor_with_exactly_the_rest(stubs, daemon):
    from trident.v1 import telemetry_pb2, telemetry_pb2_grpc

    for _ in range(3):
        _connect_once(daemon)
    with daemon.channel() as channel:
        client = telemetry_pb2_grpc.TelemetryServiceStub(channel)
        snapshot = list(client.WatchLogs(
            telemetry_pb2.WatchLogsRequest(options=telemetry_pb2.WatchOptions(snapshot=True)), timeout=30))
        everything = [e.record for r in snapshot for e in r.events if e.WhichOneof("event") == "record"]
        assert snapshot[-1].events[-1].WhichOneof("event") == "end_of_snapshot"
        middle = everything[len(everything) // 2]
        resumed = list(client.WatchLogs(
            telemetry_pb2.WatchLogsRequest(options=telemetry_pb2.WatchOptions(after=middle.cursor, snapshot=True)),
            timeout=30))
        rest = [e.record for r in resumed for e in r.events if e.WhichOneof("event") == "record"]
    expected = [r.cursor.sequence for r in everything if r.cursor.sequence > middle.cursor.sequence]
    # Records logged after the first snapshot may follow; the prefix is exact.
    assert [r.cursor.sequence for r in rest][: len(expected)] == expected


def test_python_client_gets_invalid_argument_for_a_malformed_cursor(stubs, daemon):
    from trident.v1 import telemetry_pb2, telemetry_pb2_grpc, telemetry_records_pb2

    with daemon.channel() as channel:
        client = telemetry_pb2_grpc.TelemetryServiceStub(channel)
        bad = telemetry_pb2.WatchOptions(after=telemetry_records_pb2.Cursor(run_id="nope", sequence=1))
        try:
            list(client.WatchLogs(telemetry_pb2.WatchLogsRequest(options=bad), timeout=10))
        except grpc.RpcError as error:
            assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
            assert "run_id" in error.details()
        else:
            raise AssertionError("a malformed cursor was accepted")
