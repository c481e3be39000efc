# Release artifacts: what a user installs without Rust, built into dist/ (README "Install").
#   make dist            check-versions, then every artifact below (and dist-java / dist-csharp
#                        when those targets exist), then packaging/check_dist.py checks them all
#                        and writes dist/SHA256SUMS
#   make dist-python     dist/python: the abi3 wheel (manylinux_2_17 x86_64, checked with
#                        auditwheel) and the sdist
#   make dist-node       dist/node: the npm package `agentstream` and its platform package
#                        `agentstream-linux-x64-gnu` (the prebuilt addon), as `npm pack` tarballs
#   make dist-c          dist/c: a tarball laid out as a prefix: include/agentstream.h,
#                        lib/libagentstream.so.$(VERSION) (+ .so.0, .so links), lib/libagentstream.a,
#                        lib/pkgconfig/agentstream{,-static}.pc (relocatable), share/doc/agentstream
#   make dist-go         dist/go/proxy: the Go module as a module proxy serves it (GOPROXY=file://)
#   make install         the C library of dist-c into PREFIX (default /usr/local; also DESTDIR,
#                        LIBDIR, INCLUDEDIR, PKGCONFIGDIR, DOCDIR), with pkg-config files naming the
#                        prefix; needs no cargo (run `make dist-c` first). `make uninstall` removes it.
#   make test-install    packaging/install_test.sh: in a fresh folder with no cargo or rustc on
#                        PATH, install every artifact as a user does and run the README's quick
#                        starts (extracted from README.md), plus `make install` into a temporary
#                        prefix; then test-install-java / test-install-csharp when they exist
#   make check-versions  packaging/versions.py: one version (the Cargo workspace's) and one
#                        repository address in every package, header, doc and the CHANGELOG
#   make check-portability  packaging/check_portability.sh: cargo clippy of the decode-only core,
#                        the runner, the CLI, the C ABI, the server and the bindings for one
#                        installed Windows and one macOS target (if rustup has them): Unix-only
#                        code stays behind cfg(unix)
#
# Glibc: the shared objects users load (the wheel's extension, the .node addon,
# libagentstream.so) are linked by zig against glibc $(DIST_GLIBC), through maturin's `zig cc`
# wrapper (the `ziglang` package from PyPI), so they load on any x86_64 Linux with glibc >= 2.17.
# Only the linker of the FINAL crate changes (`cargo rustc -- -C linker=…`, maturin's trailing
# rustc flags): every dependency is the same build as the tests' (the wheel's and the C
# library's in target/release beside `maturin develop` and `make build-c`, the addon's in
# target/$(DIST_TRIPLE)/release beside `napi build`, toolchain.md N1), so a dist after the tests
# compiles three small crates again (and the tests after a dist do the same).
#
# Included after python.mk and node.mk (the Makefile includes mk/*.mk sorted): it uses their
# venv, stamps and npm. Other languages join by defining `dist-<lang>` (writing into dist/<lang>) and
# `test-install-<lang>` targets in their own mk file: `make dist` and `make test-install` run
# every one of OPTIONAL_LANGS that exists.

DIST          := dist
DIST_STAGE    := target/dist
DIST_TRIPLE   := x86_64-unknown-linux-gnu
DIST_GLIBC    := 2.17
DIST_PY_DEPS  := ziglang==0.17.0 auditwheel==6.8.2
DIST_PY_STAMP := $(PY_VENV)/.agentstream-dist-deps-installed
ZIGCC         := $(CURDIR)/target/dist-tools/zigcc-$(DIST_TRIPLE).$(DIST_GLIBC)
# The final crate only: zig as the linker, and no debug info in what users download.
DIST_RUSTFLAGS := -C linker=$(ZIGCC) -C strip=debuginfo
NODE_DIST_LIB_DIR := target/$(DIST_TRIPLE)/release
OPTIONAL_LANGS := java csharp kotlin

C_DIST_NAME   := agentstream-$(VERSION)
C_STAGE       := $(DIST_STAGE)/c/$(C_DIST_NAME)
C_TARBALL     := $(DIST)/c/agentstream-c-$(VERSION)-x86_64-linux-gnu.tar.gz

PREFIX        ?= /usr/local
LIBDIR        ?= $(PREFIX)/lib
INCLUDEDIR    ?= $(PREFIX)/include
PKGCONFIGDIR  ?= $(LIBDIR)/pkgconfig
DOCDIR        ?= $(PREFIX)/share/doc/agentstream

