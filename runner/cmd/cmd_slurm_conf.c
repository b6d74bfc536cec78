/* cmd_slurm_conf.c: `aah-runner slurm-conf HOSTS`: a Slurm cluster's
 * slurm.conf and gres.conf from a host list (AIPerf's servers.json or a
 * plain file), what the list leaves out asked of each node (--probe: its
 * `slurmd -C`, its `nvidia-smi --list-gpus`), and the steps that spread the
 * munge key and the files (docs/slurm.md, "A cluster from a host list"). */
#include "runner/cmd/cmd.h"
#include "fileio.h"
#include "runner/backend/backend.h"    /* backend_run_tool */
#include "runner/backend/slurm_conf.h" /* slurm_nodes_read, slurm_conf_render */
#include "runner/cmd/options.h"
#include "strbuf.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
	"aah-runner slurm-conf HOSTS [-o DIR] [--controller NAME[=ADDRESS]] [--probe CMD]\n\n"
	"Write DIR/slurm.conf and DIR/gres.conf for the nodes of HOSTS: AIPerf's\n"
	"servers.json ([{\"ip\": ..., \"CUDA_VISIBLE_DEVICES\": \"0,1,...\"}], with name,\n"
	"cpus, memory, gpus beside), or a plain file, one node a line:\n"
	"  NAME [ADDRESS] [cpus=N] [memory=MB] [gpus=N]     or     ADDRESS [...]\n"
	"What a node's entry leaves out (its name, CPUs, memory, GPUs) is asked of\n"
	"the node with --probe: 'CMD <address or name> slurmd -C' (and nvidia-smi\n"
	"--list-gpus), e.g. --probe ssh. Then print the steps that spread the munge\n"
	"key and the files to every node (docs/slurm.md)."
	CMD_EXIT_HELP;

struct probe {
	struct strvec cmd;        /* --probe's words */
	double timeout;
};

/* Run the probe's words, the node, then what (on the node); its stdout
 * into out. 0, or -1 with the node's own words in the error. */
static int on_node(const struct probe *p, const struct slurm_node *n, const char *const *what,
		   struct strbuf *out)
{
	const struct backend_tool tool = { .name = "slurm-conf",
					   .missing = "check --probe (e.g. --probe ssh)",
					   .timeout = p->timeout };
	struct strvec argv = STRVEC_INIT;
	struct strbuf err = STRBUF_INIT;
	strvec_pushv(&argv, strvec_view(&p->cmd));
	strvec_push(&argv, n->addr ? n->addr : n->name);
	strvec_pushv(&argv, what);
	int code = backend_run_tool(&tool, strvec_view(&argv), NULL, out, &err);
	int r = 0;
	if (code > 0)
		r = error("%s: node '%s': '%s %s' failed (exit %d): %s", n->where,
			  n->name ? n->name : n->addr, p->cmd.v[0], what[0], code,
			  err.len ? err.buf : "(no message)");
	else if (code < 0)
		r = -1;
	strvec_clear(&argv);
	strbuf_release(&err);
	return r;
}

/* Fill in what node n's entry left out, from the node itself. */
static int probe_node(const struct probe *p, struct slurm_node *n)
{
	static const char *const slurmd_c[] = { "slurmd", "-C", NULL };
	static const char *const list_gpus[] = { "nvidia-smi", "--list-gpus", NULL };
	struct strbuf out = STRBUF_INIT;
	int r = 0;
	if (!n->name || !n->cpus || !n->memory) {
		r = on_node(p, n, slurmd_c, &out);
		if (r == 0)
			r = slurm_node_probed(n, out.buf);
	}
	if (r == 0 && n->gpus < 0) {
		int held = util_hold_errors(1);
		if (on_node(p, n, list_gpus, &out) == 0) {
			n->gpus = slurm_count_gpus(out.buf);
		} else {
			warning("%s: node '%s' has no GPUs written: %s; give it gpus=N", n->where,
				n->name, util_last_error());
			n->gpus = 0;
		}
		util_hold_errors(held);
	}
	strbuf_release(&out);
	return r;
}

/* Every node with a name and CPUs, asked of the nodes with --probe: 0,
 * -1 when a probe failed, CMD_EXIT_CONFIG when the list lacks what no
 * probe asked. */
static int complete(struct slurm_nodes *ns, const struct probe *p)
{
	for (size_t i = 0; i < ns->n; i++) {
		struct slurm_node *n = &ns->v[i];
		if (p->cmd.n && probe_node(p, n) < 0)
			return -1;
		if (!n->name) {
			error("%s: node '%s' has no name (NodeName: its hostname); give it, or --probe "
			      "to ask the node", n->where, n->addr);
			return CMD_EXIT_CONFIG;
		}
		if (!n->cpus) {
			error("%s: node '%s' has no cpus=N; give it, or --probe to ask the node",
			      n->where, n->name);
			return CMD_EXIT_CONFIG;
		}
		if (n->gpus < 0)
			n->gpus = 0;
	}
	return 0;
}

/* What to do with the files: the munge key and the files on every node,
 * then the daemons. */
