# prsh: `make demo` runs a job on an emulated 16-node cluster; `make check`
# is the quick loop (vet and every test but the end-to-end package e2e);
# `make test` runs the whole test suite (what CI runs); `make bench` builds
# the lab's bin/bench.

GO      ?= go
FUZZTIME ?= 200000x
UTS     := $(if $(filter 0,$(shell id -u)),--uts,)
# The PMIx server (Open MPI programs) is built in when pkg-config finds the
# PMIx library (apt-get install libpmix-dev).
TAGS    ?= $(shell pkg-config --exists pmix 2>/dev/null && echo pmix)

.PHONY: bin demo check test fuzz bench clean

# orted is a static Go program; orted-pmix is orted with the PMIx server
# (cgo), which mpirun starts only for jobs that may need it. urfave_cli_no_docs
# leaves out the CLI library's man and markdown writers, which we never call
# (250 KB of mpirun's resident text). CPUPROFILE=1 builds in the CPU
# profiles of PRSH_CPUPROFILE (internal/profile).
BINTAGS = urfave_cli_no_docs $(if $(CPUPROFILE),cpuprofile)
bin:
	CGO_ENABLED=0 $(GO) build -tags '$(BINTAGS)' -ldflags '-s -w' -o bin/ ./cmd/...
	$(if $(TAGS),$(GO) build -tags '$(TAGS) $(BINTAGS)' -ldflags '-s -w' -o bin/orted-pmix ./cmd/orted)

demo: bin
	bin/testbed run --nodes 16 $(UTS) -- mpirun --spawn-degree 4 hostname

# The measurement lab (lab/, a module of its own): bin/bench beside the
# launchers it measures.
bench: bin
	cd lab && $(GO) build -o ../bin/ ./cmd/bench
	cd lab && CGO_ENABLED=0 $(GO) build -ldflags '-s -w' -o ../bin/ ./cmd/gostart

check:
	$(GO) vet -tags '$(TAGS)' ./...
	$(GO) vet -tags cpuprofile ./internal/profile
	$(GO) test -tags '$(TAGS)' -race $$($(GO) list ./... | grep -v -e '^prsh/e2e$$' -e '^prsh/daemon/protocol/sim$$')
	$(GO) test -short ./daemon/protocol/sim   # each simulated launch is one goroutine: -race would find nothing and take 3 times as long

test:
	$(GO) vet -tags '$(TAGS)' ./...
	$(GO) vet -tags cpuprofile ./internal/profile
	$(GO) test -tags '$(TAGS)' -race -timeout 60m ./...
	cd lab && $(GO) vet ./... && $(GO) test -race -timeout 30m ./...
	$(GO) test -run 'Radix' ./topo -topo.fullgrid    # every n ≤ 2000, every δ in 1..64
	$(GO) test -run 'Launch|Simulate100k' ./daemon/protocol/sim   # the 2000-orted launches and the 100k simulation, too slow under -race
	$(GO) test -tags '$(TAGS)' -timeout 30m -run 'TestJobsInSequence' ./e2e   # 200 jobs one after another (20 under -race)
	$(MAKE) fuzz

# Every fuzzer runs briefly on top of its seed corpus in testdata/fuzz. The
# budget is a count of runs, not a duration: a duration that expires while
# the fuzzer minimises a new input fails with "context deadline exceeded".
fuzz:
	@for pkg in $$($(GO) list ./...); do \
		for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
			echo "fuzz $$pkg $$f"; \
			$(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$pkg || exit 1; \
		done; \
	done

clean:
	rm -rf bin
