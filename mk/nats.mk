# The cluster backend of agentstream serve on NATS JetStream (server/src/nats/: serve --nats,
# agentstream worker).
#   make test-nats       the cluster tests (server/tests/nats.rs): a real nats-server started by
#                        each test (JetStream, temporary store, 127.0.0.1, a free port), two serve
#                        instances and two `agentstream worker` processes. Needs nats-server 2.11
#                        or later: .ci/install-nats.sh builds v2.15.3 into target/tools/bin (what
#                        NATS_SERVER defaults to; set it to use another).
#   make bench-server    (mk/server.mk) measures the in-process server and the cluster side by side.
# test-server-rust skips these tests (--skip cluster::): they run here, where a missing or too
# old nats-server is a failure, not a skip.

NATS_SERVER ?= $(or $(AGENTSTREAM_TOOLS),$(abspath target/tools))/bin/nats-server

LANG_TESTS += test-nats
.PHONY: test-nats nats-server

nats-server:
	@test -x "$(NATS_SERVER)" || bash .ci/install-nats.sh

test-nats: server-bins nats-server
	AGENTSTREAM_REQUIRE_NATS=1 AGENTSTREAM_NATS_SERVER=$(NATS_SERVER) \
	  AGENTSTREAM_FAKE_HARNESS=$(abspath target/debug/fake-harness) \
	  $(CARGO) test -p agentstream-server --test nats -- --test-threads=1
