"""The OTLP/HTTP receiver: the real OpenTelemetry exporter, OTLP's answers, bounds, loopback only."""

from __future__ import annotations

import json
import socket
import struct
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.propagate import extract
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from evalh.errors import ConfigError
from evalh.tracing.collector import SpanCollector
from evalh.tracing.otlp import MAX_BODY_BYTES
from evalh.tracing.receiver import OtlpReceiver

from .test_otlp import json_body, raw_span


@pytest.fixture
def receiver() -> Iterator[OtlpReceiver]:
    started = OtlpReceiver(SpanCollector(max_spans_per_trace=50), 0)
    started.start()
    yield started
    started.stop()


def post(receiver: OtlpReceiver, body: bytes, content_type: str = "application/json") -> tuple[int, bytes]:
    request = urllib.request.Request(
        receiver.base_url + "/v1/traces", data=body, headers={"Content-Type": content_type}
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as reply:
            return reply.status, reply.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def test_the_real_exporter_sends_protobuf_spans_that_join_their_trace(receiver: OtlpReceiver) -> None:
    context = receiver.collector.issue()
    provider = TracerProvider()
    exporter = OTLPSpanExporter(endpoint=receiver.base_url + "/v1/traces")
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("agent")
    parent = extract({"traceparent": context.traceparent})
    with (
        tracer.start_as_current_span("agent.run", context=parent),
        tracer.start_as_current_span("tool.search") as tool,
    ):
        tool.set_attribute("tool.name", "search")
    with tracer.start_as_current_span("unrelated"):  # a trace the run did not issue
        pass
    provider.shutdown()
    trace = receiver.collector.row_trace(context.trace_id)
    assert [span.name for span in trace.spans] == ["agent.run", "tool.search"]
    assert trace.spans[0].parent_span_id == context.span_id
    assert trace.spans[1].attributes == {"tool.name": "search"}
    assert receiver.collector.unknown == 1


def test_json_export_answers_an_export_response(receiver: OtlpReceiver) -> None:
    context = receiver.collector.issue()
    status, body = post(receiver, json_body(raw_span(traceId=context.trace_id)))
    assert (status, json.loads(body)) == (200, {})
    assert len(receiver.collector.row_trace(context.trace_id).spans) == 1


def test_unknown_trace_ids_are_dropped_and_reported_as_partial_success(receiver: OtlpReceiver) -> None:
    status, body = post(receiver, json_body(raw_span()))
    assert status == 200
    assert json.loads(body)["partialSuccess"]["rejectedSpans"] == "1"
    assert receiver.collector.unknown == 1


def test_a_span_flood_is_bounded_and_counted(receiver: OtlpReceiver) -> None:
    context = receiver.collector.issue()
    spans = [raw_span(traceId=context.trace_id, spanId=f"{i + 1:016x}") for i in range(120)]
    status, body = post(receiver, json_body(*spans))
    trace = receiver.collector.row_trace(context.trace_id)
    assert status == 200
    assert (len(trace.spans), trace.dropped) == (50, 70)
    assert json.loads(body)["partialSuccess"]["rejectedSpans"] == "70"


def test_protobuf_partial_success_is_protobuf(receiver: OtlpReceiver) -> None:
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

    kept: list[Any] = []

    class Keep(SpanExporter):
        def export(self, spans: Any) -> SpanExportResult:
            kept.extend(spans)
            return SpanExportResult.SUCCESS

    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(Keep()))
    with provider.get_tracer("t").start_as_current_span("stray"):
        pass
    status, body = post(receiver, encode_spans(kept).SerializeToString(), "application/x-protobuf")
    response = ExportTraceServiceResponse.FromString(body)
    assert (status, response.partial_success.rejected_spans) == (200, 1)


@pytest.mark.parametrize(
    ("body", "content_type", "status"),
    [
        (b"{broken", "application/json", 400),
        (b"\xff\xff\xff\xff\x0f", "application/x-protobuf", 400),
        (b"{}", "text/plain", 415),
    ],
)
def test_malformed_bodies_get_otlps_error_and_the_receiver_goes_on(
    receiver: OtlpReceiver, body: bytes, content_type: str, status: int
) -> None:
    got, reply = post(receiver, body, content_type)
    assert got == status
    if content_type == "application/json":
        assert json.loads(reply)["code"] == 3 and "not JSON" in json.loads(reply)["message"]
    if content_type == "application/x-protobuf":
        assert reply.startswith(b"\x08\x03\x12") and b"protobuf" in reply
    context = receiver.collector.issue()
    assert post(receiver, json_body(raw_span(traceId=context.trace_id)))[0] == 200


def test_a_body_over_the_bound_is_refused_without_reading_it(receiver: OtlpReceiver) -> None:
    with socket.create_connection(("127.0.0.1", receiver.port), timeout=10) as connection:
        connection.sendall(
            b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            + f"Content-Length: {MAX_BODY_BYTES + 1}\r\n\r\n".encode()
        )
        reply = connection.recv(65536)
    assert reply.startswith(b"HTTP/1.1 413")


def test_another_path_is_404(receiver: OtlpReceiver) -> None:
    request = urllib.request.Request(receiver.base_url + "/v1/metrics", data=b"{}", method="POST")
    request.add_header("Content-Type", "application/json")
    with pytest.raises(urllib.error.HTTPError) as raised:
        urllib.request.urlopen(request, timeout=10)
    assert raised.value.code == 404


def test_a_port_in_use_is_a_config_error_naming_the_key() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        receiver = OtlpReceiver(SpanCollector(), taken.getsockname()[1])
        with pytest.raises(ConfigError, match="in use") as raised:
            receiver.start()
    assert raised.value.exit_code == 2
    assert raised.value.where == "tracing.otlp.http.port"


