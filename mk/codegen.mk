# Generated type declarations: one JSON Schema of every wire type, generated from the Rust types
# (core/src/schema.rs → core/schema/events.schema.json), and the Python, TypeScript and Go
# declarations generated from it by codegen/ (agentstream-codegen).
#   make generate          regenerate the schema from the Rust types, then every language's files
#   make check-generated   fail when a checked-in generated file differs from what the Rust types
#                          generate (part of `make test`); the message says to run `make generate`;
#                          also the generator's own unit tests
#   make test-generated-compile   compile the generated C# (mcs) and Java (javac) on their own
# Never edit a generated file by hand: change the Rust types (or core/src/schema.rs), then
# `make generate`. A new language is one emitter module in codegen/src/emit/.

SCHEMA_TEST := $(CARGO) test -q -p agentstream-core --all-features --test schema checked_in_schema_matches_the_types

LANG_TESTS += check-generated
.PHONY: generate check-generated

generate:
	UPDATE_SCHEMA=1 $(SCHEMA_TEST)
	$(CARGO) run -q -p agentstream-codegen

check-generated:
	@$(SCHEMA_TEST) >/dev/null 2>&1 || { \
	  echo "core/schema/events.schema.json differs from what the Rust types generate: run \`make generate\` and commit the result" >&2; \
	  exit 1; }
	@$(CARGO) run -q -p agentstream-codegen -- --check
	$(CARGO) test -q -p agentstream-codegen
	@echo "generated files: up to date"

# The C# and Java declarations have no binding around them yet: compile them on their own, so a
# schema change that the emitters turn into invalid code fails here (.ci/install-codegen.sh
# installs Mono's mcs and a JDK on a fresh machine).
MCS ?= mcs
JAVAC ?= javac
CODEGEN_OUT := target/codegen
CSHARP_GENERATED := bindings/csharp/Agentstream/Generated
JAVA_GENERATED := bindings/java/src/main/java/dev/agentstream/generated

LANG_TESTS += test-generated-compile
.PHONY: test-generated-compile

test-generated-compile:
	@mkdir -p $(CODEGEN_OUT)/java
	$(MCS) -target:library -langversion:7 -warnaserror -nologo -out:$(CODEGEN_OUT)/Agentstream.Generated.dll $(CSHARP_GENERATED)/*.cs
	$(JAVAC) -encoding UTF-8 -Xlint:all -Werror -Xdoclint:all,-missing -d $(CODEGEN_OUT)/java $(JAVA_GENERATED)/*.java
	@echo "generated C# and Java: compile"
