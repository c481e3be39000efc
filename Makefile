# agentstream: one entry point for building and testing every language.
#   make demo   - replay the bundled traces through the full runtime (no agent installed)
#   make test   - every test in every language (what .ci/run runs)
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
CARGO ?= cargo

.PHONY: demo test test-rust

demo:
	$(CARGO) run -q --release -p agentstream-cli -- demo

test: test-rust

# Per crate rather than --workspace: features differ per crate and a workspace-wide run would
# rebuild most of the graph (see design/toolchain.md).
test-rust:
	$(CARGO) test -p agentstream-core --all-features
	$(CARGO) test -p agentstream-cli
