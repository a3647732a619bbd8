# alertbridge - one non-recursive Makefile.
#
# Targets:
#   make            build ./alertbridge
#   make test       install missing test dependencies, then unit + integration tests (build/),
#                   the same under ASan+UBSan (build-asan/), the bridge end-to-end test
#                   under valgrind memcheck, and every fuzz harness for TEST_FUZZ_SECONDS:
#                   one closing "N passed, N failed" for all
#   make fuzz       libFuzzer harnesses (tests/fuzz/, clang, build-fuzz/), FUZZ_SECONDS each
#   make run        build and serve deploy/examples/alertbridge.yml (dry-run without a GitHub token)
#   make asan       unit + integration tests under AddressSanitizer + UBSan (build-asan/) only
#   make check      the check before every commit (a few minutes on 2 cores): build, the unit
#                   tests and the integration tests that are not slow (tests/run.sh --quick)
#   make quicktest  unit + integration tests of build/ only (no sanitizers, no valgrind)
#   make bench      intake (new, repeat, mix) against a bare libmicrohttpd responder, callgrind, GitHub calls
#   make bench-janitor  the janitor's sweep of 1k / 20k / 100k pods: CPU and instructions per pod, RSS
#   make soak       the model-based lifecycle test (tests/model/) on SEEDS more seeds (default
#                   2000, seeds 1001 on: not those of make test), then a month of Alertmanager
#                   traffic replayed at an accelerated pace (tests/model/soak_month.py), then
#                   issue 19's fault campaign (tests/model/campaign.py) on SEEDS/10 seeds of 60
#                   steps, every fault class, store faults up to 8 s
#   make docs       write docs/configuration.md: `alertbridge check-config --reference`, the
#                   reference generated from the config loader's tables (a test compares them)
#   make docs-screenshot  refresh docs/status-page.png: the on-call page in headless Chromium,
#                   412 px wide, from tests/integration/test_status_page.py
#   make deps       install (as root) the Debian packages of every target, or name them; the
#                   other targets only check (deploy/deps.sh --check) and stop when one is missing
#   make clean
#
# Knobs (make VAR=value):
#   CC        compiler (default cc)
#   WERROR    1 (default) adds -Werror; WERROR=0 to turn it off
#   O         build directory (default build)
#   SAN       extra compile+link flags (make asan sets the sanitizers)
#   NODEPS    1 skips the dependency check (deploy/deps.sh)
#   V         1 prints every command (default: one short line per file)
#   FUZZ_SECONDS  seconds per harness for make fuzz (default 60)
#   TEST_FUZZ_SECONDS  seconds per harness in make test's fuzz stage (default 10: the seeds and
#             the learnt corpus are replayed first, then a short run; make fuzz stays long)
#   INTEGRATION_JOBS  integration tests run at a time in each stage of make test (default 2)
#   FUZZ_CC   compiler for make fuzz (default clang; needs libFuzzer: clang + libclang-rt-dev)
#   SEEDS     seeds for make soak (default 2000); MODEL_FEATURES, MODEL_JOBS as in
#             tests/model/lifecycle.py
#   VALGRIND  0 skips the valgrind stage of make test; ASAN=0 the ASan stage; FUZZ=0 the fuzzing
#   VERSION   the version `alertbridge version` and alertbridge_build_info report (default: the
#             VERSION file, else `git describe --tags --always`, else 0.1.0-unknown)
#   REVISION  the git commit (default `git rev-parse --short=12 HEAD`, "-dirty" with changes;
#             "unknown" without .git, e.g. from a tarball)
#   SOURCE_DATE_EPOCH  the build date reported, in seconds since the epoch (reproducible
#             builds); default: the time of the last commit, else the time core/version.o was
#             compiled.  With it, and the build directory cut from the debug information
#             (-ffile-prefix-map), one commit built in two directories gives the same binary
#             (tests/integration/test_reproducible.py)

