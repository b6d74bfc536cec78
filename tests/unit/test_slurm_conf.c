/* Unit tests for `aah-runner slurm-conf`'s pure parts
 * (runner/backend/slurm_conf.c): the host list read (a plain file and
 * AIPerf's servers.json) with its errors naming file, line and field, what
 * `slurmd -C` and `nvidia-smi --list-gpus` say of a node, and the text of
 * slurm.conf and gres.conf. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fileio.h"
#include "runner/backend/slurm_conf.h"
#include "util.h"

static char tmpdir[64];

static void setup(void)
{
	strcpy(tmpdir, "/tmp/aah-slurm-conf-XXXXXX");
	cr_assert_not_null(mkdtemp(tmpdir));
	util_set_quiet(1);
}

static void teardown(void)
{
	fileio_remove_tree(tmpdir);
}

TestSuite(slurm_conf, .init = setup, .fini = teardown);

/* The list with that text, in a file of that name; its path (freed by the caller). */
static char *list(const char *name, const char *text)
{
	char *p = xstrfmt("%s/%s", tmpdir, name);
	cr_assert_eq(fileio_write_atomic(p, text, strlen(text)), 0);
	return p;
}

/* Reading the list fails with an error that holds want (after the path). */
static void refused(const char *name, const char *text, const char *want)
{
	struct slurm_nodes ns;
	char *p = list(name, text);
	char *full = xstrfmt("%s/%s", tmpdir, want);
	cr_assert_lt(slurm_nodes_read(p, &ns), 0, "%s was read", text);
	cr_assert(strstr(util_last_error(), full), "'%s' lacks '%s'", util_last_error(), full);
	cr_assert_eq(ns.n, 0);
	free(full);
	free(p);
}

Test(slurm_conf, plain_list)
{
	struct slurm_nodes ns;
	char *p = list("hosts.txt", "# AAH's nodes\n"
				    "gpu1 10.0.0.11 cpus=64 memory=256000 gpus=8\n"
				    "\n"
				    "10.0.0.12 gpus=8   # a name from the node itself\n"
				    "gpu3 cpus=32\n");
	cr_assert_eq(slurm_nodes_read(p, &ns), 0, "%s", util_last_error());
	cr_assert_eq(ns.n, 3);
	cr_assert_str_eq(ns.v[0].name, "gpu1");
	cr_assert_str_eq(ns.v[0].addr, "10.0.0.11");
	cr_assert_eq(ns.v[0].cpus, 64);
	cr_assert_eq(ns.v[0].memory, 256000);
	cr_assert_eq(ns.v[0].gpus, 8);
	cr_assert_null(ns.v[1].name);
	cr_assert_str_eq(ns.v[1].addr, "10.0.0.12");
	cr_assert_eq(ns.v[1].cpus, 0);
	char *where = xstrfmt("%s:4", p);
	cr_assert_str_eq(ns.v[1].where, where);
	cr_assert_str_eq(ns.v[2].name, "gpu3");
	cr_assert_null(ns.v[2].addr);
	cr_assert_eq(ns.v[2].gpus, -1, "not given");
	slurm_nodes_release(&ns);
	free(where);
	free(p);
}

Test(slurm_conf, plain_errors_name_file_line_field)
{
	refused("a.txt", "gpu1 cpus=64\ngpu2 cpus=many\n", "a.txt:2: 'cpus': must be an integer from 1");
	refused("b.txt", "gpu1 gpus=-1\n", "b.txt:1: 'gpus': must be an integer from 0 to 1024");
	refused("c.txt", "gpu1\n\ngpu2 10.0.0.2 extra\n", "c.txt:3: 'extra' is one word too many");
	refused("d.txt", "gpu1 cores=4\n", "d.txt:1: unknown field 'cores'");
	refused("e.txt", "gpu1 10.0.0.1\nGPU1 10.0.0.2\n", "e.txt:2: node 'GPU1' is listed before, at ");
	refused("f.txt", "gpu1 10.0.0.1\ngpu2 10.0.0.1\n", "f.txt:2: address '10.0.0.1' is listed before");
	refused("g.txt", "# nothing\n\n", "g.txt: no node in it");
	refused("h.txt", "gpu/1\n", "h.txt:1: 'name': must be a host name");
}

