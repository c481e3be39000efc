# agentstream: one entry point for building and testing every language.
#   make demo   - replay the bundled traces through the full runtime (no agent installed)
#   make test   - every test in every language (what .ci/run runs)
# Each binding adds its own targets in mk/<lang>.mk and appends its test target to LANG_TESTS.
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
CARGO ?= cargo
LANG_TESTS :=
# The one version of every package and the repository's address: the Cargo workspace's
# (`make check-versions` checks every other place that states them).
VERSION := $(shell sed -n '/^\[workspace\.package\]/,/^\[/s/^version *= *"\([^"]*\)".*/\1/p' Cargo.toml)
REPOSITORY := $(shell sed -n '/^\[workspace\.package\]/,/^\[/s/^repository *= *"\([^"]*\)".*/\1/p' Cargo.toml)

.PHONY: check-let-chains demo test test-rust lint

demo:
	$(CARGO) run -q --release -p agentstream-cli -- demo

include $(sort $(wildcard mk/*.mk))

test: lint test-rust $(LANG_TESTS)
	@echo "all tests passed"

# Formatting and lints of every Rust crate in the workspace, as CI runs them.
lint: check-let-chains
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings

# The MSRV (rust-version in Cargo.toml, 1.85) has no `let` chains (stable from 1.88), and
# clippy's MSRV lint checks APIs, not syntax: a `let` chained with `&&` is refused, on one line
# or as rustfmt writes a long one (`if let … = x` ending the line, `&& cond` starting the next).
# The crates that declare a later rust-version of their own (cli, server: 1.89) may use them.
LET_CHAIN := \b(if|while) let\b[^{]*&&|(^|[^&])&&[[:space:]]*let\b
LET_CHAIN_CRATES := 'core/*.rs' 'bindings/*.rs' 'codegen/*.rs' 'supervisor/*.rs'
check-let-chains:
	@if git grep -nE '$(LET_CHAIN)' -- $(LET_CHAIN_CRATES); then \
	  echo "let chains need Rust 1.88; the MSRV is 1.85 (Cargo.toml): nest the ifs or match"; exit 1; fi
	@if git grep -n -A1 -E '^[[:space:]]*(if|while|} else if) let [^{]*$$' -- $(LET_CHAIN_CRATES) \
	  | grep -B1 -E '^[^:]+-[0-9]+-[[:space:]]*&&'; then \
	  echo "let chains need Rust 1.88; the MSRV is 1.85 (Cargo.toml): nest the ifs or match"; exit 1; fi

# Per crate rather than --workspace: features differ per crate and a workspace-wide run would
# rebuild most of the graph (see ../shared/design/toolchain.md).
test-rust:
	$(CARGO) test -p agentstream-core --all-features
	$(CARGO) test -p agentstream-cli
