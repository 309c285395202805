# Lattice — build entry points. Quick start: `make demo`, then `make test`.
#
# Every target that builds depends on `deps`, which installs the LMDB headers and library
# (Debian package liblmdb-dev, plus pkg-config so SwiftPM finds them) only when they are missing.
#
# SCRATCH_PATH is SwiftPM's build directory; override it to keep several builds apart,
# for example `make test SCRATCH_PATH=.build-mine`.

SCRATCH_PATH ?= .build
SWIFT        ?= swift
DEMO_FILE    ?= todo.lattice

# sudo only when not root and sudo exists (CI containers run as root without it).
SUDO := $(shell if [ "$$(id -u)" -ne 0 ] && command -v sudo >/dev/null 2>&1; then echo sudo; fi)

.PHONY: deps demo test bench clean

## deps: install liblmdb-dev (and pkg-config) with apt-get when missing.
deps:
	@if pkg-config --exists lmdb 2>/dev/null; then exit 0; fi; \
	missing=""; \
	dpkg -s liblmdb-dev >/dev/null 2>&1 || missing="$$missing liblmdb-dev"; \
	command -v pkg-config >/dev/null 2>&1 || missing="$$missing pkg-config"; \
	if [ -z "$$missing" ]; then exit 0; fi; \
	if [ "$$(id -u)" -ne 0 ] && [ -z "$(SUDO)" ]; then \
		echo "error: missing$$missing; run as root or install sudo (apt-get install -y$$missing)" >&2; \
		exit 1; \
	fi; \
	echo "Installing$$missing"; \
	$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get update && \
	$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $$missing

## demo: build and run the to-do demo (creates $(DEMO_FILE), writes, reopens, prints), then look
## inside the file with the `lattice` command-line tool (the Tools package, built in $(SCRATCH_PATH)/tools).
# A debug build: from a fresh clone it finishes sooner than a release build.
LATTICE_TOOL = $(SWIFT) run --package-path Tools --scratch-path $(SCRATCH_PATH)/tools lattice
demo: deps
	$(SWIFT) run --scratch-path $(SCRATCH_PATH) lattice-demo $(DEMO_FILE)
	$(LATTICE_TOOL) info $(DEMO_FILE)
	$(LATTICE_TOOL) query $(DEMO_FILE) ToDoItem "isCompleted == \$$0" --arg false --sort text

## test: run the whole test suite: the library's, then the tools' (Tools/, its own package).
test: deps
	$(SWIFT) test --scratch-path $(SCRATCH_PATH)
	$(SWIFT) test --package-path Tools --scratch-path $(SCRATCH_PATH)/tools

## bench: run the benchmark workload (the Benchmarks package, release build).
bench: deps
	@if [ ! -f Benchmarks/Package.swift ]; then \
		echo "error: Benchmarks/Package.swift is missing: the benchmarks package is not in this tree yet" >&2; \
		exit 1; \
	fi
	cd Benchmarks && $(SWIFT) run -c release --scratch-path $(SCRATCH_PATH) lattice-bench

## clean: remove build products and the demo's database files.
clean:
	rm -rf $(SCRATCH_PATH) Benchmarks/$(SCRATCH_PATH) $(DEMO_FILE) $(DEMO_FILE)-lock
