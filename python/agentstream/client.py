"""A client for ``agentstream serve``: start runs on a server and stream their events, resuming
by sequence after a dropped connection. Standard library only (``http.client``).

::

    import agentstream

    client = agentstream.connect("http://127.0.0.1:8787", token)
    run = client.run("claude", "Fix the failing test")
    for envelope in run:                       # {"run_id", "sequence", "channel", "event"}
        if envelope["channel"] == "content":
            print(envelope["event"]["update"]["sessionUpdate"])
    result = run.wait()                        # agentstream.RunResult, as for a local run

    for envelope in client.stream(run.id, after=41):   # resume right after sequence 41
        ...

    async for envelope in client.astream(run.id):      # the same, from async code
        ...

The envelopes are the same dicts a local run yields (snake_case envelope keys; ``event`` is the
content or lifecycle dict, or the stdout/stderr text), exactly one terminal lifecycle event
last. A connection that drops (or a server that restarts its proxy) is reconnected with the
last sequence received, so nothing is yielded twice and nothing is skipped. When the server no
longer has the envelopes after that point (older than its replay buffer) it says so, and the
stream raises :class:`StreamGapError` — never a silent hole (``gaps="skip"`` warns and goes on).
"""

from __future__ import annotations

import asyncio
import http.client
import json
import re
import socket
import threading
import time
import warnings
from collections.abc import AsyncIterator, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, cast
from urllib.parse import quote, urlencode, urlsplit

from ._run import RunResult
from .errors import AgentstreamError
from .types import Envelope

__all__ = [
    "Client",
    "RemoteRun",
    "ServerError",
    "StreamGapError",
    "ConnectionLostError",
    "connect",
]

GapPolicy = Literal["raise", "skip"]


class ServerError(AgentstreamError):
    """The server refused a request: ``status`` (HTTP), ``error`` (its code: ``unauthorized``,
    ``not_found``, ``invalid_field``, ``limit_reached``, …), ``message`` and, for bad input, the
    ``field`` at fault. Not an error of the core's table (``code`` 0)."""

    kind = "server"
    code = 0

    def __init__(self, status: int, error: str, message: str, field: str | None = None) -> None:
        super().__init__(f"{status} {error}: {message}" + (f" (field: {field})" if field else ""))
        self.status = status
        self.error = error
        self.message = message
        self.field = field


class StreamGapError(AgentstreamError):
    """The server no longer has the envelopes after the point this stream reached (they are
    older than its replay buffer). ``gap`` is the server's notice: ``missing`` sequence numbers
    after ``after``; the stream could go on at ``resumeFrom``."""

    kind = "stream_gap"
    code = 0

    def __init__(self, gap: Mapping[str, Any]) -> None:
        super().__init__(str(gap.get("message", "envelopes are missing")))
        self.gap = dict(gap)


class ConnectionLostError(AgentstreamError, ConnectionError):
    """The server could not be reached again within ``max_retries`` attempts."""

    kind = "connection_lost"
    code = 0


@dataclass
class _Retry:
    delay: float = 0.5
    max_delay: float = 3.0


_RETRY_AFTER_CAP = 30.0
"""The longest wait a ``Retry-After`` asks for that a stream honours, in seconds: a hint of
hours would hold the iteration that long for a slot that is usually free within seconds."""


