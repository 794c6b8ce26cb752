# resultsync — run `make help` for the targets.
SHELL := /bin/bash
.DEFAULT_GOAL := help

GO        ?= go
BIN       := $(CURDIR)/bin
SERVICES  := results relay consumer reconcile repair gateway migrate rsctl
# buf breaking (FILE rules) compares the contracts with the last release: the
# newest buf image in proto/releases (written by `make release-contracts`), so
# a fresh clone without tags checks against what users have.
LAST_RELEASE_IMAGE := $(shell ls proto/releases/fitness-v*.binpb 2>/dev/null | sort -V | tail -1)
BREAKING_AGAINST ?= $(LAST_RELEASE_IMAGE)
GOTEST_FLAGS ?= -race -shuffle=on -count=1 -timeout=30m
# The local stack's settings (ports, DSNs) with MySQL as the main engine, for `make test`.
LOCAL_ENV := set -euo pipefail; export RS_MYSQL_ENGINE=mysql; . deploy/local/env.sh
# Packages whose tests run shard SQL: `make test` runs them again on MariaDB.
SHARD_PKGS := ./pkg/storage/schema/ ./pkg/platform/idempotency/ ./pkg/write/resultstore/ ./pkg/write/resultapi/ ./pkg/delivery/outbox/... ./pkg/delivery/relay/ ./pkg/delivery/outboxapi/ ./pkg/reconciliation/reconcile/ ./pkg/reconciliation/reconcileapi/ ./pkg/recovery/replay/ ./pkg/recovery/repair/ ./pkg/recovery/repairapi/ ./pkg/recovery/rebuild/ ./pkg/delivery/lagwatch/ ./pkg/service/repairsvc/ ./test/repair/ ./test/schoolscope/ ./test/tls/
# Packages whose tests run ClickHouse SQL: `make test` runs them again on a current
# ClickHouse (26.x, in-process through chdb-core).
CH_PKGS := ./pkg/storage/schema/ ./pkg/storage/chstore/ ./pkg/delivery/consumer/ ./pkg/reconciliation/reconcile/ ./pkg/reconciliation/reconcileapi/ ./pkg/recovery/rebuild/ ./pkg/delivery/lagwatch/

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z_-]+:.*## / {printf "  \033[36m%-16s\033[0m %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: tools
tools: $(BIN)/buf $(BIN)/grpcurl $(BIN)/golangci-lint ## Build the pinned tools (buf, grpcurl, golangci-lint) into bin/.

# buf, grpcurl and golangci-lint are each pinned in a module of their own
# (tools/<name>), so their dependencies stay out of the project's go.mod.
$(BIN)/buf: tools/buf/go.mod tools/buf/go.sum
	cd tools/buf && $(GO) build -o $@ github.com/bufbuild/buf/cmd/buf

$(BIN)/grpcurl: tools/grpcurl/go.mod tools/grpcurl/go.sum
	cd tools/grpcurl && CGO_ENABLED=0 $(GO) build -o $@ github.com/fullstorydev/grpcurl/cmd/grpcurl

$(BIN)/golangci-lint: tools/golangci-lint/go.mod tools/golangci-lint/go.sum
	cd tools/golangci-lint && $(GO) build -o $@ github.com/golangci/golangci-lint/v2/cmd/golangci-lint

# Client packages: clients/<lang>/ each with test.sh (its own runner against
# the servers started by deploy/local/servers.sh; addresses in RS_*_ADDR, see
# test-clients) and, in other languages than Go, generate.sh (regenerates its
# committed code from proto/ with pinned local generators; the Go client
# builds on the gen module, gen/).
CLIENT_LANGS := python typescript java go
# The Go modules of the repository: the main one, the generated code (gen/)
# and the Go client (clients/go); the main one requires the other two
# through replace directives (go.mod).
GO_MODULES := . gen clients/go

.PHONY: generate
generate: $(BIN)/buf ## Regenerate gen/ and every client's generated code from proto/ (local plugins only).
	@# gen/ is a Go module: everything in it but go.mod and go.sum is generated (buf.gen.yaml: clean: false).
	find gen -mindepth 1 -maxdepth 1 ! -name go.mod ! -name go.sum -exec rm -rf {} +
	$(BIN)/buf generate
	@set -e; for l in $(CLIENT_LANGS); do \
		if [ -x clients/$$l/generate.sh ]; then echo "== generate $$l client"; clients/$$l/generate.sh; fi; \
	done

