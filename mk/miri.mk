# Miri (the Rust interpreter that detects undefined behaviour) over the tests of the code that
# uses `unsafe` for speed: the JSON scanner, its string reading and verbatim records
# (core/src/json/: scan, text, raw_record), the clean-text check (core/src/raw_json/clean.rs) and
# the redaction pre-filter (core/src/redact/prefilter.rs). Their SAFETY comments name the
# invariants and these tests pin them; under Miri every load, slice and pointer they make is
# checked as the tests run.
#   make test-miri   (part of make test) where a nightly toolchain with the miri component is
#                    installed (.ci/install-miri.sh), else skipped with a message. Miri runs
#                    about a thousand times slower than the CPU: property tests run
#                    MIRI_PROPTEST_CASES cases each (default 6), and the tests with large loops
#                    take a sample under `cfg!(miri)` (the full loops run in make test-rust).

.PHONY: test-miri

LANG_TESTS += test-miri
MIRI_PROPTEST_CASES ?= 6

# One build, with AVX2 on: Miri then interprets the AVX2 intrinsics of the clean-text check and
# the pre-filter (their scalar fallbacks have no unsafe code), and the JSON module's SSE2 and
# scalar paths are the same in any x86-64 build.
MIRI := PROPTEST_CASES=$(MIRI_PROPTEST_CASES) MIRIFLAGS="-Zmiri-disable-isolation" \
        CARGO_TARGET_DIR=$(CURDIR)/target/miri RUSTFLAGS="-C target-feature=+avx2" \
        $(CARGO) +nightly miri test -p agentstream-core --lib

test-miri:
	@if $(CARGO) +nightly miri --version >/dev/null 2>&1; then \
	  $(MIRI) -- json::scan:: json::text:: json::raw_record:: raw_json::clean:: redact::prefilter::; \
	else \
	  echo "test-miri: no nightly toolchain with miri here (.ci/install-miri.sh): skipped"; \
	fi
