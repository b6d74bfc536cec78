/* step.c: one training step (step.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trialimg/step.h"
#include "util.h"

void step_init(struct step *s, struct model *m, struct ops_ctx *ctx, float smoothing,
	       float momentum, float weight_decay)
{
	const char *env = getenv("AAH_CUDA_GRAPH");
	s->m = m;
	s->ctx = ctx;
	s->smoothing = smoothing;
	s->momentum = momentum;
	s->weight_decay = weight_decay;
	s->graph = 0;
	s->graph_n = 0;
	s->runs = 0;
	s->loss = 0;
	s->correct = 0;
	s->nodes = s->own = -1;
	memset(&s->captured, 0, sizeof(s->captured));
	if (!ctx->be->capture)
		snprintf(s->why, sizeof(s->why), "the %s backend replays no step", ctx->be->name);
	else if (env && !strcmp(env, "0"))
		snprintf(s->why, sizeof(s->why), "AAH_CUDA_GRAPH=0");
	else if (!m->plan.input)
		snprintf(s->why, sizeof(s->why), "the batch is not uploaded into the model's input slot");
	else if (s->ls)
		snprintf(s->why, sizeof(s->why), "fp16's loss scale reads the gradients' overflow "
			 "flag back every step");
	else if (s->allreduce && !s->on_device)
		snprintf(s->why, sizeof(s->why), "the gradients' mean runs on the host (no NCCL)");
	else
		s->graph = 1;
}

/* forward, loss, backward, the mean over the ranks, the update */
static int run_ops(struct step *s, const float *x, const int *labels, int n, float lr,
		   float scale)
{
	struct model *m = s->m;
	struct ops_ctx *ctx = s->ctx;
	if (model_forward(m, ctx, x, n, 1) ||
	    ctx->be->loss(ctx, n, m->num_classes, model_logits(m), labels, s->smoothing, scale,
			  model_dlogits(m), &s->loss, &s->correct) ||
	    model_backward(m, ctx, x, n, model_dlogits(m)) || (s->allreduce && s->allreduce(s->arg)))
		return -1;
	int apply = 1;
	if (s->ls) { /* the scaled gradients: unscaled when all are finite, else skipped */
		int finite;
		if (ctx->be->unscale(ctx, m->n_params, m->grads, 1.0f / s->ls->scale, &finite))
			return -1;
		apply = loss_scale_update(s->ls, finite);
	}
	if (apply && model_update(m, ctx, lr, s->momentum, s->weight_decay))
		return -1;
	return apply;
}

/* The step's ops recorded instead of run, kept as the graph of batch size
 * n, and queued once: 1; 0 when they cannot be recorded (why says so:
 * the step then runs as it is). */
static int capture(struct step *s, const float *x, const int *labels, int n, float lr)
{
	struct ops_ctx *ctx = s->ctx;
	struct ops_ledger *l = ops_ledger_of(ctx);
	if (l)
		ledger_reset(l);
	int held = util_hold_errors(1);
	int rc = ctx->be->capture(ctx) ? -1 : run_ops(s, x, labels, n, lr, 1.0f);
	char why[200];
	snprintf(why, sizeof(why), "%s", rc < 0 ? util_last_error() : "");
	int kept = ctx->be->captured(ctx, n, &s->nodes, &s->own) == 0 && rc >= 0;
	if (!kept && !*why)
		snprintf(why, sizeof(why), "%s", util_last_error());
	util_hold_errors(held);
	if (!kept) {
		s->graph = 0;
		snprintf(s->why, sizeof(s->why), "the step could not be captured: %.200s", why);
		return 0;
	}
	if (l)
		s->captured = *l;
	s->graph_n = n;
	return ctx->be->replay(ctx, n) ? -1 : 1;
}

int step_train(struct step *s, const float *x, const int *labels, int n, float lr,
	       uint64_t step)
{
	struct model *m = s->m;
	struct ops_ctx *ctx = s->ctx;
	struct ops_step_vars vars = {lr, s->ls ? s->ls->scale : 1.0f, step};
	ctx->step = step;
	if (m->plan.input && x != m->in.x) {
		size_t count = (size_t)n * ops_shape_size(&m->input);
		if (ctx->be->upload(ctx, x, count, labels, n, &vars, m->in.staging, m->in.x,
				    m->in.type, m->in.labels, m->in.vars))
			return -1;
		x = m->in.x;
		labels = m->in.labels;
	}
	s->runs++;
	if (s->graph && s->graph_n == n)
		return ctx->be->replay(ctx, n) ? -1 : 1;
	/* the second step of the full batch: the first set up the kernels'
	 * plans and the scratch the capture must not allocate */
	if (s->graph && !s->graph_n && s->runs >= 2 && n == m->batch) {
		int rc = capture(s, x, labels, n, lr);
		if (rc)
			return rc;
	}
	return run_ops(s, x, labels, n, lr, vars.loss_scale);
}

int step_eval(struct step *s, const float *x, const int *labels, int n)
{
	struct model *m = s->m;
	struct ops_ctx *ctx = s->ctx;
	if (m->plan.input && x != m->in.x) {
		struct ops_step_vars vars = {0, 1.0f, ctx->step};
		if (ctx->be->upload(ctx, x, (size_t)n * ops_shape_size(&m->input), labels, n, &vars,
				    m->in.staging, m->in.x, m->in.type, m->in.labels, m->in.vars))
			return -1;
		x = m->in.x;
		labels = m->in.labels;
	}
	if (model_forward(m, ctx, x, n, 0) ||
	    ctx->be->loss(ctx, n, m->num_classes, model_logits(m), labels, s->smoothing, 1.0f, NULL,
			  &s->loss, &s->correct))
		return -1;
	return 0;
}

int step_read(struct step *s, double *loss, long *correct)
{
	if (ops_loss_read(s->ctx, &s->loss, &s->correct))
		return -1;
	*loss += s->loss;
	*correct += s->correct;
	s->loss = 0;
	s->correct = 0;
	return 0;
}
