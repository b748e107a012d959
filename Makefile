# weir — one entry point. See README.md.
#
#   make                 library (shared + static), tests, examples
#   make test [SAN=1]    bootstrap, build, run every test; ends with "N passed, N failed"
#                        (SAN=1: ASan+UBSan in build/san)
#   make test TSAN=1     the same under ThreadSanitizer in build/tsan: unit, capi,
#                        integration and reliability binaries on both backends
#                        (tests/tsan.supp, docs/reliability.md "Races"); the
#                        scripts that install or build Go/Rust/Zig consumers skip
#   make run             start weir-demo on 127.0.0.1:8080
#   make install PREFIX=/usr/local DESTDIR=
#   make uninstall
#   make fuzz FUZZ_TIME=60
#   make bench
#   make soak SOAK_MINUTES=30   the long mixed load with pauses and switches (docs/reliability.md)
#   make clean
#
# New sources are picked up by wildcard: lib/**/*.cc and capi/*.cc make the
# library; tests/unit/**/test_*.cc, tests/integration/test_*.cc,
# tests/reliability/test_*.cc and tests/capi/test_*.c each make one test
# binary; fuzz/*.cc one fuzzer each.

VERSION_MAJOR := 0
VERSION_MINOR := 4
VERSION_PATCH := 0
VERSION := $(VERSION_MAJOR).$(VERSION_MINOR).$(VERSION_PATCH)

PREFIX ?= /usr/local
DESTDIR ?=
LIBDIR ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
BINDIR ?= $(PREFIX)/bin
FUZZ_TIME ?= 60
SAN ?= 0
TSAN ?= 0

CXX ?= g++
CC ?= gcc
CLANGXX ?= $(shell command -v clang++-14 || command -v clang++)

ifeq ($(SAN)$(TSAN),11)
$(error SAN=1 and TSAN=1 exclude each other: ASan and TSan cannot share a process)
endif
ifeq ($(SAN),1)
B := build/san
SANFLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
OPT := -O1
# What scripts/run-tests and tests/scripts/*.sh see as SAN.
SAN_MODE := 1
else ifeq ($(TSAN),1)
# ThreadSanitizer: every object, the shared library and each test link with
# -fsanitize=thread, so the runtime sees every thread of the process.
B := build/tsan
# -Wno-tsan: TSan ignores the two seq_cst fences of Worker::wake/woken (gcc
# warns); they order only the wake flag, while what a wake announces travels
# through the MPSC queues, whose release/acquire pairs TSan does see.
SANFLAGS := -fsanitize=thread -fno-omit-frame-pointer -Wno-tsan
OPT := -O1
SAN_MODE := tsan
else
B := build
SANFLAGS :=
OPT := -O2
SAN_MODE := 0
endif

WARN := -Wall -Wextra -Wno-missing-field-initializers
CPPFLAGS := -Iinclude -Ilib -DWEIR_SOURCE_DIR=\"$(CURDIR)\"
CXXFLAGS := -std=c++20 $(OPT) -g $(WARN) -fPIC -fvisibility=hidden -fvisibility-inlines-hidden $(SANFLAGS)
CFLAGS := -std=c11 $(OPT) -g $(WARN) $(SANFLAGS)
# libnghttp2 (lib/h2/): framing, HPACK and flow control of the HTTP/2 session.
NGHTTP2_CFLAGS := $(shell pkg-config --cflags libnghttp2)
NGHTTP2_LIBS := $(shell pkg-config --libs libnghttp2)
CPPFLAGS += $(NGHTTP2_CFLAGS)
LDLIBS := $(NGHTTP2_LIBS) -luring -lpthread

LIB_SRCS := $(sort $(shell find lib capi -name '*.cc'))
LIB_OBJS := $(LIB_SRCS:%.cc=$(B)/obj/%.o)
SO_REAL := $(B)/lib/libweir.so.$(VERSION)
SO_NAME := $(B)/lib/libweir.so.$(VERSION_MAJOR)
SO_LINK := $(B)/lib/libweir.so
STATIC := $(B)/lib/libweir.a

