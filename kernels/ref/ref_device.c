/* ref_device.c: the `refdev` backend: ref's ops on a pretend device, to
 * check on any machine what only a GPU would show otherwise: that the
 * trainer keeps a device-resident model (ops_backend.resident) in step with
 * its host copy (docs/cuda.md, "Memory").
 *
 * A block made resident gets a shadow allocation, the pretend device copy;
 * every op reads and writes the shadows in place of the host blocks, as the
 * cuda backend does its device copies. The host copy is stale from the
 * start of any op until sync brings it back, and here it is made visibly
 * stale: every op first fills the host copies of all resident blocks with
 * 0xff bytes (a NaN in every float). A host read that missed its sync
 * reads NaN; a host write that missed its sync never reaches the ops. So a
 * trial on refdev matches the same trial on ref bit for bit exactly when
 * every sync is where it belongs (tests/cli/trial_refdev.bats).
 *
 * Like a GPU backend it keeps the loss's sums until loss_read, takes the
 * batch by upload into the model's input slot, and counts in a ledger the
 * copies between the two memories and the host's waits (sync, loss_read),
 * so that a test holds a resident step to what it may cost a GPU. */
#include <stdlib.h>
#include <string.h>

#include "kernels/ledger.h"
#include "kernels/ref/ref.h"
#include "util.h"

#define REFDEV_MAX 8

struct refdev {
	struct {
		char *host, *dev;
		size_t bytes;
	} m[REFDEV_MAX];
	int n;
	double loss;        /* the loss's sums "on the device" */
	long correct;
	struct ops_ledger ledger;
};

static struct refdev *refdev(struct ops_ctx *ctx)
{
	return ctx->priv;
}

static int refdev_init(struct ops_ctx *ctx)
{
	ctx->priv = xcalloc(1, sizeof(struct refdev));
	return 0;
}

static void refdev_fini(struct ops_ctx *ctx)
{
	struct refdev *d = refdev(ctx);
	for (int k = 0; d && k < d->n; k++)
		free(d->m[k].dev);
	free(d);
	ctx->priv = NULL;
}

/* The shadow address of p (p itself when it is in no resident block). */
static void *dev(struct ops_ctx *ctx, const void *p)
{
	struct refdev *d = refdev(ctx);
	const char *q = p;
	for (int k = 0; p && k < d->n; k++)
		if (q >= d->m[k].host && q < d->m[k].host + d->m[k].bytes)
			return d->m[k].dev + (q - d->m[k].host);
	return (void *)p;
}

/* An op begins: every host copy goes stale. */
static void poison(struct ops_ctx *ctx)
{
	struct refdev *d = refdev(ctx);
	for (int k = 0; k < d->n; k++)
		memset(d->m[k].host, 0xff, d->m[k].bytes);
}

static int refdev_resident(struct ops_ctx *ctx, void *p, size_t bytes, size_t copy)
{
	struct refdev *d = refdev(ctx);
	if (!p || !bytes)
		return 0;
	if (d->n == REFDEV_MAX)
		return error("refdev: more than %d resident blocks", REFDEV_MAX);
	d->m[d->n].host = p;
	d->m[d->n].bytes = bytes;
	d->m[d->n].dev = xcalloc(1, bytes);
	memcpy(d->m[d->n].dev, p, copy);
	d->n++;
	poison(ctx);
	return 0;
}

static int refdev_sync(struct ops_ctx *ctx, void *p, size_t bytes, int to_device)
{
	char *q = dev(ctx, p);
	if (q == p || !bytes)
		return 0;
	if (to_device)
		memcpy(q, p, bytes);
	else
		memcpy(p, q, bytes);
	ledger_copy(&refdev(ctx)->ledger, to_device ? LEDGER_H2D : LEDGER_D2H, (double)bytes);
	ledger_sync(&refdev(ctx)->ledger);
	return 0;
}

/* The batch, its labels and vars in one copy to the slot's shadow (the
 * model's input slot is fp32 here: ref's ops take no bf16 tensor). */
