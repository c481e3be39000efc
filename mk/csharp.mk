# C# package (bindings/csharp/Agentstream: P/Invoke over libagentstream; built with Mono's mcs
# here, and with any .NET SDK through bindings/csharp/Agentstream/Agentstream.csproj).
#   make build-csharp       target/csharp/Agentstream.dll (+ .xml docs, .mdb symbols) with mcs,
#                           warnings as errors, every public member documented
#   make test-csharp        the C library and the fake harness (the shared release builds), then
#                           the test runner target/csharp/Agentstream.Tests.exe under mono: every
#                           golden fixture, real runs of the fake harness, misuse, 10^6-deep
#                           nesting, the secret corpus, the API parity table; then the README quick start from a
#                           fresh folder (test-csharp-quickstart). "C#: N passed, N failed"
#   make bench-csharp       events/s to a C# handler vs a C callback on the mixed corpus, side by
#                           side in one process (bindings/csharp/bench/README.md)
#   make dist-csharp        dist/csharp/: Agentstream.dll (+ .xml) with dist-c's libagentstream.so
#                           beside it (glibc 2.17), README.md and LICENSE
# .ci/install-csharp.sh installs mono (mcs, mono-runtime) on a fresh machine.

MCS ?= mcs
MONO ?= mono
CS_DIR       := bindings/csharp
CS_OUT       := $(CURDIR)/target/csharp
CS_LIB_DIR   := $(CURDIR)/target/release
CS_SRC       := $(shell find $(CS_DIR)/Agentstream -name '*.cs' 2>/dev/null | sort)
CS_TEST_SRC  := $(shell find $(CS_DIR)/Agentstream.Tests -name '*.cs' 2>/dev/null | sort)
CS_BENCH_SRC := $(CS_DIR)/bench/Bench.cs
# C# 7 (what mcs 6.8 accepts, and what the .csproj pins), warnings are errors.
CS_FLAGS     := -langversion:7 -warnaserror -nologo -debug -optimize+
CS_DIST      := $(CURDIR)/dist/csharp

.PHONY: build-csharp test-csharp test-csharp-run test-csharp-quickstart bench-csharp dist-csharp

LANG_TESTS += test-csharp

$(CS_OUT)/Agentstream.dll: $(CS_SRC)
	@mkdir -p $(CS_OUT)
	$(MCS) -target:library $(CS_FLAGS) -doc:$(CS_OUT)/Agentstream.xml -out:$@ $(CS_SRC)

build-csharp: $(CS_OUT)/Agentstream.dll

$(CS_OUT)/Agentstream.Tests.exe: $(CS_OUT)/Agentstream.dll $(CS_TEST_SRC)
	$(MCS) -target:exe $(CS_FLAGS) -r:$(CS_OUT)/Agentstream.dll -r:System.Core.dll -out:$@ $(CS_TEST_SRC)

test-csharp: test-csharp-run test-csharp-quickstart

# The library is found on LD_LIBRARY_PATH (no copy of the 18 MB .so next to the tests).
test-csharp-run: build-c build-fake-harness $(CS_OUT)/Agentstream.Tests.exe
	cd $(CS_OUT) && LD_LIBRARY_PATH=$(CS_LIB_DIR) AGENTSTREAM_FAKE_HARNESS=$(CS_LIB_DIR)/fake-harness \
	  AGENTSTREAM_GOLDEN=$(CURDIR)/tests/golden $(MONO) --debug Agentstream.Tests.exe $(CS_TEST_ARGS)

# The README's C# quick start, as a user runs it: a fresh folder with the assembly and the library
# beside it, no cargo, compiled with mcs and run with mono. Against this build's library here (the
# test build's); `make test-install` runs it against dist/csharp (test-install-csharp).
CS_QUICKSTART := $(CURDIR)/target/csharp-quickstart
test-csharp-quickstart: build-c build-fake-harness $(CS_OUT)/Agentstream.dll
	rm -rf $(CS_QUICKSTART) && mkdir -p $(CS_QUICKSTART)
	cp $(CS_OUT)/Agentstream.dll $(CS_LIB_DIR)/libagentstream.so $(CS_QUICKSTART)/
	bash $(CS_DIR)/quickstart-test.sh $(CS_QUICKSTART) $(CS_LIB_DIR)/fake-harness $(CURDIR)/tests/golden

bench-csharp: build-c build-fake-harness $(CS_OUT)/Agentstream.dll
	bash $(CS_DIR)/bench/run.sh $(CS_OUT) $(CS_LIB_DIR)

# The library is dist-c's (linked against glibc 2.17, mk/release.mk), not the test build's.
dist-csharp: dist-c $(CS_OUT)/Agentstream.dll
	rm -rf $(CS_DIST)
	mkdir -p $(CS_DIST)
	cp $(CS_OUT)/Agentstream.dll $(CS_OUT)/Agentstream.xml $(CS_DIST)/
	cp $(C_STAGE)/lib/libagentstream.so.$(VERSION) $(CS_DIST)/libagentstream.so
	strip --strip-unneeded $(CS_DIST)/libagentstream.so
	cp $(CS_DIR)/dist-README.md $(CS_DIST)/README.md
	cp LICENSE $(CS_DIST)/
	@echo "dist-csharp: $$(ls $(CS_DIST) | tr '\n' ' ')"

# `make test-install` (mk/release.mk) runs this after `make dist`: the quick start against
# dist/csharp alone (not built again here, so dist/SHA256SUMS stays true).
.PHONY: test-install-csharp
test-install-csharp: build-fake-harness
	@test -e $(CS_DIST)/Agentstream.dll || { echo "test-install-csharp: no $(CS_DIST): run \`make dist\` first" >&2; exit 1; }
	bash $(CS_DIR)/quickstart-test.sh $(CS_DIST) $(CS_LIB_DIR)/fake-harness $(CURDIR)/tests/golden