.PHONY: check-generate
check-generate: generate ## Fail when gen/ or any client's generated code is stale.
	@if [ -n "$$(git status --porcelain -- gen clients)" ]; then \
		git status --porcelain -- gen clients; \
		echo "generated code is stale: run 'make generate' and commit the result" >&2; exit 1; \
	fi

.PHONY: lint
lint: $(BIN)/buf $(BIN)/golangci-lint ## buf lint + buf breaking + gofmt + go mod tidy -diff, go vet and golangci-lint (.golangci.yml) of the Go modules.
	$(BIN)/buf lint
	@if [ -z '$(BREAKING_AGAINST)' ]; then echo "buf breaking: no release in proto/releases to compare with" >&2; exit 1; fi
	@echo "buf breaking --against $(BREAKING_AGAINST)"
	$(BIN)/buf breaking --against '$(BREAKING_AGAINST)'
	@out=$$(gofmt -l $$(git ls-files '*.go' | grep -v '^gen/')); \
		if [ -n "$$out" ]; then echo "gofmt needed: $$out" >&2; exit 1; fi
	@for m in $(GO_MODULES); do echo "go mod tidy -diff ($$m)"; (cd $$m && $(GO) mod tidy -diff) || exit 1; done
	$(GO) vet ./...
	$(BIN)/golangci-lint run ./...
	cd clients/go && $(GO) vet ./... && $(BIN)/golangci-lint run --config $(CURDIR)/.golangci.yml ./...

.PHONY: release-contracts
release-contracts: $(BIN)/buf ## Record the contracts of release RELEASE (e.g. RELEASE=v0.2.0) as proto/releases/fitness-RELEASE.binpb, the base of buf breaking; then add its CHANGELOG.md section and tag it.
	@case '$(RELEASE)' in v[0-9]*.[0-9]*.[0-9]*) ;; *) echo "RELEASE=vMAJOR.MINOR.PATCH is required (got '$(RELEASE)')" >&2; exit 2;; esac
	@if [ -e proto/releases/fitness-$(RELEASE).binpb ]; then echo "proto/releases/fitness-$(RELEASE).binpb exists: a release's contracts never change" >&2; exit 1; fi
	@grep -q '^## \[$(RELEASE:v%=%)\]' CHANGELOG.md || { echo "CHANGELOG.md has no '## [$(RELEASE:v%=%)]' section" >&2; exit 1; }
	$(BIN)/buf build --exclude-source-info -o proto/releases/fitness-$(RELEASE).binpb
	@echo "now: git add proto/releases/fitness-$(RELEASE).binpb CHANGELOG.md && git commit && git tag -a $(RELEASE) -m 'resultsync $(RELEASE)'"

.PHONY: check-alerts
check-alerts: ## Check the Prometheus rules and config, and run the rule tests (promtool from Debian's package).
	deploy/local/promtool.sh check config deploy/prometheus/prometheus.yml
	deploy/local/promtool.sh test rules deploy/prometheus/alerts_test.yml
	python3 -c 'import json,sys; json.load(open(sys.argv[1]))' deploy/grafana/resultsync.json

# --version of every binary (pkg/platform/buildinfo): the release tag when
# there is one (else Go's own pseudo-version) and the commit.
VERSION  ?= $(shell git describe --tags --dirty 2>/dev/null)
REVISION ?= $(shell git rev-parse HEAD 2>/dev/null)$(shell git diff --quiet HEAD 2>/dev/null || echo -dirty)
BUILDINFO := github.com/resultsync/resultsync/pkg/platform/buildinfo
LDFLAGS  := -X $(BUILDINFO).version=$(VERSION) -X $(BUILDINFO).revision=$(REVISION)

.PHONY: build
build: ## Build every service into bin/ (--version: VERSION, REVISION from git), static (CGO_ENABLED=0) as the image builds them.
	@mkdir -p $(BIN)
	CGO_ENABLED=0 $(GO) build -ldflags '$(LDFLAGS)' -o $(BIN)/ $(addprefix ./services/,$(SERVICES))

.PHONY: up
up: ## Install (if missing) and start MySQL 9.7 (or RS_MYSQL_ENGINE=mariadb), ClickHouse and Pulsar; apply migrations.
	deploy/local/up.sh

