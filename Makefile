# kcoord: one Makefile for the daemon, its tests, fuzz targets and tools.
#
#   make                 build build/kcoord
#   make run             install missing dependencies, build, start on 127.0.0.1:9092
#   make test            install missing dependencies, build, run the include check (no two
#                        rooms of src/ include each other), unit, fuzz-corpus and
#                        integration tests
#   make test SANITIZE=1 the same under AddressSanitizer + UndefinedBehaviorSanitizer
#   make fuzz            build the libFuzzer targets (clang)
#   make gen             regenerate src/proto/gen_* and tests/support/gen_wire.py from
#                        proto/*.kdef
#   make format-check    clang-format check of hand-written sources
#   make bench           benchmarks (load time, commit/join/heartbeat/memory against kcoord
#                        and a reference Kafka); writes docs/BENCHMARKS.md
#   make bench-hostile   hostile clients, clock steps and bytes on disk against the current
#                        build; rewrites the section "Hostile load" of docs/BENCHMARKS.md
#   make chaos           a 3-node cluster through rounds of faults, no acknowledged commit
#                        lost; writes docs/RELIABILITY.md (CHAOS_ARGS=--short: a few rounds)
#   make log-interop     kcoord's log read by Kafka's DumpLogSegments, a Kafka broker's
#                        __consumer_offsets loaded by kcoord
#   make compat          scenarios with real clients against kcoord and a reference Kafka, and the
#                        container smoke test (tests/docker/docker_smoke.py);
#                        writes docs/COMPATIBILITY.md
#
# Quiet unless V=1. Objects go to build/ (build/san/ with SANITIZE=1).

CC ?= cc
# The C++ files (src/group/regex_re2.cc and src/net/principal_re2.cc, RE2 behind C interfaces)
# are compiled with the C++ compiler that matches CC: clang++ for clang (clang-14 ->
# clang++-14), $(CXX) (g++) otherwise.
ifneq ($(findstring clang,$(CC)),)
CXX := $(subst clang,clang++,$(CC))
# The link is driven by the C compiler: have clang bring the sanitizers' C++ runtime too.
CLANG_LDFLAGS := -fsanitize-link-c++-runtime
endif
PKGS := libuv libzstd libssl libcrypto raft
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS := $(shell pkg-config --libs $(PKGS) 2>/dev/null || echo -luv -lzstd -lssl -lcrypto -lraft)

ifeq ($(SANITIZE),1)
BUILD := build/san
OPT := -O1 -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all
else
BUILD := build
OPT := -O2
endif

CFLAGS_ALL := -std=c11 -Wall -Wextra -Werror -D_GNU_SOURCE -g $(OPT) -Isrc $(PKG_CFLAGS) $(CFLAGS)
CXXFLAGS_ALL := -std=c++17 -Wall -Wextra -Werror -g $(OPT) -Isrc $(CXXFLAGS)
LDFLAGS_ALL := $(OPT) $(CLANG_LDFLAGS) $(LDFLAGS)
LIBS := $(PKG_LIBS) -lre2 -lstdc++ -lpthread -lm

ifeq ($(V),1)
Q :=
else
Q := @
endif

SRCS := $(shell find src -name '*.c' | sort)
LIB_SRCS := $(filter-out src/main.c,$(SRCS))
LIB_CXX_SRCS := $(shell find src -name '*.cc' | sort)
LIB_OBJS := $(LIB_SRCS:%.c=$(BUILD)/%.o) $(LIB_CXX_SRCS:%.cc=$(BUILD)/%.o)

UNIT_SRCS := $(sort $(wildcard tests/unit/test_*.c))
UNIT_BINS := $(UNIT_SRCS:tests/unit/%.c=$(BUILD)/tests/unit/%)
UNIT_SUPPORT_OBJS := $(BUILD)/tests/unit/gen_fill.o $(BUILD)/tests/unit/json_check.o \
                     $(BUILD)/tests/unit/coord_fixture.o

INTEG_SRCS := $(sort $(wildcard tests/integration/test_*.c))
INTEG_BINS := $(INTEG_SRCS:tests/integration/%.c=$(BUILD)/tests/integration/%)
INTEG_SUPPORT_OBJS := $(BUILD)/tests/integration/harness.o

