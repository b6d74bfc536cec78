/* main.c: aah-trial entry point: arguments, signals, exit status. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cpu/cpu_probe.h" /* --probe */
#include "trialimg/args.h"
#include "trialimg/memplan.h" /* --plan */
#include "trialimg/model.h"
#include "trialimg/train.h"
#include "trialimg/elastic.h" /* ELASTIC_EXIT_RESIZE */
#include "util.h"

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
	(void)sig;
	stop_requested = 1;
}

/* --probe: one "name: value" line per fact, the same answers the cpu
 * backend and the tests use. */
static void print_probe(void)
{
	static const struct {
		const char *name;
		enum cpu_feature f;
	} feats[] = {
		{"bf16", CPU_FEAT_BF16_TRAIN},
		{"bf16_native", CPU_FEAT_BF16_NATIVE}, /* --precision fast's bf16 */
		{"winograd", CPU_FEAT_WINOGRAD},
	};
	static const char *const layouts[] = {
		[OPS_NHWC] = "nhwc", [OPS_BLOCKED8] = "nChw8c", [OPS_BLOCKED16] = "nChw16c",
	};
	char why[256];
	printf("cpu: %s\n", cpu_probe_model());
	printf("onednn_isa: %s\n", cpu_probe_isa());
	printf("layout: %s\n", layouts[cpu_probe_layout()]);
	for (size_t i = 0; i < ARRAY_SIZE(feats); i++) {
		if (cpu_probe_has(feats[i].f, why, sizeof(why)))
			printf("%s: yes\n", feats[i].name);
		else
			printf("%s: no (%s)\n", feats[i].name, why);
	}
}

static const char *env_get(const char *name)
{
	return getenv(name);
}

/* --plan: the memory plan of a step of --arch at --batch_size and
 * --precision on --backend's ops (auto: cpu), with no device: the plan
 * reads the backend's table and settings, it starts nothing. */
static int print_plan(const struct args *a)
{
	const char *name = strcmp(a->backend, "auto") ? a->backend : "cpu";
	const struct ops_backend *be = ops_backend_find(name);
	if (!be)
		return error("--plan: no backend '%s' in this aah-trial", name);
	if (!a->arch)
		return error("--plan needs --arch");
	struct ops_ctx ctx = { .be = be, .conv_algo = ops_conv_algo_parse(a->conv_algo) };
	/* auto and fast on a GPU: bf16, as on every one the cuda backend runs on
	 * (its own pick needs the device) */
	int gpu_pick = be->caps & OPS_CAP_GPU &&
		       (!strcmp(a->precision, "auto") || !strcmp(a->precision, "fast"));
	const char *prec = gpu_pick ? "bf16" : ops_precision_pick(&ctx, a->precision);
	if (be == ops_backend_find("cpu")) /* what its init would set on this machine */
		ctx.blocked = cpu_probe_layout();
	if (!strcmp(prec, "bf16") || !strcmp(prec, "fp16"))
		ctx.conv_type = prec[0] == 'b' ? OPS_BF16 : OPS_F16;
	else if (strcmp(prec, "fp32"))
		return error("--precision %s: the backend picked %s, which --plan does not know",
			     a->precision, prec);
	/* bf16 activations where the backend's ops take them (the CPU's, on a
	 * CPU with bf16 kernels: its set_precision sets the same) */
	ctx.act_type = ctx.conv_type == OPS_BF16 ? OPS_BF16 : OPS_F32;
	if (ctx.conv_algo < 0)
		return error("--conv_algo %s: must be one of " OPS_CONV_ALGO_NAMES, a->conv_algo);
	struct model m;
	struct memplan p;
	int batch = (int)a->batch_size;
	if (model_load(&m, a->arch))
		return -1;
	if (memplan_build(&p, &m, batch, &ctx, 0)) {
		model_release(&m, NULL);
		return -1;
	}
	size_t params = 0;
	for (int i = 0; i < m.n_layers; i++)
		params += m.layers[i].n_weights + m.layers[i].n_biases;
	printf("memory plan of a training step: %s (%d layers, %zu parameters), batch %d, "
	       "precision %s, backend %s\n", a->arch, m.n_layers, params, batch, prec, be->name);
	memplan_print(&p, &ctx, stdout);
	memplan_release(&p);
	if (a->memory_limit > 0) /* sizing a device: what fits in it */
		printf("largest batch in --memory_limit %g MiB: %d\n", a->memory_limit,
		       memplan_max_batch(&m, 65536, &ctx, (size_t)(a->memory_limit * 1048576.0)));
	model_release(&m, NULL);
	return 0;
}

int main(int argc, char **argv)
{
	struct args a;
	struct sigaction sa;
	util_set_progname("aah-trial");
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	if (args_parse(&a, argc, argv, env_get)) {
		const char *dir = a.trial_dir ? a.trial_dir : getenv("AAH_TRIAL_DIR");
		char *why = xstrfmt("error: %s", util_last_error());
		if (dir)
			train_write_failure(dir, why);
		free(why);
		args_release(&a);
		if (a.usage)
			args_usage(stderr);
		else
			fprintf(stderr, "aah-trial: see --help\n");
		return 2;
	}
	if (a.help) {
		args_help(stdout);
		args_release(&a);
		return 0;
	}
	if (a.plan) {
		int prc = print_plan(&a);
		if (prc)
			fprintf(stderr, "aah-trial: %s\n", util_last_error());
		args_release(&a);
		return prc ? 2 : 0;
	}
	if (a.probe) {
		print_probe();
		args_release(&a);
		return 0;
	}
	int rc = train_run(&a, &stop_requested);
	args_release(&a);
	return rc == 0 ? 0 : rc == 2 ? ELASTIC_EXIT_RESIZE : rc == 3 ? TRAIN_EXIT_PEER_LOST : 1;
}
