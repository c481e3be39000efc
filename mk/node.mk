# Node binding (npm package `agentstream` in node/, addon crate bindings/node: napi-rs 3).
#   make test-node     npm ci (when the lock changed), the fake harness (release, shared target/:
#                      the real-run tests start it as the harness), then the root `npm test` a
#                      user runs from a fresh clone: napi build --release + tsc, node --test
#                      node/test/ (golden replay, real runs, API, ESM + CommonJS, panic safety,
#                      types vs schema, tsc strict); then fails if the generated
#                      node/native/index.{js,d.ts} differ from git
#   make bench-node    benches/node_decode.mjs (Decoder and real runs vs plain-JS baselines)
# `napi build` always passes --target <host triple> (toolchain.md N1), so the addon and its
# dependencies build in target/<triple>/release of the shared workspace target dir.

NPM ?= npm
NODE_STAMP := node_modules/.package-lock.json

LANG_TESTS += test-node
.PHONY: build-node node-fake-harness test-node check-node-generated bench-node

# npm ci only when the lock file or a manifest is newer than the last install.
$(NODE_STAMP): package-lock.json package.json node/package.json
	$(NPM) ci --no-audit --no-fund
	touch $@

build-node: $(NODE_STAMP)
	$(NPM) run build

# The same command as build-fake-harness (mk/c.mk): one release build, whichever suite runs first.
node-fake-harness:
	$(CARGO) build --release -p agentstream-cli --bins

test-node: $(NODE_STAMP) node-fake-harness
	$(NPM) test
	$(MAKE) --no-print-directory check-node-generated

# The loader and .d.ts that napi generates are committed; a changed export must be committed too.
check-node-generated:
	@if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then \
	  git diff --exit-code --stat -- node/native/index.js node/native/index.d.ts \
	    || { echo "node/native/index.{js,d.ts} changed: commit the regenerated files" >&2; exit 1; }; \
	fi

bench-node: build-node node-fake-harness
	node benches/node_decode.mjs