LANG_TESTS += check-versions check-portability test-install
.PHONY: dist dist-python dist-node dist-c dist-go install uninstall test-install check-versions \
        check-portability dist-host-check

# Run each of the given targets that some mk file defines (`make -q` exits 2 only when there is
# no rule for it), e.g. $(call run_defined,dist-java dist-csharp).
run_defined = for t in $(1); do \
	  if $(MAKE) --no-print-directory -q $$t >/dev/null 2>&1 || [ $$? -eq 1 ]; then $(MAKE) --no-print-directory $$t; \
	  else echo "$$t: not defined here (yet): skipped"; fi; \
	done

dist: check-versions dist-python dist-node dist-c dist-go
	@$(call run_defined,$(OPTIONAL_LANGS:%=dist-%))
	$(PYTHON) packaging/check_dist.py $(DIST) $(VERSION)

dist-host-check:
	@test "$$(uname -sm)" = "Linux x86_64" || { echo "make dist builds the x86_64 Linux artifacts; this machine is $$(uname -sm)" >&2; exit 1; }

$(DIST_PY_STAMP): mk/release.mk $(PY_DEPS_STAMP)
	$(PY) -m pip install --quiet --disable-pip-version-check $(DIST_PY_DEPS)
	touch $@

# rustc's linker for the artifacts: maturin's wrapper of `zig cc` (it adapts rustc's gcc-style
# arguments), targeting glibc $(DIST_GLIBC).
$(ZIGCC): mk/release.mk $(DIST_PY_STAMP)
	@mkdir -p $(@D)
	@printf '%s\n' '#!/bin/sh' \
	  '# Written by mk/release.mk: links for $(DIST_TRIPLE) against glibc $(DIST_GLIBC) with zig (PyPI ziglang).' \
	  'PATH="$(abspath $(PY_VENV))/bin:$$PATH" exec "$(abspath $(PY_VENV))/bin/maturin" zig cc -- -target x86_64-linux-gnu.$(DIST_GLIBC) "$$@"' > $@
	chmod +x $@

