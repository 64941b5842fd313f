# Thin wrapper over CMake presets. `make run` and `make test` work on a fresh Debian machine:
# each first installs what is missing (scripts/install-deps.sh).
SCENARIO ?= scenarios/megascale-175b-12288.json
MEGASIM := build/release/sim/cli/megasim

.PHONY: deps build run test test-release test-asan test-fuzz fuzz bench clean

deps:
	./scripts/install-deps.sh

build: deps
	cmake --preset release
	cmake --build --preset release

REPORT ?= build/report.html

# Prints the scenario's results and writes its offline HTML report.
run: build
	$(MEGASIM) simulate $(SCENARIO) --html $(REPORT)
	@echo "HTML report: $(abspath $(REPORT))"

# The release build runs every test; ASan + UBSan builds and runs only the library unit tests
# (CTest label lib): the CLI, golden and script tests would run the same code a second time.
# Then each loader's fuzz target for a few seconds (label fuzz, a build of the loaders alone).
test: build test-release test-asan test-fuzz

test-release:
	ctest --preset release

test-asan: deps
	cmake --preset asan
	cmake --build --preset asan
	ctest --preset asan

# The fuzz preset builds with clang; without it (or libFuzzer) its tests report themselves skipped.
test-fuzz: deps
	cmake --preset fuzz
	cmake --build --preset fuzz
	ctest --preset fuzz

# Long fuzzing: every target for FUZZ_SECONDS, growing the corpus in build/fuzz/long/ from one
# run to the next; a finding is kept in build/fuzz/long/fuzz_<target>/crashes/.
FUZZ_SECONDS ?= 60
fuzz: deps
	cmake --preset fuzz
	cmake --build --preset fuzz
	FUZZ_SECONDS=$(FUZZ_SECONDS) FUZZ_DIR=$(abspath build/fuzz/long) \
	  ctest --preset fuzz --timeout $$(( $(FUZZ_SECONDS) + 300 ))

bench: build
	cmake --build --preset release --target megasim_benches
	./bench/run.sh

clean:
	rm -rf build
