# Fuzzing and soak (issue 24; docs/reliability.md). The fuzz crate (fuzz/: cargo-fuzz targets for
# line framing, each decoder, the replayed pipeline, redaction and its pre-scan) is its own workspace: cargo-fuzz
# builds it apart, with nightly; it builds in target/fuzz.
#   make test-fuzz   (part of make test) the targets' checks on stable over the seed corpus and
#                    deterministic mutations of it (fuzz/tests/smoke.rs); then, where a nightly
#                    toolchain and cargo-fuzz are installed (.ci/install-fuzz.sh), 5 s of
#                    coverage-guided fuzzing of every target (SMOKE=1 fuzz/run.sh)
#   make fuzz        fuzz/run.sh: every target for 10^7 executions (RUNS=… to change; hours)
#   make soak        scripts/soak.sh: 64 concurrent runs for 10 minutes under one shared budget
#                    (SOAK_ARGS="--seconds 60" for a short one)

.PHONY: test-fuzz fuzz soak

LANG_TESTS += test-fuzz
SOAK_ARGS ?=

# The crate is outside the workspace, so make lint does not see it: its format and lints here.
test-fuzz:
	$(CARGO) fmt --manifest-path fuzz/Cargo.toml -- --check
	CARGO_TARGET_DIR=$(CURDIR)/target/fuzz $(CARGO) clippy --manifest-path fuzz/Cargo.toml --all-targets -- -D warnings
	CARGO_TARGET_DIR=$(CURDIR)/target/fuzz $(CARGO) test --manifest-path fuzz/Cargo.toml
	@if $(CARGO) +nightly fuzz --version >/dev/null 2>&1; then \
	  SMOKE=1 fuzz/run.sh; \
	else \
	  echo "test-fuzz: no nightly toolchain with cargo-fuzz here: the coverage-guided smoke is skipped (the stable smoke above ran)"; \
	fi

fuzz:
	fuzz/run.sh

soak:
	scripts/soak.sh $(SOAK_ARGS)
