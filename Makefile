# sqs-waiter. `make demo` and `make test` each install what they need (a Python venv with moto and
# cargo-lambda) on first use.
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
VENV ?= .venv
PYTHON ?= python3
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)
export MOTO_SERVER := $(CURDIR)/$(VENV)/bin/moto_server

.PHONY: help venv demo test unit e2e lint fmt build clean

help:
	@echo "make demo   run both functions under cargo lambda watch against moto, end to end"
	@echo "make test   fmt check, clippy, unit tests, end-to-end tests against moto"
	@echo "make lint   fmt check and clippy"

venv: $(VENV)/.installed

$(VENV)/.installed: requirements-dev.txt
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check -r requirements-dev.txt
	touch $@

demo: venv
	cargo build -p enqueue -p poller
	$(VENV)/bin/python scripts/demo.py

lint:
	cargo fmt --all -- --check
	cargo clippy --workspace --all-targets -- -D warnings

fmt:
	cargo fmt --all

unit:
	cargo test -p waiter

e2e: venv
	cargo build -p enqueue -p poller
	cargo test -p e2e

test: venv lint
	cargo build -p enqueue -p poller
	cargo test --workspace

build:
	cargo build --release -p enqueue -p poller

clean:
	cargo clean
	rm -rf $(VENV)

.PHONY: bench bench-quick
# Figures, not pass/fail: release binaries against moto; JSON lands in target/bench/.
bench: venv
	cargo build --release -p enqueue -p poller
	cargo run -q -p e2e --bin bench -- precision --release

bench-quick: venv
	cargo build --release -p enqueue -p poller
	cargo run -q -p e2e --bin bench -- precision --quick --release