Test(slurm_conf, servers_json)
{
	struct slurm_nodes ns;
	/* AIPerf's own servers.json, with its bookkeeping keys */
	char *p = list("servers.json",
		       "[\n"
		       "  {\"ip\": \"10.0.0.11\", \"port\": 22, \"user\": \"root\", \"tag\": 1,\n"
		       "   \"CUDA_VISIBLE_DEVICES\": \"0,1,2,3,4,5,6,7\"},\n"
		       "  {\"ip\": \"10.0.0.12\", \"name\": \"gpu2\", \"cpus\": 96, \"gpus\": 4}\n"
		       "]\n");
	cr_assert_eq(slurm_nodes_read(p, &ns), 0, "%s", util_last_error());
	cr_assert_eq(ns.n, 2);
	cr_assert_null(ns.v[0].name);
	cr_assert_str_eq(ns.v[0].addr, "10.0.0.11");
	cr_assert_eq(ns.v[0].gpus, 8);
	cr_assert_str_eq(ns.v[1].name, "gpu2");
	cr_assert_eq(ns.v[1].cpus, 96);
	cr_assert_eq(ns.v[1].gpus, 4);
	slurm_nodes_release(&ns);
	free(p);
}

Test(slurm_conf, json_errors_name_line_column_entry_field)
{
	refused("a.json", "[\n  {\"ip\": \"10.0.0.1\"},\n  {\"ip\": \"10.0.0.2\", \"cpus\": \"x\"}\n]\n",
		"a.json:3:22: '[1].cpus': must be an integer");
	refused("b.json", "[{\"ip\": \"10.0.0.1\", \"gpu\": 8}]\n", "b.json:1:21: '[0].gpu': is not a known key");
	refused("c.json", "[{\"ip\": \"10.0.0.1\", \"CUDA_VISIBLE_DEVICES\": \"0,,1\"}]\n",
		"c.json:1:21: '[0].CUDA_VISIBLE_DEVICES': must list GPUs as");
	refused("d.json", "[{\"cpus\": 4}]\n", "d.json:1:2: '[0]': needs an ip (or address) or a name");
	refused("e.json", "[\"10.0.0.1\"]\n", "e.json:1:2: '[0]': must be an object");
	refused("f.json", "[]\n", "f.json:1:1: must be a list of 1 to");
}

Test(slurm_conf, probed)
{
	static const char slurmd_c[] =
		"NodeName=gpu1 CPUs=64 Boards=1 SocketsPerBoard=2 CoresPerSocket=16 "
		"ThreadsPerCore=2 RealMemory=257000\nUpTime=3-01:02:03\n";
	struct slurm_node n = { .addr = "10.0.0.11", .gpus = -1, .where = "hosts.txt:1" };
	cr_assert_eq(slurm_node_probed(&n, slurmd_c), 0, "%s", util_last_error());
	cr_assert_str_eq(n.name, "gpu1");
	cr_assert_eq(n.cpus, 64);
	cr_assert_eq(n.memory, 257000);
	free(n.name);
	/* what the list gives stays; a name that is not the node's own is refused */
	struct slurm_node g = { .name = "gpu1", .cpus = 8, .gpus = -1, .where = "hosts.txt:2" };
	cr_assert_eq(slurm_node_probed(&g, slurmd_c), 0);
	cr_assert_eq(g.cpus, 8);
	g.name = "gpu9";
	cr_assert_lt(slurm_node_probed(&g, slurmd_c), 0);
	cr_assert(strstr(util_last_error(), "hosts.txt:2: node 'gpu9' calls itself 'gpu1'"), "%s",
		  util_last_error());
	cr_assert_lt(slurm_node_probed(&g, "bash: slurmd: command not found\n"), 0);
	cr_assert(strstr(util_last_error(), "slurmd -C printed no NodeName and CPUs"));
	cr_assert_eq(slurm_count_gpus("GPU 0: NVIDIA H100 (UUID: GPU-1)\nGPU 1: NVIDIA H100 "
				      "(UUID: GPU-2)\n"), 2);
	cr_assert_eq(slurm_count_gpus(""), 0);
}

