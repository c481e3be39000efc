"""agentstream.connect against a real ``agentstream serve`` (the CLI binary, with the fake
harness as the agent): the same envelopes as a local run, resume by sequence, reconnection
through dropped connections, cancel, gaps, errors, async."""

from __future__ import annotations

import asyncio
import json
import os
import select
import signal
import socket
import subprocess
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

import agentstream
from agentstream import types
from conftest import REPO, assert_conforms, read_jsonl

GOLDEN = REPO / "tests" / "golden"


def agentstream_bin() -> Path:
    """``$AGENTSTREAM_BIN``, else the CLI next to the fake harness (``make test-python`` builds both)."""
    override = os.environ.get("AGENTSTREAM_BIN")
    if override:
        return Path(override)
    target = Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target"))
    for profile in ("debug", "release"):
        path = target / profile / "agentstream"
        if path.exists():
            return path
    raise RuntimeError("the agentstream CLI is not built: cargo build -p agentstream-cli --bins")


class Serve:
    """``agentstream serve --config <file> --listen 127.0.0.1:0`` and its announced URL and token."""

    def __init__(self, tmp: Path, fake_harness: Path, limits: str = "") -> None:
        def agent(name: str, extra: str = "", harness: str = "claude") -> str:
            trace = GOLDEN / "claude" / "s2-bash"
            return (f'[agents.{name}]\nharness = "{harness}"\nbin = {json.dumps(str(fake_harness))}\n'
                    f'env = {{ AGENTSTREAM_FAKE_TRACE = {json.dumps(str(trace))}{extra} }}\n')
        config = tmp / "serve.toml"
        config.write_text(
            agent("claude")
            + agent("slow", ', AGENTSTREAM_FAKE_DELAY_MS = "250"')
            + agent("hang", ', AGENTSTREAM_FAKE_HANG = "1"')
            + agent("flood", ', AGENTSTREAM_FAKE_FLOOD = "400"')
            + limits
        )
        self.proc = subprocess.Popen([str(agentstream_bin()), "serve", "--config", str(config), "--listen",
                                      "127.0.0.1:0"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.url = ""
        self.token = ""
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if "listening on " in line:
                self.url = line.split("listening on ", 1)[1].strip()
            if "(shown once, not stored): " in line:
                self.token = line.split("(shown once, not stored): ", 1)[1].strip()
            if " try: curl" in line:
                break
        assert self.url and self.token, "serve announced its address and token"

    @property
    def port(self) -> int:
        return int(self.url.rsplit(":", 1)[1])

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        assert self.proc.wait(timeout=30) == 0


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, fake_harness: Path) -> Iterator[Serve]:
    s = Serve(tmp_path_factory.mktemp("serve"), fake_harness)
    yield s
    s.stop()


@pytest.fixture()
def client(server: Serve) -> agentstream.Client:
    return agentstream.connect(server.url, server.token, timeout=20)


def assert_whole(envs: list[types.Envelope]) -> None:
    expected = 0
    for env in envs:
        assert env["sequence"] == expected
        expected = env["sequence"] + 1 + env.get("coalesced", 0)
    terminals = [e for e in envs if e["channel"] == "lifecycle"
                 and e["event"]["reason"] in ("run_complete", "run_failed", "run_interrupted")]  # type: ignore[index]
    assert len(terminals) == 1 and terminals[0] is envs[-1]


def test_a_remote_run_yields_the_envelopes_a_local_run_does(client: agentstream.Client) -> None:
    run = client.run("claude", "List the files")
    assert run.id.startswith("run_")
    envs = list(run)
    assert_whole(envs)
    for env in envs:
        assert_conforms(env, types.Envelope)
        assert env["run_id"] == run.id
    content = [e["event"] for e in envs if e["channel"] == "content"]
    assert content == read_jsonl(GOLDEN / "claude" / "s2-bash.expected.jsonl")
    local = agentstream.replay("claude", (GOLDEN / "claude" / "s2-bash.input.jsonl").read_bytes())
    assert content == local.events, "the same content events as the local pipeline"
    assert [e["channel"] for e in envs if e["channel"] != "stderr"][1:] == \
        [e["channel"] for e in local.items], "the same channels in the same order (after sandbox_ready)"
    result = run.wait()
    assert isinstance(result, agentstream.RunResult)
    assert result.ok and result.run_id == run.id
    assert result.final_text and "three files" in result.final_text
    assert result.last_sequence == envs[-1]["sequence"]
    assert any(r["id"] == run.id for r in client.runs())
    assert client.get(run.id)["status"] == "completed"
    assert "claude" in client.agents()


def test_stream_after_any_point_yields_the_identical_tail(client: agentstream.Client) -> None:
    run = client.run("claude", "List the files")
    full = list(client.stream(run.id))
    for k, env in enumerate(full):
        assert list(client.stream(run.id, after=env["sequence"])) == full[k + 1:], f"after {env['sequence']}"


class DroppingProxy:
    """A TCP proxy in front of the server whose connections the test can cut at any moment."""

    def __init__(self, port: int) -> None:
        self.upstream = port
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.live: list[socket.socket] = []
        self.lock = threading.Lock()
        self.drops = 0
        threading.Thread(target=self.accept, daemon=True).start()

    def accept(self) -> None:
        while True:
            try:
                down, _ = self.listener.accept()
            except OSError:
                return
            up = socket.create_connection(("127.0.0.1", self.upstream))
            with self.lock:
                self.live += [down, up]
            threading.Thread(target=self.pump, args=(down, up), daemon=True).start()

    @staticmethod
    def pump(a: socket.socket, b: socket.socket) -> None:
        try:
            while True:
                ready, _, _ = select.select([a, b], [], [], 1.0)
                for s in ready:
                    data = s.recv(65536)
                    if not data:
                        return
                    (b if s is a else a).sendall(data)
        except (OSError, ValueError):  # a socket closed by drop_all() under select
            return
        finally:
            a.close()
            b.close()

    def drop_all(self) -> None:
        with self.lock:
            socks, self.live = self.live, []
        if socks:
            self.drops += 1
        for s in socks:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()

    def close(self) -> None:
        self.listener.close()
        self.drop_all()


def test_the_stream_reconnects_and_resumes_through_dropped_connections(server: Serve) -> None:
    proxy = DroppingProxy(server.port)
    try:
        through = agentstream.connect(f"http://127.0.0.1:{proxy.port}", server.token, timeout=20)
        run = through.run("slow", "List the files")
        got: list[types.Envelope] = []
        last_drop = time.monotonic()
        drops_while_streaming = 0
        for env in run:
            got.append(env)
            if time.monotonic() - last_drop > 0.4:
                proxy.drop_all()
                drops_while_streaming += 1
                last_drop = time.monotonic()
        assert drops_while_streaming >= 2, "the connection really was cut while the run went on"
        assert_whole(got)
        direct = agentstream.connect(server.url, server.token)
        assert got == list(direct.stream(run.id)), "nothing lost, nothing twice"
    finally:
        proxy.close()


def test_cancel_ends_the_run_with_one_terminal(client: agentstream.Client) -> None:
    run = client.run("hang", "wait")
    stream = iter(run)
    first = [next(stream) for _ in range(3)]
    info = run.cancel("the client pressed stop")
    assert info["status"] == "cancelled"
    envs = first + list(stream)
    assert_whole(envs)
    assert envs[-1]["event"]["reason"] == "run_interrupted"  # type: ignore[index]
    result = run.wait()
    assert result.state == "cancelled" and result.cancel_kind == "caller"
    assert result.cancel_reason and "the client pressed stop" in result.cancel_reason


def test_errors_say_what_is_wrong(server: Serve, client: agentstream.Client) -> None:
    with pytest.raises(agentstream.ServerError) as e:
        agentstream.connect(server.url, "not-the-token").runs()
    assert (e.value.status, e.value.error, e.value.field) == (401, "unauthorized", "Authorization")
    assert isinstance(e.value, agentstream.AgentstreamError)
    with pytest.raises(agentstream.ServerError) as e:
        client.run("gpt", "hi")
    assert (e.value.status, e.value.field) == (400, "agent")
    assert "claude" in e.value.message
    with pytest.raises(agentstream.ServerError) as e:
        client.run("claude", "")
    assert e.value.field == "prompt"
    with pytest.raises(agentstream.ServerError) as e:
        list(client.stream("run_00000000000000000000000000000000"))
    assert e.value.status == 404
    with pytest.raises(ValueError, match="after"):
        client.stream("x", after=-1)
    with pytest.raises(ValueError, match="http"):
        agentstream.connect("ftp://x", "t")
    assert "not-the-token" not in repr(agentstream.connect(server.url, "not-the-token"))
    # Nobody listening: retried, then a clear error.
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = s.getsockname()[1]
    gone = agentstream.connect(f"http://127.0.0.1:{dead}", "t", max_retries=1)
    with pytest.raises(agentstream.ConnectionLostError):
        list(gone.stream("run_x"))


# What a FakeStreamServer answers: a status and a body, or a status, a body and more headers.
# A body given as a list is written a piece at a time, a moment apart (arriving in as many chunks).
Answer = tuple[int, bytes | list[bytes]] | tuple[int, bytes | list[bytes], dict[str, str]]


class FakeStreamServer:
    """An HTTP server on 127.0.0.1 whose answer to its n-th request (counted from 0) is
    ``answer(n)``; ``paths[n]`` is that request's path and query."""

    def __init__(self, answer: Callable[[int], Answer]) -> None:
        import http.server

        owner = self
        self.requests = 0
        self.paths: list[str] = []

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (the standard library's name)
                owner.paths.append(self.path)
                status, body, *more = answer(owner.requests)
                owner.requests += 1
                pieces = body if isinstance(body, list) else [body]
                self.send_response(status)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Content-Length", str(sum(map(len, pieces))))
                for name, value in (more[0] if more else {}).items():
                    self.send_header(name, value)
                self.end_headers()
                for k, piece in enumerate(pieces):
                    if k:
                        time.sleep(0.02)
                    self.wfile.write(piece)
                    self.wfile.flush()

            def log_message(self, *_: Any) -> None:
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def not_the_protocol(body: bytes) -> FakeStreamServer:
    """A server that answers every request 200 with ``body`` (not agentstream's protocol)."""
    return FakeStreamServer(lambda _n: (200, body))


def scripted(responses: list[Answer]) -> FakeStreamServer:
    """A server that answers the n-th request with ``responses[n]``, then 204."""
    return FakeStreamServer(lambda n: responses[n] if n < len(responses) else (204, b""))


@pytest.mark.parametrize(("body", "options", "what"), [
    (b"data: <html>a proxy's page</html>\n\n", {}, "not JSON"),
    (b"data: {\"sequence\": 1}\xff\n\n", {}, "not UTF-8"),
    (b"data: [1, 2]\n\n", {}, "not an envelope"),
    (b"event: gap\ndata: 5\n\n", {}, "not an object"),
    # An event that never ends is an error, not a growing buffer: one endless line, and
    # endless short lines.
    (b"data: " + b"x" * 5000, {"max_event_bytes": 1024}, "an event longer than max_event_bytes (1024 bytes)"),
    (b"data: 1\n" * 300 + b"\n", {"max_event_bytes": 1024}, "an event longer than max_event_bytes (1024 bytes)"),
])
def test_a_stream_that_is_not_the_protocol_is_a_protocol_error_at_once(
        body: bytes, options: dict[str, int], what: str) -> None:
    other = not_the_protocol(body)
    try:
        with pytest.raises(agentstream.ServerError) as e:
            list(agentstream.connect(other.url, "t", max_retries=3, **options).stream("run_x"))
        assert (e.value.status, e.value.error) == (200, "protocol_error")
        assert what in e.value.message and "/v1/runs/run_x/events" in e.value.message, e.value.message
        assert other.requests == 1, "not retried: asking again would get the same"
    finally:
        other.close()


def test_responses_a_proxy_ends_after_a_heartbeat_are_not_failures() -> None:
    # A quiet run behind a proxy that ends every response after a while: each response carries
    # a heartbeat and no envelope. The connection works; only the run is quiet.
    quiet = (200, b"retry: 10\n\n: heartbeat\n\n")
    terminal = json.dumps({"runId": "run_x", "sequence": 0, "channel": "stdout", "event": "done\n"})
    server = scripted([quiet] * 8 + [(200, f"retry: 10\n\nid: 0\ndata: {terminal}\n\n".encode())])
    try:
        envs = list(agentstream.connect(server.url, "t", max_retries=3).stream("run_x"))
        assert [e["sequence"] for e in envs] == [0]
        assert server.requests == 10, "8 quiet responses, the envelope, then 204"
    finally:
        server.close()


def wire(sequence: int) -> str:
    return json.dumps({"runId": "run_x", "sequence": sequence, "channel": "stdout", "event": f"line {sequence}\n"})


def envelope_event(sequence: int) -> str:
    return f"id: {sequence}\ndata: {wire(sequence)}\n\n"


@pytest.mark.parametrize("eol", ["\r\n", "\r"], ids=["crlf", "cr"])
def test_events_whose_lines_end_in_crlf_or_cr_are_read_even_split_between_chunks(eol: str) -> None:
    # The envelope's JSON over two data lines: an empty line read between them (a CRLF split
    # between two chunks taken for two line ends) would dispatch half of it.
    envelope = wire(0)
    cut = envelope.index('"channel"')
    text = (f"retry: 10{eol}{eol}: heartbeat{eol}{eol}event: message{eol}id: 0{eol}"
            f"data: {envelope[:cut]}{eol}data: {envelope[cut:]}{eol}{eol}")
    # Each CR ends a chunk, so each LF of a CRLF begins the next.
    pieces = [piece.encode() for piece in text.replace("\r", "\r\0").split("\0")]
    server = scripted([(200, pieces)])
    try:
        envs = list(agentstream.connect(server.url, "t", max_retries=2).stream("run_x"))
        assert [e["sequence"] for e in envs] == [0]
        assert envs[0]["event"] == "line 0\n"
        assert server.requests == 2, "the envelope, then 204"
    finally:
        server.close()


LIMIT_REACHED = (429, b'{"error": "limit_reached", "message": "subscribers_per_run (1) reached"}')


def test_a_429_to_a_reconnect_is_retried_after_its_retry_after() -> None:
    # The server has not yet noticed that the stream's first connection is gone, so its slot is
    # still taken when the stream comes back for what follows sequence 0.
    server = scripted([
        (200, f"retry: 10\n\n{envelope_event(0)}".encode()),
        LIMIT_REACHED,
        LIMIT_REACHED,
        (*LIMIT_REACHED, {"Retry-After": "1"}),
        (200, f"retry: 10\n\n{envelope_event(1)}".encode()),
    ])
    try:
        started = time.monotonic()
        envs = list(agentstream.connect(server.url, "t", max_retries=3).stream("run_x"))
        assert [e["sequence"] for e in envs] == [0, 1]
        assert time.monotonic() - started >= 1.0, "the Retry-After waited for (the backoff is 10 ms)"
        assert server.paths[1:5] == ["/v1/runs/run_x/events?after=0"] * 4, "resumed, nothing twice"
        assert server.requests == 6
    finally:
        server.close()


def test_a_429_to_the_first_request_or_to_too_many_reconnects_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    # The first request: the tenant's streams are at their limit, not this stream's own.
    server = scripted([LIMIT_REACHED])
    try:
        with pytest.raises(agentstream.ServerError) as e:
            list(agentstream.connect(server.url, "t", max_retries=3).stream("run_x"))
        assert (e.value.status, e.value.error) == (429, "limit_reached")
        assert server.requests == 1
    finally:
        server.close()
    # Reconnects refused max_retries + 1 times in a row; a Retry-After waits at most the cap.
    monkeypatch.setattr("agentstream.client._RETRY_AFTER_CAP", 0.05)
    too_long: Answer = (*LIMIT_REACHED, {"Retry-After": "2"})
    server = scripted([(200, f"retry: 10\n\n{envelope_event(0)}".encode())] + [too_long] * 5)
    try:
        got: list[int] = []
        started = time.monotonic()
        with pytest.raises(agentstream.ConnectionLostError, match="429 limit_reached"):
            for env in agentstream.connect(server.url, "t", max_retries=2).stream("run_x"):
                got.append(env["sequence"])
        assert time.monotonic() - started < 1.5, "3 waits of the cap, not of 2 s"
        assert got == [0] and server.requests == 4
    finally:
        server.close()
    # Any other 4xx to a reconnect stays fatal.
    server = scripted([(200, f"retry: 10\n\n{envelope_event(0)}".encode()),
                       (403, b'{"error": "forbidden", "message": "no"}')])
    try:
        with pytest.raises(agentstream.ServerError) as e:
            list(agentstream.connect(server.url, "t", max_retries=3).stream("run_x"))
        assert e.value.status == 403 and server.requests == 2
    finally:
        server.close()


def test_a_url_that_is_not_an_agentstream_server_is_a_protocol_error() -> None:
    other = not_the_protocol(b"<html>a proxy's page</html>")
    try:
        with pytest.raises(agentstream.ServerError) as e:
            agentstream.connect(other.url, "t").agents()
        assert (e.value.status, e.value.error) == (200, "protocol_error")
        assert "not JSON" in e.value.message and "/v1/agents" in e.value.message, e.value.message
    finally:
        other.close()


def test_max_event_bytes_below_1024_is_refused() -> None:
    with pytest.raises(ValueError, match="max_event_bytes must be at least 1024"):
        agentstream.connect("http://127.0.0.1:1", "t", max_event_bytes=10)


def test_a_gap_is_raised_or_skipped_never_silent(tmp_path: Path, fake_harness: Path) -> None:
    small = Serve(tmp_path, fake_harness, "[limits]\nreplay_events = 20\n")
    try:
        c = agentstream.connect(small.url, small.token)
        run = c.run("flood", "x")
        run.wait()
        with pytest.raises(agentstream.StreamGapError) as e:
            list(c.stream(run.id, after=2))
        assert e.value.gap["after"] == 2 and e.value.gap["missing"] > 0
        with pytest.warns(RuntimeWarning, match="replay buffer"):
            tail = list(c.stream(run.id, after=2, gaps="skip"))
        assert len(tail) == 20
        assert tail[0]["sequence"] == e.value.gap["resumeFrom"]
    finally:
        small.stop()


def gap_event(reason: str, after: int | None, missing: int, resume_from: int | None) -> str:
    gap: dict[str, Any] = {"type": "gap", "runId": "run_x", "reason": reason, "missing": missing,
                           "message": f"{reason}: {missing} after {after}"}
    if after is not None:
        gap["after"] = after
    if resume_from is not None:
        gap["resumeFrom"] = resume_from
    return f"event: gap\ndata: {json.dumps(gap)}\n\n"


def evicting(evicted_through: int, last: int = 19) -> FakeStreamServer:
    """A run of sequences 0 to ``last`` whose reader fell behind: the first request gets
    sequence 0 and a ``too_slow`` gap for 1…15 (no ``resumeFrom``: the response ends); by the
    time it comes back, the run evicted everything through ``evicted_through`` (>= 15). Later
    requests are answered as the server answers ``?after=N``."""
    def answer(n: int) -> Answer:
        if n == 0:
            return 200, f"retry: 10\n\n{envelope_event(0)}{gap_event('too_slow', 0, 15, None)}".encode()
        after = int(parse_qs(urlsplit(server.paths[n]).query)["after"][0])
        if after >= last:
            return 204, b""
        text = "retry: 10\n\n"
        if after < evicted_through:
            text += gap_event("evicted", after, evicted_through - after, evicted_through + 1)
        text += "".join(envelope_event(s) for s in range(max(after, evicted_through) + 1, last + 1))
        return 200, text.encode()
    server = FakeStreamServer(answer)
    return server


def skipped(server: FakeStreamServer, after: int | None = None) -> tuple[list[int], list[str]]:
    """The sequences a ``gaps="skip"`` stream of ``server`` yields, and the warnings it gives."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        envs = list(agentstream.connect(server.url, "t", max_retries=3).stream("run_x", after, gaps="skip"))
    return [e["sequence"] for e in envs], [str(w.message) for w in caught if w.category is RuntimeWarning]


def test_a_too_slow_gap_is_reported_once_not_again_as_evicted() -> None:
    server = evicting(15)
    try:
        seqs, warned = skipped(server)
        assert seqs == [0, 16, 17, 18, 19]
        assert warned == ["agentstream: too_slow: 15 after 0"], "1…15 told once"
        assert server.paths[1] == "/v1/runs/run_x/events?after=15", "resumed after what it was told is gone"
    finally:
        server.close()
    # Evicted further meanwhile: only the numbers it was not told about yet are reported again.
    server = evicting(17)
    try:
        seqs, warned = skipped(server)
        assert seqs == [0, 18, 19]
        assert warned == ["agentstream: too_slow: 15 after 0", "agentstream: evicted: 2 after 15"]
    finally:
        server.close()


def test_a_gap_notice_of_numbers_already_reported_is_not_reported_again() -> None:
    # A server that resumes from the old point regardless: its `evicted` notice repeats 1…15.
    too_slow = f"retry: 10\n\n{envelope_event(0)}{gap_event('too_slow', 0, 15, None)}"
    tail = "".join(envelope_event(s) for s in range(16, 20))
    server = scripted([(200, too_slow.encode()), (200, (gap_event("evicted", 0, 15, 16) + tail).encode())])
    try:
        seqs, warned = skipped(server)
        assert seqs == [0, 16, 17, 18, 19]
        assert warned == ["agentstream: too_slow: 15 after 0"]
    finally:
        server.close()
    # New numbers in it (16, 17): reported.
    tail = "".join(envelope_event(s) for s in range(18, 20))
    server = scripted([(200, too_slow.encode()), (200, (gap_event("evicted", 0, 17, 18) + tail).encode())])
    try:
        seqs, warned = skipped(server)
        assert seqs == [0, 18, 19]
        assert warned == ["agentstream: too_slow: 15 after 0", "agentstream: evicted: 17 after 0"]
    finally:
        server.close()


def test_a_finished_run_of_which_nothing_is_left_is_reported_once_and_ends() -> None:
    # The server's answer to a resume point of a run whose every envelope retention removed: a
    # gap through the terminal (9), no resumeFrom; asked for what follows the terminal, 204.
    def answer(n: int) -> Answer:
        after = int(parse_qs(urlsplit(server.paths[n]).query)["after"][0])
        return (204, b"") if after >= 9 else (200, gap_event("evicted", after, 9 - after, None).encode())
    server = FakeStreamServer(answer)
    try:
        seqs, warned = skipped(server, after=3)
        assert seqs == [] and warned == ["agentstream: evicted: 6 after 3"]
        assert server.paths[1:] == ["/v1/runs/run_x/events?after=9"]
    finally:
        server.close()


def test_astream_yields_the_same_and_closes_when_left(client: agentstream.Client) -> None:
    run = client.run("claude", "List the files")
    full = list(client.stream(run.id))

    async def collect(limit: int | None) -> list[Any]:
        got = []
        async for env in client.astream(run.id):
            got.append(env)
            if limit is not None and len(got) == limit:
                break
        return got

    assert asyncio.run(collect(None)) == full
    assert asyncio.run(collect(3)) == full[:3]

    async def remote_run_aiter() -> list[Any]:
        return [env async for env in run]

    assert asyncio.run(remote_run_aiter()) == full


def test_runs_fetches_every_page_of_the_list() -> None:
    def page(ids: list[str], following: str | None) -> Answer:
        body: dict[str, Any] = {"runs": [{"id": i, "status": "completed"} for i in ids]}
        if following is not None:
            body["next"] = following
        return (200, json.dumps(body).encode())

    server = scripted([page(["r3", "r2"], "/v1/runs?limit=1000&before=t~r2"), page(["r1"], None)])
    try:
        assert [r["id"] for r in agentstream.connect(server.url, "t").runs()] == ["r3", "r2", "r1"]
        assert server.paths == ["/v1/runs?limit=1000", "/v1/runs?limit=1000&before=t~r2"]
    finally:
        server.close()
    # A next page that is not the list's (or the same page again) is the protocol's error, not
    # a request elsewhere or a loop.
    for following in ["https://elsewhere.example/v1/runs?x", "/v1/runs?limit=1000", 5]:
        server = scripted([page(["r1"], following)] * 3)  # type: ignore[arg-type]
        try:
            with pytest.raises(agentstream.ServerError) as info:
                agentstream.connect(server.url, "t").runs()
            assert info.value.error == "protocol_error", following
        finally:
            server.close()
