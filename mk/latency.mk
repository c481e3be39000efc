# The latency benchmark: time from the harness writing a line to the user's handler, p50/p99/max,
# at 1,000 and 20,000 lines/s, in every language, in one run (benches/latency/, docs/benchmarks.md).
#   make bench-latency         build every language's handler, then benches/latency/run.py
#                              (LATENCY_ARGS="--rounds 5 --seconds 5" to change the run)
#   make bench-latency-build   only the build: the emitter (the paced harness, C), the handlers of
#                              Rust (core example), C, Go, Java, C# and Kotlin, and the Python and
#                              Node packages
# After the build, `python3 benches/latency/trace.py --lang c` runs one language under a scheduler
# trace until a line waits --stall-ms (20) and says which thread waited for which CPU.
# Benchmarks are never tests: nothing here runs in `make test`.

LATENCY_DIR := benches/latency
LATENCY_OUT := $(CURDIR)/target/latency
LATENCY_ARGS ?=

.PHONY: bench-latency bench-latency-build

bench-latency-build: build-c python-develop build-node build-csharp build-uniffi
	@mkdir -p $(LATENCY_OUT)/java
	$(CC) -std=c11 -O2 $(C_WARN) $(LATENCY_DIR)/emitter.c -o $(LATENCY_OUT)/emitter
	$(CARGO) build --release -p agentstream-core --features runner --example latency
	$(CC) -std=c11 -O2 $(C_WARN) -I$(C_INCLUDE) $(LATENCY_DIR)/latency.c \
	  -L$(C_LIB_DIR) -lagentstream -Wl,-rpath,$(C_LIB_DIR) -lpthread -o $(LATENCY_OUT)/latency-c
	cd $(LATENCY_DIR)/go && $(GO_ENV) $(GO) build -tags agentstream_static -o $(LATENCY_OUT)/latency-go .
	cd $(JAVA_DIR) && $(JAVA_MVN) compile 2>&1 | sed 's/\x1b\[[0-9;]*m//g'
	$(JAVA25_HOME)/bin/javac -cp $(JAVA_DIR)/target/classes -d $(LATENCY_OUT)/java $(LATENCY_DIR)/Latency.java
	$(MCS) -target:exe $(CS_FLAGS) -r:$(CS_OUT)/Agentstream.dll -out:$(LATENCY_OUT)/Latency.exe $(LATENCY_DIR)/Latency.cs
	cp $(CS_OUT)/Agentstream.dll $(LATENCY_OUT)/
	cd $(KOTLIN_DIR) && $(MVN) $(MVN_FLAGS) test-compile && \
	  $(MVN) $(MVN_FLAGS) org.apache.maven.plugins:maven-dependency-plugin:3.11.0:build-classpath \
	    -Dmdep.outputFile=$(LATENCY_OUT)/kotlin.classpath -Dmdep.includeScope=test

bench-latency: bench-latency-build
	python3 $(LATENCY_DIR)/run.py $(LATENCY_ARGS)
