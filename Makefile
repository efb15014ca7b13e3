# hvdrun and libhvd. `make` builds build/bin/hvdrun and build/lib/libhvd.{so,a};
# `make test` runs every test suite; `make deps` installs what they need.
VERSION    := 0.1.0
PREFIX     ?= /usr/local
DESTDIR    ?=
BINDIR     ?= $(PREFIX)/bin
LIBDIR     ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
MANDIR     ?= $(PREFIX)/share/man
# hvd.torch, where Debian's python3 finds it: /usr/lib/python3/dist-packages
# under /usr, $(PREFIX)/lib/python3.X/dist-packages elsewhere (on python3's
# path for /usr/local).
PY         := /usr/bin/python3
PYVER      := $(shell $(PY) -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null)
PYDIR      ?= $(if $(filter /usr,$(PREFIX)),/usr/lib/python3,$(PREFIX)/lib/python$(or $(PYVER),3))/dist-packages

CC       ?= cc
CFLAGS   ?= -O2 -g
WARN     := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes \
            -Wmissing-prototypes -Wformat=2 -Wno-format-nonliteral
BASE     := -std=c11 -D_GNU_SOURCE -fPIC -pthread -DHVD_VERSION='"$(VERSION)"'
SAN      := -fsanitize=address,undefined -fno-omit-frame-pointer \
            -fno-sanitize-recover=undefined

# Dependency direction: cmd -> lib -> proto <- core. Sources live in
# folders by concern (lib/ssh/, core/transport/, ...) and include by that
# path: "ssh/conn.h" within lib/, "transport/tcp.h" within core/,
# "proto/wire.h" from either. tests/structure checks the direction.
CORE_INC := -Icore/include -Icore -I.
LIB_INC  := -Ilib -Icore/include -I.
CMD_INC  := -Icmd -Ilib -Icore/include -I.

CORE_SRC := $(wildcard core/*/*.c) $(wildcard proto/*.c)
LIB_SRC  := $(wildcard lib/*/*.c) $(wildcard proto/*.c)
CMD_SRC  := $(wildcard cmd/*.c)
UNIT_SRC := $(wildcard tests/unit/test_*.c)
EX_SRC   := $(wildcard examples/*.c)

B        := build
# Open MPI, for libhvd's MPI engine (core/transport/mpi.c); read when used, after
# `make deps` has installed it.
MPI_CFLAGS = $(shell pkg-config --cflags ompi-c)
MPI_LIBS   = $(shell pkg-config --libs ompi-c)
# CUDA and NCCL, for libhvd's GPU engine (core/gpu/): built when both
# are found under CUDA_HOME (NCCL_HOME for NCCL, if elsewhere); `make
# NCCL=0` leaves the GPU engine out.
CUDA_HOME ?= /usr/local/cuda
NCCL_HOME ?= $(CUDA_HOME)
NCCL_FOUND := $(if $(and $(wildcard $(CUDA_HOME)/include/cuda_runtime.h),$(wildcard $(CUDA_HOME)/lib64/libcudart.so),$(wildcard $(NCCL_HOME)/include/nccl.h),$(wildcard $(NCCL_HOME)/lib*/libnccl.so)),1,0)
NCCL ?= $(NCCL_FOUND)
ifeq ($(NCCL),1)
NCCL_LIBDIR := $(dir $(firstword $(wildcard $(NCCL_HOME)/lib*/libnccl.so)))
GPU_CFLAGS := -DHVD_NCCL=1 -isystem $(CUDA_HOME)/include -isystem $(NCCL_HOME)/include
GPU_LIBS   := -L$(CUDA_HOME)/lib64 -L$(NCCL_LIBDIR) \
              -Wl,-rpath,$(CUDA_HOME)/lib64 -Wl,-rpath,$(NCCL_LIBDIR) \
              -lnccl -lcudart
