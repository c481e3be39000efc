# C ABI (libagentstream + the top-level include/agentstream.h) and the Go package on it.
#   make test-c        header drift check, header compile checks (C11 and C++), Rust ABI tests,
#                      the C tests against the shared and the static library, under
#                      AddressSanitizer and under valgrind
#   make test-go       gofmt -l, go vet (shared and static link) + go test -race over the static
#                      library, found through pkg-config like an installed one
#   make check-header  regenerate the header (cargo build) and fail if it differs from git
#   make bench-c / bench-go   events/s to a C / Go callback on the golden s* traces, through
#                      the decoder and through real runs of the fake harness
# Everything links the ONE release build of agentstream-c (target/release); the run tests use
# the fake harness of the ONE release build of agentstream-cli's binaries. build-c also writes
# pkg-config files for that build (target/pkgconfig: agentstream.pc, agentstream-static.pc), so
# the Go package finds the library of the build tree exactly as it finds an installed one.

C_DIR        := bindings/c
C_INCLUDE    := include
C_HEADER     := $(C_INCLUDE)/agentstream.h
C_TARGET_DIR ?= $(CURDIR)/target
C_LIB_DIR    := $(C_TARGET_DIR)/release
C_OUT        := $(C_TARGET_DIR)/c-tests
C_GOLDEN     := $(CURDIR)/tests/golden
C_STATIC_LIBS := -lgcc_s -lutil -lrt -lpthread -lm -ldl -lc
C_WARN       := -Wall -Wextra -Werror
C_TEST_SRC   := $(C_DIR)/tests/test_capi.c $(C_DIR)/tests/json_tiny.h
FAKE_HARNESS := $(C_LIB_DIR)/fake-harness
# The shared library's versioned name (bindings/c/build.rs links it in): what programs linked
# with -lagentstream ask the loader for.
C_SONAME     := libagentstream.so.$(firstword $(subst ., ,$(VERSION)))
C_PKGCONFIG  := $(C_TARGET_DIR)/pkgconfig
CC           ?= cc
CXX          ?= c++
GO           ?= $(shell command -v go 2>/dev/null || echo /usr/local/go/bin/go)
# Fail on any error and on definite/indirect/possible leaks; Rust's process-lifetime globals
# (the panic hook, the handle tables) are "still reachable", which is not a leak. The
# suppressions name three lifetime allocations valgrind misjudges as "possibly lost" (thread
# TLS vectors, the runner's global tokio runtime, std's handle of the C main thread); see the
# file. Forked children (a spawn valgrind emulates with fork) are not checked.
VALGRIND     ?= valgrind --quiet --error-exitcode=97 --leak-check=full \
                --show-leak-kinds=definite,indirect,possible --errors-for-leak-kinds=definite,indirect,possible \
                --num-callers=60 --child-silent-after-fork=yes --suppressions=$(C_DIR)/tests/valgrind.supp

.PHONY: build-c build-fake-harness check-header test-c test-c-header test-c-rust test-c-run test-go bench-c bench-go

LANG_TESTS += test-c test-go

build-c:
	$(CARGO) build --release -p agentstream-c
	ln -sf libagentstream.so $(C_LIB_DIR)/$(C_SONAME)
	$(call c_pkgconfig,$(C_PKGCONFIG),$(CURDIR),$(C_LIB_DIR),$(CURDIR)/$(C_INCLUDE))

# $(call c_pkgconfig,DIR,PREFIX,LIBDIR,INCLUDEDIR): write DIR/agentstream.pc and
# DIR/agentstream-static.pc from the templates in bindings/c (paths may use ${prefix} and
# ${pcfiledir}, which pkg-config expands).
define c_pkgconfig
	@mkdir -p $(1)
	@for pc in agentstream agentstream-static; do \
	  sed -e 's|@PREFIX@|$(2)|' -e 's|@LIBDIR@|$(3)|' -e 's|@INCLUDEDIR@|$(4)|' -e 's|@VERSION@|$(VERSION)|' \
	      -e 's|@URL@|$(REPOSITORY)|' -e 's|@NATIVE_LIBS@|$(C_STATIC_LIBS)|' $(C_DIR)/$$pc.pc.in > $(1)/$$pc.pc; \
	done
endef

# The fake harness (replays a golden trace as a real process) for the run tests. Same core
# features as agentstream-c, so the release build of the core is shared.
build-fake-harness:
	$(CARGO) build --release -p agentstream-cli --bins

# build.rs rewrites the header when the exported API changed; git tells whether the checked-in
# copy was current.
check-header: build-c
	@git ls-files --error-unmatch $(C_HEADER) >/dev/null
	@git diff --exit-code -- $(C_HEADER) || { echo "$(C_HEADER) is stale: commit the regenerated header"; exit 1; }
	@echo "header: up to date"

test-c: check-header test-c-header test-c-rust test-c-run

