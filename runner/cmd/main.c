/* main.c: aah-runner entry point; a table of subcommands -> cmd_*.c */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "runner/backend/local.h" /* local_held_orphan */
#include "runner/cmd/cmd.h" /* cmd_create, cmd_resume, ... */
#include "runner/cmd/report_cmds.h" /* cmd_report, cmd_collect, cmd_verify, cmd_metrics */
#include "util.h"

struct subcommand {
	const char *name;
	int (*fn)(int argc, const char **argv);
	const char *help;
};

static const struct subcommand commands[] = {
	{ "create", cmd_create, "create an experiment from a config.yml and run it" },
	{ "resume", cmd_resume, "continue an experiment after a stop or a crash" },
	{ "stop", cmd_stop, "stop a running experiment (trials are canceled)" },
	{ "status", cmd_status, "show an experiment's trials (--watch to follow)" },
	{ "list", cmd_list, "list the experiments in the work directory" },
	{ "propose", cmd_propose, "write the tuner's proposal for a trial (arch.json, params.json)" },
	{ "check", cmd_check, "validate a config.yml (AIPerf v1 or NNI v2) without running it" },
	{ "priority", cmd_priority, "change the device pool priority of an experiment or a training" },
	{ "render", cmd_render, "print a trial's Kubernetes Job (and Service) for kubectl apply" },
	{ "report", cmd_report, "score an experiment (Score, Regulated Score, Error) and write report.html" },
	{ "collect", cmd_collect, "archive every log of an experiment with a SHA-256 manifest, optionally signed" },
	{ "verify", cmd_verify, "check an archive made by collect" },
	{ "metrics", cmd_metrics, "print an experiment's metrics in the Prometheus text format" },
	{ "slurm-conf", cmd_slurm_conf, "write a Slurm cluster's slurm.conf and gres.conf from a host list" },
	{ "slurm-launch", cmd_slurm_launch, "(inside a Slurm job) start one rank of a trial" },
	{ "held-orphan", local_held_orphan, "(run by aah-hold) start a held rank whose runner died, if journaled" },
};

static void usage(FILE *out)
{
	fprintf(out, "usage: aah-runner <command> [options]\n\ncommands:\n");
	for (size_t i = 0; i < ARRAY_SIZE(commands); i++)
		fprintf(out, "  %-12s %s\n", commands[i].name, commands[i].help);
	fprintf(out, "\n'aah-runner <command> --help' describes a command.\n"
		     "Experiments live in $AAH_WORKDIR (default ./aah-work) unless the config "
		     "sets workdir.\n"
		     "Exit status: 0 ok, 1 the command failed, 2 a usage or config error.\n");
}

int main(int argc, char **argv)
{
	util_set_progname("aah-runner");
	/* A child that exits early must not kill us through a write to its pipe. */
	signal(SIGPIPE, SIG_IGN);
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--version")) {
		printf("aah-runner 0.1.0\n");
		return 0;
	}
	for (size_t i = 0; i < ARRAY_SIZE(commands); i++)
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].fn(argc - 1, (const char **)argv + 1);
	fprintf(stderr, "aah-runner: '%s' is not a command\n\n", argv[1]);
	usage(stderr);
	return 2;
}