class _Busy(http.client.HTTPException):
    """A ``429`` to the reconnect of a stream: most likely the server has not yet freed the slot
    of this stream's previous connection (it does once it notices that connection gone), so it is
    retried like a lost connection, after ``retry_after`` seconds when the server said."""

    def __init__(self, message: str, retry_after: float | None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


def _retry_after(value: str | None) -> float | None:
    """A ``Retry-After`` in seconds (its HTTP-date form is not used: clocks differ)."""
    value = (value or "").strip()
    return float(value) if value.isascii() and value.isdigit() else None


def _count(value: Any) -> int | None:
    """``value`` if it is a whole number >= 0."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _missing_through(gap: Mapping[str, Any]) -> int | None:
    """The last sequence number a gap notice says is missing (they run from right after
    ``after``, or from 0, through it); ``None`` when the notice does not say."""
    after, missing = gap.get("after"), _count(gap.get("missing"))
    if not missing:
        return None
    if after is None:
        return missing - 1
    reached = _count(after)
    return None if reached is None else reached + missing


# An SSE line ends in CRLF, LF or a bare CR.
_LINE_END = re.compile(rb"\r\n?|\n")


def _sse_lines(resp: http.client.HTTPResponse, limit: int, path: str) -> Iterator[bytes]:
    """The lines of an SSE response as they arrive, without their ends, then what follows the
    last line end. A line longer than ``limit`` is a protocol error."""
    pending = bytearray()  # the start of a line whose end has not come yet
    after_cr = False
    while True:
        # read1, not readline: a stream whose lines end in a bare CR has no LF to wait for.
        chunk = resp.read1(65536)
        if not chunk:
            if pending:
                yield bytes(pending)
            return
        start = 0
        # After a chunk that ended in CR, an LF starting this one is the rest of that CRLF, not
        # an empty line (which would dispatch the event being received too early).
        if after_cr and chunk.startswith(b"\n"):
            start = 1
        after_cr = False
        while (end := _LINE_END.search(chunk, start)) is not None:
            pending += chunk[start:end.start()]
            yield bytes(pending)
            pending.clear()
            after_cr = end.end() == len(chunk) and end.group() == b"\r"
            start = end.end()
        pending += chunk[start:]
        if len(pending) > limit:
            raise _protocol_error(path, f"an event longer than max_event_bytes ({limit} bytes)")


def _envelope(wire: Mapping[str, Any]) -> Envelope:
    """The server's wire envelope (camelCase ``runId``) as a local run yields it."""
    env: dict[str, Any] = {
        "run_id": wire["runId"],
        "sequence": wire["sequence"],
        "channel": wire["channel"],
        "event": wire["event"],
    }
    if wire.get("coalesced"):
        env["coalesced"] = wire["coalesced"]
    return cast(Envelope, env)


DEFAULT_MAX_EVENT_BYTES = 256 * 1024 * 1024
"""What a :class:`Client` reads of one stream event or response at most, by default: far above
the largest envelope a server sends (a harness line is at most 16 MiB by default, and its JSON
escaping can grow it some times over)."""


class Client:
    """A connection to one ``agentstream serve`` as one tenant (its bearer token). Thread-safe:
    each request opens its own HTTP connection."""

    def __init__(self, url: str, token: str, *, timeout: float = 60.0, max_retries: int = 10,
                 max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"url must be http(s)://host[:port][/prefix], not {url!r}")
        if not token:
            raise ValueError("token is empty: give the bearer token the server printed or its operator issued")
        self.url = url.rstrip("/")
        self._https = parts.scheme == "https"
        self._host = parts.hostname
        self._port = parts.port
        self._prefix = parts.path.rstrip("/")
        self._token = token
        self.timeout = timeout
        """Seconds a request (or a silent stream: the server sends a heartbeat every 15 s) may wait."""
        self.max_retries = max_retries
        """Reconnection attempts in a row, without receiving anything, before giving up. A ``429``
        to a reconnect (the server has not yet freed the slot of the stream's previous
        connection) is one too, made after the ``Retry-After`` the server asks for (at most 30 s)."""
        if max_event_bytes < 1024:
            raise ValueError(f"max_event_bytes must be at least 1024, not {max_event_bytes}")
        self.max_event_bytes = max_event_bytes
        """The largest stream event or response body read: more is a ``protocol_error`` (a
        server or proxy that never ends a line cannot grow this process without bound)."""

    def __repr__(self) -> str:
        return f"agentstream.Client({self.url!r})"  # never the token

    # ---- HTTP -----------------------------------------------------------------------------------

    def _connection(self) -> http.client.HTTPConnection:
        cls = http.client.HTTPSConnection if self._https else http.client.HTTPConnection
        return cls(self._host, self._port, timeout=self.timeout)

    def _headers(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        headers = {"Authorization": f"Bearer {self._token}", "User-Agent": "agentstream-python"}
        headers.update(extra or {})
        return headers

    def _request(self, method: str, path: str, body: Mapping[str, Any] | None = None) -> Any:
        conn = self._connection()
        try:
            payload = json.dumps(body).encode() if body is not None else None
            headers = self._headers({"Content-Type": "application/json"} if payload is not None else None)
            conn.request(method, self._prefix + path, body=payload, headers=headers)
            resp = conn.getresponse()
            data = resp.read(self.max_event_bytes + 1)
            if len(data) > self.max_event_bytes:
                raise _protocol_error(path, f"a response body longer than max_event_bytes ({self.max_event_bytes} bytes)")
            if resp.status >= 400:
                raise _server_error(resp.status, data)
            if not data:
                return None
            try:
                return json.loads(data)
            except ValueError:
                # Not an agentstream server (a proxy's page, another service at that URL).
                raise _protocol_error(path, f"a response that is not JSON: {data[:200]!r}") from None
        finally:
            conn.close()

    # ---- runs -----------------------------------------------------------------------------------

    def agents(self) -> list[str]:
        """The agent names this server runs."""
        return cast(list[str], self._request("GET", "/v1/agents")["agents"])

    def run(self, agent: str, prompt: str, *, model: str | None = None, resume: str | None = None) -> RemoteRun:
        """Start a run of the configured ``agent`` with ``prompt`` (``model``: passed with the
        harness's own flag; ``resume``: a harness session id to continue). Iterate the returned
        :class:`RemoteRun` for its envelopes, ``wait()`` for its result."""
        body: dict[str, Any] = {"agent": agent, "prompt": prompt}
        if model is not None:
            body["model"] = model
        if resume is not None:
            body["resume"] = resume
        info = cast(dict[str, Any], self._request("POST", "/v1/runs", body))
        return RemoteRun(self, info)

    def runs(self) -> list[dict[str, Any]]:
        """This tenant's runs, newest first, as the API lists them (id, agent, status, createdAt,
        …; no ``result`` and the prompt cut to 500 bytes, ``promptTruncated``: :meth:`get` has
        the whole run). Every page of the list is fetched."""
        runs: list[dict[str, Any]] = []
        path: str | None = "/v1/runs?limit=1000"
        while path is not None:
            page = self._request("GET", path)
            runs.extend(cast(list[dict[str, Any]], page["runs"]))
            following = page.get("next")
            if following is not None and (not isinstance(following, str) or not following.startswith("/v1/runs?")
                                          or following == path):
                raise _protocol_error("/v1/runs", f"a next page that is not a list's: {following!r}")
            path = following
        return runs

    def get(self, run_id: str) -> dict[str, Any]:
        """One run: its status and, once ended, ``result``."""
        return cast(dict[str, Any], self._request("GET", f"/v1/runs/{quote(run_id, safe='')}"))

    def cancel(self, run_id: str, reason: str | None = None) -> dict[str, Any]:
        """Cancel a run; the server waits (briefly) for it to end and returns it (still
        ``running`` when it did not end by then). Idempotent. In a cluster, a cancel the run's
        worker did not confirm raises :class:`ServerError` 503 ``cancel_not_delivered`` (its
        message says why; the run goes on, and cancelling again is safe)."""
        body = {"reason": reason} if reason else None
        return cast(dict[str, Any], self._request("POST", f"/v1/runs/{quote(run_id, safe='')}/cancel", body))

    def result(self, run_id: str) -> RunResult | None:
        """The run's :class:`RunResult` once it ended (``None`` while it runs)."""
        info = self.get(run_id)
        result = info.get("result")
        return RunResult._from_native(result) if result else None

    # ---- streaming ------------------------------------------------------------------------------

    def stream(self, run_id: str, after: int | None = None, *, gaps: GapPolicy = "raise") -> Iterator[Envelope]:
        """The run's envelopes after sequence ``after`` (``None``: from the start), until the
        terminal one. Reconnects on its own and resumes after the last sequence received.
        ``gaps``: what to do when the server no longer has some envelopes — ``"raise"``
        :class:`StreamGapError` (default) or ``"skip"`` (a warning, then the rest; one warning
        for any missing sequence number: a later notice of numbers already warned about, such
        as the ``evicted`` one after a ``too_slow``, is not warned about again)."""
        return self._stream(run_id, after, gaps).envelopes()

    def astream(self, run_id: str, after: int | None = None, *, gaps: GapPolicy = "raise") -> AsyncIterator[Envelope]:
        """:meth:`stream` for async code: the blocking reads happen on a worker thread; leaving
        the ``async for`` early closes the connection."""
        return _astream(self._stream(run_id, after, gaps))

    def _stream(self, run_id: str, after: int | None, gaps: GapPolicy) -> _Stream:
        if after is not None and (isinstance(after, bool) or not isinstance(after, int) or after < 0):
            raise ValueError(f"after must be a sequence number >= 0, not {after!r}")
        if gaps not in ("raise", "skip"):
            raise ValueError(f"gaps must be 'raise' or 'skip', not {gaps!r}")
        return _Stream(self, run_id, after, gaps)


def _protocol_error(path: str, what: str) -> ServerError:
    """A ``200`` stream that does not speak the protocol (not the server, or a proxy rewriting
    it): an error at once, never retried."""
    return ServerError(
        200, "protocol_error",
        f"{path} sent {what}; is the URL an agentstream server's, and does a proxy in between "
        "rewrite or buffer the stream?",
    )


def _server_error(status: int, data: bytes) -> ServerError:
    try:
        body = json.loads(data)
        return ServerError(status, str(body.get("error", "error")), str(body.get("message", "")), body.get("field"))
    except (ValueError, AttributeError):
        return ServerError(status, "http_error", data.decode("utf-8", "replace")[:500])


class _Stream:
    """One logical stream over as many HTTP responses as it takes."""

    def __init__(self, client: Client, run_id: str, after: int | None, gaps: GapPolicy) -> None:
        self.client = client
        self.path = f"/v1/runs/{quote(run_id, safe='')}/events"
        self.last: int | None = after
        self.gaps = gaps
        self.retry = _Retry()
        self.conn: http.client.HTTPConnection | None = None
        self.lock = threading.Lock()
        self.closed = False
        self.complete = False
        # Set by close(): ends a wait between attempts at once.
        self.woken = threading.Event()
        # Whether the server accepted a request of this stream (200): a 429 after that is most
        # likely about this stream's own previous connection, a 429 before it a limit reached.
        self.accepted = False
        # The last sequence number a gap notice reported missing: a later notice of numbers up
        # to it is not reported again.
        self.reported: int | None = None
        # Heartbeats of the current response (one means the connection worked a while).
        self.heartbeats = 0

    def close(self) -> None:
        """Stop: close the connection (also from another thread, unblocking a read)."""
        with self.lock:
            self.closed = True
            conn, self.conn = self.conn, None
        self.woken.set()
        if conn is not None:
            # Unblocks a read in progress on another thread.
            try:
                if conn.sock is not None:
                    conn.sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            conn.close()

    def envelopes(self) -> Iterator[Envelope]:
        failures = 0
        try:
            while True:
                progressed = False
                self.heartbeats = 0
                try:
                    for env in self._one_response():
                        progressed = True
                        yield env
                    # A response that stayed open for a heartbeat was a working connection
                    # (a proxy that ends long responses, a run quiet for minutes): not a failure.
                    progressed = progressed or self.heartbeats > 0
                    # The server ends a response after the terminal envelope; asked again for
                    # what follows it, it answers 204 (complete). A response cut short by the
                    # network or a proxy is resumed the same way.
                    if self.complete or self.closed:
                        return
                except (OSError, http.client.HTTPException) as exc:
                    if self.closed:
                        return
                    if progressed or self.heartbeats > 0:
                        failures = 0
                    failures += 1
                    if failures > self.client.max_retries:
                        raise ConnectionLostError(
                            f"lost the stream of {self.path} and could not resume after "
                            f"{self.client.max_retries} attempts: {exc}"
                        ) from exc
                    delay = min(self.retry.delay * failures, self.retry.max_delay)
                    if isinstance(exc, _Busy) and exc.retry_after is not None:
                        delay = max(delay, min(exc.retry_after, _RETRY_AFTER_CAP))
                    self.woken.wait(delay)
                    continue
                failures = 0 if progressed else failures + 1
                if failures > self.client.max_retries:
                    raise ConnectionLostError(f"the stream of {self.path} keeps ending before the run's end")
                self.woken.wait(0 if progressed else min(self.retry.delay * failures, self.retry.max_delay))
        finally:
            self.close()

    def _one_response(self) -> Iterator[Envelope]:
        conn = self.client._connection()
        with self.lock:
            if self.closed:
                return
            self.conn = conn
        query = f"?{urlencode({'after': self.last})}" if self.last is not None else ""
        conn.request("GET", self.client._prefix + self.path + query,
                     headers=self.client._headers({"Accept": "text/event-stream"}))
        resp = conn.getresponse()
        if resp.status == 204:
            self.complete = True  # we have the terminal already
            return
        if resp.status >= 500:
            raise http.client.HTTPException(f"server error {resp.status}")
        if resp.status == 429 and self.accepted:
            error = _server_error(resp.status, resp.read(self.client.max_event_bytes))
            raise _Busy(f"the server refused to resume the stream: {error}",
                        _retry_after(resp.getheader("Retry-After")))
        if resp.status != 200:
            raise _server_error(resp.status, resp.read(self.client.max_event_bytes))
        self.accepted = True
        event, data, size = "message", [], 0
        limit = self.client.max_event_bytes
        for raw in _sse_lines(resp, limit, self.path):
            size += len(raw) + 1  # and its line end
            if size > limit:
                raise _protocol_error(self.path, f"an event longer than max_event_bytes ({limit} bytes)")
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise _protocol_error(self.path, f"a line that is not UTF-8 ({exc.reason} at byte {exc.start})") from None
            if line:
                if line.startswith(":"):
                    self.heartbeats += 1
                    continue
                name, _, value = line.partition(":")
                value = value[1:] if value.startswith(" ") else value
                if name == "data":
                    data.append(value)
                elif name == "event":
                    event = value
                elif name == "retry" and value.isdigit():
                    self.retry.max_delay = int(value) / 1000
                continue
            if data:
                text = "\n".join(data)
                try:
                    payload = json.loads(text)
                except ValueError:
                    raise _protocol_error(self.path, f"an event whose data is not JSON: {text[:200]!r}") from None
                if event == "gap":
                    if not isinstance(payload, dict):
                        raise _protocol_error(self.path, f"a gap that is not an object: {text[:200]!r}")
                    self._gap(payload)
                elif event == "message":
                    if not (isinstance(payload, dict) and {"runId", "sequence", "channel", "event"} <= payload.keys()
                            and isinstance(payload["sequence"], int)):
                        raise _protocol_error(self.path, f"an event that is not an envelope: {text[:200]!r}")
                    env = _envelope(payload)
                    self.last = env["sequence"] + env.get("coalesced", 0)
                    yield env
            event, data, size = "message", [], 0

    def _gap(self, gap: Mapping[str, Any]) -> None:
        through = _missing_through(gap)
        if through is None or self.reported is None or through > self.reported:
            if self.gaps == "raise":
                raise StreamGapError(gap)
            warnings.warn(f"agentstream: {gap.get('message')}", RuntimeWarning, stacklevel=4)
            if through is not None:
                self.reported = through
        resume_from = gap.get("resumeFrom")
        if isinstance(resume_from, int):
            self.last = resume_from - 1
        elif through is not None and (self.last is None or through > self.last):
            # No resumeFrom: the response ends with the notice (`too_slow`, or a finished run of
            # which nothing is left). The numbers it reported are gone, so the reconnect asks for
            # what follows them; asked from the old point, the server would report them again
            # (as `evicted`), and for a finished run again and again.
            self.last = through


async def _astream(stream: _Stream) -> AsyncIterator[Envelope]:
    """Drive a stream's blocking reads on a worker thread, handing envelopes to the event loop
    (at most 1024 waiting: a slow consumer slows the reads, not memory)."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[tuple[str, Any]] = asyncio.Queue(maxsize=1024)

    def hand(kind: str, value: Any) -> bool:
        put = queue.put((kind, value))
        try:
            asyncio.run_coroutine_threadsafe(put, loop).result()
            return True
        except RuntimeError:  # the loop is gone: the put never ran (close it, or it warns)
            put.close()
            return False

    def pump() -> None:
        try:
            for env in stream.envelopes():
                if stream.closed or not hand("item", env):
                    return
            hand("end", None)
        except BaseException as exc:  # handed to the consumer
            if not stream.closed:
                hand("error", exc)

    worker = threading.Thread(target=pump, name="agentstream-client-stream", daemon=True)
    worker.start()
    try:
        while True:
            kind, value = await queue.get()
            if kind == "item":
                yield cast(Envelope, value)
            elif kind == "error":
                raise cast(BaseException, value)
            else:
                return
    finally:
        stream.close()
        # Let a pump blocked on a full queue finish.
        while not queue.empty():
            queue.get_nowait()


@dataclass
class RemoteRun:
    """A run on the server: iterate it for its envelopes (from the start, resuming on its own),
    ``wait()`` for its :class:`RunResult`, ``cancel()`` to stop it."""

    client: Client
    info: dict[str, Any] = field(repr=False)

    @property
    def id(self) -> str:
        """The run id (the ``run_id`` of its envelopes)."""
        return cast(str, self.info["id"])

    def __iter__(self) -> Iterator[Envelope]:
        return self.client.stream(self.id)

    def __aiter__(self) -> AsyncIterator[Envelope]:
        return self.client.astream(self.id)

    def cancel(self, reason: str | None = None) -> dict[str, Any]:
        """Cancel the run (first reason stands); returns the run as the server then reports it
        (see :meth:`Client.cancel`, ``cancel_not_delivered`` included)."""
        self.info = self.client.cancel(self.id, reason)
        return self.info

    def wait(self, poll: float = 0.2) -> RunResult:
        """Block until the run ended; its result (the same :class:`RunResult` as a local run's)."""
        while True:
            result = self.client.result(self.id)
            if result is not None:
                return result
            time.sleep(poll)


def connect(url: str, token: str, *, timeout: float = 60.0, max_retries: int = 10,
            max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES) -> Client:
    """A :class:`Client` for the ``agentstream serve`` at ``url`` (``http://host:port``, or with
    a path prefix behind a proxy), as the tenant whose bearer ``token`` this is. Nothing is sent
    until the first call."""
    return Client(url, token, timeout=timeout, max_retries=max_retries, max_event_bytes=max_event_bytes)
