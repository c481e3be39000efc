# Java (bindings/java): the C ABI through the Foreign Function & Memory API (java.lang.foreign),
# built and tested with JDK 25 (Temurin) and Maven; Java 17 stays the machine's default.
#   make test-java        the release library and fake harness, then the Maven build: JUnit
#                         Jupiter through Surefire (golden fixtures, real runs of the fake harness,
#                         misuse, 10^6-deep nesting, the secret corpus, the API parity table) and the jar; then the
#                         quick start run from a fresh folder against that jar alone; prints
#                         "java: N passed, N failed, N skipped"
#   make dist-java        dist/java/agentstream-<version>.jar: the jar with dist-c's (stripped,
#                         glibc 2.17) native library inside, loaded from the jar itself
#   make bench-java       events/s to a Java handler on the mixed corpus, as a ratio to the C
#                         callback (bench.c) in the same run
# Maven keeps its cache in ~/.m2; every plugin and dependency version is pinned, so once resolved
# the build needs no network (MAVEN_OFFLINE=1 adds -o).

JAVA25_HOME ?= /usr/lib/jvm/temurin-25-jdk-amd64
JAVA_DIR    := bindings/java
JAVA_MVN    := JAVA_HOME=$(JAVA25_HOME) MAVEN_OPTS="--sun-misc-unsafe-memory-access=allow" $(or $(MVN),mvn) \
               -B -q -Dstyle.color=never $(if $(MAVEN_OFFLINE),-o)
JAVA_BIN    := $(JAVA25_HOME)/bin/java
JAVA_VERSION := $(shell sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
JAVA_JAR    := $(JAVA_DIR)/target/agentstream-$(JAVA_VERSION).jar
JAVA_DIST   := dist/java

LANG_TESTS += test-java
.PHONY: test-java test-java-quickstart dist-java bench-java

# `package` runs the tests, then builds the jar the quick start uses.
# The jar's library is copied fresh every time (a copy newer than its source would be kept).
test-java: build-c build-fake-harness
	rm -rf $(JAVA_DIR)/target/surefire-reports $(JAVA_DIR)/target/classes/native
	@# Maven 3.8 prints colour resets even in batch mode: strip them.
	status=0; (cd $(JAVA_DIR) && $(JAVA_MVN) package 2>&1 | sed 's/\x1b\[[0-9;]*m//g') || status=$$?; \
	  bash $(JAVA_DIR)/scripts/surefire-summary.sh $(JAVA_DIR)/target/surefire-reports java; exit $$status
	$(MAKE) --no-print-directory test-java-quickstart JAVA_QUICKSTART_JAR=$(JAVA_JAR)

# The README's quick start (bindings/java/examples/QuickStart.java), copied into an empty folder
# with nothing but the jar, run by the JDK's source launcher against the fake harness.
test-java-quickstart:
	JAVA=$(JAVA_BIN) bash $(JAVA_DIR)/scripts/quickstart-test.sh $(or $(JAVA_QUICKSTART_JAR),$(JAVA_DIST)/agentstream-$(JAVA_VERSION).jar) \
	  $(CURDIR)/target/release/fake-harness $(CURDIR)/tests/golden

# The library is dist-c's (linked against glibc 2.17, mk/release.mk), not the test build's.
dist-java: dist-c
	@mkdir -p target/java-native $(JAVA_DIST)
	cp $(C_STAGE)/lib/libagentstream.so.$(VERSION) target/java-native/libagentstream.so
	strip --strip-unneeded target/java-native/libagentstream.so
	rm -rf $(JAVA_DIR)/target/classes/native
	cd $(JAVA_DIR) && $(JAVA_MVN) -DskipTests -Dagentstream.native.dir=$(CURDIR)/target/java-native package 2>&1 | sed 's/\x1b\[[0-9;]*m//g'
	rm -rf $(JAVA_DIR)/target/classes/native
	cp $(JAVA_JAR) $(JAVA_DIST)/
	@echo "java: $(JAVA_DIST)/agentstream-$(JAVA_VERSION).jar"

bench-java: build-c build-fake-harness
	JAVA25_HOME=$(JAVA25_HOME) bash $(JAVA_DIR)/bench/run.sh

# `make test-install` (mk/release.mk) runs this after `make dist`: the quick start against the
# released jar alone (not packed again here, so dist/SHA256SUMS stays true).
.PHONY: test-install-java
test-install-java: build-fake-harness
	@test -e $(JAVA_DIST)/agentstream-$(JAVA_VERSION).jar || { echo "test-install-java: no $(JAVA_DIST)/agentstream-$(JAVA_VERSION).jar: run \`make dist\` first" >&2; exit 1; }
	$(MAKE) --no-print-directory test-java-quickstart JAVA_QUICKSTART_JAR=$(JAVA_DIST)/agentstream-$(JAVA_VERSION).jar