static struct slurm_conf_opts opts_of(const struct strvec *set)
{
	return (struct slurm_conf_opts){ .source = "hosts.txt", .cluster = "aah",
					 .partition = "aiperf", .gpu_file = "/dev/nvidia",
					 .set = set };
}

Test(slurm_conf, render)
{
	struct slurm_node v[] = {
		{ .name = "gpu1", .addr = "10.0.0.11", .cpus = 64, .memory = 256000, .gpus = 8 },
		{ .name = "gpu2", .cpus = 32, .gpus = 1 },
		{ .name = "cpu1", .cpus = 16, .gpus = 0 },
	};
	struct slurm_nodes ns = { v, 3 };
	struct strvec set = STRVEC_INIT;
	strvec_push(&set, "slurmuser=root");   /* Slurm's keys are case-blind: it replaces ours */
	strvec_push(&set, "Epilog=/etc/slurm/epilog.sh");
	struct slurm_conf_opts o = opts_of(&set);
	struct strbuf conf = STRBUF_INIT, gres = STRBUF_INIT;
	cr_assert_eq(slurm_conf_render(&o, &ns, &conf, &gres), 0, "%s", util_last_error());
	cr_assert(strstr(conf.buf, "# 3 nodes, 112 CPUs, 9 GPUs."));
	cr_assert(strstr(conf.buf, "\nClusterName=aah\nSlurmctldHost=gpu1(10.0.0.11)\n"));
	cr_assert(strstr(conf.buf, "\nslurmuser=root\n"));
	cr_assert_null(strstr(conf.buf, "SlurmUser=slurm"));
	cr_assert(strstr(conf.buf, "\nEpilog=/etc/slurm/epilog.sh\n"));
	cr_assert(strstr(conf.buf, "\nGresTypes=gpu\n"));
	cr_assert(strstr(conf.buf, "\nNodeName=gpu1 NodeAddr=10.0.0.11 CPUs=64 RealMemory=256000 "
				   "Gres=gpu:8 State=UNKNOWN\n"));
	cr_assert(strstr(conf.buf, "\nNodeName=gpu2 CPUs=32 Gres=gpu:1 State=UNKNOWN\n"));
	cr_assert(strstr(conf.buf, "\nNodeName=cpu1 CPUs=16 State=UNKNOWN\n"));
	cr_assert(strstr(conf.buf, "\nPartitionName=aiperf Nodes=ALL Default=YES"));
	cr_assert(strstr(gres.buf, "\nNodeName=gpu1 Name=gpu File=/dev/nvidia[0-7]\n"
				   "NodeName=gpu2 Name=gpu File=/dev/nvidia0\n"));
	cr_assert_null(strstr(gres.buf, "cpu1"));
	strbuf_release(&conf);
	strbuf_release(&gres);
	strvec_clear(&set);
}

Test(slurm_conf, option_errors)
{
	struct strvec set = STRVEC_INIT;
	struct slurm_conf_opts o = opts_of(&set);
	cr_assert_eq(slurm_conf_check(&o), 0);
	strvec_push(&set, "NodeName=x CPUs=1");
	cr_assert_lt(slurm_conf_check(&o), 0);
	cr_assert(strstr(util_last_error(), "--set 'NodeName=x CPUs=1': NodeName lines come from the host list"));
	strvec_clear(&set);
	strvec_push(&set, "KillWait");
	cr_assert_lt(slurm_conf_check(&o), 0);
	cr_assert(strstr(util_last_error(), "--set 'KillWait': must be Key=Value"));
	strvec_clear(&set);
	o.controller = "head=10.0.0.1";
	cr_assert_eq(slurm_conf_check(&o), 0);
	o.controller = "head=";
	cr_assert_lt(slurm_conf_check(&o), 0);
	cr_assert(strstr(util_last_error(), "--controller 'head=': must be NAME or NAME=ADDRESS"));
	o.controller = NULL;
	o.partition = "a b";
	cr_assert_lt(slurm_conf_check(&o), 0);
	cr_assert(strstr(util_last_error(), "--partition 'a b'"));
}
