# alertbridge - one non-recursive Makefile.
#
# Targets:
#   make            build ./alertbridge
#   make test       install missing test dependencies, then unit + integration tests
#   make run        build and serve deploy/examples/alertbridge.yml (dry-run without a GitHub token)
#   make asan       unit + integration tests under AddressSanitizer + UBSan (build-asan/)
#   make bench      wrk against /v1/webhook and a bare libmicrohttpd responder
#   make deps       install (as root) or name the Debian packages still missing
#   make clean
#
# Knobs (make VAR=value):
#   CC        compiler (default cc)
#   WERROR    1 (default) adds -Werror; WERROR=0 to turn it off
#   O         build directory (default build)
#   SAN       extra compile+link flags (make asan sets the sanitizers)
#   NODEPS    1 skips the dependency check (deploy/deps.sh)
#   V         1 prints every command (default: one short line per file)

CC ?= cc
WERROR ?= 1
O ?= build
SAN ?=
NODEPS ?=
V ?=
ifeq ($(V),1)
Q :=
E := @true
else
Q := @
E := @echo
endif

PKGS := libmicrohttpd libcurl jansson sqlite3 yaml-0.1 libjwt libcrypto gnutls
WARN := -Wall -Wextra -Wpedantic -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
	-Wformat=2 -Wvla -fno-common
ifeq ($(WERROR),1)
WARN += -Werror
endif
PKG_CFLAGS = $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS = $(shell pkg-config --libs $(PKGS) 2>/dev/null)
CFLAGS ?= -O2 -g
ALL_CFLAGS = -std=c11 -D_GNU_SOURCE $(WARN) $(CFLAGS) $(SAN) -I. $(PKG_CFLAGS) -MMD -MP
LDLIBS = $(PKG_LIBS) -lpthread -lm

LIB_SRC := $(sort $(wildcard core/*.c bridge/*.c janitor/*.c))
TEMPLATES := $(sort $(wildcard templates/*.mustache))
LIB_OBJ := $(LIB_SRC:%.c=$(O)/%.o) $(O)/gen/embed.o
UNIT_SRC := $(sort $(wildcard tests/unit/test_*.c))
UNIT_BIN := $(UNIT_SRC:tests/unit/%.c=$(O)/tests/%)
TEST_HELPER_SRC := $(sort $(wildcard tests/unit/helpers/*.c))
TEST_HELPER_OBJ := $(TEST_HELPER_SRC:%.c=$(O)/%.o)
BIN := $(if $(filter build,$(O)),alertbridge,$(O)/alertbridge)

.SECONDARY:

.PHONY: all test unit integration run asan bench deps clean fmt

all: $(BIN)

deps:
	@sh deploy/deps.sh build test

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

$(O)/libalertbridge.a: $(LIB_OBJ)
	@rm -f $@
	$(E) "  AR      $@"
	$(Q)ar rcs $@ $^

$(BIN): $(O)/main.o $(O)/libalertbridge.a
	$(E) "  LINK    $@"
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ $^ $(LDLIBS)

$(O)/tests/%: tests/unit/%.c $(TEST_HELPER_OBJ) $(O)/libalertbridge.a
	@mkdir -p $(dir $@)
	$(E) "  LINK    $@"
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ $< $(TEST_HELPER_OBJ) $(O)/libalertbridge.a $(LDLIBS) -lcmocka

test:
ifneq ($(NODEPS),1)
	@sh deploy/deps.sh build test
endif
	@$(MAKE) --no-print-directory $(BIN) $(UNIT_BIN)
	@sh tests/run.sh $(O) $(BIN)

unit: $(UNIT_BIN)
	@sh tests/run.sh --unit-only $(O) $(BIN)

run:
ifneq ($(NODEPS),1)
	@sh deploy/deps.sh build
endif
	@$(MAKE) --no-print-directory $(BIN)
	./$(BIN) serve --config.file=deploy/examples/alertbridge.yml

asan:
	@$(MAKE) --no-print-directory test O=build-asan \
		CFLAGS="-O1 -g -fno-omit-frame-pointer" \
		SAN="-fsanitize=address,undefined -fno-sanitize-recover=all"

bench:
ifneq ($(NODEPS),1)
	@sh deploy/deps.sh build bench
endif
	@$(MAKE) --no-print-directory $(BIN)
	@sh tests/bench/run.sh $(O) $(BIN)

fmt:
	clang-format -i main.c core/*.[ch] bridge/*.[ch] janitor/*.[ch] tests/unit/*.c

clean:
	rm -rf build build-asan alertbridge

-include $(LIB_OBJ:.o=.d) $(O)/main.d
