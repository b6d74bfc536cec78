/* registry.c: the table of backends, the one list of them, and what is
 * asked of it by name: backend_find, the config's platforms
 * (backend_platforms, backend_config_load), the capable ones (backend_names_with), each one's
 * config section. Adding a backend is one line in aah_backends[]. */
#include "runner/backend/backend.h"
#include "runner/backend/docker.h"     /* backend_docker */
#include "runner/backend/kubernetes.h" /* backend_kubernetes */
#include "runner/backend/local.h"      /* backend_local */
#include "runner/backend/slurm.h"      /* backend_slurm */
#include "strbuf.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

const struct aah_backend *const aah_backends[] = {
	&backend_local,
	&backend_docker,
	&backend_kubernetes,
	&backend_slurm,
	NULL,
};

void backend_platforms(struct config_platforms *p)
{
	memset(p, 0, sizeof(*p));
	for (const struct aah_backend *const *b = aah_backends; *b; b++, p->n++) {
		if (p->n == CONFIG_MAX_PLATFORMS)
			BUG("more backends than CONFIG_MAX_PLATFORMS");
		p->names[p->n] = (*b)->name;
		p->help[p->n] = (*b)->help;
	}
}

int backend_config_load(const char *path, struct aah_config *cfg)
{
	struct config_platforms p;
	backend_platforms(&p);
	return config_load(path, cfg, &p);
}

char *backend_names_with(unsigned caps)
{
	struct strbuf sb = STRBUF_INIT;
	size_t n = 0, total = 0;
	for (const struct aah_backend *const *b = aah_backends; *b; b++)
		total += ((*b)->caps & caps) == caps;
	for (const struct aah_backend *const *b = aah_backends; *b; b++) {
		if (((*b)->caps & caps) != caps)
			continue;
		n++;
		strbuf_addf(&sb, "%s%s", n == 1 ? "" : n == total ? " and " : ", ", (*b)->name);
	}
	return strbuf_detach(&sb, NULL);
}

const struct aah_backend *backend_find(const char *name)
{
	for (const struct aah_backend *const *b = aah_backends; *b; b++)
		if (!strcmp((*b)->name, name))
			return *b;
	return NULL;
}

int backend_validate_config(const struct aah_config *cfg)
{
	for (const struct aah_backend *const *b = aah_backends; *b; b++) {
		const struct ynode *section = ynode_get(cfg->root, (*b)->name);
		if (!(*b)->config_keys || !section)
			continue;
		void *scratch = xcalloc(1, (*b)->config_size);
		int r = config_parse_section(cfg, (*b)->name, section, (*b)->config_keys, scratch);
		config_release_section((*b)->config_keys, scratch);
		free(scratch);
		if (r < 0)
			return -1;
	}
	return 0;
}

/* pool.devices: quota on a backend that cannot read a cluster's quota. */
static int no_pool_quota(const struct aah_config *cfg)
{
	return config_error_at(cfg, "pool.devices",
			       "quota is read from a cluster's GPU quota: the kubernetes backend "
			       "only; on %s give the pool's size as a number", cfg->platform);
}

int backend_check_config(const struct aah_config *cfg)
{
	const struct aah_backend *b = backend_find(cfg->platform);
	/* A backend with AAH_CAP_MPI starts the one mpirun (docker: in rank 0's
	 * container, over ssh to sshd in the others; slurm: in the batch step
	 * over the allocation; kubernetes: in the pod of index 0, over ssh to
	 * sshd in every pod); one without it cannot. */
	if (!strcmp(cfg->trial.launcher, "mpi") && b && !(b->caps & AAH_CAP_MPI)) {
		const struct ynode *n = ynode_get(ynode_get(cfg->root, "trial"), "launcher");
		char *can = backend_names_with(AAH_CAP_MPI);
		error("%s:%u:%u: 'trial.launcher' mpi runs on the %s backends only "
		      "(%s cannot start mpirun yet; use launcher: direct)",
		      cfg->path ? cfg->path : "config", n ? n->line : 1, n ? n->col : 1, can,
		      cfg->platform);
		free(can);
		return -1;
	}
	if (cfg->pool.devices == CONFIG_POOL_QUOTA && b && !b->pool_quota)
		return no_pool_quota(cfg);
	return b && b->check_config ? b->check_config(cfg) : 0;
}

int backend_pool_quota(const struct aah_config *cfg, unsigned *devices)
{
	const struct aah_backend *b = backend_find(cfg->platform);
	if (!b || !b->pool_quota)
		return no_pool_quota(cfg);
	if (b->pool_quota(cfg, devices) < 0)
		return config_error_at(cfg, "pool.devices", "quota: %s", util_last_error());
	return 0;
}

