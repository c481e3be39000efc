"""Static typing: mypy --strict over the package and an example that uses every public type, and
stubtest of the hand-written _native.pyi against the built extension module."""

from __future__ import annotations

import os
import subprocess
import sys

from pathlib import Path

import pytest

from conftest import REPO


def mypy_or_skip() -> None:
    try:
        import mypy  # noqa: F401
    except ImportError:
        if os.environ.get("CI"):
            pytest.fail("mypy is not installed (mk/python.mk installs it)")
        pytest.skip("mypy is not installed")


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", *args],
        cwd=REPO / "python",
        capture_output=True,
        text=True,
        env={**os.environ, "MYPY_CACHE_DIR": str(REPO / ".mypy_cache")},
        timeout=600,
    )


def test_mypy_strict_on_the_package_and_the_example() -> None:
    mypy_or_skip()
    r = run("mypy", "--strict", "--python-version", "3.11", "agentstream", "examples/typed_usage.py")
    assert r.returncode == 0, r.stdout + r.stderr


def test_stubs_match_the_native_module() -> None:
    mypy_or_skip()
    r = run("mypy.stubtest", "agentstream._native")
    assert r.returncode == 0, r.stdout + r.stderr


def test_the_example_runs(fake_harness: Path) -> None:
    trace = REPO / "tests" / "golden" / "claude" / "s2-bash.input.jsonl"
    r = subprocess.run([sys.executable, str(REPO / "python/examples/typed_usage.py"), str(trace), "claude",
                        str(fake_harness)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "invalid_argument 1004" in r.stdout
    assert "runs: ok" in r.stdout
