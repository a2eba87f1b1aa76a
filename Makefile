# The two set-up commands of the README, and the builds behind them.
#   make run    install missing Debian packages, build, and generate a story with the bundled model
#   make test   install missing packages, build (Release with assertions), run every test, plus
#               an ASan+UBSan build of the parser, kernel and KV tests and a TSan build of the thread pool and
#               engine tests
MAKEFLAGS += --no-print-directory
JOBS ?= $(shell nproc)
BUILD ?= build
ASAN_BUILD ?= build-asan
TSAN_BUILD ?= build-tsan
PROMPT ?= Once upon a time
# Under ASan+UBSan: the parsers (GGUF, JSON config, tokenizer, grammars) with their fuzz tests, the SIMD kernels (tail
# reads), the block pool and its rollback, and the n-gram drafter (span arithmetic). The engine's tests run under TSan
# instead, so the sanitizer builds stay small: CI has 2 cores and the whole of `make test` must stay well under 15
# minutes.
SANITIZE_TARGETS = format_tests tokenizer_tests chat_tests core_tests sampling_tests kv_tests quant_tests kernels_tests metrics_tests server_tests grammar_tests spec_tests
# Tests of code that runs on several threads (the pool, the engine, a split model over threads), under
# ThreadSanitizer. Each sanitizer build runs every test of the
# binaries it built (ctest names the others *_NOT_BUILT).
TSAN_TARGETS = core_tests engine_tests parallel_tests
# No debug info in the sanitizer trees: reports name the functions of each stack frame (symbol table) but not
# file:line; line tables (-g1) make each file compile markedly slower, and CI must stay under 15 minutes. For
# file:line, run e.g. `make test-sanitize SANITIZER_DEBUG=-g1`. The ASan tree at -Og: it compiles faster than at -O1
# by more than its tests lose; the TSan tree stays at -O1, where -Og's slower tests (its engine tests run the model,
# and TSan checks every memory access -Og leaves unpromoted) cost more than its faster compile saves. The figures
# are in the commit messages that set these.
ASAN_OPT ?= -Og
TSAN_OPT ?= -O1
SANITIZER_DEBUG ?= -g0
# Unity builds (CMake merges each target's sources, UNITY_BATCH per file): headers such as nlohmann::json, CLI11
# and gtest are parsed and their templates instantiated once per batch instead of once per file, which roughly
# halves the CPU a tree takes; batches of 16 rather than CMake's 8 save more. The kernels opt out (their
# CMakeLists). UNITY=OFF builds file by file, as a plain cmake does.
UNITY ?= ON
UNITY_BATCH ?= 16
UNITY_FLAGS = -DCMAKE_UNITY_BUILD=$(UNITY) -DCMAKE_UNITY_BUILD_BATCH_SIZE=$(UNITY_BATCH)
# Ninja starts a target's objects before the libraries it links are built (Make waits for each whole target), so
# both cores stay busy. A tree configured before keeps its generator (CMake refuses to switch one).
GENERATOR ?= Ninja
generator_flag = $(if $(wildcard $(1)/CMakeCache.txt),,-G "$(GENERATOR)")
# ccache (scripts/install-deps.sh installs Debian's), where present, compiles each tree's objects once per content: a
# later CI run on the same machine, from a fresh clone in any folder, takes the unchanged ones from the cache
# (~/.cache/ccache). Paths under the repository are hashed relative to it (CCACHE_BASEDIR), so another clone's
# objects hit: a unity batch names its sources by absolute path, which ccache's direct mode sees as other content,
# but its preprocessor mode, with those paths made relative, finds the same text. The objects themselves carry no
# folder (CMakeLists.txt maps __FILE__; the tests' paths come from a generated header, tests/CMakeLists.txt). The
# precompiled headers need the sloppiness below (ccache cannot see a define or __TIME__ through a .gch). CCACHE=
# builds without it; the empty launcher then also clears one a tree was configured with before.
CCACHE ?= $(shell command -v ccache 2>/dev/null)
LAUNCHER_FLAGS = -DCMAKE_C_COMPILER_LAUNCHER=$(CCACHE) -DCMAKE_CXX_COMPILER_LAUNCHER=$(CCACHE)
export CCACHE_BASEDIR ?= $(CURDIR)
export CCACHE_SLOPPINESS ?= pch_defines,time_macros,include_file_mtime,include_file_ctime
sanitizer_flags = $(UNITY_FLAGS) $(LAUNCHER_FLAGS) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="$(1) $(SANITIZER_DEBUG)" -DCMAKE_C_FLAGS_RELWITHDEBINFO="$(1) $(SANITIZER_DEBUG)"

.PHONY: deps test-packages test-deps build run test test-sanitize test-tsan test-main clean

deps:
	@./scripts/install-deps.sh

test-packages:
	@./scripts/install-deps.sh --test --no-npm

test-deps:
	@./scripts/install-deps.sh --test

build: deps
	@cmake -S . -B $(BUILD) $(call generator_flag,$(BUILD)) -DCMAKE_BUILD_TYPE=Release -DPAGODA_ASSERTIONS=ON $(UNITY_FLAGS) \
	  $(LAUNCHER_FLAGS) >/dev/null
	@cmake --build $(BUILD) -j$(JOBS)

run: build
	@./$(BUILD)/src/cli/pagoda run -p "$(PROMPT)" -n 196 --temp 0

# The sanitizer run goes first so that the last line printed is the full suite's ctest summary. The npm step of the
# end-to-end tests' clients (mostly waiting on the registry) runs beside the sanitizer builds, after the apt step
# (dpkg's lock); its output is shown when those finish, and test-main starts only once it has succeeded.
test: test-packages
	@npm_log=$$(mktemp); ./scripts/install-deps.sh --npm >"$$npm_log" 2>&1 & npm_pid=$$!; \
	$(MAKE) test-sanitize test-tsan; status=$$?; \
	wait $$npm_pid; npm_status=$$?; cat "$$npm_log"; rm -f "$$npm_log"; \
	[ $$status -eq 0 ] || exit $$status; [ $$npm_status -eq 0 ] || exit $$npm_status; \
	$(MAKE) test-main

test-sanitize: deps
	@cmake -S . -B $(ASAN_BUILD) $(call generator_flag,$(ASAN_BUILD)) $(call sanitizer_flags,$(ASAN_OPT)) -DPAGODA_SANITIZE=ON >/dev/null
	@cmake --build $(ASAN_BUILD) -j$(JOBS) --target $(SANITIZE_TARGETS)
	@cd $(ASAN_BUILD) && ctest -E _NOT_BUILT --output-on-failure -j$(JOBS)

test-tsan: deps
	@cmake -S . -B $(TSAN_BUILD) $(call generator_flag,$(TSAN_BUILD)) $(call sanitizer_flags,$(TSAN_OPT)) -DPAGODA_SANITIZE_THREAD=ON >/dev/null
	@cmake --build $(TSAN_BUILD) -j$(JOBS) --target $(TSAN_TARGETS)
	@cd $(TSAN_BUILD) && ctest -E _NOT_BUILT --output-on-failure -j$(JOBS)

test-main: test-deps build
	@cd $(BUILD) && ctest --output-on-failure -j$(JOBS)

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(TSAN_BUILD)
