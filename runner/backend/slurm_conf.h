/* slurm_conf.h: a Slurm cluster's slurm.conf and gres.conf from a host
 * list (AIPerf's servers.json or a plain file), for `aah-runner slurm-conf`:
 * the list read and checked, what `slurmd -C` and `nvidia-smi -L` say of a
 * node, and the two files' text. Nothing here runs a program. */
#ifndef AAH_SLURM_CONF_H
#define AAH_SLURM_CONF_H

#include "strbuf.h"
#include "strvec.h"

/* One node of the list. What the list leaves out is 0 (or NULL) until a
 * probe of the node fills it in. */
struct slurm_node {
	char *name;               /* NodeName: the node's hostname (slurmd finds itself by it) */
	char *addr;               /* NodeAddr, or NULL: the name resolves */
	long cpus;                /* CPUs; 0: not given */
	long memory;              /* RealMemory, MB; 0: not given */
	long gpus;                /* GPUs (Gres=gpu:N); -1: not given */
	char *where;              /* "<file>:<line>" of its entry, for messages */
};

struct slurm_nodes {
	struct slurm_node *v;
	size_t n;
};

/* Read the host list at path: a JSON list as AIPerf writes servers.json
 * (ip or address, name, cpus, memory, gpus or CUDA_VISIBLE_DEVICES; AIPerf's
 * tag, status, user and port are ignored), or a plain file with one node a
 * line, "NAME [ADDRESS] [cpus=N] [memory=MB] [gpus=N]" (a first word that
 * is an IP address is the address; '#' starts a comment). Errors name the
 * file, line (and column) and field. */
int slurm_nodes_read(const char *path, struct slurm_nodes *out);
void slurm_nodes_release(struct slurm_nodes *nodes);

/* What `slurmd -C` printed on node n: its NodeName, CPUs and RealMemory
 * fill what the list left out. A name the list gave must be the node's
 * own (slurmd finds its entry by hostname). */
int slurm_node_probed(struct slurm_node *n, const char *slurmd_c);
/* The GPUs `nvidia-smi --list-gpus` printed ("GPU 0: ... (UUID: ...)"). */
long slurm_count_gpus(const char *nvidia_smi_l);

struct slurm_conf_opts {
	const char *source;       /* the host list, named in the files' first line */
	const char *cluster;      /* ClusterName */
	const char *controller;   /* SlurmctldHost: "NAME" or "NAME=ADDRESS"; NULL: the first node */
	const char *partition;    /* the one partition of every node */
	const char *gpu_file;     /* the GPUs' device files: <gpu_file>0, <gpu_file>1, ... */
	const struct strvec *set; /* "Key=Value" settings of the user's: they replace ours */
};

/* The options' own checks (names, --controller, --set), before any node
 * is asked anything; slurm_conf_render makes them too. */
int slurm_conf_check(const struct slurm_conf_opts *o);
/* slurm.conf and gres.conf of the nodes (every one with its name and CPUs). */
int slurm_conf_render(const struct slurm_conf_opts *o, const struct slurm_nodes *nodes,
		      struct strbuf *conf, struct strbuf *gres);

#endif
