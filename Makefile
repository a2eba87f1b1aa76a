# The two set-up commands of the README, and the builds behind them.
#   make run    install missing Debian packages, build, and generate a story with the bundled model
#   make test   install missing packages, build (Release with assertions), run every test, plus the
#               ASan+UBSan build of the parser and tokenizer tests and the TSan build of the thread pool tests
MAKEFLAGS += --no-print-directory
JOBS ?= $(shell nproc)
BUILD ?= build
ASAN_BUILD ?= build-asan
TSAN_BUILD ?= build-tsan
PROMPT ?= Once upon a time
SANITIZE_TARGETS = format_tests tokenizer_tests core_tests sampling_tests engine_tests kv_tests quant_tests kernels_tests
# Tests of code that runs on several threads, under ThreadSanitizer.
TSAN_TARGETS = core_tests engine_tests

.PHONY: deps build run test test-sanitize test-tsan test-main clean

deps:
	@./scripts/install-deps.sh

build: deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release -DPAGODA_ASSERTIONS=ON >/dev/null
	@cmake --build $(BUILD) -j$(JOBS)

run: build
	@./$(BUILD)/src/cli/pagoda run -p "$(PROMPT)" -n 196 --temp 0

# The sanitizer run goes first so that the last line printed is the full suite's ctest summary.
test: test-sanitize test-tsan test-main

test-sanitize: deps
	@cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPAGODA_SANITIZE=ON >/dev/null
	@cmake --build $(ASAN_BUILD) -j$(JOBS) --target $(SANITIZE_TARGETS)
	@cd $(ASAN_BUILD) && ctest -L sanitize --output-on-failure -j$(JOBS)

test-tsan: deps
	@cmake -S . -B $(TSAN_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPAGODA_SANITIZE_THREAD=ON >/dev/null
	@cmake --build $(TSAN_BUILD) -j$(JOBS) --target $(TSAN_TARGETS)
	@cd $(TSAN_BUILD) && ctest -R "ThreadPool|EngineTest|SchedulerTest" --output-on-failure

test-main: build
	@cd $(BUILD) && ctest --output-on-failure -j$(JOBS)

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(TSAN_BUILD)