def test_the_port_of_a_run_that_just_ended_is_free_for_the_next(receiver: OtlpReceiver) -> None:
    # the connection the receiver closed lingers in TIME_WAIT on its port for a minute; a run started
    # on the same fixed port right after (or after promptfoo's, as benchmarks/compat_promptfoo.py does)
    # must still bind it
    port = receiver.port
    body = json_body(raw_span())
    with socket.create_connection(("127.0.0.1", port), timeout=10) as connection:
        connection.sendall(
            b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nConnection: close\r\n"
            + f"Content-Length: {len(body)}\r\n\r\n".encode()
            + body
        )
        reply = b""
        while chunk := connection.recv(65536):  # the receiver closes first: its side keeps the TIME_WAIT
            reply += chunk
    assert reply.startswith(b"HTTP/1.1 200")
    receiver.stop()
    again = OtlpReceiver(SpanCollector(), port)
    again.start()
    try:
        assert again.port == port
    finally:
        again.stop()


def _other_local_address() -> str | None:
    """An address of this machine that is not 127.0.0.1, if it has one."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("10.255.255.255", 1))  # no packet is sent: picks the outgoing interface
            address = str(probe.getsockname()[0])
        except OSError:
            return None
    return None if address.startswith("127.") or address == "0.0.0.0" else address


def test_the_receiver_listens_on_loopback_only_and_stops(receiver: OtlpReceiver) -> None:
    assert receiver.base_url.startswith("http://127.0.0.1:")
    port = receiver.port
    other = _other_local_address() or "127.0.0.2"  # 127.0.0.2 is loopback too, but not the bound address
    with pytest.raises(OSError):
        socket.create_connection((other, port), timeout=2).close()
    receiver.stop()
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=2).close()


def _raw_post(port: int, declared: int, body: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as connection:
        connection.sendall(
            b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            + f"Content-Length: {declared}\r\n\r\n".encode()
            + body
        )
        connection.shutdown(socket.SHUT_WR)
        reply = b""
        while chunk := connection.recv(65536):  # the server closes the connection after a 400
            reply += chunk
        return reply


def test_a_body_shorter_than_declared_is_a_400(receiver: OtlpReceiver) -> None:
    assert _raw_post(receiver.port, 100, b"{}").startswith(b"HTTP/1.1 400")


def test_a_content_length_of_non_ascii_digits_is_a_411(receiver: OtlpReceiver) -> None:
    # "²" is a digit to str.isdigit() and arrives as Latin-1; int() refuses it
    with socket.create_connection(("127.0.0.1", receiver.port), timeout=10) as connection:
        connection.sendall(
            b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Content-Length: \xb2\r\n\r\n"
        )
        assert connection.recv(65536).startswith(b"HTTP/1.1 411")


def test_a_body_past_its_deadline_is_a_400(receiver: OtlpReceiver, monkeypatch: pytest.MonkeyPatch) -> None:
    from evalh.tracing import receiver as module

    monkeypatch.setattr(module, "_BODY_DEADLINE_S", 0.0)  # every body is late: the trickling client's fate
    reply = _raw_post(receiver.port, 2, b"{}")
    assert reply.startswith(b"HTTP/1.1 400") and b"too slowly" in reply


def test_gzip_bodies_from_the_real_exporter(receiver: OtlpReceiver) -> None:
    from opentelemetry.exporter.otlp.proto.http import Compression

    context = receiver.collector.issue()
    provider = TracerProvider()
    exporter = OTLPSpanExporter(endpoint=receiver.base_url + "/v1/traces", compression=Compression.Gzip)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    with provider.get_tracer("agent").start_as_current_span(
        "zipped", context=extract({"traceparent": context.traceparent})
    ):
        pass
    provider.shutdown()
    assert [span.name for span in receiver.collector.row_trace(context.trace_id).spans] == ["zipped"]


def test_clients_that_reset_mid_request_print_nothing(
    receiver: OtlpReceiver, capfd: pytest.CaptureFixture[str]
) -> None:
    """An exporter killed mid-upload (its provider timed out) resets the connection: the reply's write
    fails, and socketserver printed that BrokenPipeError's traceback on the run's console."""
    body = b'{"resourceSpans": []}' + b" " * 200_000
    for _ in range(10):
        connection = socket.create_connection(("127.0.0.1", receiver.port), timeout=10)
        connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # close = RST
        connection.sendall(
            b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            + f"Content-Length: {len(body)}\r\n\r\n".encode()
            + body[:1000]
        )
        connection.close()
    assert post(receiver, b"{}")[0] == 200  # every connection above is handled once this one is
    receiver.stop()  # its threads end with the server's
    assert "Traceback" not in capfd.readouterr().err


def test_connections_open_at_once_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each connection is a thread: past the bound a new one is closed at once, not given a thread."""
    from evalh.tracing import receiver as module

    monkeypatch.setattr(module, "_MAX_OPEN_CONNECTIONS", 3)
    started = OtlpReceiver(SpanCollector(), 0)
    started.start()
    try:
        idle = [socket.create_connection(("127.0.0.1", started.port), timeout=10) for _ in range(3)]
        with socket.create_connection(("127.0.0.1", started.port), timeout=10) as extra:
            assert extra.recv(1) == b""  # closed by the receiver, no thread
        for connection in idle:
            connection.close()
        status = 0
        for _ in range(100):  # the idle connections' threads end as their sockets close
            try:
                status, _ = post(started, json_body(raw_span()))
            except OSError:  # still at the bound: closed at once (a URLError or a reset)
                continue
            if status == 200:
                break
        assert status == 200
    finally:
        started.stop()