.PHONY: down
down: ## Stop every server and remove the project-local state (.local/).
	deploy/local/down.sh --purge

.PHONY: stop
stop: ## Stop every server, keeping data.
	deploy/local/down.sh

.PHONY: status
status: $(BIN)/grpcurl ## Show the state of every server.
	deploy/local/status.sh

# The servers' OCI image (deploy/image/build.sh): the reference the
# Kubernetes manifests run (deploy/kubernetes/kustomization.yaml's images:).
IMAGE     ?= registry.example.com/resultsync/resultsync
IMAGE_TAG ?= 0.1.0

.PHONY: image
image: ## Build the servers' OCI image IMAGE:IMAGE_TAG with buildah (installed when missing), FROM scratch: static binaries, Debian's CA bundle, a non-root user; exported to .local/image/oci.
	IMAGE=$(IMAGE) IMAGE_TAG=$(IMAGE_TAG) GO=$(GO) deploy/image/build.sh

.PHONY: run
run: ## Bring up the whole platform locally and show it working (builds only what running needs: the servers and grpcurl, while the infrastructure installs and starts; the linter is built by make lint).
	$(MAKE) -j3 $(BIN)/grpcurl build up
	deploy/local/servers.sh start
	deploy/local/demo.sh

.PHONY: test
test: tools ## Install what is missing, start the infrastructure, run every check and test on every engine.
	RS_MYSQL_ENGINE=mysql RS_MYSQL_ENGINES="mysql mariadb" deploy/local/up.sh
	deploy/local/chdb.sh install
	$(MAKE) check-generate lint check-alerts
	@echo "== the servers' image (buildah, FROM scratch), which deploy/kubernetes's TestImage inspects"
	$(MAKE) image
	@echo "== every package: MySQL 9.7 shards and control, ClickHouse 18.16, Pulsar"
	$(LOCAL_ENV); RS_REQUIRE_INFRA=1 $(GO) test $(GOTEST_FLAGS) ./...
	@echo "== shard-level packages again on MariaDB 10.11"
	$(LOCAL_ENV); RS_MYSQL_ENGINE=mariadb RS_MYSQL_PORT=$$RS_MYSQL_MARIADB_PORT RS_REQUIRE_INFRA=1 \
		$(GO) test $(GOTEST_FLAGS) $(SHARD_PKGS)
	@echo "== ClickHouse-level packages again on ClickHouse 26 (chdb-core)"
	$(LOCAL_ENV); RS_CH_ENGINE=chdb RS_REQUIRE_INFRA=1 $(GO) test $(GOTEST_FLAGS) $(CH_PKGS)
	@echo "== clients (Python, TypeScript, Java) and the README's examples against the running servers"
	$(MAKE) test-clients
	@echo "== the projection on a ClickHouse cluster (2 shards x 2 replicas, ZooKeeper; its own servers, ~45-75 s): docs/cluster.md"
	$(MAKE) test-cluster
	@echo "== outage tests, alone: the Pulsar broker is stopped and restarted"
	$(MAKE) test-outage
	@echo "== a short chaos pass, alone (faults of every kind for a minute, then the independent check): docs/chaos.md"
	$(MAKE) test-chaos-short

.PHONY: test-clients
test-clients: build ## Start the six servers (deploy/local/servers.sh) and run every client's tests (Go: go vet + go test of clients/go) and the README's examples against them.
	$(LOCAL_ENV); deploy/local/test-clients.sh $(CLIENT_LANGS)

# Scale-out (test/scale): go test ./... runs it with 8 s phases; this target
# runs it alone with longer ones.
SCALE_PHASE ?= 30s

.PHONY: test-scale
test-scale: ## Three shards, relays and consumers 1 -> 3 -> 1 under load (test/scale), alone, with SCALE_PHASE (default 30s) phases; prints freshness per phase.
	$(LOCAL_ENV); RS_REQUIRE_INFRA=1 RS_SCALE_PHASE=$(SCALE_PHASE) $(GO) test -race -count=1 -v -timeout=20m ./test/scale/

# The chaos soak (test/chaos, docs/chaos.md): CHAOS_DURATION of seeded faults
# (CHAOS_SEED replays a run). It stops and starts the shared ClickHouse and
# Pulsar: never alongside other tests.
CHAOS_DURATION ?= 3m
CHAOS_SEED     ?= $(shell date +%s)

