# egang build. Variants: make SANITIZE=address,undefined | SANITIZE=thread,
# make CC=clang, make DEBUG=1 (protocol assertions + fault injection).
# Every build is -Werror; SIMD code selects its ISA per function with
# __attribute__((target)), so no global -march is needed and the binary runs
# on any x86-64.

# make ARCH=aarch64: a cross build for ARM64 with Debian's cross compiler,
# in build/aarch64-linux-gnu-gcc-<variant> (README "ARM64"; make test-arm64
# runs it under qemu-user).
ARCH ?=
ifeq ($(origin CC),default)
  CC := $(if $(filter aarch64,$(ARCH)),aarch64-linux-gnu-gcc,gcc)
endif
SANITIZE ?=
DEBUG    ?= 0
O        ?= 2

comma := ,
ifeq ($(SANITIZE),)
  VARIANT := $(if $(filter 1,$(DEBUG)),debug,release)
else
  VARIANT := san-$(subst $(comma),-,$(SANITIZE))
endif
# make SCX=1: the sched_ext backend (bpf/, src/scx/; README "sched_ext").
# A separate variant (build/<cc>-<variant>-scx) because it needs libbpf >= 1.4,
# bpftool, clang-19 and a vmlinux BTF with sched_ext: without them the
# ordinary build stays as it is and `egang scx` says it has no support.
SCX ?= 0
ifeq ($(SCX),1)
  VARIANT := $(VARIANT)-scx
endif
CCNAME := $(notdir $(firstword $(CC)))
B      ?= build/$(CCNAME)-$(VARIANT)

WARN    := -Wall -Wextra -Werror -Wshadow -Wno-unused-parameter -Wstrict-prototypes -Wvla
CFLAGS  += -std=gnu11 -O$(O) -g $(WARN) -Isrc -pthread -fno-strict-aliasing \
           -D_GNU_SOURCE -MMD -MP
LDLIBS  += -lhwloc -lpcre2-8 -ljansson -lmicrohttpd -lcurl -lm -pthread
# ARM64 has FMA in its base ISA and GCC fuses a*b+c by default there, which
# x86-64 (no FMA without a target attribute) never does: off, so that the
# float code outside the kernels rounds as on x86 (same logits).
ifneq ($(filter aarch64%,$(shell $(CC) -dumpmachine 2>/dev/null)),)
  CFLAGS  += -ffp-contract=off
endif
ifneq ($(SANITIZE),)
  CFLAGS  += -fsanitize=$(SANITIZE) -fno-omit-frame-pointer -DEGANG_SANITIZE=1
  LDFLAGS += -fsanitize=$(SANITIZE)
  # thread sanitizer needs its own debug build for the protocol checks
  ifneq ($(findstring thread,$(SANITIZE)),)
    DEBUG := 1
  endif
endif
ifeq ($(DEBUG),1)
  CFLAGS += -DEGANG_DEBUG=1
endif
ifeq ($(SCX),1)
  BPF_CLANG ?= clang-19
  BPFTOOL   ?= bpftool
  # the running kernel's BTF when it has sched_ext, else the test kernel's
  VMLINUX_BTF ?= $(if $(shell grep -qs sched_ext_ops /sys/kernel/btf/vmlinux && echo y),/sys/kernel/btf/vmlinux,build/kernel/vmlinux)
  CFLAGS  += -DEGANG_SCX=1 -I$(B)/bpf
  LDLIBS  += $(shell pkg-config --libs libbpf)
endif