static int refdev_upload(struct ops_ctx *ctx, const float *x, size_t count, const int *labels,
			 int n, const struct ops_step_vars *vars, void *staging, void *x_dev,
			 enum ops_dtype xt, int *labels_dev, struct ops_step_vars *vars_dev)
{
	(void)staging;
	if (xt != OPS_F32)
		return error("refdev: an input slot of type %d (its ops take fp32)", (int)xt);
	poison(ctx);
	memcpy(dev(ctx, x_dev), x, count * sizeof(float));
	memcpy(dev(ctx, labels_dev), labels, (size_t)n * sizeof(int));
	memcpy(dev(ctx, vars_dev), vars, sizeof(*vars));
	ledger_copy(&refdev(ctx)->ledger, LEDGER_H2D,
		    (double)(count * sizeof(float) + (size_t)n * sizeof(int) + sizeof(*vars)));
	return 0;
}

static struct ops_ledger *refdev_ledger(struct ops_ctx *ctx)
{
	return &refdev(ctx)->ledger;
}

static void refdev_forget(struct ops_ctx *ctx, void *p)
{
	struct refdev *d = refdev(ctx);
	for (int k = 0; k < d->n; k++)
		if (d->m[k].host == p) {
			free(d->m[k].dev);
			d->m[k] = d->m[--d->n];
			return;
		}
}

/* ---- ref's ops on the shadows ---------------------------------------------------- */

/* l with every pointer into a resident block moved to its shadow. */
static struct ops_layer on_device(struct ops_ctx *ctx, const struct ops_layer *l)
{
	struct ops_layer t = *l;
	float **f[] = { &t.w, &t.dw, &t.b, &t.db, &t.gamma, &t.dgamma, &t.beta, &t.dbeta,
			&t.run_mean, &t.run_var, &t.save_mean, &t.save_var };
	for (size_t k = 0; k < ARRAY_SIZE(f); k++)
		*f[k] = dev(ctx, *f[k]);
	t.mask = dev(ctx, t.mask);
	return t;
}

#define REFDEV_MAX_IN 16

static int layer_forward(struct ops_ctx *ctx, struct ops_layer *l, int n, const float *const *x,
			 float *y, int train)
{
	const float *xs[REFDEV_MAX_IN];
	if (l->n_in > REFDEV_MAX_IN)
		return error("refdev: a layer with %d inputs", l->n_in);
	poison(ctx);
	struct ops_layer t = on_device(ctx, l);
	for (int k = 0; k < l->n_in; k++)
		xs[k] = dev(ctx, x[k]);
	int rc = ops_ref_backend.layer[l->cfg.type]->forward(ctx, &t, n, xs, dev(ctx, y), train);
	l->priv = t.priv;
	l->ran = t.ran, l->ran_out = t.ran_out;
	return rc;
}

static int layer_backward(struct ops_ctx *ctx, struct ops_layer *l, int n,
			  const float *const *x, const float *y, const float *dy,
			  float *const *dx)
{
	const float *xs[REFDEV_MAX_IN];
	float *dxs[REFDEV_MAX_IN];
	if (l->n_in > REFDEV_MAX_IN)
		return error("refdev: a layer with %d inputs", l->n_in);
	poison(ctx);
	struct ops_layer t = on_device(ctx, l);
	for (int k = 0; k < l->n_in; k++) {
		xs[k] = dev(ctx, x[k]);
		dxs[k] = dev(ctx, dx[k]);
	}
	int rc = ops_ref_backend.layer[l->cfg.type]->backward(ctx, &t, n, xs, dev(ctx, y),
							       dev(ctx, dy), dxs);
	l->priv = t.priv;
	l->ran = t.ran, l->ran_out = t.ran_out;
	return rc;
}

#define REFDEV_LAYER(T, NAME)                                                     \
	static const struct ops_layer_ops refdev_##NAME = {                        \
		.type = T, .name = #NAME " (ref, on the pretend device)",          \
		.forward = layer_forward, .backward = layer_backward,              \
	}
