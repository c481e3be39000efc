"""The exceptions agentstream raises: one class per kind of the core's error table.

Every class derives from :class:`AgentstreamError`, and each also derives from the built-in
exception a Python programmer would reach for (``ValueError`` for bad arguments,
``TimeoutError`` for a timeout, ``FileNotFoundError`` for a missing harness), so both
``except agentstream.AgentstreamError`` and the idiomatic built-in ``except`` work.

``kind`` and ``code`` are the core's stable name and number for the error (the same in every
language binding). Messages say what happened and what to do about it.
"""

from __future__ import annotations

from typing import Any, ClassVar

from ._error_table import ERRORS

__all__ = [
    "AgentstreamError",
    "HarnessNotFoundError",
    "AlreadyRunningError",
    "SpawnFailedError",
    "InvalidArgumentError",
    "InvalidAgentError",
    "InvalidChannelError",
    "RunCancelledError",
    "RunTimeoutError",
    "DecodeLimitError",
    "InternalError",
    "NotRunningError",
    "NullArgumentError",
    "InvalidHandleError",
    "BusyError",
    "BufferTooSmallError",
    "StillRunningError",
    "PanicError",
    "CannotResumeError",
    "UnsupportedError",
]


class AgentstreamError(Exception):
    """Base class of every error agentstream raises."""

    kind: ClassVar[str] = "internal"
    """The core's error kind (an :data:`ErrorKind`); the server client's transport errors add
    ``server``, ``stream_gap`` and ``connection_lost`` (``code`` 0: not in the core's table)."""
    code: ClassVar[int] = ERRORS["internal"].code
    advice: ClassVar[str] = ERRORS["internal"].advice
    """What the caller can do about it (the core's advice for the kind)."""


class HarnessNotFoundError(AgentstreamError, FileNotFoundError):
    """The harness CLI executable was not found (install it or set ``AgentConfig.bin``)."""

    kind = "harness_not_found"
    code = ERRORS["harness_not_found"].code
    advice = ERRORS["harness_not_found"].advice


class AlreadyRunningError(AgentstreamError, RuntimeError):
    """A run is already going on for this ``Evolve``; wait for it or cancel it first."""

    kind = "already_running"
    code = ERRORS["already_running"].code
    advice = ERRORS["already_running"].advice


class SpawnFailedError(AgentstreamError, OSError):
    """The harness was found but could not be started."""

    kind = "spawn_failed"
    code = ERRORS["spawn_failed"].code
    advice = ERRORS["spawn_failed"].advice


class InvalidArgumentError(AgentstreamError, ValueError):
    """An argument is not valid; the message says which values are."""

    kind = "invalid_argument"
    code = ERRORS["invalid_argument"].code
    advice = ERRORS["invalid_argument"].advice


class InvalidAgentError(InvalidArgumentError):
    """An agent name that is not one of ``agentstream.AGENTS``."""


class InvalidChannelError(InvalidArgumentError):
    """An ``on()`` event name other than content, lifecycle, stdout or stderr."""


class RunCancelledError(AgentstreamError):
    """The run was cancelled (by the caller, a stall, or leaving an iterator early)."""

    kind = "cancelled"
    code = ERRORS["cancelled"].code
    advice = ERRORS["cancelled"].advice


class RunTimeoutError(AgentstreamError, TimeoutError):
    """The run went past its time limit."""

    kind = "timeout"
    code = ERRORS["timeout"].code
    advice = ERRORS["timeout"].advice


class DecodeLimitError(AgentstreamError):
    """A line was longer than ``max_line_bytes`` and the decoder was told to raise.

    ``events`` holds the events decoded from the other lines of the same call, so nothing is
    lost; ``line`` is the 1-based number of the oversize line. The decoder stays usable.
    """

    kind = "decode_limit"
    code = ERRORS["decode_limit"].code
    advice = ERRORS["decode_limit"].advice
    events: list[Any]
    line: int


class InternalError(AgentstreamError):
    """A bug in agentstream (a Rust panic caught at the boundary); please report it."""

    kind = "internal"
    code = ERRORS["internal"].code
    advice = ERRORS["internal"].advice


class NotRunningError(AgentstreamError, RuntimeError):
    """Nothing is running: pause, resume or interrupt without an active run. Start a run first."""

    kind = "not_running"
    code = ERRORS["not_running"].code
    advice = ERRORS["not_running"].advice


class NullArgumentError(AgentstreamError, TypeError):
    """A required argument was missing (``None`` where a value is needed)."""

    kind = "null_argument"
    code = ERRORS["null_argument"].code
    advice = ERRORS["null_argument"].advice


class InvalidHandleError(AgentstreamError, RuntimeError):
    """The object was already closed (or is not one the library made); use a live one."""

    kind = "invalid_handle"
    code = ERRORS["invalid_handle"].code
    advice = ERRORS["invalid_handle"].advice


class BusyError(AgentstreamError, RuntimeError):
    """The object is in use by a call that has not returned (e.g. called from its own handler)."""

    kind = "busy"
    code = ERRORS["busy"].code
    advice = ERRORS["busy"].advice


class BufferTooSmallError(AgentstreamError):
    """A caller's buffer was too small for the text (C ABI only; listed for the one table)."""

    kind = "buffer_too_small"
    code = ERRORS["buffer_too_small"].code
    advice = ERRORS["buffer_too_small"].advice


class StillRunningError(AgentstreamError, RuntimeError):
    """The run has not ended: its result exists once its terminal event was delivered."""

    kind = "still_running"
    code = ERRORS["still_running"].code
    advice = ERRORS["still_running"].advice


class PanicError(AgentstreamError):
    """A Rust panic caught at the API edge (a bug in agentstream): please report it."""

    kind = "panic"
    code = ERRORS["panic"].code
    advice = ERRORS["panic"].advice


class CannotResumeError(AgentstreamError, ValueError):
    """The harness cannot continue the session asked for; start a fresh one."""

    kind = "cannot_resume"
    code = ERRORS["cannot_resume"].code
    advice = ERRORS["cannot_resume"].advice


class UnsupportedError(AgentstreamError, NotImplementedError):
    """Not available on this platform (running harnesses needs Linux or another Unix)."""

    kind = "unsupported"
    code = ERRORS["unsupported"].code
    advice = ERRORS["unsupported"].advice


# Looked up by the native module by the core's ErrorKind name; one class per kind of the table
# (python/tests/test_errors.py checks that every kind has one).
_BY_KIND: dict[str, type[AgentstreamError]] = {
    cls.kind: cls
    for cls in (
        HarnessNotFoundError,
        AlreadyRunningError,
        SpawnFailedError,
        InvalidArgumentError,
        RunCancelledError,
        RunTimeoutError,
        DecodeLimitError,
        InternalError,
        NotRunningError,
        NullArgumentError,
        InvalidHandleError,
        BusyError,
        BufferTooSmallError,
        StillRunningError,
        PanicError,
        CannotResumeError,
        UnsupportedError,
    )
}