test-c-header: build-c
	@mkdir -p $(C_OUT)
	$(CC) -std=c11 -pedantic $(C_WARN) -I$(C_INCLUDE) $(C_DIR)/tests/header_c.c \
	  -L$(C_LIB_DIR) -lagentstream -Wl,-rpath,$(C_LIB_DIR) -o $(C_OUT)/header_c
	$(CXX) -std=c++11 $(C_WARN) -I$(C_INCLUDE) $(C_DIR)/tests/header_cpp.cpp \
	  -L$(C_LIB_DIR) -lagentstream -Wl,-rpath,$(C_LIB_DIR) -o $(C_OUT)/header_cpp
	$(C_OUT)/header_c
	$(C_OUT)/header_cpp
	@echo "header: compiles as C11 and C++11, included twice"

test-c-rust:
	$(CARGO) test -p agentstream-c

# ASan: the sanitizer runtime is linked into the test executable, so it is first in the
# initial library list and intercepts the Rust library's malloc/free too; no LD_PRELOAD needed.
# (Only a host that is NOT built with -fsanitize=address and loads an instrumented library
# needs LD_PRELOAD=$$(gcc -print-file-name=libasan.so), placed first.)
test-c-run: build-c build-fake-harness $(C_TEST_SRC)
	@mkdir -p $(C_OUT)
	$(CC) -std=c11 $(C_WARN) -O1 -g -I$(C_INCLUDE) $(C_DIR)/tests/test_capi.c \
	  -L$(C_LIB_DIR) -lagentstream -Wl,-rpath,$(C_LIB_DIR) -lpthread -o $(C_OUT)/test_capi
	$(CC) -std=c11 $(C_WARN) -O1 -g -DAGENTSTREAM_TEST_STATIC -I$(C_INCLUDE) $(C_DIR)/tests/test_capi.c \
	  $(C_LIB_DIR)/libagentstream.a $(C_STATIC_LIBS) -o $(C_OUT)/test_capi_static
	$(CC) -std=c11 $(C_WARN) -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -I$(C_INCLUDE) \
	  $(C_DIR)/tests/test_capi.c -L$(C_LIB_DIR) -lagentstream -Wl,-rpath,$(C_LIB_DIR) -lpthread -o $(C_OUT)/test_capi_asan
	@echo "== C tests (shared library)"
	$(C_OUT)/test_capi $(C_GOLDEN) $(FAKE_HARNESS)
	@echo "== C tests (static library)"
	$(C_OUT)/test_capi_static $(C_GOLDEN) $(FAKE_HARNESS) -q
	@echo "== C tests under AddressSanitizer + UBSan"
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
	  $(C_OUT)/test_capi_asan $(C_GOLDEN) $(FAKE_HARNESS) -q
	@echo "== C tests under valgrind"
	AGENTSTREAM_TEST_UNDER_VALGRIND=1 $(VALGRIND) $(C_OUT)/test_capi $(C_GOLDEN) $(FAKE_HARNESS) -q

# The Go commands find the library through pkg-config, as a user's do.
GO_ENV := GOTOOLCHAIN=local CGO_ENABLED=1 PKG_CONFIG_PATH=$(C_PKGCONFIG)

test-go: build-c build-fake-harness
	@unformatted=$$(cd bindings/go && "$$(dirname "$$(command -v $(GO))")/gofmt" -l .); \
	  test -z "$$unformatted" || { echo "not gofmt-formatted: $$unformatted" >&2; exit 1; }
	cd bindings/go && $(GO_ENV) $(GO) vet ./...
	cd bindings/go && $(GO_ENV) $(GO) vet -tags agentstream_static ./...
	cd bindings/go && $(GO_ENV) AGENTSTREAM_FAKE_HARNESS=$(FAKE_HARNESS) $(GO) test -tags agentstream_static -race -count=1 ./...
	@# Linked with the shared library (as pkg-config's default gives it), runs start the library
	@# itself as their supervisor instead of forking: the test of that, and of a plain command run.
	cd bindings/go && $(GO_ENV) LD_LIBRARY_PATH=$(C_LIB_DIR) AGENTSTREAM_FAKE_HARNESS=$(FAKE_HARNESS) \
	  $(GO) test -count=1 -run '^(TestTheSupervisorIsTheLibraryRunAsAProgramUnlessLinkedStatically|TestCommandRun)$$' ./...

bench-c: build-c build-fake-harness
	@mkdir -p $(C_OUT)
	$(CC) -std=c11 $(C_WARN) -O2 -I$(C_INCLUDE) -I$(C_DIR)/tests $(C_DIR)/bench/bench.c \
	  $(C_LIB_DIR)/libagentstream.a $(C_STATIC_LIBS) -o $(C_OUT)/bench
	$(C_OUT)/bench $(C_GOLDEN) 2 $(FAKE_HARNESS)

bench-go: build-c build-fake-harness
	cd bindings/go && $(GO_ENV) AGENTSTREAM_FAKE_HARNESS=$(FAKE_HARNESS) $(GO) test -tags agentstream_static -run '^$$' -bench . -benchtime 2s ./...