FUZZ_SRCS := $(sort $(wildcard tests/fuzz/fuzz_*.c))
FUZZ_REPLAY_BINS := $(FUZZ_SRCS:tests/fuzz/%.c=$(BUILD)/tests/fuzz/%_replay)
FUZZ_BINS := $(FUZZ_SRCS:tests/fuzz/%.c=build/fuzz/%)

.SECONDARY:

.PHONY: all run test unit integration fuzz-replay fuzz gen gen-check deps clean format-check

all: $(BUILD)/kcoord

$(BUILD)/kcoord: $(BUILD)/src/main.o $(BUILD)/libkcoord.a
	@echo "  LD      $@"
	$(Q)$(CC) $(LDFLAGS_ALL) -o $@ $^ $(LIBS)

$(BUILD)/libkcoord.a: $(LIB_OBJS)
	@echo "  AR      $@"
	$(Q)rm -f $@ && ar rcs $@ $^

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	@echo "  CC      $<"
	$(Q)$(CC) $(CFLAGS_ALL) -MMD -MP -c -o $@ $<

$(BUILD)/%.o: %.cc
	@mkdir -p $(dir $@)
	@echo "  CXX     $<"
	$(Q)$(CXX) $(CXXFLAGS_ALL) -MMD -MP -c -o $@ $<

$(BUILD)/tests/unit/%: $(BUILD)/tests/unit/%.o $(UNIT_SUPPORT_OBJS) $(BUILD)/libkcoord.a
	@echo "  LD      $@"
	$(Q)$(CC) $(LDFLAGS_ALL) -o $@ $^ -lcmocka $(LIBS)

# test_api answers to a fake connection and fails chosen allocations: the network calls of the
# API room, the allocator, kc_coord_hold and kc_api_fail are replaced by the test's own (see its
# header comment).
$(BUILD)/tests/unit/test_api: LDFLAGS_ALL += -Wl,--wrap=kc_slot_reply,--wrap=kc_slot_close \
	-Wl,--wrap=kc_slot_arena,--wrap=kc_conn_peer,--wrap=malloc,--wrap=realloc \
	-Wl,--wrap=kc_coord_hold,--wrap=kc_api_fail,--wrap=kc_conn_principal

# test_quorum answers DescribeQuorum and renders the cluster's views from a fake cluster status:
# the cluster room's calls are replaced by its own, and so are the network calls of the API room
# (see its header comment). test_obs serves the cluster's endpoints from the same kind of fake.
$(BUILD)/tests/unit/test_quorum: LDFLAGS_ALL += -Wl,--wrap=kc_cluster_status \
	-Wl,--wrap=kc_cluster_broker,--wrap=kc_slot_reply,--wrap=kc_slot_close \
	-Wl,--wrap=kc_cluster_id,--wrap=kc_cluster_add_voter,--wrap=kc_cluster_remove_voter \
	-Wl,--wrap=kc_slot_arena,--wrap=kc_conn_peer,--wrap=kc_conn_principal \
	-Wl,--wrap=kc_slot_reply_close
$(BUILD)/tests/unit/test_obs: LDFLAGS_ALL += -Wl,--wrap=kc_cluster_status

$(BUILD)/tests/integration/%: $(BUILD)/tests/integration/%.o $(INTEG_SUPPORT_OBJS) $(BUILD)/libkcoord.a
	@echo "  LD      $@"
	$(Q)$(CC) $(LDFLAGS_ALL) -o $@ $^ -lrdkafka -lcmocka $(LIBS)

# fuzz_sasl_entry answers to a connection without a socket: the network calls that write are
# replaced by the target's own (see its header comment).
FUZZ_WRAP_fuzz_sasl_entry := -Wl,--wrap=kc_slot_reply,--wrap=kc_slot_close \
	-Wl,--wrap=kc_slot_reply_close

$(BUILD)/tests/fuzz/%_replay: $(BUILD)/tests/fuzz/%.o $(BUILD)/tests/fuzz/replay.o $(BUILD)/libkcoord.a
	@echo "  LD      $@"
	$(Q)$(CC) $(LDFLAGS_ALL) $(FUZZ_WRAP_$*) -o $@ $^ $(LIBS)

