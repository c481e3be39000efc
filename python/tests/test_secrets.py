"""The secret-shape corpus (``tests/secrets/corpus.jsonl``) through every output path of the
Python binding: ``parse``, ``Decoder``, ``replay`` (items and hooks) and a real run of each
harness's secret trace (``tests/secrets/traces/``: the harness's recorded output with every
corpus entry as a shell command, an edit and a written file) — content, lifecycle and hook
handlers, the run result and the stream iterator. The raw ``stdout``/``stderr`` channels carry
the process's bytes verbatim by design and are not checked; with ``redact=False`` every secret
comes through (so the fixtures reach the masked fields)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import agentstream
from agentstream import AgentConfig, Evolve
from conftest import REPO

SECRETS_DIR = REPO / "tests" / "secrets"
AGENTS = ["claude", "codex", "gemini", "qwen", "kimi", "opencode", "droid"]


def secrets() -> list[str]:
    out = []
    for line in (SECRETS_DIR / "corpus.jsonl").read_text().splitlines():
        if line.strip():
            out += json.loads(line)["secrets"]
    assert len(out) >= 24
    return out


SECRETS = secrets()


def trace(agent: str) -> bytes:
    return (SECRETS_DIR / "traces" / f"{agent}.input.jsonl").read_bytes()


def survivors(values: Any) -> list[str]:
    """The secrets found anywhere in `values` (serialized; also as they would be JSON-escaped)."""
    text = json.dumps(values, ensure_ascii=False)
    return [s for s in SECRETS if s in text or json.dumps(s)[1:-1] in text]


@pytest.mark.parametrize("agent", AGENTS)
def test_parse_decoder_and_replay_mask_every_secret(agent: str) -> None:
    data = trace(agent)
    assert survivors(agentstream.parse(agent, data)) == []
    assert set(survivors(agentstream.parse(agent, data, redact=False))) == set(SECRETS)
    decoder = agentstream.Decoder(agent)
    events = [e for i in range(0, len(data), 4096) for e in decoder.feed(data[i:i + 4096])] + decoder.finish()
    assert survivors(events) == []
    r = agentstream.replay(agent, data)
    masked_items = [e for e in r.items if e["channel"] not in ("stdout", "stderr")]
    assert survivors(masked_items) == []
    assert survivors(r.hooks) == []
    assert "[redacted]" in json.dumps(r.hooks)


@pytest.mark.parametrize("agent", AGENTS)
def test_a_real_run_masks_every_secret_on_every_masked_path(agent: str, fake_harness: Path) -> None:
    evolve = Evolve(config=AgentConfig(type=agent, bin=fake_harness,
                                       env={"AGENTSTREAM_FAKE_TRACE": str(SECRETS_DIR / "traces" / agent)}))
    seen: list[Any] = []
    evolve.on("content", seen.append)
    evolve.on("lifecycle", seen.append)
    result = evolve.run_sync(prompt="x", on_event=seen.append)
    assert survivors(seen) == []
    assert survivors(result.final_text) == []
    with evolve.stream_sync(prompt="x") as stream:
        envelopes = [e for e in stream if e["channel"] not in ("stdout", "stderr")]
    assert envelopes and survivors(envelopes) == []