else
GPU_CFLAGS := -DHVD_NCCL=0
GPU_LIBS   :=
endif
# The NCCL engine's files, or gpu/none.c in their place: chosen here, not
# by #if. gpu/engine.c, which starts whichever it is, is always built.
NCCL_SRC := $(filter-out core/gpu/none.c core/gpu/engine.c,$(wildcard core/gpu/*.c))
CORE_SRC := $(filter-out $(if $(filter 1,$(NCCL)),core/gpu/none.c,$(NCCL_SRC)),$(CORE_SRC))
LIBS     := -linih -lyaml -lssh -lcrypto -ljansson
CORE_LIBS = -pthread -lcrypto -lm $(MPI_LIBS) $(GPU_LIBS)

# Two flavours of objects: plain, and with sanitizers for the unit tests.
obj  = $(patsubst %.c,$(B)/obj/%.o,$(1))
sobj = $(patsubst %.c,$(B)/san/%.o,$(1))

CORE_OBJ := $(call obj,$(CORE_SRC))
LIB_OBJ  := $(call obj,$(LIB_SRC))
CMD_OBJ  := $(call obj,$(CMD_SRC))
UNIT_BIN := $(patsubst tests/unit/%.c,$(B)/tests/%,$(UNIT_SRC))
SAN_BIN  := $(patsubst tests/unit/%.c,$(B)/tests/san/%,$(UNIT_SRC))
EX_BIN   := $(patsubst examples/%.c,$(B)/examples/%,$(EX_SRC))

.SECONDARY:

.PHONY: FORCE all deps test unit-test cli-test demo bench bench-gpu fuzz fuzz-seeds install uninstall clean \
        checkstyle cppcheck format lint lint-checks lint-tidy lint-tidy-core-cmd lint-tidy-lib-proto \
        structure

# hvdrun check --nccl's worker (a libhvd program on the GPU), where libhvd
# has its GPU engine; hvdrun looks for it in ../libexec/hvdrun/.
NCCLCHECK := $(if $(filter 1,$(NCCL)),$(B)/libexec/hvdrun/hvd-ncclcheck)

all: $(B)/bin/hvdrun $(B)/lib/libhvd.so $(B)/lib/libhvd.a $(EX_BIN) $(NCCLCHECK)

inc_for = $(if $(filter core/% proto/%,$(1)),$(CORE_INC) -fvisibility=hidden,$(if $(filter lib/%,$(1)),$(LIB_INC),$(if $(filter cmd/%,$(1)),$(CMD_INC),$(LIB_INC) -Icore -Itests/unit)))

# The reduction kernels are loops the compiler vectorises at -O3.
$(B)/obj/core/util/reduce.o $(B)/obj/core/util/half.o: CFLAGS += -O3
$(B)/obj/core/transport/mpi.o $(B)/san/core/transport/mpi.o $(B)/lint/core/transport/mpi.ok: BASE += $(MPI_CFLAGS)
$(call obj,$(NCCL_SRC)) $(call sobj,$(NCCL_SRC)) $(patsubst %.c,$(B)/lint/%.ok,$(NCCL_SRC)): BASE += $(GPU_CFLAGS)
# hvdrun --check-build says whether libhvd has its GPU engine.
$(B)/obj/cmd/build.o $(B)/san/cmd/build.o $(B)/lint/cmd/build.ok: BASE += -DHVD_NCCL_BUILT=$(NCCL)
$(B)/obj/cmd/build.o $(B)/san/cmd/build.o: $(B)/gpu.flags
$(call obj,$(NCCL_SRC)) $(call sobj,$(NCCL_SRC)) $(B)/lib/libhvd.so: $(B)/gpu.flags

# Rebuild the GPU engine when NCCL= or CUDA_HOME change.
$(B)/gpu.flags: FORCE
	@mkdir -p $(B)
	@echo '$(GPU_CFLAGS) $(GPU_LIBS)' | cmp -s - $@ || \
	    echo '$(GPU_CFLAGS) $(GPU_LIBS)' > $@

$(B)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(BASE) $(WARN) $(CFLAGS) $(call inc_for,$<) -MMD -MP -c $< -o $@

$(B)/san/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(BASE) $(WARN) -O1 -g $(SAN) $(call inc_for,$<) -MMD -MP -c $< -o $@

$(B)/bin/hvdrun: $(CMD_OBJ) $(LIB_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -pthread -o $@ $^ $(LIBS)

$(B)/lib/libhvd.so: $(CORE_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -shared -Wl,-soname,libhvd.so.0 -o $@.$(VERSION) \
	    $(CORE_OBJ) $(CORE_LIBS)
	ln -sf libhvd.so.$(VERSION) $(B)/lib/libhvd.so.0
	ln -sf libhvd.so.0 $@

$(B)/lib/libhvd.a: $(CORE_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@
	ar rcs $@ $^

$(B)/examples/%: examples/%.c $(B)/lib/libhvd.so
	@mkdir -p $(dir $@)
	$(CC) $(BASE) $(WARN) $(CFLAGS) -Icore/include -o $@ $< \
	    -L$(B)/lib -Wl,-rpath,'$$ORIGIN/../lib' -lhvd -lm

$(B)/libexec/hvdrun/hvd-ncclcheck: cmd/ncclcheck/hvd-ncclcheck.c $(B)/lib/libhvd.so
	@mkdir -p $(dir $@)
	$(CC) $(BASE) $(GPU_CFLAGS) $(WARN) $(CFLAGS) -Icore/include -o $@ $< \
	    -L$(B)/lib -Wl,-rpath,'$$ORIGIN/../../lib' -lhvd $(GPU_LIBS)

# Programs that run inside jobs started by the CLI tests.
# With the GPU engine, the self-test also checks it (mode gpu).
$(B)/tests/hvd_selftest: tests/cli/workers/hvd_selftest.c $(B)/lib/libhvd.so
	@mkdir -p $(dir $@)
	$(CC) $(BASE) $(GPU_CFLAGS) -Wall -Wextra -Werror $(CFLAGS) \
	    -Icore/include -o $@ $< -L$(B)/lib -Wl,-rpath,'$$ORIGIN/../lib' \
	    -lhvd -lm -pthread $(GPU_LIBS)

$(B)/tests/hvd_sets: tests/cli/workers/hvd_sets.c $(B)/lib/libhvd.so
	@mkdir -p $(dir $@)
	$(CC) $(BASE) $(GPU_CFLAGS) -Wall -Wextra -Werror $(CFLAGS) -Icore/include -o $@ $< \
	    -L$(B)/lib -Wl,-rpath,'$$ORIGIN/../lib' -lhvd $(GPU_LIBS)

$(B)/tests/mpi_user: tests/cli/workers/mpi_user.c $(B)/lib/libhvd.so
	@mkdir -p $(dir $@)
	mpicc $(BASE) -Wall -Wextra -Werror $(CFLAGS) -Icore/include -o $@ $< \
	    -L$(B)/lib -Wl,-rpath,'$$ORIGIN/../lib' -lhvd

# The workers over the sanitized core, for the sanitized runs (tests/run's
# HVD_*_BIN): a crash in libhvd comes with its stack.
SAN_WORKERS := $(B)/tests/san/hvd_selftest $(B)/tests/san/hvd_sets $(B)/tests/san/elastic
$(B)/tests/san/hvd_selftest: tests/cli/workers/hvd_selftest.c
$(B)/tests/san/hvd_sets: tests/cli/workers/hvd_sets.c
$(B)/tests/san/elastic: examples/elastic.c
$(SAN_WORKERS): $(call sobj,$(CORE_SRC))
	@mkdir -p $(dir $@)
	$(CC) $(BASE) $(GPU_CFLAGS) -Wall -Wextra -Werror -O1 -g $(SAN) -Icore/include -o $@ $^ \
	    -lm -pthread -lcrypto $(MPI_LIBS) $(GPU_LIBS)

$(B)/tests/%: $(B)/obj/tests/unit/%.o $(sort $(LIB_OBJ) $(CORE_OBJ))
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -pthread -o $@ $^ $(LIBS) $(MPI_LIBS) $(GPU_LIBS) -lm

# hvdrun itself under the sanitizers, for the CLI and cluster tests.
# It finds check --nccl's worker where the plain hvdrun does.
$(B)/san/bin/hvdrun: $(call sobj,$(CMD_SRC) $(LIB_SRC))
	@mkdir -p $(dir $@)
	$(CC) -g $(SAN) -pthread -o $@ $^ $(LIBS)
	ln -sfn ../libexec $(B)/san/libexec

# An hvdrun of another agent protocol and version, for the tests of hosts
# whose hvdruns cannot work together (tests/cluster/check.bats): the files
# that say the protocol or the version built again, the rest as it is.
OTHER_SRC := $(shell grep -l 'HL_AGENT_PROTO\|HVD_VERSION' $(CMD_SRC) $(LIB_SRC))
$(B)/other/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(filter-out -DHVD_VERSION=%,$(BASE)) -DHVD_VERSION='"$(VERSION)-other"' \
	    -DHL_AGENT_PROTO=999 $(WARN) $(CFLAGS) $(call inc_for,$<) -MMD -MP -c $< -o $@
$(B)/tests/other/hvdrun: $(filter-out $(call obj,$(OTHER_SRC)),$(CMD_OBJ) $(LIB_OBJ)) \
	    $(patsubst %.c,$(B)/other/%.o,$(OTHER_SRC))
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -pthread -o $@ $^ $(LIBS)

# A CUDA runtime for the probe alone (tests/cli/check.bats: --nccl's job
# started without a GPU).
$(B)/tests/fake/libcudart.so: tests/cli/workers/fake_cudart.c
	@mkdir -p $(dir $@)
	$(CC) $(BASE) $(WARN) $(CFLAGS) -shared -o $@ $<

# fork failing after a number of forks, preloaded into hvdrun
# (tests/cli/supervise.bats: a job that starts only in part).
$(B)/tests/fake/fork_fails.so: tests/cli/workers/fork_fails.c
	@mkdir -p $(dir $@)
	$(CC) $(BASE) $(WARN) $(CFLAGS) -fPIC -shared -o $@ $< -ldl

# A CPU stand-in for CUDA's runtime and NCCL (tests/cli/gpu_standin.bats:
# libhvd's GPU engine without a GPU), with the sonames libhvd was linked
# against, so that LD_LIBRARY_PATH puts them before CUDA's own.
ifeq ($(NCCL),1)
CUDART_SONAME := $(shell objdump -p $(CUDA_HOME)/lib64/libcudart.so 2>/dev/null | sed -n 's/^ *SONAME *//p')
NCCL_SONAME   := $(shell objdump -p $(NCCL_LIBDIR)libnccl.so 2>/dev/null | sed -n 's/^ *SONAME *//p')
STANDIN       := $(if $(and $(CUDART_SONAME),$(NCCL_SONAME)),$(B)/tests/standin/$(CUDART_SONAME) $(B)/tests/standin/$(NCCL_SONAME))
STANDIN_FLAGS := $(BASE) $(WARN) $(CFLAGS) -Wno-missing-prototypes -fvisibility=hidden \
                 -isystem $(CUDA_HOME)/include -isystem $(NCCL_HOME)/include -shared
endif
ifneq ($(STANDIN),)
$(B)/tests/standin/$(CUDART_SONAME): tests/cli/workers/standin_cudart.c
	@mkdir -p $(dir $@)
	printf '%s { global: *; };\n' $(CUDART_SONAME) >$@.map
	$(CC) $(STANDIN_FLAGS) -Wl,-soname,$(CUDART_SONAME) -Wl,--version-script=$@.map -o $@ $<
$(B)/tests/standin/$(NCCL_SONAME): tests/cli/workers/standin_nccl.c $(B)/tests/standin/$(CUDART_SONAME)
	$(CC) $(STANDIN_FLAGS) -Wl,-soname,$(NCCL_SONAME) -o $@ $< \
	    $(B)/tests/standin/$(CUDART_SONAME)
endif

$(B)/tests/san/%: $(B)/san/tests/unit/%.o $(call sobj,$(sort $(LIB_SRC) $(CORE_SRC)))
	@mkdir -p $(dir $@)
	$(CC) -g $(SAN) -pthread -o $@ $^ $(LIBS) $(MPI_LIBS) $(GPU_LIBS) -lm

# Debian packages the build, the tests and the benchmarks need. While they
# install, no service starts (policy-rc.d, where the machine has none):
# the tests start their own munged, slurmctld and slurmd, and a slurmd
# started without a configuration would look its controller up in DNS.
# torch's matrix products go through the BLAS that libblas.so.3 names:
# OpenBLAS (its OpenMP build, which keeps to torch.set_num_threads), not
# the reference BLAS that python3-torch pulls in alone (the MLP's step
# took 3.5 times as long on it).
DEB_PKGS := build-essential pkg-config libinih-dev libyaml-dev libssh-dev libssl-dev libjansson-dev \
            libopenmpi-dev \
            openmpi-bin bats bats-assert bats-support openssh-server \
            iproute2 procps psmisc util-linux clang-format jq faketime \
            python3-torch python3-torchvision python3-numpy python3-pytest \
            python3-cloudpickle libopenblas0-openmp \
            slurmctld slurmd slurm-client munge \
            clang libclang-rt-dev clang-tidy cppcheck

deps:
	@missing=$$(for p in $(DEB_PKGS); do \
	    dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | \
	    grep -q '^install ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	    echo "installing:" $$missing; \
	    SUDO=$$([ $$(id -u) -eq 0 ] || echo sudo); \
	    policy=; \
	    if [ ! -e /usr/sbin/policy-rc.d ]; then \
	        policy=/usr/sbin/policy-rc.d; \
	        printf '#!/bin/sh\nexit 101\n' | $$SUDO tee $$policy >/dev/null && \
	        $$SUDO chmod 755 $$policy; \
	    fi; \
	    $$SUDO apt-get update -qq && \
	    DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq \
	        --no-install-recommends $$missing; \
	    rc=$$?; [ -z "$$policy" ] || $$SUDO rm -f $$policy; exit $$rc; \
	else echo "all dependencies are installed"; fi

test: deps
	@$(MAKE) --no-print-directory -j$$(nproc) all $(UNIT_BIN) $(SAN_BIN) $(B)/san/bin/hvdrun \
	    $(B)/tests/hvd_selftest $(B)/tests/mpi_user $(B)/tests/hvd_sets $(SAN_WORKERS) \
	    $(B)/tests/fake/libcudart.so $(B)/tests/fake/fork_fails.so \
	    $(B)/tests/other/hvdrun $(STANDIN) $(FUZZ_BIN)
	@tests/run

demo: deps
	@$(MAKE) --no-print-directory all
	$(B)/bin/hvdrun -np 4 -H localhost:4 $(B)/examples/iris_mlp examples/data/iris.csv

BENCH_BIN := $(B)/bench/hvd_bench $(B)/bench/mpi_bench $(B)/tests/hvd_selftest \
             $(if $(filter 1,$(NCCL)),$(B)/bench/gpu_bench)

$(B)/bench/hvd_bench: tests/bench/hvd_bench.c tests/bench/resnet50.h $(B)/lib/libhvd.so
	@mkdir -p $(dir $@)
	$(CC) $(BASE) $(WARN) -O2 -Icore/include -o $@ $< \
	    -L$(B)/lib -Wl,-rpath,'$$ORIGIN/../lib' -lhvd

$(B)/bench/gpu_bench: tests/bench/gpu_bench.c tests/bench/resnet50.h $(B)/lib/libhvd.so
	@mkdir -p $(dir $@)
	$(CC) $(BASE) $(GPU_CFLAGS) $(WARN) -O2 -Icore/include -o $@ $< \
	    -L$(B)/lib -Wl,-rpath,'$$ORIGIN/../lib' -lhvd $(GPU_LIBS)

$(B)/bench/mpi_bench: tests/bench/mpi_bench.c tests/bench/resnet50.h
	@mkdir -p $(dir $@)
	mpicc -std=c11 -D_GNU_SOURCE -O2 -Wall -Wextra -o $@ $<

bench: deps
	@$(MAKE) --no-print-directory all $(BENCH_BIN)
	@tests/bench/launch
	@tests/bench/launch-ssh
	@tests/bench/launch-slurm
	@tests/bench/launch-scale
	@tests/bench/check
	@tests/bench/allreduce
	@tests/bench/allreduce-hosts
	@tests/bench/elastic
	@tests/bench/collectives
	@tests/bench/dtypes
	@tests/bench/sets
	@tests/bench/contention
	@tests/bench/torch
	@tests/bench/autotune
	@$(MAKE) --no-print-directory bench-gpu

# The GPU's benchmarks alone (make bench ends with them): libhvd's NCCL
# path against bare NCCL, training against DDP over NCCL, --autotune on
# the GPU. Without a GPU, each says why in one line.
bench-gpu: all $(BENCH_BIN)
	@tests/bench/gpu
	@tests/bench/gpu-train
	@tests/bench/autotune --cuda

# Fuzzing (tests/fuzz): one libFuzzer target per input that hvdrun or
# libhvd parses or decodes, built by clang with AddressSanitizer and
# UndefinedBehaviorSanitizer, each calling the project's own function.
# `make test` replays every corpus and fuzzes each target a few seconds;
# `make fuzz` fuzzes each for FUZZ_SECONDS and prints a table.
FUZZ_CC     := clang
FUZZ_CFLAGS := -std=c11 -D_GNU_SOURCE -DHVD_VERSION='"$(VERSION)"' -g -O1 -fno-omit-frame-pointer \
               -fsanitize=fuzzer-no-link,address,undefined \
               -fno-sanitize-recover=undefined
FUZZ_INC    := -Ilib -Icmd -Icore/include -Icore -I. -Itests/fuzz
FUZZ_LIB    := hostlist hostfile config yaml slurm batch records agent probe rendezvous
FUZZ_BIN    := $(addprefix $(B)/fuzz/,$(FUZZ_LIB) options control)
FUZZ_SECONDS ?= 600
fobj = $(patsubst %.c,$(B)/fuzz/obj/%.o,$(1))

$(B)/fuzz/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) $(FUZZ_INC) -MMD -MP -c $< -o $@

$(addprefix $(B)/fuzz/,$(FUZZ_LIB)): $(B)/fuzz/%: $(B)/fuzz/obj/tests/fuzz/%.o \
    $(call fobj,tests/fuzz/fuzz_util.c $(LIB_SRC))
	$(FUZZ_CC) -fsanitize=fuzzer,address,undefined -pthread -o $@ $^ $(LIBS)

$(B)/fuzz/options: $(call fobj,tests/fuzz/options.c tests/fuzz/fuzz_util.c \
    cmd/args.c cmd/foreign.c $(LIB_SRC))
	$(FUZZ_CC) -fsanitize=fuzzer,address,undefined -pthread -o $@ $^ $(LIBS)

$(B)/fuzz/control: $(call fobj,tests/fuzz/control.c tests/fuzz/fuzz_util.c \
    core/engine/control.c proto/wire.c)
	$(FUZZ_CC) -fsanitize=fuzzer,address,undefined -pthread -o $@ $^

# The binary seeds, written by the project's own encoders (tests/fuzz/seeds.c).
$(B)/fuzz/seeds: $(call fobj,tests/fuzz/seeds.c core/engine/control.c $(LIB_SRC))
	$(FUZZ_CC) -fsanitize=address,undefined -pthread -o $@ $^ $(LIBS)

fuzz-seeds: $(B)/fuzz/seeds
	$(B)/fuzz/seeds tests/fuzz/corpus

fuzz: deps
	@$(MAKE) --no-print-directory $(FUZZ_BIN)
	@FUZZ_SECONDS=$(FUZZ_SECONDS) tests/fuzz/run long $(FUZZ_BIN)

install: all
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBDIR)/pkgconfig \
	    $(DESTDIR)$(INCLUDEDIR) $(DESTDIR)$(MANDIR)/man1 \
	    $(DESTDIR)$(MANDIR)/man3 $(DESTDIR)$(MANDIR)/man5
	install -m 755 $(B)/bin/hvdrun $(DESTDIR)$(BINDIR)/hvdrun
	$(if $(NCCLCHECK),install -d $(DESTDIR)$(PREFIX)/libexec/hvdrun && \
	    install -m 755 $(NCCLCHECK) $(DESTDIR)$(PREFIX)/libexec/hvdrun/)
	install -m 755 $(B)/lib/libhvd.so.$(VERSION) $(DESTDIR)$(LIBDIR)/libhvd.so.$(VERSION)
	ln -sf libhvd.so.$(VERSION) $(DESTDIR)$(LIBDIR)/libhvd.so.0
	ln -sf libhvd.so.0 $(DESTDIR)$(LIBDIR)/libhvd.so
	install -m 644 $(B)/lib/libhvd.a $(DESTDIR)$(LIBDIR)/libhvd.a
	install -m 644 core/include/hvd.h $(DESTDIR)$(INCLUDEDIR)/hvd.h
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(LIBDIR)|' \
	    -e 's|@INCLUDEDIR@|$(INCLUDEDIR)|' -e 's|@VERSION@|$(VERSION)|' \
	    -e 's|@MPI_LIBS@|$(strip $(MPI_LIBS) $(GPU_LIBS))|' \
	    libhvd.pc.in > $(DESTDIR)$(LIBDIR)/pkgconfig/libhvd.pc
	install -m 644 man/hvdrun.1 $(DESTDIR)$(MANDIR)/man1/hvdrun.1
	install -m 644 man/hvd.3 $(DESTDIR)$(MANDIR)/man3/hvd.3
	install -m 644 man/hvdrun.ini.5 $(DESTDIR)$(MANDIR)/man5/hvdrun.ini.5
	install -d $(DESTDIR)$(PYDIR)/hvd/torch
	install -m 644 python/hvd/*.py $(DESTDIR)$(PYDIR)/hvd/
	install -m 644 python/hvd/torch/*.py $(DESTDIR)$(PYDIR)/hvd/torch/
	printf '"""Written by make install: where libhvd and hvdrun went."""\nLIBDIR = %s\nBINDIR = %s\n' \
	    "'$(LIBDIR)'" "'$(BINDIR)'" > $(DESTDIR)$(PYDIR)/hvd/_install.py

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/hvdrun $(DESTDIR)$(LIBDIR)/libhvd.* \
	    $(DESTDIR)$(LIBDIR)/pkgconfig/libhvd.pc $(DESTDIR)$(INCLUDEDIR)/hvd.h \
	    $(DESTDIR)$(MANDIR)/man1/hvdrun.1 $(DESTDIR)$(MANDIR)/man3/hvd.3 \
	    $(DESTDIR)$(MANDIR)/man5/hvdrun.ini.5
	rm -rf $(DESTDIR)$(PYDIR)/hvd $(DESTDIR)$(PREFIX)/libexec/hvdrun

STYLE_SRC = $(sort $(CORE_SRC) $(wildcard core/*/*.c)) $(LIB_SRC) $(CMD_SRC) $(UNIT_SRC) $(EX_SRC) \
            cmd/ncclcheck/hvd-ncclcheck.c \
            $(wildcard tests/fuzz/*.c) tests/cli/workers/standin_cudart.c \
            tests/cli/workers/standin_nccl.c \
            $(wildcard core/*/*.h lib/*/*.h cmd/*.h proto/*.h tests/unit/*.h tests/fuzz/*.h)

checkstyle:
	@clang-format --dry-run --Werror $(sort $(STYLE_SRC)) && \
	    echo "checkstyle: $(words $(sort $(STYLE_SRC))) files in .clang-format's style"

# Lint: clang-format's style (checkstyle, .clang-format) on every C file,
# clang-tidy (the checks of .clang-tidy) on every source of cmd/,
# lib/, core/ and proto/ with the flags it is built with, one stamp a file
# (again when the file, a header it includes or .clang-tidy changes;
# core/'s and cmd/'s files, and lib/'s and proto/'s, as two checks of
# about equal time),
# cppcheck over the four folders, and the layout's rules (structure).
# `make test` runs them beside its other suites (tests/lint/run), the
# clang-tidy of core/ and cmd/ in a suite of its own: clang-tidy's
# analyser takes the most time. It explores at most TIDY_NODES states a
# function (clang's shallow mode's budget; its default, 225000, took
# twice the CPU time, 337 against 166 s for the whole tree, spent in the
# few functions that use up any budget: reaching it ends only that
# function's search, and the smaller one's search reached a malloc(0)
# in algo/adasum.c that the default's had not).
TIDY_NODES ?= 75000
LINT_SRC := $(sort $(CORE_SRC) $(LIB_SRC) $(CMD_SRC))
LINT_OK  := $(patsubst %.c,$(B)/lint/%.ok,$(LINT_SRC))
LINT_OK_CORE_CMD := $(filter $(B)/lint/core/% $(B)/lint/cmd/%,$(LINT_OK))
CPPCHECK := cppcheck --quiet --error-exitcode=1 --inline-suppr \
            --enable=warning,style,performance,portability --std=c11 \
            --suppress=missingIncludeSystem --suppress=variableScope \
            -D_GNU_SOURCE -Icmd -Ilib -Icore/include -Icore -I.

# Every file again when TIDY_NODES changes. clang takes a bad value
# without a word, so it is checked here.
$(B)/lint/nodes: FORCE
	@case '$(TIDY_NODES)' in ''|*[!0-9]*|0) echo "make: TIDY_NODES='$(TIDY_NODES)':" \
	    "not a number of states (clang-tidy's analyser's budget a function; default 75000)" >&2; \
	    exit 2;; esac
	@mkdir -p $(dir $@)
	@echo '$(TIDY_NODES)' | cmp -s - $@ || echo '$(TIDY_NODES)' > $@

$(B)/lint/%.ok: %.c $(B)/obj/%.o .clang-tidy $(B)/lint/nodes
	@mkdir -p $(dir $@)
	@clang-tidy --quiet $< -- $(BASE) $(call inc_for,$<) \
	    -Xclang -analyzer-config -Xclang max-nodes=$(TIDY_NODES) >$@.log 2>&1; \
	    rc=$$?; grep -v 'warnings\? generated\.$$' $@.log >&2; \
	    rm -f $@.log; [ $$rc -eq 0 ] && touch $@

# The checks, in order (tests/lint/run asks lint-checks for them).
LINT_CHECKS := checkstyle lint-tidy-lib-proto lint-tidy-core-cmd cppcheck structure
lint: deps
	@for c in $(LINT_CHECKS); do $(MAKE) --no-print-directory $$c || exit 1; done

lint-checks:
	@echo $(LINT_CHECKS)

cppcheck:
	$(CPPCHECK) cmd lib core proto

# The layout's rules (DESIGN.md), on the objects' symbols: no files that
# need each other in a circle, each folder's uses as its README says,
# includes only in the layout's direction (tests/structure/check).
structure: $(CORE_OBJ) $(LIB_OBJ) $(CMD_OBJ)
	tests/structure/check $(sort $^)

lint-tidy: lint-tidy-lib-proto lint-tidy-core-cmd
lint-tidy-lib-proto: $(filter-out $(LINT_OK_CORE_CMD),$(LINT_OK))
lint-tidy-core-cmd: $(LINT_OK_CORE_CMD)

format:
	clang-format -i $(STYLE_SRC)

clean:
	rm -rf $(B)

-include $(shell find $(B) -name '*.d' 2>/dev/null)