# libFuzzer builds always use clang, with their own objects.
FUZZ_CFLAGS := -std=c11 -Wall -Wextra -Werror -D_GNU_SOURCE -g -O1 -Isrc $(PKG_CFLAGS) \
	-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
FUZZ_CXXFLAGS := -std=c++17 -Wall -Wextra -Werror -g -O1 -Isrc \
	-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined
FUZZ_CXX_OBJS := $(LIB_CXX_SRCS:%.cc=build/fuzz/obj/%.o)
build/fuzz/obj/%.o: %.cc
	@mkdir -p $(dir $@)
	@echo "  CXX     $<"
	$(Q)clang++ $(FUZZ_CXXFLAGS) -c -o $@ $<
build/fuzz/%: tests/fuzz/%.c $(LIB_SRCS) $(FUZZ_CXX_OBJS)
	@mkdir -p $(dir $@)
	@echo "  FUZZ    $@"
	$(Q)clang $(FUZZ_CFLAGS) -fsanitize-link-c++-runtime $(FUZZ_WRAP_$*) -o $@ $< $(LIB_SRCS) \
		$(FUZZ_CXX_OBJS) $(LIBS)

run: deps $(BUILD)/kcoord
	$(BUILD)/kcoord -c conf/kcoord.conf

test: deps gen-check
	$(Q)$(MAKE) --no-print-directory $(BUILD)/kcoord $(UNIT_BINS) $(INTEG_BINS) $(FUZZ_REPLAY_BINS)
	$(Q)scripts/run-tests $(BUILD)

unit: $(UNIT_BINS)
	$(Q)for t in $(UNIT_BINS); do $$t || exit 1; done

fuzz: $(FUZZ_BINS)

# The C codecs (src/proto/gen_*) and the test harness's Python wire client
# (tests/support/gen_wire.py) both come from proto/*.kdef; gen-check fails when either is stale.
gen:
	$(Q)python3 scripts/gen_proto.py
	$(Q)python3 scripts/gen_wire_py.py

gen-check:
	$(Q)python3 scripts/gen_proto.py --check
	$(Q)python3 scripts/gen_wire_py.py --check

deps:
	$(Q)scripts/deps

format-check:
	$(Q)clang-format --dry-run --Werror $(shell find src tests \( -name '*.[ch]' -o -name '*.cc' \) -not -name 'gen_*' | sort)

clean:
	rm -rf build

# make bench: the benchmarks. Builds the daemon, tests/bench/gen_log and the load generator
# tests/bench/kcoord-bench, then tests/bench/bench.py times kcoord loading generated data directories,
# runs the load scenarios against kcoord (and against Kafka when scripts/kafka-ref works) and
# writes docs/BENCHMARKS.md. `make bench BENCH_ARGS=--quick` is a short smoke run;
# `make bench-tools` only builds.
.PHONY: bench bench-tools

BENCH_TOOL_SRCS := $(sort $(wildcard tests/bench/bench_*.c)) tests/bench/kcoord_bench.c
BENCH_TOOL_OBJS := $(BENCH_TOOL_SRCS:%.c=$(BUILD)/%.o)

bench: bench-tools
	$(Q)tests/bench/bench.py $(BENCH_ARGS) $(BUILD)

bench-tools: $(BUILD)/kcoord $(BUILD)/bench/gen_log $(BUILD)/bench/kcoord-bench \
	$(BUILD)/bench/assign_bench $(BUILD)/bench/auth_bench

# make bench-hostile: tests/bench/hostile.py runs every hostile case (a fresh kcoord each, a
# probe client's longest wait, peak RSS, survival, acknowledged commits lost) against the
# current build as "after", writes docs/bench/hostile-after.json and rewrites only the section
# "Hostile load" of docs/BENCHMARKS.md, its "before" column from docs/bench/hostile-before.json.
# HOSTILE_ARGS="--only ID,..." runs some cases (see tests/bench/hostile.py --list). Mounts
# tmpfs for two cases, so run it as root to measure them.
.PHONY: bench-hostile
bench-hostile: $(BUILD)/kcoord
	$(Q)tests/bench/hostile.py --label after --json docs/bench/hostile-after.json \
		--before docs/bench/hostile-before.json --markdown docs/BENCHMARKS.md \
		$(HOSTILE_ARGS) $(BUILD)/kcoord

