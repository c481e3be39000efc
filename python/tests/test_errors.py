"""The exception hierarchy, its messages, and panic safety."""

from __future__ import annotations

import pytest

import agentstream
from agentstream import _native, errors


def test_every_core_error_kind_has_a_class_with_its_code() -> None:
    assert set(errors._BY_KIND) == set(_native.ERROR_KINDS)
    for kind, (code, advice) in _native.ERROR_KINDS.items():
        cls = errors._BY_KIND[kind]
        assert issubclass(cls, agentstream.AgentstreamError)
        assert cls.kind == kind and cls.code == code and cls.advice == advice
        assert advice


def test_the_generated_error_table_is_the_native_one() -> None:
    from agentstream._error_table import ERRORS

    assert list(ERRORS) == list(_native.ERROR_KINDS), "same kinds, in code order"
    for kind, (code, advice) in _native.ERROR_KINDS.items():
        assert (ERRORS[kind].code, ERRORS[kind].advice) == (code, advice)


def test_hierarchy_also_uses_the_builtin_exceptions() -> None:
    assert issubclass(agentstream.InvalidAgentError, ValueError)
    assert issubclass(agentstream.InvalidChannelError, ValueError)
    assert issubclass(agentstream.InvalidArgumentError, ValueError)
    assert issubclass(agentstream.RunTimeoutError, TimeoutError)
    assert issubclass(agentstream.HarnessNotFoundError, FileNotFoundError)
    assert issubclass(agentstream.AlreadyRunningError, RuntimeError)
    assert issubclass(agentstream.NotRunningError, RuntimeError)
    for name in errors.__all__:
        assert issubclass(getattr(agentstream, name), agentstream.AgentstreamError)


def test_unknown_agent_is_a_value_error_listing_the_valid_names() -> None:
    with pytest.raises(agentstream.InvalidAgentError) as info:
        agentstream.Decoder("cursor")
    msg = str(info.value)
    assert "cursor" in msg
    for name in agentstream.AGENTS:
        assert name in msg
    with pytest.raises(ValueError):
        agentstream.parse("nope", b"")
    with pytest.raises(agentstream.AgentstreamError):
        agentstream.AgentConfig(type="nope")


def test_agent_names_are_forgiving_where_the_core_is() -> None:
    assert agentstream.Decoder("claude-code").agent == "claude"
    assert agentstream.Decoder(" Codex ").agent == "codex"


def test_bad_options_and_inputs() -> None:
    with pytest.raises(agentstream.InvalidArgumentError, match="max_line_bytes"):
        agentstream.Decoder("codex", max_line_bytes=0)
    with pytest.raises(agentstream.InvalidArgumentError, match="on_oversize"):
        agentstream.Decoder("codex", on_oversize="explode")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="bytes"):
        agentstream.Decoder("codex").feed(12)  # type: ignore[arg-type]
    with pytest.raises(OverflowError):
        agentstream.Decoder("codex", max_line_bytes=-1)


def test_oversize_lines_are_skipped_and_reported_by_default() -> None:
    d = agentstream.Decoder("codex", max_line_bytes=16)
    assert d.feed(b'{"type":"x"}\n' + b"y" * 40 + b"\n") == []
    assert d.stats["oversize_lines"] == 1
    (diag,) = d.diagnostics
    assert diag["line"] == 2 and "max_line_bytes" in diag["message"]


def test_oversize_lines_raise_decode_limit_when_asked() -> None:
    d = agentstream.Decoder("codex", max_line_bytes=16, on_oversize="raise")
    with pytest.raises(agentstream.DecodeLimitError) as info:
        d.feed(b'{"type":"x"}\n' + b"y" * 40 + b"\n")
    err = info.value
    assert err.line == 2 and err.events == []
    assert "40 bytes" in str(err) and "max_line_bytes" in str(err), "the message says what to do"
    assert err.kind == "decode_limit" and err.code == 1007
    # The decoder stays usable; an oversize final line raises at finish().
    assert d.feed(b"{}\n") == []
    d.feed(b"z" * 40)
    with pytest.raises(agentstream.DecodeLimitError):
        d.finish()
    with pytest.raises(agentstream.DecodeLimitError):
        agentstream.parse("codex", b"q" * 40, max_line_bytes=16, on_oversize="raise")


def test_a_rust_panic_becomes_internal_error_not_an_abort() -> None:
    with pytest.raises(agentstream.InternalError, match="deliberate panic") as info:
        _native._debug_panic()
    assert isinstance(info.value, agentstream.AgentstreamError)
    assert "report" in str(info.value)
    # Also when the panic happens with the GIL released.
    with pytest.raises(agentstream.InternalError, match="detached"):
        _native._debug_panic(detached=True)
    # The interpreter and the module keep working.
    assert agentstream.parse("codex", b"") == []


def test_a_panic_prints_nothing(capfd: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(agentstream.InternalError):
        _native._debug_panic()
    out, err = capfd.readouterr()
    assert "panicked" not in err and "panicked" not in out