static void print_steps(const struct slurm_nodes *ns, const char *conf, const char *gres,
			const char *controller)
{
	char *ctl = controller ? xstrndup(controller, strcspn(controller, "=")) : NULL;
	const char *head = ctl ? ctl : ns->v[0].name;
	printf("wrote %s and %s: %zu nodes, controller %s\n", conf, gres, ns->n, head);
	for (size_t i = 0; i < ns->n; i++) {
		const struct slurm_node *n = &ns->v[i];
		char mem[32] = "not given";
		if (n->memory)
			snprintf(mem, sizeof(mem), "%ld MB", n->memory);
		printf("  %-16s %-16s CPUs %ld, memory %s, GPUs %ld\n", n->name,
		       n->addr ? n->addr : "", n->cpus, mem, n->gpus);
	}
	printf("\nTo bring the cluster up (Debian: munge on every host, slurmctld on %s, slurmd "
	       "on the nodes):\n"
	       "1. One munge key for every host. On %s, as root (Debian's munge package has made "
	       "one already):\n"
	       "     mungekey --create --keyfile=/etc/munge/munge.key\n"
	       "   then to each node, with its owner and mode, and munged restarted:\n", head, head);
	for (size_t i = 0; i < ns->n; i++) {
		const struct slurm_node *n = &ns->v[i];
		const char *to = n->addr ? n->addr : n->name;
		if (!strcmp(n->name, head))
			continue;
		printf("     scp -p /etc/munge/munge.key root@%s:/etc/munge/munge.key\n"
		       "     ssh root@%s 'chown munge:munge /etc/munge/munge.key && chmod 0400 "
		       "/etc/munge/munge.key && systemctl restart munge'\n", to, to);
	}
	printf("   check: 'munge -n | ssh root@<node> unmunge' says STATUS: Success (0) for each.\n"
	       "2. The same slurm.conf and gres.conf in /etc/slurm/ on %s and every node:\n", head);
	for (size_t i = 0; i < ns->n; i++)
		if (strcmp(ns->v[i].name, head))
			printf("     scp %s %s root@%s:/etc/slurm/\n", conf, gres,
			       ns->v[i].addr ? ns->v[i].addr : ns->v[i].name);
	printf("3. systemctl restart slurmctld on %s, then systemctl restart slurmd on every node.\n"
	       "4. 'sinfo -N' lists every node idle. One drained for \"Low RealMemory\" or \"Low "
	       "CPUs\" has less than the file says: fix its entry and go again from 2.\n", head);
	free(ctl);
}

int cmd_slurm_conf(int argc, const char **argv)
{
	const char *outdir = ".", *controller = NULL, *probe_cmd = NULL, **rest;
	const char *cluster = "aah", *partition = "aiperf", *gpu_file = "/dev/nvidia";
	struct strvec set = STRVEC_INIT;
	struct probe probe = { STRVEC_INIT, 30 };
	const struct option_spec opts[] = {
		{ "output", 'o', OPT_STRING, &outdir, "DIR", "where slurm.conf and gres.conf go (.)" },
		{ "controller", 0, OPT_STRING, &controller, "NAME[=ADDR]",
		  "slurmctld's host (the first node)" },
		{ "probe", 0, OPT_STRING, &probe_cmd, "CMD", "ask the nodes: CMD <node> slurmd -C" },
		{ "probe-timeout", 0, OPT_DOUBLE, OPT_NUMBER(&probe.timeout, 1, 3600), "SEC",
		  "how long one probe may take (30)" },
		{ "cluster", 0, OPT_STRING, &cluster, "NAME", "ClusterName (aah)" },
		{ "partition", 0, OPT_STRING, &partition, "NAME", "the partition of every node (aiperf)" },
		{ "gpu-file", 0, OPT_STRING, &gpu_file, "PREFIX",
		  "the GPUs' device files, PREFIX0.. (/dev/nvidia)" },
		{ "set", 0, OPT_LIST, &set, "KEY=VALUE", "a slurm.conf setting of yours (repeatable)" },
		{ NULL },
	};
	int n = options_parse(argc, argv, opts, usage, &rest);
	if (n < 0) {
		strvec_clear(&set);
		return n == -2 ? 0 : CMD_EXIT_CONFIG;
	}
	const char *hosts = n == 1 ? rest[0] : NULL;
	free(rest);
	struct slurm_nodes ns = { NULL, 0 };
	struct strbuf conf = STRBUF_INIT, gres = STRBUF_INIT;
	char *conf_path = xstrfmt("%s/slurm.conf", outdir), *gres_path = xstrfmt("%s/gres.conf", outdir);
	int rc = CMD_EXIT_CONFIG;
	struct slurm_conf_opts o = { .source = hosts, .cluster = cluster, .controller = controller,
				     .partition = partition, .gpu_file = gpu_file, .set = &set };
	if (probe_cmd)
		strvec_split(&probe.cmd, probe_cmd);
	if (!hosts)
		error("which host list? (usage: aah-runner slurm-conf HOSTS [options]; --help)");
	else if (probe_cmd && !probe.cmd.n)
		error("--probe needs a command (e.g. --probe ssh)");
	else if (slurm_conf_check(&o) == 0 && slurm_nodes_read(hosts, &ns) == 0 &&
		 (rc = complete(&ns, &probe)) == 0) {
		rc = CMD_EXIT_CONFIG;
		if (slurm_conf_render(&o, &ns, &conf, &gres) == 0) {
			rc = 1;
			if (fileio_mkdir_p(outdir, 0755) == 0 &&
			    fileio_write_atomic(conf_path, conf.buf, conf.len) == 0 &&
			    fileio_write_atomic(gres_path, gres.buf, gres.len) == 0) {
				print_steps(&ns, conf_path, gres_path, controller);
				rc = 0;
			}
		}
	}
	if (rc < 0)
		rc = 1;
	slurm_nodes_release(&ns);
	strbuf_release(&conf);
	strbuf_release(&gres);
	strvec_clear(&set);
	strvec_clear(&probe.cmd);
	free(conf_path);
	free(gres_path);
	return rc;
}