# The auth room's costs: build/bench/auth_bench [ACLS [CHECKS]] (authorizer checks per second,
# SCRAM server exchanges per second).
$(BUILD)/bench/auth_bench: $(BUILD)/tests/bench/auth_bench.o $(BUILD)/libkcoord.a
	@mkdir -p $(dir $@)
	@echo "  LD      $@"
	$(Q)$(CC) $(LDFLAGS_ALL) -o $@ $^ $(LIBS)

# The assignor benchmark (docs/assignors.md): build/bench/assign_bench [MEMBERS TOPICS PARTS RUNS]
$(BUILD)/bench/assign_bench: $(BUILD)/tests/bench/assign_bench.o $(BUILD)/libkcoord.a
	@mkdir -p $(dir $@)
	@echo "  LD      $@"
	$(Q)$(CC) $(LDFLAGS_ALL) -o $@ $^ $(LIBS)

$(BUILD)/bench/gen_log: $(BUILD)/tests/bench/gen_log.o $(BUILD)/libkcoord.a
	@mkdir -p $(dir $@)
	@echo "  LD      $@"
	$(Q)$(CC) $(LDFLAGS_ALL) -o $@ $^ $(LIBS)

$(BUILD)/bench/kcoord-bench: $(BENCH_TOOL_OBJS) $(BUILD)/libkcoord.a
	@mkdir -p $(dir $@)
	@echo "  LD      $@"
	$(Q)$(CC) $(LDFLAGS_ALL) -o $@ $^ $(LIBS)

# make compat: the compatibility suite. Installs its Debian packages (scripts/deps --compat),
# builds the daemon, fetches the reference Kafka's jars (scripts/kafka-ref fetch), makes the
# Python venv with the pinned PyPI clients (scripts/compat-venv), then runs every scenario with
# every client against kcoord and against Kafka (tests/compat/compat.py) and regenerates
# docs/COMPATIBILITY.md. Fails when a scenario fails on kcoord. Last,
# tests/docker/docker_smoke.py builds the Dockerfile's image with podman and checks it end to
# end (group join, commit, health check, SIGTERM); `make docker-smoke` runs that alone.
.PHONY: compat docker-smoke

compat:
	$(Q)scripts/deps --compat
	$(Q)$(MAKE) --no-print-directory $(BUILD)/kcoord
	$(Q)scripts/kafka-ref fetch >/dev/null
	$(Q)scripts/compat-venv >/dev/null
	$(Q)tests/compat/compat.py --build $(BUILD)
	$(Q)tests/docker/docker_smoke.py

docker-smoke:
	$(Q)scripts/deps --docker
	$(Q)tests/docker/docker_smoke.py

# make log-interop: kcoord's __consumer_offsets logs against a real Kafka broker and Kafka's
# DumpLogSegments, in both directions (tests/interop/log_interop.py). Needs Java and Maven,
# which scripts/deps --compat installs, for the reference Kafka's jars (scripts/kafka-ref).
.PHONY: log-interop

log-interop:
	$(Q)scripts/deps --compat
	$(Q)$(MAKE) --no-print-directory $(BUILD)/kcoord
	$(Q)tests/interop/log_interop.py $(BUILD)

# make chaos: a 3-node cluster under a commit load through many rounds of faults (kills,
# SIGSTOP, the leader cut off, a one-way partition, empty data dirs, power losses, rolling
# restarts), each node in a network namespace of its own (root; nftables and iproute2); writes
# docs/RELIABILITY.md, whose 5-node section `tests/chaos/chaos.py --nodes 5 --rounds 10 --append`
# adds after it. CHAOS_ARGS=--short runs a few rounds (what CI can afford).
.PHONY: chaos

chaos: deps
	$(Q)$(MAKE) --no-print-directory $(BUILD)/kcoord
	$(Q)KC_TEST_BIN=$(BUILD)/kcoord tests/chaos/chaos.py $(CHAOS_ARGS)

-include $(shell find build -name '*.d' 2>/dev/null)
