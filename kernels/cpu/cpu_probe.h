/* cpu_probe.h: what this machine's CPU and its oneDNN give the CPU backend
 * (the ISA oneDNN dispatches to, the activation layout its fast kernels
 * take, bf16 convolutions): one answer for the backend, the trainer's log
 * and the tests, which skip with it where a feature is missing. */
#ifndef AAH_CPU_PROBE_H
#define AAH_CPU_PROBE_H

#include <stddef.h>

#include <oneapi/dnnl/dnnl_types.h> /* dnnl_cpu_isa_t */

#include "kernels/ops.h" /* enum ops_layout */

/* What the tests and the trainer may need of the CPU. */
enum cpu_feature {
	/* oneDNN builds a bf16 convolution here, whatever its kernel (the
	 * conversions around it can be tested) */
	CPU_FEAT_BF16_CONV,
	/* ... with a jit kernel that runs here: what the trainer's
	 * --precision bf16 needs (a small convolution runs once in a child
	 * process: a hypervisor may hide the state the instructions need) */
	CPU_FEAT_BF16_TRAIN,
	/* oneDNN dispatches to an ISA with bf16 instructions (AVX512-BF16:
	 * avx512_core_bf16, avx512_core_amx), where bf16 is faster than fp32;
	 * below it oneDNN emulates bf16, at a third of fp32's speed on an
	 * AVX-512 core: what --precision fast decides by */
	CPU_FEAT_BF16_NATIVE,
	/* oneDNN dispatches to AVX-512 (avx512_core or later) */
	CPU_FEAT_AVX512,
	/* oneDNN has Winograd convolutions here (AVX-512 in oneDNN 2.x) */
	CPU_FEAT_WINOGRAD,
};

/* Caps oneDNN at ISA isa, before any other oneDNN call, unless the
 * environment already caps it (ONEDNN_MAX_CPU_ISA, DNNL_MAX_CPU_ISA): a
 * cap set through the API would override that one, even raise it, and a
 * run capped at AVX2 must stay at AVX2. Returns 0, or -1 when oneDNN
 * refuses (called too late). */
int cpu_probe_cap(dnnl_cpu_isa_t isa);
/* The CPU's model name from /proc/cpuinfo ("unknown CPU" without one). */
const char *cpu_probe_model(void);
/* The ISA oneDNN dispatches to now, after any cap (ONEDNN_MAX_CPU_ISA or
 * dnnl_set_max_cpu_isa): "avx2", "avx512_core_amx", ... */
const char *cpu_probe_isa(void);
/* The blocked activation layout whose batch normalisation, pooling and
 * rectifier oneDNN runs on jit kernels here: BLOCKED16 on AVX-512,
 * BLOCKED8 on AVX2 (and SSE4.1, AVX), OPS_NHWC where neither is. */
enum ops_layout cpu_probe_layout(void);
/* 1 when the feature is there; 0 with why it is not in why[len]. */
int cpu_probe_has(enum cpu_feature f, char *why, size_t len);
/* "skipped: <why> (<model>, oneDNN ISA <isa>)" into buf[len], the line a
 * test prints where f is missing; returns 1 then, 0 when f is there. */
int cpu_probe_skip(enum cpu_feature f, char *buf, size_t len);

#endif