CC ?= cc
WERROR ?= 1
O ?= build
SAN ?=
NODEPS ?=
V ?=
FUZZ_SECONDS ?= 60
TEST_FUZZ_SECONDS ?= 10
FUZZ_CC ?= clang
VALGRIND ?= 1
ASAN ?= 1
FUZZ ?= 1
SEEDS ?= 2000
ifeq ($(V),1)
Q :=
E := @true
else
Q := @
E := @echo
endif

VERSION ?= $(shell cat VERSION 2>/dev/null || git describe --tags --always 2>/dev/null || \
	echo 0.1.0-unknown)
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null)
REVISION ?= $(shell r=$$(git rev-parse --short=12 HEAD 2>/dev/null) && \
	{ git diff --quiet HEAD 2>/dev/null && echo "$$r" || echo "$$r-dirty"; } || echo unknown)

PKGS := libmicrohttpd libcurl jansson sqlite3 yaml-0.1 libjwt-gnutls nettle gnutls libpq
PKGS += libxcrypt  # crypt_r(3): the bcrypt hashes of web.auth
PKGS += libpcre2-8  # route matchers' regexes: Alertmanager's RE2 semantics (UTF-8, anchored)
WARN := -Wall -Wextra -Wpedantic -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
	-Wformat=2 -Wvla -fno-common
ifeq ($(WERROR),1)
WARN += -Werror
endif
PKG_CFLAGS = $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS = $(shell pkg-config --libs $(PKGS) 2>/dev/null)
CFLAGS ?= -O2 -g
ALL_CFLAGS = -std=c11 -D_GNU_SOURCE $(WARN) $(CFLAGS) $(SAN) -I. $(PKG_CFLAGS) -MMD -MP \
	-ffile-prefix-map=$(CURDIR)=.
LDLIBS = $(PKG_LIBS) -lpthread -lm
# libpq is in PKGS: db.c opens postgres:// targets with the PostgreSQL engine (store/db_pg.c).
ALL_CFLAGS += -DAB_HAVE_LIBPQ

