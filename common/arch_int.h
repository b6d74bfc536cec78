/* arch_int.h: what the files of common/arch share: the table of layer
 * types (arch_op.c), the rules the checker and the reader reuse. */
#ifndef AAH_ARCH_INT_H
#define AAH_ARCH_INT_H

#include "arch.h"

#define ARCH_BN_EPS 1e-5       /* batchnorm's defaults: left out of a written document */
#define ARCH_BN_MOMENTUM 0.9

/* Every type's name and the fields it has besides id, type and inputs. */
struct arch_type_info {
	const char *name;
	const char *fields[6];
};
extern const struct arch_type_info arch_types[ARCH_NTYPES];

/* conv2d and the poolings slide a window. */
int arch_op_windowed(enum arch_type t);
/* The schema's ranges of the fields op's type has; what (or NULL: quiet)
 * names op in the error. */
int arch_op_check_fields(const struct arch_op *op, const char *what);
/* Output extent of a window op along one axis (0: nothing fits), and the
 * padding before (lo) and after (hi) it. */
int arch_op_window(const struct arch_op *op, int in, int *lo, int *hi);

#endif
