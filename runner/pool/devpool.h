/* devpool.h: fair share of a device pool: each training's devices,
 * proportional to its priority within its own minimum and maximum. Pure:
 * no files, no clock; the ledger (runner/pool/ledger.h) keeps the state. */
#ifndef AAH_DEVPOOL_H
#define AAH_DEVPOOL_H

#include <stddef.h>

struct devpool_training {
	long priority;            /* > 0 */
	unsigned min, max;        /* devices; 0 < min <= max, max <= the pool */
	unsigned long arrival;    /* order of arrival: the earlier wins a tie */
	unsigned share;           /* out: devices given */
};

/* Give each of the n trainings its share of devices.
 *
 * Admission: in order of priority (higher first, then arrival), a training
 * is admitted when its minimum still fits beside those admitted before it;
 * the others get 0 and wait.
 * Shares: the admitted split the pool in proportion to priority; a share
 * above a training's maximum is cut to it, one below its minimum raised to
 * it, and the rest split again among the others (water filling).
 * Rounding: each takes the whole part of its share, and the devices left go
 * one by one to the largest fractional parts (ties: priority, arrival),
 * never past a maximum. Devices nobody can take (every maximum reached)
 * stay idle.
 * Returns the number of devices given. */
unsigned devpool_share(struct devpool_training *t, size_t n, unsigned devices);

#endif
