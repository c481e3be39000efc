# Python binding (agentstream: pyo3 + maturin, abi3 wheel for CPython >= 3.11).
#   make test-python          venv at .venv (created if absent), maturin develop --release, the fake
#                             harness (debug, shared with test-rust's build), pytest
#   make test-python-install  `pip install .` through PEP 517 (maturin from PyPI) into a scratch venv:
#                             the contributors' install from a clone (not in `make test`: the
#                             users' install, of the wheel, is in `make test-install`, mk/release.mk)
#   make bench-python         benches/python_decode.py: Decoder and a real run (fake harness) vs
#                             pure-Python baselines, events/s and MB/s to a Python callback
# Cargo builds into the workspace target/ dir, shared with every other crate.

PYTHON ?= python3
PY_VENV := .venv
PY := $(PY_VENV)/bin/python
PY_DEPS := maturin==1.16.0 pytest==9.2.0 mypy==2.4.1
PY_DEPS_STAMP := $(PY_VENV)/.agentstream-deps-installed

LANG_TESTS += test-python
.PHONY: python-develop python-fake-harness python-fake-harness-release test-python test-python-install bench-python

$(PY):
	$(PYTHON) -m venv $(PY_VENV)

$(PY_DEPS_STAMP): mk/python.mk | $(PY)
	$(PY) -m pip install --quiet --disable-pip-version-check $(PY_DEPS)
	touch $@

# The module cannot be run as a program: its runs' supervisor is `agentstream-supervisor`
# (supervisor/), kept beside it (python/agentstream/, as in the wheel; git ignores it).
python-develop: $(PY_DEPS_STAMP)
	VIRTUAL_ENV=$(abspath $(PY_VENV)) $(PY_VENV)/bin/maturin develop --release
	$(CARGO) build --release -p agentstream-supervisor
	install -m 755 target/release/agentstream-supervisor python/agentstream/agentstream-supervisor

# The real-run tests start target/debug/fake-harness as the harness: the same build as
# `cargo test -p agentstream-cli` (test-rust), so in `make test` it costs nothing. The run
# benchmark needs the release one.
python-fake-harness:
	$(CARGO) build -p agentstream-cli --bins

python-fake-harness-release:
	$(CARGO) build --release -p agentstream-cli --bins

test-python: python-develop python-fake-harness
	CI=$${CI:-} AGENTSTREAM_FAKE_HARNESS=$(abspath target/debug/fake-harness) $(PY) -m pytest -q python/tests

# From-scratch install as a user does it: nothing but pip (maturin comes from PyPI, PEP 517).
test-python-install: $(PY)
	rm -rf target/python-install-check
	$(PY) -m venv target/python-install-check
	target/python-install-check/bin/pip install --quiet --disable-pip-version-check .
	cd target && python-install-check/bin/python -c 'import agentstream, sys; \
	  e = agentstream.parse("codex", b"{\"type\":\"thread.started\",\"thread_id\":\"t\"}\n"); \
	  print("pip install .: agentstream", agentstream.__version__, "from", agentstream.__file__); \
	  r = agentstream.replay("codex", b"{\"type\":\"thread.started\",\"thread_id\":\"t\"}\n{\"type\":\"turn.completed\"}\n"); \
	  sys.exit(0 if agentstream.Decoder("claude").stats["lines"] == 0 and r.hooks[-1]["type"] == "run.completed" else 1)'

bench-python: python-develop python-fake-harness-release
	$(PY) benches/python_decode.py
