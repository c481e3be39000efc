# agentstream serve (server/: the agentstream-server crate, behind the CLI's serve/view/token).
#   make test-server          the server's Rust tests (unit, and integration against a real
#                             server on 127.0.0.1 with the fake harness as the agent), then the
#                             browser test of the live run view
#   make test-server-browser  server/webtest: Debian's headless chromium driven by playwright-core
#                             (npm ci there, its own lock; screenshots in target/server-webtest/)
#   make bench-server         server/benches/serve.rs: events/s and harness-line → SSE-client
#                             latency p50/p99 with 1 and 100 subscribers (release build), in
#                             process and through the cluster on NATS (needs nats-server:
#                             .ci/install-nats.sh; without it those rows are skipped)
# The CLI's own serve tests (SIGTERM/SIGINT, view, token) run in test-rust (cargo test -p
# agentstream-cli); the Python and Node clients' tests in test-python and test-node.

NPM ?= npm
SERVER_WEBTEST := server/webtest
SERVER_WEBTEST_STAMP := $(SERVER_WEBTEST)/node_modules/.package-lock.json

LANG_TESTS += test-server
.PHONY: server-bins test-server test-server-rust test-server-browser bench-server

# The CLI (serve) and the fake harness, debug: the same build as test-rust's.
server-bins:
	$(CARGO) build -p agentstream-cli --bins

test-server: test-server-rust test-server-browser

# The cluster tests (mod cluster in server/tests/nats.rs) run in test-nats (mk/nats.mk).
test-server-rust: server-bins
	AGENTSTREAM_FAKE_HARNESS=$(abspath target/debug/fake-harness) $(CARGO) test -p agentstream-server -- --skip cluster::

$(SERVER_WEBTEST_STAMP): $(SERVER_WEBTEST)/package.json $(SERVER_WEBTEST)/package-lock.json
	cd $(SERVER_WEBTEST) && $(NPM) ci --no-audit --no-fund
	touch $@

test-server-browser: server-bins $(SERVER_WEBTEST_STAMP)
	@test -x /usr/bin/chromium || { echo "test-server-browser: /usr/bin/chromium is missing: run .ci/install-server.sh" >&2; exit 1; }
	cd $(SERVER_WEBTEST) && AGENTSTREAM_BIN=$(abspath target/debug/agentstream) \
	  AGENTSTREAM_FAKE_HARNESS=$(abspath target/debug/fake-harness) $(NPM) test

# The bench is its own harness (it re-executes itself), so it needs nothing else built.
bench-server:
	$(if $(wildcard $(NATS_SERVER)),AGENTSTREAM_NATS_SERVER=$(NATS_SERVER)) $(CARGO) bench -p agentstream-server --bench serve