dist-python: dist-host-check $(PY_DEPS_STAMP) $(DIST_PY_STAMP) $(ZIGCC)
	rm -rf $(DIST)/python && mkdir -p $(DIST)/python $(DIST_STAGE)
	@# The runs' supervisor program, beside the module in the wheel (python.mk, python-develop).
	$(CARGO) rustc --release -p agentstream-supervisor --bin agentstream-supervisor -- $(DIST_RUSTFLAGS)
	install -m 755 target/release/agentstream-supervisor python/agentstream/agentstream-supervisor
	VIRTUAL_ENV=$(abspath $(PY_VENV)) $(PY_VENV)/bin/maturin build --release --interpreter $(PY) \
	  --compatibility manylinux_2_17 --out $(DIST)/python -- $(DIST_RUSTFLAGS)
	$(PY_VENV)/bin/maturin sdist --out $(DIST)/python
	$(PY_VENV)/bin/auditwheel show $(DIST)/python/*.whl | tee $(DIST_STAGE)/auditwheel.txt
	@tr -s ' \n' ' ' < $(DIST_STAGE)/auditwheel.txt | grep -q 'consistent with the following platform tag: "manylinux_2_17_x86_64"' \
	  || { echo "dist-python: auditwheel does not confirm manylinux_2_17_x86_64" >&2; exit 1; }

dist-node: dist-host-check $(NODE_STAMP) $(ZIGCC)
	$(NPM) run build:ts --workspace agentstream
	$(CARGO) rustc --release -p agentstream-node --lib --crate-type cdylib --target $(DIST_TRIPLE) -- $(DIST_RUSTFLAGS)
	rm -rf $(DIST)/node && mkdir -p $(DIST)/node
	$(CARGO) rustc --release -p agentstream-supervisor --bin agentstream-supervisor -- $(DIST_RUSTFLAGS)
	node packaging/node_stage.mjs $(DIST_STAGE)/node linux-x64-gnu=$(NODE_DIST_LIB_DIR)/libagentstream_node.so \
	  --supervisor linux-x64-gnu=target/release/agentstream-supervisor
	cd $(DIST_STAGE)/node/agentstream && $(NPM) pack --silent --pack-destination $(abspath $(DIST)/node)
	cd $(DIST_STAGE)/node/npm/linux-x64-gnu && $(NPM) pack --silent --pack-destination $(abspath $(DIST)/node)

dist-c: dist-host-check $(ZIGCC)
	$(CARGO) rustc --release -p agentstream-c --lib --crate-type cdylib --crate-type staticlib -- $(DIST_RUSTFLAGS)
	rm -rf $(DIST_STAGE)/c $(DIST)/c
	mkdir -p $(C_STAGE)/include $(C_STAGE)/lib $(C_STAGE)/share/doc/agentstream $(DIST)/c
	cp $(C_HEADER) $(C_STAGE)/include/
	cp $(C_LIB_DIR)/libagentstream.so $(C_STAGE)/lib/libagentstream.so.$(VERSION)
	ln -s libagentstream.so.$(VERSION) $(C_STAGE)/lib/$(C_SONAME)
	ln -s $(C_SONAME) $(C_STAGE)/lib/libagentstream.so
	strip --strip-debug -o $(C_STAGE)/lib/libagentstream.a $(C_LIB_DIR)/libagentstream.a
	$(call c_pkgconfig,$(C_STAGE)/lib/pkgconfig,$${pcfiledir}/../..,$${prefix}/lib,$${prefix}/include)
	cp LICENSE CHANGELOG.md docs/c.md $(C_STAGE)/share/doc/agentstream/
	tar --sort=name --owner=0 --group=0 --numeric-owner --mtime='1980-01-01 00:00Z' \
	  -czf $(C_TARBALL) -C $(DIST_STAGE)/c $(C_DIST_NAME)

dist-go:
	rm -rf $(DIST)/go && mkdir -p $(DIST)/go
	$(PYTHON) packaging/go_proxy.py $(DIST)/go/proxy $(VERSION)

# Copies what dist-c staged: no cargo here, so an install never rebuilds as root by surprise.
install:
	@test -e $(C_STAGE)/lib/libagentstream.a || { \
	  echo "make install: $(C_STAGE) is missing: run \`make dist-c\` first (it needs cargo)" >&2; exit 1; }
	install -d $(DESTDIR)$(INCLUDEDIR) $(DESTDIR)$(LIBDIR) $(DESTDIR)$(PKGCONFIGDIR)
	install -m 644 $(C_STAGE)/include/agentstream.h $(DESTDIR)$(INCLUDEDIR)/
	install -m 755 $(C_STAGE)/lib/libagentstream.so.$(VERSION) $(DESTDIR)$(LIBDIR)/
	ln -sf libagentstream.so.$(VERSION) $(DESTDIR)$(LIBDIR)/$(C_SONAME)
	ln -sf $(C_SONAME) $(DESTDIR)$(LIBDIR)/libagentstream.so
	install -m 644 $(C_STAGE)/lib/libagentstream.a $(DESTDIR)$(LIBDIR)/
	$(call c_pkgconfig,$(DESTDIR)$(PKGCONFIGDIR),$(PREFIX),$(LIBDIR),$(INCLUDEDIR))
	install -d $(DESTDIR)$(DOCDIR)
	install -m 644 $(C_STAGE)/share/doc/agentstream/* $(DESTDIR)$(DOCDIR)/
	@echo "installed libagentstream $(VERSION) into $(DESTDIR)$(PREFIX) (in a system prefix, run ldconfig)"

uninstall:
	rm -f $(DESTDIR)$(INCLUDEDIR)/agentstream.h $(DESTDIR)$(LIBDIR)/libagentstream.so.$(VERSION) \
	  $(DESTDIR)$(LIBDIR)/$(C_SONAME) $(DESTDIR)$(LIBDIR)/libagentstream.so $(DESTDIR)$(LIBDIR)/libagentstream.a \
	  $(DESTDIR)$(PKGCONFIGDIR)/agentstream.pc $(DESTDIR)$(PKGCONFIGDIR)/agentstream-static.pc
	rm -rf $(DESTDIR)$(DOCDIR)

# The fake harness stands in for the agent's CLI (`claude` on the test's PATH); it is not part of
# what is installed.
test-install: dist build-fake-harness
	VERSION=$(VERSION) AGENTSTREAM_FAKE_HARNESS=$(abspath $(FAKE_HARNESS)) GO=$(GO) \
	  bash packaging/install_test.sh
	@$(call run_defined,$(OPTIONAL_LANGS:%=test-install-%))

check-versions:
	$(PYTHON) packaging/versions.py

check-portability: $(DIST_PY_STAMP)
	CARGO=$(CARGO) ZIG_MATURIN=$(abspath $(PY_VENV))/bin/maturin ZIG_WRAPPERS=$(CURDIR)/target/dist-tools \
	  bash packaging/check_portability.sh