UNIT_SRCS := $(sort $(shell find tests/unit -name 'test_*.cc' 2>/dev/null))
INTEG_SRCS := $(sort $(wildcard tests/integration/test_*.cc))
RELIAB_SRCS := $(sort $(wildcard tests/reliability/test_*.cc))
CAPI_SRCS := $(sort $(wildcard tests/capi/test_*.c))
TEST_BINS := $(UNIT_SRCS:%.cc=$(B)/%) $(INTEG_SRCS:%.cc=$(B)/%) $(RELIAB_SRCS:%.cc=$(B)/%) $(CAPI_SRCS:%.c=$(B)/%)
TEST_SUPPORT := $(sort $(wildcard tests/support/*.cc))
TEST_SUPPORT_OBJS := $(TEST_SUPPORT:%.cc=$(B)/obj/%.o)
# The reliability suite's own helpers (the mixed load, the leak checks):
# every tests/reliability/*.cc that is not a test, linked into its tests only.
RELIAB_HELPERS := $(filter-out tests/reliability/test_%,$(sort $(wildcard tests/reliability/*.cc)))
RELIAB_HELPER_OBJS := $(RELIAB_HELPERS:%.cc=$(B)/obj/%.o)

EXAMPLE_C := $(sort $(wildcard examples/c/*.c))
EXAMPLE_BINS := $(patsubst examples/c/%.c,$(B)/bin/%,$(EXAMPLE_C))
BENCH_SRCS := $(sort $(wildcard bench/*/main.c bench/*/main.cc))
# The C tools (floor, uring-floor, idle, kaload): built by make so a broken one shows
# before a bench run; scripts/run-bench still builds its own copies in build/bench.
BENCH_C_BINS := $(patsubst bench/%/main.c,$(B)/bench/%,$(filter %.c,$(BENCH_SRCS)))

FUZZ_SRCS := $(sort $(wildcard fuzz/*.cc))
FUZZ_BINS := $(FUZZ_SRCS:fuzz/%.cc=build/fuzz/%)

# The differential target (fuzz/diff.cc) and its corpus replay
# (tests/unit/http1/test_diff_corpus.cc) also need llhttp's generated C, built
# beside the project and never committed: Debian's node-llhttp (which
# scripts/bootstrap installs) puts it in /usr/share/llhttp; point LLHTTP_SRC
# and LLHTTP_INC elsewhere for another copy (llhttp's release branch: src/, include/).
LLHTTP_SRC ?= /usr/share/llhttp
LLHTTP_INC ?= /usr/share/include/llhttp
LLHTTP_C := $(addprefix $(LLHTTP_SRC)/,llhttp.c api.c http.c)
HAVE_LLHTTP := $(if $(filter 4,$(words $(wildcard $(LLHTTP_C) $(LLHTTP_INC)/llhttp.h))),1)
ifneq ($(HAVE_LLHTTP),1)
FUZZ_BINS := $(filter-out build/fuzz/diff,$(FUZZ_BINS))
endif

.PHONY: all lib tests examples bench-tools test run install uninstall fuzz fuzz-smoke fuzz-llhttp-note bench soak clean bootstrap
.DEFAULT_GOAL := all

all: lib tests examples bench-tools

lib: $(SO_LINK) $(STATIC)

$(B)/obj/%.o: %.cc
	@mkdir -p $(dir $@)
	$(CXX) $(CPPFLAGS) $(CXXFLAGS) -MMD -MP -c $< -o $@

# The test fixtures see cmocka (tests/cmocka_cxx.h): they skip a test themselves.
# Kept between builds (make would delete them as intermediates of the test binaries).
.SECONDARY: $(TEST_SUPPORT_OBJS) $(RELIAB_HELPER_OBJS)
$(B)/obj/tests/support/%.o: tests/support/%.cc
	@mkdir -p $(dir $@)
	$(CXX) $(CPPFLAGS) -Itests $(CXXFLAGS) -MMD -MP -c $< -o $@

$(B)/obj/tests/reliability/%.o: tests/reliability/%.cc
	@mkdir -p $(dir $@)
	$(CXX) $(CPPFLAGS) -Itests $(CXXFLAGS) -MMD -MP -c $< -o $@

$(STATIC): $(LIB_OBJS)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(SO_REAL): $(LIB_OBJS) capi/weir.map
	@mkdir -p $(dir $@)
	$(CXX) -shared $(SANFLAGS) -Wl,-soname,libweir.so.$(VERSION_MAJOR) -Wl,--version-script=capi/weir.map \
	    $(if $(filter 1,$(SAN)),,-Wl,-z,defs) -o $@ $(LIB_OBJS) $(LDLIBS)

$(SO_NAME): $(SO_REAL)
	ln -sf $(notdir $<) $@

$(SO_LINK): $(SO_NAME)
	ln -sf $(notdir $<) $@

# Unit and integration tests link the static library: they may reach internals.
$(B)/tests/unit/%: tests/unit/%.cc $(STATIC) $(TEST_SUPPORT_OBJS)
	@mkdir -p $(dir $@)
	$(CXX) $(CPPFLAGS) -Itests $(CXXFLAGS) $(UNIT_EXTRA) -MMD -MP -o $@ $< $(TEST_SUPPORT_OBJS) $(UNIT_EXTRA_OBJS) $(STATIC) -lcmocka $(LDLIBS)

# llhttp (strict mode, as the differential fuzz target builds it) for the
# replay of fuzz/corpus/diff; without it that test skips and says why.
LLHTTP_OBJS := $(addprefix $(B)/obj/llhttp/,llhttp.o api.o http.o)
$(B)/obj/llhttp/%.o: $(LLHTTP_SRC)/%.c
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 $(OPT) -g -w $(SANFLAGS) -DLLHTTP_STRICT_MODE=1 -I$(LLHTTP_INC) -c $< -o $@
ifeq ($(HAVE_LLHTTP),1)
$(B)/tests/unit/http1/test_diff_corpus: UNIT_EXTRA := -DWEIR_HAVE_LLHTTP -I$(LLHTTP_INC)
$(B)/tests/unit/http1/test_diff_corpus: UNIT_EXTRA_OBJS := $(LLHTTP_OBJS)
$(B)/tests/unit/http1/test_diff_corpus: $(LLHTTP_OBJS)
endif

$(B)/tests/integration/%: tests/integration/%.cc $(STATIC) $(TEST_SUPPORT_OBJS)
	@mkdir -p $(dir $@)
	$(CXX) $(CPPFLAGS) -Itests $(CXXFLAGS) -MMD -MP -o $@ $< $(TEST_SUPPORT_OBJS) $(STATIC) -lcmocka $(LDLIBS)

# The reliability suite (docs/reliability.md): abuse, exhaustion, races, leaks.
# CI-sized by default; make soak runs the same binaries long.
$(B)/tests/reliability/%: tests/reliability/%.cc $(STATIC) $(TEST_SUPPORT_OBJS) $(RELIAB_HELPER_OBJS)
	@mkdir -p $(dir $@)
	$(CXX) $(CPPFLAGS) -Itests $(CXXFLAGS) -MMD -MP -o $@ $< $(TEST_SUPPORT_OBJS) $(RELIAB_HELPER_OBJS) $(STATIC) -lcmocka $(LDLIBS)

# ABI tests are plain C against the shared library, as a consumer would be.
$(B)/tests/capi/%: tests/capi/%.c $(SO_LINK)
	@mkdir -p $(dir $@)
	$(CC) -Iinclude $(CFLAGS) -MMD -MP -o $@ $< -L$(B)/lib -Wl,-rpath,$(CURDIR)/$(B)/lib -lweir -lcmocka

# scripts/run-tests asks it which backends exist before running integration tests on each.
$(B)/tests/support/backend_probe: tests/support/backend_probe.c $(SO_LINK)
	@mkdir -p $(dir $@)
	$(CC) -Iinclude $(CFLAGS) -o $@ $< -L$(B)/lib -Wl,-rpath,$(CURDIR)/$(B)/lib -lweir

tests: $(TEST_BINS) $(B)/tests/support/backend_probe

$(B)/bin/%: examples/c/%.c $(wildcard examples/c/*.h) $(SO_LINK)
	@mkdir -p $(dir $@)
	$(CC) -Iinclude $(CFLAGS) -o $@ $< -L$(B)/lib -Wl,-rpath,$(CURDIR)/$(B)/lib -lweir -lpthread

examples: $(EXAMPLE_BINS)

# gnu11: the floors use memmem and the GNU socket flags. Only uring-floor
# links liburing: the epoll floor is measured without it.
$(B)/bench/uring-floor: BENCH_LIBS := -luring
$(B)/bench/%: bench/%/main.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -std=gnu11 -o $@ $< $(BENCH_LIBS)

bench-tools: $(BENCH_C_BINS)

bootstrap:
	@scripts/bootstrap

JOBS ?= $(shell nproc 2>/dev/null || echo 2)

test: bootstrap
	$(MAKE) -j$(JOBS) all SAN=$(SAN) TSAN=$(TSAN)
	@scripts/run-tests $(B) $(SAN_MODE)

run: bootstrap
	$(MAKE) lib examples
	@if [ -x $(B)/bin/weir-demo ]; then exec $(B)/bin/weir-demo --addr 127.0.0.1:8080; \
	else echo "weir-demo is not built yet: the engine has not landed (see issues)"; exit 1; fi

install: $(SO_LINK) $(STATIC)
	install -d $(DESTDIR)$(LIBDIR) $(DESTDIR)$(INCLUDEDIR) $(DESTDIR)$(LIBDIR)/pkgconfig
	install -m 0644 include/weir.h $(DESTDIR)$(INCLUDEDIR)/weir.h
	install -m 0755 $(SO_REAL) $(DESTDIR)$(LIBDIR)/
	ln -sf libweir.so.$(VERSION) $(DESTDIR)$(LIBDIR)/libweir.so.$(VERSION_MAJOR)
	ln -sf libweir.so.$(VERSION_MAJOR) $(DESTDIR)$(LIBDIR)/libweir.so
	install -m 0644 $(STATIC) $(DESTDIR)$(LIBDIR)/
	sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@LIBDIR@|$(LIBDIR)|g' -e 's|@INCLUDEDIR@|$(INCLUDEDIR)|g' \
	    -e 's|@VERSION@|$(VERSION)|g' capi/weir.pc.in > $(DESTDIR)$(LIBDIR)/pkgconfig/weir.pc

uninstall:
	rm -f $(DESTDIR)$(INCLUDEDIR)/weir.h $(DESTDIR)$(LIBDIR)/libweir.so* $(DESTDIR)$(LIBDIR)/libweir.a \
	    $(DESTDIR)$(LIBDIR)/pkgconfig/weir.pc

# ---- fuzzing (clang + libFuzzer, ASan + UBSan)
FUZZ_FLAGS := -std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -Iinclude -Ilib
# Only the pure parts of lib/ (never capi/: lib/ stands on its own); the
# oracles in fuzz/oracle/ call lib/http1 and lib/conn directly.
FUZZ_LIB_SRCS := $(filter lib/http1/% lib/conn/% lib/h2/% lib/proxy/% lib/util/% lib/files/%,$(LIB_SRCS))

FUZZ_HEADERS := $(shell find include lib fuzz/oracle -name '*.h')

build/fuzz/%: fuzz/%.cc $(FUZZ_LIB_SRCS) $(FUZZ_HEADERS)
	@mkdir -p $(dir $@)
	@if [ -z "$(CLANGXX)" ]; then echo "clang++ not found: run scripts/bootstrap"; exit 1; fi
	$(CLANGXX) $(FUZZ_FLAGS) -o $@ $< $(FUZZ_LIB_SRCS) $(LDLIBS)

# The worker target drives lib/loop, which stands on the rest of lib/ (its
# backends, transplant, handover): all of lib/, still never capi/. Built as
# objects of their own (instrumented, -MMD) so only what changed recompiles
# and make -j builds them side by side; the other targets keep their short
# FUZZ_LIB_SRCS and are built as before.
FUZZ_WORKER_OBJS := $(patsubst %.cc,build/fuzz/obj/%.o,$(filter lib/%,$(LIB_SRCS)))
.SECONDARY: $(FUZZ_WORKER_OBJS)
build/fuzz/obj/%.o: %.cc
	@mkdir -p $(dir $@)
	@if [ -z "$(CLANGXX)" ]; then echo "clang++ not found: run scripts/bootstrap"; exit 1; fi
	$(CLANGXX) $(subst -fsanitize=fuzzer,-fsanitize=fuzzer-no-link,$(FUZZ_FLAGS)) -MMD -MP -c $< -o $@

build/fuzz/worker: fuzz/worker.cc $(FUZZ_WORKER_OBJS) $(FUZZ_HEADERS)
	@mkdir -p $(dir $@)
	$(CLANGXX) $(FUZZ_FLAGS) -o $@ $< $(FUZZ_WORKER_OBJS) $(LDLIBS)

# llhttp instrumented for coverage too, so the fuzzer also explores its states.
FUZZ_LLHTTP_OBJS := $(addprefix build/fuzz/llhttp/,llhttp.o api.o http.o)
build/fuzz/llhttp/%.o: $(LLHTTP_SRC)/%.c
	@mkdir -p $(dir $@)
	@if [ -z "$(CLANGXX)" ]; then echo "clang++ not found: run scripts/bootstrap"; exit 1; fi
	$(CLANGXX) -x c -std=gnu11 -O1 -g -w -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all \
	    -DLLHTTP_STRICT_MODE=1 -I$(LLHTTP_INC) -c $< -o $@

build/fuzz/diff: fuzz/diff.cc $(FUZZ_LIB_SRCS) $(FUZZ_HEADERS) $(FUZZ_LLHTTP_OBJS)
	@mkdir -p $(dir $@)
	$(CLANGXX) $(FUZZ_FLAGS) -I$(LLHTTP_INC) -o $@ $< $(FUZZ_LIB_SRCS) $(FUZZ_LLHTTP_OBJS) $(LDLIBS)

fuzz-llhttp-note:
	@if [ "$(HAVE_LLHTTP)" != 1 ]; then echo "fuzz: diff skipped: llhttp's C sources not found in $(LLHTTP_SRC) and $(LLHTTP_INC) (scripts/bootstrap installs node-llhttp)"; fi

fuzz: $(FUZZ_BINS) fuzz-llhttp-note
	@scripts/run-fuzz $(FUZZ_TIME) $(FUZZ_BINS)

# A few seconds each, from make test when clang is present.
fuzz-smoke: $(FUZZ_BINS) fuzz-llhttp-note
	@FUZZ_SEED=1 FUZZ_RUNS=30000 scripts/run-fuzz 5 $(FUZZ_BINS)

bench: bootstrap
	$(MAKE) all
	@scripts/run-bench

# The soak (docs/reliability.md, "The soak"): tests/reliability/test_soak's
# mixed load for SOAK_MINUTES on epoll and io_uring alternating, with
# pause/resume cycles and switches, then the leak and conservation checks;
# the report goes to build/soak/report.md.
SOAK_MINUTES ?= 30
soak: bootstrap
	$(MAKE) -j$(JOBS) all SAN=$(SAN)
	@scripts/run-soak $(B) $(SOAK_MINUTES)

clean:
	rm -rf build

-include $(shell find build -name '*.d' 2>/dev/null)