REFDEV_LAYER(OPS_CONV2D, conv2d);
REFDEV_LAYER(OPS_BATCHNORM, batchnorm);
REFDEV_LAYER(OPS_RELU, relu);
REFDEV_LAYER(OPS_MAXPOOL, maxpool);
REFDEV_LAYER(OPS_AVGPOOL, avgpool);
REFDEV_LAYER(OPS_GLOBAL_AVG_POOL, global_avg_pool);
REFDEV_LAYER(OPS_DENSE, dense);
REFDEV_LAYER(OPS_DROPOUT, dropout);
REFDEV_LAYER(OPS_ADD, add);
REFDEV_LAYER(OPS_CONCAT, concat);
REFDEV_LAYER(OPS_FLATTEN, flatten);

static int refdev_loss(struct ops_ctx *ctx, int n, int classes, const float *logits,
		       const int *labels, float smoothing, float scale, float *dlogits,
		       double *loss_sum, long *correct)
{
	(void)loss_sum, (void)correct;   /* kept "on the device": refdev_loss_read */
	struct refdev *d = refdev(ctx);
	poison(ctx);
	return ref_loss(ctx, n, classes, dev(ctx, logits), dev(ctx, labels), smoothing, scale,
			dev(ctx, dlogits), &d->loss, &d->correct);
}

static int refdev_loss_read(struct ops_ctx *ctx, double *loss_sum, long *correct)
{
	struct refdev *d = refdev(ctx);
	*loss_sum += d->loss;
	*correct += d->correct;
	d->loss = 0;
	d->correct = 0;
	ledger_copy(&d->ledger, LEDGER_D2H, sizeof(double) + sizeof(long));
	ledger_sync(&d->ledger);
	return 0;
}

static int refdev_sgd(struct ops_ctx *ctx, size_t count, float *w, const float *g, float *v,
		      float lr, float mu, float wd)
{
	poison(ctx);
	return ref_sgd(ctx, count, dev(ctx, w), dev(ctx, g), dev(ctx, v), lr, mu, wd);
}

static int refdev_accumulate(struct ops_ctx *ctx, size_t count, enum ops_dtype t, void *y,
			     const void *x)
{
	poison(ctx);
	return ref_accumulate(ctx, count, t, dev(ctx, y), dev(ctx, x));
}

static int refdev_unscale(struct ops_ctx *ctx, size_t count, float *g, float inv, int *finite)
{
	poison(ctx);
	return ref_unscale(ctx, count, dev(ctx, g), inv, finite);
}

static int refdev_cast(struct ops_ctx *ctx, size_t count, const void *x, enum ops_dtype xt,
		       void *y, enum ops_dtype yt)
{
	poison(ctx);
	return ref_cast(ctx, count, dev(ctx, x), xt, dev(ctx, y), yt);
}

const struct ops_backend ops_refdev_backend = {
	.name = "refdev",
	.caps = OPS_CAP_FP32 | OPS_CAP_BF16 | OPS_CAP_FP16, /* emulated, as ref's */
	.init = refdev_init,
	.fini = refdev_fini,
	.set_precision = ref_set_precision,
	.layer = {
		[OPS_CONV2D] = &refdev_conv2d,
		[OPS_BATCHNORM] = &refdev_batchnorm,
		[OPS_RELU] = &refdev_relu,
		[OPS_MAXPOOL] = &refdev_maxpool,
		[OPS_AVGPOOL] = &refdev_avgpool,
		[OPS_GLOBAL_AVG_POOL] = &refdev_global_avg_pool,
		[OPS_DENSE] = &refdev_dense,
		[OPS_DROPOUT] = &refdev_dropout,
		[OPS_ADD] = &refdev_add,
		[OPS_CONCAT] = &refdev_concat,
		[OPS_FLATTEN] = &refdev_flatten,
	},
	.loss = refdev_loss,
	.loss_read = refdev_loss_read,
	.sgd = refdev_sgd,
	.accumulate = refdev_accumulate,
	.unscale = refdev_unscale,
	.cast = refdev_cast,
	.resident = refdev_resident,
	.sync = refdev_sync,
	.forget = refdev_forget,
	.ledger = refdev_ledger,
	.upload = refdev_upload,
};
