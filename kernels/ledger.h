/* ledger.h: what a training step costs a device backend, counted as it is
 * queued: kernel launches by kernel (and the bytes each moves, from the
 * shapes it was given), host <-> device copies and their bytes, and the
 * host's waits for the device. The cuda backend, its host harness
 * (cudahost) and refdev's pretend device record into it; the trainer and
 * bench_train print it per step (AAH_CUDA_LEDGER=1), and the tests hold a
 * resident step to what it must cost. C and C++. */
#ifndef AAH_KERNELS_LEDGER_H
#define AAH_KERNELS_LEDGER_H

#include <stddef.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

enum { LEDGER_KERNELS = 64, LEDGER_FNS = 256 };
enum ledger_copy { LEDGER_H2D, LEDGER_D2H, LEDGER_D2D };

struct ledger_kernel {
	const char *name;   /* what the launcher calls it (a string literal) */
	long calls;
	double bytes;       /* what its launches read and write, counted once each */
};

struct ops_ledger {
	long launches;      /* every kernel and library call queued */
	double bytes;       /* the launches' bytes */
	long copies[3];     /* by enum ledger_copy */
	double copy_bytes[3];
	long syncs;         /* host waits for the device's work */
	int nk;
	struct ledger_kernel k[LEDGER_KERNELS];
	int overflow;       /* kernels past LEDGER_KERNELS, counted in the totals only */
	long own;           /* launches of the backend's own kernels (fn given) */
	int nfn;
	const void *fn[LEDGER_FNS]; /* those kernels (template instances apart) */
};

/* Each records into l; l NULL: nothing (the ledger is off). */
/* fn: the kernel launched, NULL for a library's call (cuDNN, cuBLASLt) */
void ledger_launch(struct ops_ledger *l, const char *name, const void *fn, double bytes);
void ledger_copy(struct ops_ledger *l, enum ledger_copy kind, double bytes);
void ledger_sync(struct ops_ledger *l);
void ledger_reset(struct ops_ledger *l);
/* Whether fn is one of the kernels the ledger saw launched. */
int ledger_knows(const struct ops_ledger *l, const void *fn);
/* The totals in one line, then (kernels) one line per kernel, most bytes
 * first, each prefixed with `prefix`. */
void ledger_print(const struct ops_ledger *l, const char *prefix, int kernels, FILE *out);

#ifdef __cplusplus
}
#endif

#endif
