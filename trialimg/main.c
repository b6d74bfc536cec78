/* main.c: aah-trial entry point: arguments, signals, exit status. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cpu/cpu_probe.h" /* --probe */
#include "trialimg/args.h"
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
	if (a.probe) {
		print_probe();
		args_release(&a);
		return 0;
	}
	int rc = train_run(&a, &stop_requested);
	args_release(&a);
	return rc == 0 ? 0 : rc == 2 ? ELASTIC_EXIT_RESIZE : rc == 3 ? TRAIN_EXIT_PEER_LOST : 1;
}
