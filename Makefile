# aah: top-level build. `make deps && make && make test` on a Debian 12 machine.
#
# Sources are found by wildcard, so a new .c file in a module folder needs no
# edit here. Each folder becomes one static library:
#   common/        -> build/libaahcommon.a   (shared by both binaries)
#   runner/ and its rooms (cmd/ config/ backend/ report/ pool/ archive/)
#                  -> build/libaahrunner.a (minus runner/cmd/main.c)
#   runner/tuner/  -> build/libaahtuner.a
#   runner/store/  -> build/libaahstore.a    (the experiment directory's formats)
# The runner's libraries depend one way, runner -> tuner -> store -> common,
# and link in that order without a --start-group.
#   kernels/ + kernels/ref/ + kernels/cpu/ -> build/libaahkernels.a
#   kernels/cuda/  -> build/libaahcuda.a      (only when nvcc + cuDNN are found)
#   trialimg/ + trialimg/data/ -> build/libaahtrial.a (minus trialimg/main.c)
# Unit tests: tests/unit/test_<name>.c -> build/tests/unit/test_<name> (Criterion).

SHELL := /bin/bash
.DEFAULT_GOAL := all

BUILD ?= build
CC ?= cc
PREFIX ?= /usr/local
MINUTES ?= 10
SEED ?=
START ?=

WARN := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wvla -Wmissing-prototypes
CSTD := -std=c11 -D_GNU_SOURCE
OPT ?= -O2 -g
SAN ?=
CFLAGS_ALL := $(CSTD) $(OPT) $(WARN) $(SAN) -I. -Icommon -MMD -MP $(CFLAGS)
LDFLAGS_ALL := $(SAN) $(LDFLAGS)

# ---- CUDA detection (optional; the CPU build never needs it) ---------------
CUDA_HOME ?= /usr/local/cuda
NVCC := $(shell command -v nvcc 2>/dev/null || ( [ -x $(CUDA_HOME)/bin/nvcc ] && echo $(CUDA_HOME)/bin/nvcc ))
HAVE_CUDNN := $(shell ls $(CUDA_HOME)/include/cudnn.h /usr/include/cudnn.h /usr/include/x86_64-linux-gnu/cudnn.h 2>/dev/null | head -1)
HAVE_NCCL := $(shell ls $(CUDA_HOME)/include/nccl.h /usr/include/nccl.h 2>/dev/null | head -1)
AAH_CUDA ?= $(if $(and $(NVCC),$(HAVE_CUDNN)),1,0)

