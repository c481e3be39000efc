# Kotlin and Swift through uniffi (bindings/uniffi: the agentstream-uniffi crate, proc-macro mode).
#   make test-kotlin       the native library (release) and the fake harness, then the Kotlin
#                          project's JUnit 5 suite through Maven (bindings/uniffi/kotlin): golden
#                          fixtures, real runs of the fake harness, 10^6-deep nesting, the secret corpus, the API
#                          parity table; prints "kotlin: N passed, N failed, N skipped"
#   make check-uniffi      regenerate the Kotlin and Swift sources uniffi writes from the built
#                          library and fail when the checked-in copies differ (no Swift toolchain
#                          is needed: the Swift sources are only generated and drift-checked)
#   make generate-uniffi   rewrite those checked-in sources (after changing the crate's API)
#   make test-kotlin-example   the quick start as a user runs it: `mvn install` of the library, then
#                          the example project (bindings/uniffi/kotlin/example) copied to a fresh
#                          folder, compiled and run against a recorded trace (no agent needed)
#   make bench-kotlin      events/s to a Kotlin listener on the mixed corpus, as a ratio to a C
#                          callback on the same bytes in the same run (bindings/uniffi/bench)
# The generator is its own crate (agentstream-uniffi-bindgen, the only one with uniffi's `cli`
# feature), built once in the dev profile. Maven keeps its cache in ~/.m2.

MVN ?= mvn
MVN_FLAGS ?= -q -B -Dstyle.color=never
KOTLIN_DIR := bindings/uniffi/kotlin
SWIFT_DIR := bindings/uniffi/swift
UNIFFI_LIB := target/release/libagentstream_uniffi.so
UNIFFI_BINDGEN := target/debug/uniffi-bindgen
UNIFFI_CHECK := target/uniffi-generated
UNIFFI_KOTLIN_FILE := dev/agentstream/kotlin/ffi/agentstream.kt
UNIFFI_SWIFT_FILES := Agentstream.swift AgentstreamFFI.h AgentstreamFFI.modulemap

LANG_TESTS += check-uniffi test-kotlin test-kotlin-example
.PHONY: build-uniffi build-uniffi-bindgen kotlin-fake-harness generate-uniffi check-uniffi test-kotlin \
  test-kotlin-example bench-kotlin

build-uniffi:
	$(CARGO) build --release -p agentstream-uniffi

build-uniffi-bindgen:
	$(CARGO) build -q -p agentstream-uniffi-bindgen

# The run tests spawn the release fake harness (the same core build as the library).
kotlin-fake-harness:
	$(CARGO) build --release -p agentstream-cli --bins

# --no-format: the output must not depend on whether ktlint or swift-format is installed.
define uniffi_generate
	rm -rf $(1)/kotlin $(1)/swift
	$(UNIFFI_BINDGEN) generate --no-format --library $(UNIFFI_LIB) --language kotlin --out-dir $(1)/kotlin >/dev/null
	$(UNIFFI_BINDGEN) generate --no-format --library $(UNIFFI_LIB) --language swift --out-dir $(1)/swift >/dev/null
endef

generate-uniffi: build-uniffi build-uniffi-bindgen
	$(call uniffi_generate,$(UNIFFI_CHECK))
	cp $(UNIFFI_CHECK)/kotlin/$(UNIFFI_KOTLIN_FILE) $(KOTLIN_DIR)/src/main/kotlin/$(UNIFFI_KOTLIN_FILE)
	mkdir -p $(SWIFT_DIR)
	cd $(UNIFFI_CHECK)/swift && cp $(UNIFFI_SWIFT_FILES) $(CURDIR)/$(SWIFT_DIR)/
	@echo "uniffi sources: rewritten ($(KOTLIN_DIR), $(SWIFT_DIR))"

check-uniffi: build-uniffi build-uniffi-bindgen
	$(call uniffi_generate,$(UNIFFI_CHECK))
	@stale=0; \
	cmp -s $(UNIFFI_CHECK)/kotlin/$(UNIFFI_KOTLIN_FILE) $(KOTLIN_DIR)/src/main/kotlin/$(UNIFFI_KOTLIN_FILE) || stale=1; \
	for f in $(UNIFFI_SWIFT_FILES); do cmp -s $(UNIFFI_CHECK)/swift/$$f $(SWIFT_DIR)/$$f || stale=1; done; \
	if [ $$stale = 1 ]; then \
	  echo "the checked-in uniffi sources ($(KOTLIN_DIR)/src/main/kotlin/$(UNIFFI_KOTLIN_FILE), $(SWIFT_DIR)/) differ from what the library generates: run \`make generate-uniffi\` and commit the result" >&2; \
	  exit 1; \
	fi
	@echo "uniffi sources (Kotlin, Swift): up to date"

test-kotlin: build-uniffi kotlin-fake-harness
	rm -rf $(KOTLIN_DIR)/target/surefire-reports
	cd $(KOTLIN_DIR) && $(MVN) $(MVN_FLAGS) test
	@# Maven 3.8 prints a colour reset without a newline even in batch mode: end that line first.
	@echo
	@bash bindings/uniffi/kotlin/surefire-summary.sh $(KOTLIN_DIR)/target/surefire-reports kotlin

# The example is a user's project, left as a user writes it: the flag gives its compile daemon the
# library pom's short life (not the plugin's 30 minutes).
test-kotlin-example: build-uniffi kotlin-fake-harness
	cd $(KOTLIN_DIR) && $(MVN) $(MVN_FLAGS) install -DskipTests
	@dir=$$(mktemp -d) && trap 'rm -rf "$$dir"' EXIT && cp -r $(KOTLIN_DIR)/example/. "$$dir" && \
	  (cd "$$dir" && AGENTSTREAM_FAKE_HARNESS=$(CURDIR)/target/release/fake-harness \
	    AGENTSTREAM_FAKE_TRACE=$(CURDIR)/tests/golden/claude/s2-bash \
	    $(MVN) $(MVN_FLAGS) -Dkotlin.compiler.daemon.shutdownDelayMs=60000 compile exec:java) > "$$dir/out.txt" 2>&1 || { cat "$$dir/out.txt"; exit 1; }; \
	  grep -q "^run:   COMPLETED" "$$dir/out.txt" && grep -q "^stream: [1-9]" "$$dir/out.txt" || \
	  { echo "the Kotlin example did not run as expected:"; cat "$$dir/out.txt"; exit 1; }
	@echo "kotlin example (fresh folder, installed library): runs"

bench-kotlin: build-uniffi kotlin-fake-harness
	bash bindings/uniffi/bench/run.sh
