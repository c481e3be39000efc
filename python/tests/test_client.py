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
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

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


class FakeStreamServer:
    """An HTTP server on 127.0.0.1 whose answer to its n-th request (counted from 0) is
    ``answer(n)``: a status and a body."""

    def __init__(self, answer: Callable[[int], tuple[int, bytes]]) -> None:
        import http.server

        owner = self
        self.requests = 0

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (the standard library's name)
                status, body = answer(owner.requests)
                owner.requests += 1
                self.send_response(status)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

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


def scripted(responses: list[tuple[int, bytes]]) -> FakeStreamServer:
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