.PHONY: chaos
chaos: build ## Chaos soak: the platform's servers under CHAOS_DURATION (3m) of seeded faults (CHAOS_SEED), then an independent record-by-record check and reconciliation.
	@$(LOCAL_ENV); deploy/local/mysql.sh status >/dev/null 2>&1 && deploy/local/pulsar.sh status >/dev/null 2>&1 || deploy/local/up.sh
	$(LOCAL_ENV); $(GO) run ./test/chaos -duration $(CHAOS_DURATION) -seed $(CHAOS_SEED)

.PHONY: test-chaos-short
test-chaos-short: build ## A one-minute chaos pass (one broker and one ClickHouse restart, one kill -9 of each engine at most), as make test runs it.
	$(LOCAL_ENV); $(GO) run ./test/chaos -duration 1m -seed $(CHAOS_SEED) -broker-restarts 1 -clickhouse-restarts 1 -engine-crashes 1

.PHONY: test-outage
test-outage: ## Stop and restart the local Pulsar under running servers (stops the shared broker: never alongside other tests).
	$(LOCAL_ENV); RS_OUTAGE_TESTS=1 RS_REQUIRE_INFRA=1 $(GO) test -race -count=1 -p 1 -timeout=15m -v ./test/outage/

.PHONY: test-cluster
test-cluster: ## Start ZooKeeper and a 2-shard x 2-replica ClickHouse 18.16 cluster (deploy/local/chcluster.sh), run test/chcluster on it, stop it.
	@$(LOCAL_ENV); deploy/local/mysql.sh status >/dev/null 2>&1 && deploy/local/pulsar.sh status >/dev/null 2>&1 || deploy/local/up.sh
	$(LOCAL_ENV); deploy/local/chcluster.sh start; \
		export RS_CH_CLUSTER_ADDRS=$$(deploy/local/chcluster.sh addrs) RS_CH_CLUSTER_REQUIRED=1 RS_REQUIRE_INFRA=1; \
		rc=0; $(GO) test -race -count=1 -timeout=10m -v ./test/chcluster/ || rc=$$?; \
		deploy/local/chcluster.sh stop; exit $$rc

# Fuzzing: FUZZTIME is the time of each Go fuzz target, RPCFUZZ_CALLS the
# number of calls of the RPC pass (make test runs the seed corpora and a
# short RPC pass as ordinary tests).
FUZZTIME      ?= 10s
RPCFUZZ_CALLS ?= 3000

.PHONY: fuzz
fuzz: fuzz-go fuzz-rpc ## Run every Go fuzz target for FUZZTIME (default 10s) each, then the RPC fuzz pass (RPCFUZZ_CALLS calls).

.PHONY: fuzz-go
fuzz-go: ## Run every Go fuzz target (func FuzzX in a _test.go file), one at a time, for FUZZTIME each.
	FUZZTIME=$(FUZZTIME) GO=$(GO) deploy/local/fuzz-go.sh

.PHONY: fuzz-rpc
fuzz-rpc: ## Random well-typed calls of every RPC of every server (test/rpcfuzz, RPCFUZZ_CALLS calls) on the local infrastructure.
	RS_MYSQL_ENGINE=mysql deploy/local/up.sh
	$(LOCAL_ENV); RS_REQUIRE_INFRA=1 RS_RPCFUZZ_CALLS=$(RPCFUZZ_CALLS) $(GO) test -race -count=1 -timeout=30m -run TestRPCFuzz ./test/rpcfuzz/

# The deterministic simulation (test/sim): make test runs its default budget.
SIM_SEEDS ?= 2000
SIM_STEPS ?= 20000

.PHONY: sim
sim: ## Run the deterministic simulation of the delivery protocol for SIM_SEEDS seeds of SIM_STEPS steps (replay: go test ./test/sim -run TestReplaySeed -sim.seed=N).
	$(GO) test -count=1 -v -run 'TestProtocol|TestMutantsAreCaught' ./test/sim/ -sim.seeds=$(SIM_SEEDS) -sim.steps=$(SIM_STEPS)

.PHONY: bench
bench: ## Run every benchmark (bench/e2e included) on MySQL 9.7 and on MariaDB 10.11; ends with one summary table of figures, same-run ceilings, ratios, targets and verdicts, and fails when any verdict is NOT met (a target missed or a result found wrong).
	RS_MYSQL_ENGINES="mysql mariadb" deploy/local/up.sh
	bench/run.sh
