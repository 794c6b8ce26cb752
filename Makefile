# resultsync — run `make help` for the targets.
SHELL := /bin/bash
.DEFAULT_GOAL := help

GO        ?= go
BIN       := $(CURDIR)/bin
SERVICES  := results relay consumer reconcile repair gateway migrate
# buf breaking compares the contracts with this git reference.
BREAKING_AGAINST ?= .git\#branch=main
GOTEST_FLAGS ?= -race -shuffle=on -count=1 -timeout=30m

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z_-]+:.*## / {printf "  \033[36m%-16s\033[0m %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: tools
tools: $(BIN)/buf $(BIN)/grpcurl ## Build the pinned tools (buf, grpcurl) into bin/.

$(BIN)/buf: go.mod go.sum
	$(GO) build -o $@ github.com/bufbuild/buf/cmd/buf

$(BIN)/grpcurl: go.mod go.sum
	$(GO) build -o $@ github.com/fullstorydev/grpcurl/cmd/grpcurl

.PHONY: generate
generate: $(BIN)/buf ## Regenerate gen/ from proto/ (local plugins only).
	$(BIN)/buf generate

.PHONY: check-generate
check-generate: generate ## Fail when gen/ is stale.
	@if [ -n "$$(git status --porcelain -- gen)" ]; then \
		git status --porcelain -- gen; \
		echo "gen/ is stale: run 'make generate' and commit the result" >&2; exit 1; \
	fi

.PHONY: lint
lint: $(BIN)/buf ## buf lint + buf breaking + gofmt + go vet.
	$(BIN)/buf lint
	@if git rev-parse -q --verify main >/dev/null && git cat-file -e main:proto/fitness/v1 2>/dev/null; then \
		echo "buf breaking --against $(BREAKING_AGAINST)"; \
		$(BIN)/buf breaking --against '$(BREAKING_AGAINST)'; \
	else echo "buf breaking: no contracts on main yet"; fi
	@out=$$(gofmt -l $$(git ls-files '*.go' | grep -v '^gen/')); \
		if [ -n "$$out" ]; then echo "gofmt needed: $$out" >&2; exit 1; fi
	$(GO) vet ./...

.PHONY: build
build: ## Build every service into bin/.
	@mkdir -p $(BIN)
	$(GO) build -o $(BIN)/ $(addprefix ./services/,$(SERVICES))

.PHONY: up
up: ## Install (if missing) and start MariaDB, ClickHouse and Pulsar; apply migrations.
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

.PHONY: run
run: tools build up ## Bring up the whole platform locally and show it working.
	deploy/local/servers.sh start
	deploy/local/demo.sh

.PHONY: test
test: tools up ## Install what is missing, start the infrastructure, run every check and test.
	$(MAKE) check-generate lint
	RS_REQUIRE_INFRA=1 $(GO) test $(GOTEST_FLAGS) ./...

.PHONY: bench
bench: up ## Run the benchmarks against the local stack and print their figures.
	$(GO) run ./bench/writepath
	$(GO) run ./bench/relay
	$(GO) run ./bench/consumer
	$(GO) run ./bench/reconcile