# ---- sources ----------------------------------------------------------------
COMMON_SRCS  := $(wildcard common/*.c)
TUNER_SRCS   := $(wildcard runner/tuner/*.c)
STORE_SRCS   := $(wildcard runner/store/*.c)
RUNNER_SRCS  := $(filter-out runner/cmd/main.c runner/backend/hold_main.c $(TUNER_SRCS) $(STORE_SRCS),$(wildcard runner/*.c runner/*/*.c))
KERNEL_SRCS  := $(wildcard kernels/*.c kernels/ref/*.c kernels/cpu/*.c kernels/cudahost/*.c)
TRIAL_SRCS   := $(filter-out trialimg/main.c,$(wildcard trialimg/*.c trialimg/data/*.c))
CUDA_CSRCS   := $(wildcard kernels/cuda/*.c)
CUDA_CUSRCS  := $(wildcard kernels/cuda/*.cu)
# The kernel families compiled for the host too (the cudahost backend, in
# libaahkernels.a on every machine).
HOST_CUSRCS  := $(CUDA_CUSRCS)
HOST_CUOBJS  := $(patsubst kernels/cuda/%.cu,$(BUILD)/obj/cudahost/%.o,$(HOST_CUSRCS))
UNIT_SRCS    := $(wildcard tests/unit/test_*.c)

obj = $(patsubst %.c,$(BUILD)/obj/%.o,$(1))

LIB_COMMON  := $(BUILD)/libaahcommon.a
LIB_RUNNER  := $(BUILD)/libaahrunner.a
LIB_TUNER   := $(BUILD)/libaahtuner.a
LIB_STORE   := $(BUILD)/libaahstore.a
LIB_KERNELS := $(BUILD)/libaahkernels.a
LIB_TRIAL   := $(BUILD)/libaahtrial.a
LIB_CUDA    := $(BUILD)/libaahcuda.a

RUNNER_LIBS := -lyaml -lcjson -larchive -lzstd -lz -lcrypto -lpthread -lm
TRIAL_LIBS  := -lcjson -ldnnl -ljpeg -lz -lpthread -lm

ifeq ($(AAH_CUDA),1)
CFLAGS_ALL  += -DAAH_HAVE_CUDA=1 -isystem $(CUDA_HOME)/include $(if $(HAVE_NCCL),-DAAH_HAVE_NCCL=1)
# cuBLASLt is not linked: the backend loads it when it opens
# (kernels/cuda/cuda_blaslt.h), so no process pays its start-up for nothing.
TRIAL_LINK  := $(LIB_CUDA) -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64 -lcudnn -lcudart $(if $(HAVE_NCCL),-lnccl) -lstdc++
# Machine code for Ampere (sm_80: 8.x) and Hopper (sm_90), and PTX of
# compute_90 that the driver compiles for newer GPUs (Blackwell: sm_100,
# sm_120); kernels/cuda/cuda_kernels.cu is the one nvcc unit. Below 8.0 the
# backend refuses the device (ops_gpu_supported).
CUDA_ARCHS  ?= 80 90
CUDA_PTX    ?= 90
NVCCFLAGS   ?= -O2 -std=c++20 $(foreach a,$(CUDA_ARCHS),-gencode arch=compute_$(a),code=sm_$(a)) \
	       $(foreach a,$(CUDA_PTX),-gencode arch=compute_$(a),code=compute_$(a)) \
	       -I. -Icommon -Xcompiler -Wall,-Wextra,-Wno-missing-field-initializers \
	       -Werror all-warnings -MMD -MP
# The kernel families contract no multiply-add themselves: they spell each
# one as fmaf, so the GPU rounds as the host harness does (cuk_host.h).
NVCC_FAMILY := -fmad=false
else
TRIAL_LINK  :=
endif

RUNNER_BIN := $(BUILD)/aah-runner
HOLD_BIN   := $(BUILD)/aah-hold
TRIAL_BIN  := $(BUILD)/aah-trial
UNIT_BINS  := $(patsubst tests/unit/%.c,$(BUILD)/tests/unit/%,$(UNIT_SRCS))

.PHONY: all deps bench-deps test unit bench-bins scale-bins scale asan bench run images images-trial install clean config-info check-sass \
	fuzz fuzz-bins fuzz-targets

all: config-info $(RUNNER_BIN) $(HOLD_BIN) $(TRIAL_BIN)

config-info:
	@echo "aah build: cc=$(CC) nvcc=$(or $(NVCC),none) cudnn=$(or $(HAVE_CUDNN),none) nccl=$(or $(HAVE_NCCL),none) cuda-build=$(AAH_CUDA)"

# V=1 shows the full commands.
V ?= 0
Q := $(if $(filter 1,$(V)),,@)
say = $(if $(filter 1,$(V)),,@echo "  $(1) $(2)")

# The plain-C kernels whose channel loops must vectorize: GCC 12 at -O2
# vectorizes only loops without a remainder or a select, and channel counts
# are runtime values.
$(BUILD)/obj/kernels/cpu/cpu_maxpool.o: CFLAGS_ALL += -O3
# The JPEG resize's row blend: a loop over bytes of a runtime length.
$(BUILD)/obj/trialimg/data/jpegdir.o: CFLAGS_ALL += -O3

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(call say,CC,$<)
	$(Q)$(CC) $(CFLAGS_ALL) -c $< -o $@

$(BUILD)/obj/%.o: %.cu
	@mkdir -p $(dir $@)
	$(call say,NVCC,$<)
	$(Q)$(NVCC) $(NVCCFLAGS) -c $< -o $@

# A family's object keeps, beside it, what tests/gpu/check-code.py reads:
# ptxas's report (stack frames, spills: .o.ptxas) and the newest PTX (.o.ptx).
$(BUILD)/obj/kernels/cuda/cuda_%.o: kernels/cuda/cuda_%.cu
	@mkdir -p $(dir $@)
	$(call say,NVCC,$<)
	$(Q)k=$@.keep; rm -rf $$k && mkdir -p $$k && \
	$(NVCC) $(NVCCFLAGS) $(NVCC_FAMILY) -Xptxas -v --keep --keep-dir $$k -c $< -o $@ \
	  2>$@.ptxas || { cat $@.ptxas; rm -rf $$k; exit 1; }; \
	ptx=$$(ls $$k/*.compute_*.ptx 2>/dev/null | sort -V | tail -n 1); \
	if [ -n "$$ptx" ]; then mv "$$ptx" $@.ptx; fi; rm -rf $$k

# The families' compiled code is what it was written to be: SASS where
# cuobjdump exists (the GPU machine), else the PTX (tests/gpu/check-code.py).
check-sass: $(if $(filter 1,$(AAH_CUDA)),$(LIB_CUDA))
	@if [ "$(AAH_CUDA)" != 1 ]; then echo "check-sass: skipped: this build has no cuda backend (make config-info)"; \
	elif command -v cuobjdump >/dev/null; then /usr/bin/python3 tests/gpu/check-code.py sass $(BUILD); \
	else echo "check-sass: no cuobjdump here: checking the PTX"; /usr/bin/python3 tests/gpu/check-code.py ptx $(BUILD); fi

# The same families for the host: g++ over cuk_host.h (CUK_HOST).
CXX_HOST := -x c++ -std=c++20 -DCUK_HOST $(OPT) -I. -Icommon -Wall -Wextra -Werror -Wshadow \
	    -Wno-unknown-pragmas -Wno-missing-field-initializers -fno-exceptions -fno-rtti -MMD -MP
$(BUILD)/obj/cudahost/%.o: kernels/cuda/%.cu
	@mkdir -p $(dir $@)
	$(call say,CXX,$< (host))
	$(Q)$(CXX) $(CXX_HOST) $(SAN) -c $< -o $@

define mklib
$(1): $(2)
	@mkdir -p $$(dir $$@)
	@rm -f $$@
	$$(Q)$$(AR) rcs $$@ $$^
endef
$(eval $(call mklib,$(LIB_COMMON),$(call obj,$(COMMON_SRCS))))
$(eval $(call mklib,$(LIB_RUNNER),$(call obj,$(RUNNER_SRCS))))
$(eval $(call mklib,$(LIB_TUNER),$(call obj,$(TUNER_SRCS))))
$(eval $(call mklib,$(LIB_STORE),$(call obj,$(STORE_SRCS))))
$(eval $(call mklib,$(LIB_KERNELS),$(call obj,$(KERNEL_SRCS)) $(HOST_CUOBJS)))
$(eval $(call mklib,$(LIB_TRIAL),$(call obj,$(TRIAL_SRCS))))
$(eval $(call mklib,$(LIB_CUDA),$(call obj,$(CUDA_CSRCS)) $(patsubst %.cu,$(BUILD)/obj/%.o,$(CUDA_CUSRCS))))

RUNNER_ARCHIVES := $(LIB_RUNNER) $(LIB_TUNER) $(LIB_STORE) $(LIB_COMMON)
TRIAL_ARCHIVES  := $(LIB_TRIAL) $(LIB_KERNELS) $(if $(filter 1,$(AAH_CUDA)),$(LIB_CUDA)) $(LIB_COMMON)

$(RUNNER_BIN): $(call obj,runner/cmd/main.c) $(RUNNER_ARCHIVES)
	$(call say,LINK,$@)
	$(Q)$(CC) $(LDFLAGS_ALL) -o $@ $< $(RUNNER_ARCHIVES) $(RUNNER_LIBS)

# aah-hold, the program a held local rank waits in (runner/backend/hold_main.c):
# libc alone, linked statically where the build has no sanitizer, so each
# rank's start pays for no dynamic loading.
$(HOLD_BIN): $(call obj,runner/backend/hold_main.c runner/backend/proc_report.c)
	$(call say,LINK,$@)
	$(Q)$(CC) $(LDFLAGS_ALL) $(if $(SAN),,-static) -o $@ $^

$(TRIAL_BIN): $(call obj,trialimg/main.c) $(TRIAL_ARCHIVES)
	$(call say,LINK,$@)
	$(Q)$(CC) $(LDFLAGS_ALL) -o $@ $< -Wl,--start-group $(TRIAL_ARCHIVES) -Wl,--end-group $(TRIAL_LINK) $(TRIAL_LIBS)

# Unit tests link every library; the linker keeps what each one uses.
$(BUILD)/tests/unit/%: tests/unit/%.c $(wildcard tests/unit/*.h) $(RUNNER_ARCHIVES) $(TRIAL_ARCHIVES)
	@mkdir -p $(dir $@)
	$(call say,TEST,$@)
	$(Q)$(CC) $(CFLAGS_ALL) -Wno-missing-prototypes $(LDFLAGS_ALL) -o $@ $< \
	  $(LIB_RUNNER) $(LIB_TUNER) $(LIB_STORE) -Wl,--start-group $(TRIAL_ARCHIVES) -Wl,--end-group \
	  $(TRIAL_LINK) -lcriterion $(sort $(RUNNER_LIBS) $(TRIAL_LIBS))

unit: $(UNIT_BINS)

# Benchmark programs: tests/bench/bench_<name>.c -> build/bench/bench_<name>.
BENCH_SRCS := $(wildcard tests/bench/bench_*.c)
BENCH_BINS := $(patsubst tests/bench/%.c,$(BUILD)/bench/%,$(BENCH_SRCS))
$(BUILD)/bench/%: tests/bench/%.c $(RUNNER_ARCHIVES) $(TRIAL_ARCHIVES)
	@mkdir -p $(dir $@)
	$(call say,BENCH,$@)
	$(Q)$(CC) $(CFLAGS_ALL) -Wno-missing-prototypes $(LDFLAGS_ALL) -o $@ $< \
	  $(LIB_RUNNER) $(LIB_TUNER) $(LIB_STORE) -Wl,--start-group $(TRIAL_ARCHIVES) -Wl,--end-group \
	  $(TRIAL_LINK) $(sort $(RUNNER_LIBS) $(TRIAL_LIBS))

bench-bins: $(BENCH_BINS)

# The scale harness's stand-in trainer (tests/scale/, docs/scale.md): aah-trial's
# contract over common/ alone, a modelled sleep instead of training.
SCALE_BIN := $(BUILD)/scale/aah-scale-trial
$(SCALE_BIN): tests/scale/scale_trial.c $(LIB_COMMON)
	@mkdir -p $(dir $@)
	$(call say,LINK,$@)
	$(Q)$(CC) $(CFLAGS_ALL) $(LDFLAGS_ALL) -o $@ $< $(LIB_COMMON) -lcjson -lm

scale-bins: $(SCALE_BIN)

# The scale harness at the sizes of docs/scale.md (tens of minutes each;
# not part of `make test`, which runs tests/scale/scale_small.bats).
# SCALE_SIZES="slots:trials:placement[:compress] ..." picks others.
scale: all scale-bins
	@AAH_BUILD=$(BUILD) tests/scale/run.sh

# ---- fuzzers (tests/fuzz/) ---------------------------------------------------
# tests/fuzz/fuzz_<name>.c -> build-fuzz/fuzz/fuzz_<name>, a libFuzzer target
# over the runner's libraries rebuilt in their own folder with clang and
# -fsanitize=fuzzer-no-link,address,undefined (the gcc build is untouched).
# Where clang's libFuzzer runtime (Debian: libclang-rt-14-dev) is missing,
# the same targets are built with $(CC), ASan and UBSan around
# tests/fuzz/driver.c, a main that runs each file given once: enough for the
# corpus regression in `make test`, not for `make fuzz`.
FUZZ_BUILD ?= build-fuzz
FUZZ_S ?= 60
FUZZ_CLANG ?= clang
FUZZ_SRCS := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_HAVE_LIBFUZZER = $(shell d=$$(mktemp -d) && \
	echo 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { return d && n; }' >$$d/t.c && \
	$(FUZZ_CLANG) -fsanitize=fuzzer $$d/t.c -o $$d/t >/dev/null 2>&1 && echo 1 || echo 0; rm -rf $$d)
FUZZ_MODE ?=
FUZZ_UBSAN := -fno-sanitize-recover=undefined
# clang warns on the `{ NULL }` that ends every key table; gcc does not.
FUZZ_CFLAGS := -Wno-missing-field-initializers

fuzz-bins:
	$(Q)if [ "$(FUZZ_HAVE_LIBFUZZER)" = 1 ]; then \
	  $(MAKE) --no-print-directory BUILD=$(FUZZ_BUILD) CC=$(FUZZ_CLANG) AAH_CUDA=0 FUZZ_MODE=libfuzzer \
	    OPT="-O1 -g -fno-omit-frame-pointer" CFLAGS="$(FUZZ_CFLAGS)" \
	    SAN="-fsanitize=fuzzer-no-link,address,undefined $(FUZZ_UBSAN)" fuzz-targets; \
	else \
	  echo "fuzz: no libFuzzer runtime for $(FUZZ_CLANG); building the corpus runner with $(CC)"; \
	  $(MAKE) --no-print-directory BUILD=$(FUZZ_BUILD) AAH_CUDA=0 FUZZ_MODE=driver \
	    OPT="-O1 -g -fno-omit-frame-pointer" \
	    SAN="-fsanitize=address,undefined,float-cast-overflow $(FUZZ_UBSAN),float-cast-overflow" fuzz-targets; \
	fi

FUZZ_BINS := $(patsubst tests/fuzz/%.c,$(BUILD)/fuzz/%,$(FUZZ_SRCS))
FUZZ_LINK := $(if $(filter libfuzzer,$(FUZZ_MODE)),-fsanitize=fuzzer,$(call obj,tests/fuzz/driver.c))

fuzz-targets: $(FUZZ_BINS)

.SECONDARY: $(call obj,tests/fuzz/fuzz.c tests/fuzz/driver.c)

# Targets over the trainer's data readers link those objects alone (the
# trainer's library would bring oneDNN into the sanitizer build).
FUZZ_TRIAL_OBJS := $(call obj,trialimg/data/tfrecord.c trialimg/data/tfrindex.c)
$(BUILD)/fuzz/fuzz_tfrecord: $(FUZZ_TRIAL_OBJS)

$(BUILD)/fuzz/%: tests/fuzz/%.c $(call obj,tests/fuzz/fuzz.c) $(if $(filter driver,$(FUZZ_MODE)),$(call obj,tests/fuzz/driver.c)) $(RUNNER_ARCHIVES)
	@mkdir -p $(dir $@)
	$(call say,FUZZ,$@)
	$(Q)$(CC) $(CFLAGS_ALL) $(LDFLAGS_ALL) -o $@ $< $(call obj,tests/fuzz/fuzz.c) $(FUZZ_LINK) \
	  $(filter $(FUZZ_TRIAL_OBJS),$^) \
	  $(RUNNER_ARCHIVES) $(RUNNER_LIBS)

# Each target for FUZZ_S seconds, from its corpus; crashes land in
# $(FUZZ_BUILD)/fuzz/crashes/<target>/ (docs: tests/fuzz/README.md).
fuzz: fuzz-bins
	@AAH_FUZZ_BUILD=$(FUZZ_BUILD) tests/fuzz/run.sh fuzz $(FUZZ_S)

# ---- dependencies (Debian 12) ----------------------------------------------
deps:
	@scripts/deps.sh

bench-deps: deps
	@scripts/deps.sh --bench

# ---- tests --------------------------------------------------------------------
test: deps
	@$(MAKE) --no-print-directory all unit fuzz-bins bench-bins scale-bins
	@AAH_BUILD=$(BUILD) AAH_FUZZ_BUILD=$(FUZZ_BUILD) tests/run.sh

asan:
	@$(MAKE) --no-print-directory deps
	@$(MAKE) --no-print-directory BUILD=build-asan OPT="-O1 -g -fno-omit-frame-pointer" \
	  SAN="-fsanitize=address,undefined -fno-sanitize-recover=undefined" all unit
	@AAH_BUILD=build-asan ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 \
	  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 tests/run.sh

bench: bench-deps
	@$(MAKE) --no-print-directory all bench-bins
	@AAH_BUILD=$(BUILD) tests/bench/run.sh

# ---- the end-to-end run ------------------------------------------------------
run: deps
	@$(MAKE) --no-print-directory all
	@scripts/quickstart.sh --minutes $(MINUTES) $(if $(SEED),--seed $(SEED)) $(if $(START),--start $(START))

# ---- images (Dockerfile) -------------------------------------------------------
# IMAGE_BASE=cpu (Debian bookworm, CPU nodes, the container quick start),
# cuda (NVIDIA's images, GPU clusters) or cudalocal (Debian with this
# machine's $(CUDA_HOME) staged into docker/cuda: the cuda trial image
# where no registry serves nvidia/cuda; `make images-trial` builds only the
# trial image); tags aah-master:$(IMAGE_TAG) and aah-trial:$(IMAGE_TAG),
# the base's name (cudalocal builds the images a cluster pulls as :cuda,
# so one tag scheme holds, aah-{trial,master}:{cpu,cuda}). DEBIAN_IMAGE is the cpu base (the tests pass the
# offline-made aah-base:bookworm). KUBECTL_BIN=/path/to/kubectl puts that
# binary into the master image instead of the checksum-verified download.
# DOCKER picks the docker CLI (BuildKit is needed: only the stages of one
# BASE are built).
DOCKER ?= docker
IMAGE_BASE ?= cpu
IMAGE_TAG ?= $(if $(filter cudalocal,$(IMAGE_BASE)),cuda,$(IMAGE_BASE))
DEBIAN_IMAGE ?= debian:bookworm
KUBECTL_BIN ?=
IMAGE_ARGS = --network host --build-arg BASE=$(IMAGE_BASE) --build-arg DEBIAN_IMAGE=$(DEBIAN_IMAGE) \
	$(if $(KUBECTL_BIN),--build-arg KUBECTL=context)

# cudalocal: docker/cuda (docker/cuda-context.sh) becomes the image
# CUDA_TOOLKIT_IMAGE, its own context (the main one ignores it).
CUDA_TOOLKIT_IMAGE ?= aah-cuda-toolkit:local
define cuda_toolkit_image
docker/cuda-context.sh $(CUDA_HOME) docker/cuda
printf 'FROM scratch\nCOPY . /\n' | DOCKER_BUILDKIT=1 $(DOCKER) build -t $(CUDA_TOOLKIT_IMAGE) -f - docker/cuda
endef
IMAGE_ARGS += $(if $(filter cudalocal,$(IMAGE_BASE)),--build-arg CUDA_TOOLKIT_IMAGE=$(CUDA_TOOLKIT_IMAGE))

images:
	$(if $(KUBECTL_BIN),install -m 0755 $(KUBECTL_BIN) docker/kubectl)
	$(if $(filter cudalocal,$(IMAGE_BASE)),$(cuda_toolkit_image))
	DOCKER_BUILDKIT=1 $(DOCKER) build --target trial -t aah-trial:$(IMAGE_TAG) $(IMAGE_ARGS) .
	DOCKER_BUILDKIT=1 $(DOCKER) build --target master -t aah-master:$(IMAGE_TAG) $(IMAGE_ARGS) .

images-trial:
	$(if $(filter cudalocal,$(IMAGE_BASE)),$(cuda_toolkit_image))
	DOCKER_BUILDKIT=1 $(DOCKER) build --target trial -t aah-trial:$(IMAGE_TAG) $(IMAGE_ARGS) .

# aah's nni module (runner/nni/python) goes to <prefix>/lib/aah/python, where
# aah-runner looks for it beside itself (the local backend and slurm-launch
# put it on the trials' PYTHONPATH; the trial images add it to Python's path).
NNI_PY := $(wildcard runner/nni/python/nni/*.py)

install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib/aah/python/nni
	install -m 0755 $(RUNNER_BIN) $(HOLD_BIN) $(TRIAL_BIN) $(DESTDIR)$(PREFIX)/bin/
	install -m 0644 $(NNI_PY) $(DESTDIR)$(PREFIX)/lib/aah/python/nni/

clean:
	rm -rf build build-asan build-fuzz

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)