LIB_SRC  := $(sort $(filter-out src/cli/%,$(wildcard src/*/*.c)))
CLI_SRC  := $(sort $(wildcard src/cli/*.c))
TEST_SRC := $(sort $(wildcard tests/test_*.c))
LIB_OBJ  := $(LIB_SRC:%.c=$(B)/%.o)
CLI_OBJ  := $(CLI_SRC:%.c=$(B)/%.o)
TESTS    := $(TEST_SRC:tests/%.c=$(B)/tests/%) $(B)/tests/test_gang_debug
SH_TESTS := $(filter-out tests/lib.sh tests/run.sh,$(sort $(wildcard tests/*.sh)))

.PHONY: kernel test-scx scx-switching deps-scx
.PHONY: all deps test test-run test-large verify-long torture verify fuzz fuzz-run bench clean demo
all: $(B)/egang egang

# ./egang points at the release build of the last `make` (never a sanitizer or
# debug one); phony, so `make` after `make CC=clang` points it back at gcc's
.PHONY: egang
egang: $(B)/egang
ifeq ($(VARIANT)$(ARCH),release)
	@ln -sf $(B)/egang egang
endif

# V=1 shows the full command lines
Q := $(if $(filter 1,$(V)),,@)

$(B)/libegang.a: $(LIB_OBJ)
	@rm -f $@
	$(Q)ar rcs $@ $^

$(B)/egang: $(CLI_OBJ) $(B)/libegang.a
	@echo "  LD  $@"
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(B)/%.o: %.c
	@mkdir -p $(dir $@)
	@echo "  CC  $<"
	$(Q)$(CC) $(CFLAGS) -c -o $@ $<

# the benches' gnuplot scripts are built into plot.o (.incbin, bench/plot.c);
# the assembler finds them from the repository root whatever the compiler's
# working directory
$(B)/src/bench/plot.o: $(wildcard tools/plot/*.gp)
$(B)/src/bench/plot.o: CFLAGS += -Wa,-I$(CURDIR)

$(B)/tests/%: tests/%.c $(B)/libegang.a tests/testutil.h
	@mkdir -p $(dir $@)
	@echo "  CC  $<"
	$(Q)$(CC) $(CFLAGS) -Itests -o $@ $< $(B)/libegang.a $(LDLIBS) -lcmocka

# The gang's protocol tests once more with EGANG_DEBUG (per-wave protocol
# assertions, fault injection): gang.c is compiled into the test, so the
# archive's release gang.o is not linked.
$(B)/tests/test_gang_debug: tests/test_gang.c src/gang/gang.c src/gang/gang.h $(B)/libegang.a
	@mkdir -p $(dir $@)
	@echo "  CC  $@"
	$(Q)$(CC) $(CFLAGS) -DEGANG_DEBUG=1 -Itests -o $@ tests/test_gang.c src/gang/gang.c $(B)/libegang.a $(LDLIBS) -lcmocka

# The whole suite: unit tests (cmocka), CLI tests (shell), the protocol model.
# `make test` first installs missing Debian packages (tools/deps.sh).
test: deps
	@$(MAKE) --no-print-directory test-run

# A sanitizer build leaves out the protocol model check (tests/verify.sh):
# spin's verifier is not egang's code, and it is the suite's longest test.
ifneq ($(SANITIZE),)
SH_TESTS := $(filter-out tests/verify.sh,$(SH_TESTS))
endif

test-run: $(B)/egang egang $(TESTS)
	@EGANG=$(abspath $(B)/egang) EGANG_SCX_BUILD=$(SCX) tests/run.sh $(TESTS) $(SH_TESTS)

deps:
	@tools/deps.sh

# Longer tiers, run before resolving an issue (not in CI's 20 minutes).
test-large: deps $(B)/egang egang
	@EGANG=$(abspath $(B)/egang) EGANG_LARGE=1 tests/run.sh tests/large/*.sh

torture:
	$(MAKE) DEBUG=1 $(B:release=debug)/tests/test_gang
	EGANG_TORTURE=1 $(B:release=debug)/tests/test_gang

verify:
	@tests/verify.sh

# also checks that every fair run ends (about 2 minutes more)
verify-long:
	@VERIFY_LONG=1 tests/verify.sh

fuzz:
	$(MAKE) -f fuzz/Makefile

demo: deps
	@$(MAKE) --no-print-directory $(B)/egang egang
	@tools/demo.sh

clean:
	rm -rf build egang

# ---- sched_ext backend (README "sched_ext") ----
ifeq ($(SCX),1)
$(B)/src/scx/scx.o: $(B)/bpf/egang.skel.h

$(B)/bpf/vmlinux.h: $(VMLINUX_BTF)
	@mkdir -p $(dir $@)
	@echo "  BTF $<"
	$(Q)$(BPFTOOL) btf dump file $< format c > $@.tmp && mv $@.tmp $@

$(B)/bpf/egang.bpf.o: bpf/egang.bpf.c bpf/egang_scx.h bpf/egang_kguard.h $(B)/bpf/vmlinux.h
	@echo "  BPF $<"
	$(Q)$(BPF_CLANG) -g -O2 -target bpf -mcpu=v3 -D__TARGET_ARCH_x86 -Wall -Werror \
		-I$(B)/bpf -Ibpf -c $< -o $@

# bpftool 7.5 writes the libbpf 1.5 skeleton field map->link (auto-attach of
# struct_ops maps), which libbpf 1.4's bpf_map_skeleton lacks; egang attaches
# its one scheduler map by hand and must never attach the shadow maps, so the
# lines are dropped.
$(B)/bpf/egang.skel.h: $(B)/bpf/egang.bpf.o
	@echo "  GEN $@"
	$(Q)$(BPFTOOL) gen skeleton $< name egang_bpf | sed '/map->link = /d' > $@.tmp && mv $@.tmp $@
endif

deps-scx:
	@tools/deps-scx.sh

# the sched_ext test kernel (tools/scx-kernel/), cached by content
# outside the clone
kernel: deps-scx
	@tools/scx-kernel/build.sh build/kernel >/dev/null

# boots the test kernel in QEMU (-smp 4, TCG) and runs tests/scx/guest.sh in it
test-scx: kernel
	@$(MAKE) --no-print-directory SCX=1 VMLINUX_BTF=build/kernel/vmlinux all
	@tests/scx/run.sh $(abspath build/$(CCNAME)-release-scx)

# the switching experiment on the sched_ext backend in the guest, every
# arm (a figure, not a test: ~15-30 minutes under TCG); writes
# doc/akts/switching-scx.{txt,png} and doc/akts/switching-scx/*.csv
# (tools/figures/akts/switching-scx.sh)
scx-switching: kernel
	@$(MAKE) --no-print-directory SCX=1 VMLINUX_BTF=build/kernel/vmlinux all
	@tools/figures/akts/switching-scx.sh $(abspath build/$(CCNAME)-release-scx)

# ---- a fleet behind HAProxy, and the soak (README "A fleet") ----
# make test-fleet: three replicas behind HAProxy on loopback
# (tools/fleet/), each scenario of tests/fleet/ under 16-client streaming
# load, one at a time (each runs a whole fleet; about a minute on 2
# cores), then each scenario's request counts. HAProxy is Debian's
# package (tools/deps-fleet.sh); where it is missing and cannot be
# installed the target says SKIP, or fails under CI (CI=true).
# make soak: SOAK_SECONDS (600) of normal, hostile and disconnecting
# clients against one `serve --parallel 8`, its RSS, threads and open
# files sampled to SOAK_DIR (doc/soak) as CSV and a PNG; fails when they
# grow after the warm-up (tools/fleet/soak.sh; not in CI).
.PHONY: test-fleet test-fleet-run soak
FLEET_TESTS := $(filter-out tests/fleet/lib.sh,$(sort $(wildcard tests/fleet/*.sh)))
FLEET_REPORT = $(abspath $(B))/fleet-report.txt
SOAK_SECONDS ?= 600
SOAK_DIR ?= doc/soak

test-fleet: deps
	@if tools/deps-fleet.sh; then $(MAKE) --no-print-directory test-fleet-run; \
	elif [ "$${CI:-}" = true ]; then \
		echo "FAIL: make test-fleet (haproxy is missing and tools/deps-fleet.sh could not install it; under CI)"; exit 1; \
	else echo "SKIP: make test-fleet (haproxy is missing and tools/deps-fleet.sh could not install it)"; fi

test-fleet-run: $(B)/egang egang
	@mkdir -p $(B) && rm -f $(FLEET_REPORT); \
	EGANG=$(abspath $(B)/egang) FLEET_REPORT=$(FLEET_REPORT) TEST_JOBS=1 \
		tests/run.sh $(FLEET_TESTS); rc=$$?; \
	cat $(FLEET_REPORT) 2>/dev/null; exit $$rc

soak: deps
	@$(MAKE) --no-print-directory $(B)/egang egang
	@EGANG=$(abspath $(B)/egang) tools/fleet/soak.sh $(SOAK_SECONDS) $(SOAK_DIR)

# ---- ARM64 (README "ARM64") ----
# Cross-builds egang and the unit tests for aarch64, runs them under
# qemu-user (with and without the dotprod extension) and checks a
# stories260K generation against this machine's (tests/arm64/run.sh).
# ARM64_QUICK=1: only the kernel twin tests and the generation (CI).
.PHONY: deps-arm64 test-arm64
ARM64_CC := aarch64-linux-gnu-gcc
ARM64_B  := build/$(ARM64_CC)-$(VARIANT)
ARM64_TESTS := $(if $(filter 1,$(ARM64_QUICK)),$(ARM64_B)/tests/test_kernels \
	$(ARM64_B)/tests/test_gemm,$(patsubst $(B)/%,$(ARM64_B)/%,$(TESTS)))
deps-arm64:
	@tools/deps-arm64.sh

test-arm64: deps-arm64
	@$(MAKE) --no-print-directory $(B)/egang
	@$(MAKE) --no-print-directory ARCH=aarch64 CC=$(ARM64_CC) B=$(ARM64_B) \
		$(ARM64_B)/egang $(ARM64_TESTS)
	@ARM64_QUICK=$(ARM64_QUICK) tests/arm64/run.sh $(abspath $(B)) $(abspath $(ARM64_B))

-include $(shell find build -name '*.d' 2>/dev/null)