LIB_SRC := $(sort $(wildcard core/*.c store/*.c bridge/*.c janitor/*.c ha/*.c web/*.c))
TEMPLATES := $(sort $(wildcard templates/*.mustache))
LIB_OBJ := $(LIB_SRC:%.c=$(O)/%.o) $(O)/gen/embed.o
# The commands (cmd/, one file each; main.c is their table): linked into the binary only,
# the library above stays what the unit tests link.
CMD_SRC := $(sort $(wildcard cmd/*.c))
CMD_OBJ := $(CMD_SRC:%.c=$(O)/%.o)
UNIT_SRC := $(sort $(wildcard tests/unit/test_*.c))
UNIT_BIN := $(UNIT_SRC:tests/unit/%.c=$(O)/tests/%)
TEST_HELPER_SRC := $(sort $(wildcard tests/unit/helpers/*.c))
TEST_HELPER_OBJ := $(TEST_HELPER_SRC:%.c=$(O)/%.o)
BIN := $(if $(filter build,$(O)),alertbridge,$(O)/alertbridge)
FUZZ_SRC := $(sort $(wildcard tests/fuzz/fuzz_*.c))
FUZZ_HELPER_SRC := tests/fuzz/fuzz_yaml_guard.c
FUZZ_BIN := $(patsubst tests/fuzz/%.c,$(O)/fuzz/%,$(filter-out $(FUZZ_HELPER_SRC),$(FUZZ_SRC)))
FUZZ_HELPER_OBJ := $(FUZZ_HELPER_SRC:%.c=$(O)/%.o)
# clang, unlike gcc, flags the va_list format of core/http_server.c's libmicrohttpd logger.
FUZZ_MAKE = $(MAKE) --no-print-directory O=build-fuzz CC=$(FUZZ_CC) \
	CFLAGS="-O1 -g -fno-omit-frame-pointer" \
	SAN="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all"
ASAN_MAKE = $(MAKE) --no-print-directory O=build-asan CFLAGS="-O1 -g -fno-omit-frame-pointer" \
	SAN="-fsanitize=address,undefined -fno-sanitize-recover=all"

.SECONDARY:

.PHONY: all check test quicktest unit run asan bench bench-janitor deps clean fuzz fuzz-build \
	soak docs-screenshot

all: $(BIN)

deps:
	@sh deploy/deps.sh build test fuzz bench

$(O)/%.o: %.c
	@mkdir -p $(dir $@)
	$(E) "  CC      $<"
	$(Q)$(CC) $(ALL_CFLAGS) -c -o $@ $<

$(O)/gen/embed.c: templates/embed.sh $(TEMPLATES)
	@mkdir -p $(dir $@)
	$(E) "  EMBED   $@"
	$(Q)sh templates/embed.sh $@ $(TEMPLATES)

$(O)/gen/embed.o: $(O)/gen/embed.c
	$(E) "  CC      $<"
	$(Q)$(CC) $(ALL_CFLAGS) -c -o $@ $<

# The build identity goes to core/version.o alone: a new commit recompiles that one object
# (the stamp changes only when VERSION, REVISION or SOURCE_DATE_EPOCH does); without
# SOURCE_DATE_EPOCH the build date is taken when it is compiled.
VERSION_STAMP := $(O)/gen/version-stamp
$(shell mkdir -p $(O)/gen && { echo '$(VERSION) $(REVISION) $(SOURCE_DATE_EPOCH)' | \
	cmp -s - $(VERSION_STAMP) || \
	echo '$(VERSION) $(REVISION) $(SOURCE_DATE_EPOCH)' > $(VERSION_STAMP); })
$(O)/core/version.o: $(VERSION_STAMP)
$(O)/core/version.o: ALL_CFLAGS += -DAB_VERSION='"$(VERSION)"' -DAB_REVISION='"$(REVISION)"' \
	-DAB_BUILD_DATE='"$(shell date -u $(if $(SOURCE_DATE_EPOCH),-d @$(SOURCE_DATE_EPOCH)) \
	+%Y-%m-%dT%H:%M:%SZ)"'

$(O)/libalertbridge.a: $(LIB_OBJ)
	@rm -f $@
	$(E) "  AR      $@"
	$(Q)ar rcsD $@ $^

$(BIN): $(O)/main.o $(CMD_OBJ) $(O)/libalertbridge.a
	$(E) "  LINK    $@"
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ $^ $(LDLIBS)

$(O)/tests/%: tests/unit/%.c $(TEST_HELPER_OBJ) $(O)/libalertbridge.a
	@mkdir -p $(dir $@)
	$(E) "  LINK    $@"
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ $< $(TEST_HELPER_OBJ) $(O)/libalertbridge.a $(LDLIBS) -lcmocka

test:
ifneq ($(NODEPS),1)
	@sh deploy/deps.sh --check build test $(if $(filter 1,$(FUZZ)),fuzz)
endif
	@$(MAKE) --no-print-directory $(BIN) $(UNIT_BIN)
ifeq ($(ASAN),1)
	@$(ASAN_MAKE) build-asan/alertbridge build-asan-units
endif
ifeq ($(FUZZ),1)
	@$(FUZZ_MAKE) fuzz-build
endif
	@sh tests/run.sh $(if $(filter 1,$(ASAN)),--asan build-asan build-asan/alertbridge) \
		$(if $(filter 1,$(VALGRIND)),--valgrind) \
		$(if $(filter 1,$(FUZZ)),--fuzz build-fuzz $(TEST_FUZZ_SECONDS)) $(O) $(BIN)

check:
ifneq ($(NODEPS),1)
	@sh deploy/deps.sh --check build test
endif
	@$(MAKE) --no-print-directory $(BIN) $(UNIT_BIN)
	@sh tests/run.sh --quick $(O) $(BIN)

quicktest:
ifneq ($(NODEPS),1)
	@sh deploy/deps.sh --check build test
endif
	@$(MAKE) --no-print-directory $(BIN) $(UNIT_BIN)
	@sh tests/run.sh $(O) $(BIN)

# The unit binaries of the current O (for the ASan build of make test).
build-asan-units: $(UNIT_BIN)
.PHONY: build-asan-units

unit: $(UNIT_BIN)
	@sh tests/run.sh --unit-only $(O) $(BIN)

run:
ifneq ($(NODEPS),1)
	@sh deploy/deps.sh --check build
endif
	@$(MAKE) --no-print-directory $(BIN)
	./$(BIN) serve --config.file=deploy/examples/alertbridge.yml

asan:
	@$(ASAN_MAKE) quicktest

# The configuration reference (tests/integration/test_config_reference.py fails when stale).
docs: $(BIN)
	$(E) "  GEN     docs/configuration.md"
	$(Q)./$(BIN) check-config --reference > docs/configuration.md.tmp
	$(Q)mv docs/configuration.md.tmp docs/configuration.md
.PHONY: docs

docs-screenshot: $(BIN)
	ALERTBRIDGE_BIN=$(abspath $(BIN)) STATUS_PAGE_SCREENSHOT=$(abspath docs/status-page.png) \
		python3 tests/integration/test_status_page.py

# libFuzzer: the library built with clang and coverage + ASan + UBSan in build-fuzz/,
# one binary per tests/fuzz/fuzz_*.c, each run FUZZ_SECONDS by tests/fuzz/run.sh.
fuzz:
ifneq ($(NODEPS),1)
	@sh deploy/deps.sh --check build fuzz
endif
	@$(FUZZ_MAKE) fuzz-build
	@sh tests/fuzz/run.sh build-fuzz $(FUZZ_SECONDS)

fuzz-build: $(FUZZ_BIN)

$(O)/fuzz/%: tests/fuzz/%.c $(FUZZ_HELPER_OBJ) $(O)/libalertbridge.a
	@mkdir -p $(dir $@)
	$(E) "  LINK    $@"
	$(Q)$(CC) $(ALL_CFLAGS) -fsanitize=fuzzer -o $@ $< $(FUZZ_HELPER_OBJ) $(O)/libalertbridge.a \
		$(LDLIBS)

bench:
ifneq ($(NODEPS),1)
	@sh deploy/deps.sh --check build bench
endif
	@$(MAKE) --no-print-directory $(BIN)
	@sh tests/bench/run.sh $(O) $(BIN)

bench-janitor:
ifneq ($(NODEPS),1)
	@sh deploy/deps.sh --check build bench
endif
	@$(MAKE) --no-print-directory $(BIN)
	@python3 tests/bench/janitor_bench.py $(BIN)

soak:
ifneq ($(NODEPS),1)
	@sh deploy/deps.sh --check build test
endif
	@$(MAKE) --no-print-directory $(BIN)
	@rc=0; ALERTBRIDGE_BIN=$(abspath $(BIN)) MODEL_SEEDS=$(SEEDS) MODEL_FIRST=1001 \
		python3 tests/model/lifecycle.py || rc=1; \
	ALERTBRIDGE_BIN=$(abspath $(BIN)) python3 tests/model/soak_month.py || rc=1; \
	ALERTBRIDGE_BIN=$(abspath $(BIN)) MODEL_SEEDS=$$(( $(SEEDS) > 9 ? $(SEEDS) / 10 : 1 )) MODEL_FIRST=1001 \
		MODEL_STEPS=60 MODEL_FAULT_S=8 MODEL_FEATURES=$${MODEL_FEATURES:-all} \
		python3 tests/model/campaign.py || rc=1; exit $$rc

clean:
	rm -rf build build-asan build-fuzz alertbridge

# Header dependencies of everything built, test helpers and unit tests included (a helper
# object left stale by a changed header crashed the unit tests).
-include $(LIB_OBJ:.o=.d) $(O)/main.d $(CMD_OBJ:.o=.d) $(TEST_HELPER_OBJ:.o=.d) $(UNIT_BIN:=.d)
