/* kubernetes_mpi.c: trial.launcher: mpi on Kubernetes, as Kubeflow's MPI
 * operator runs it, with aah's launch contract. The trial's Indexed Job
 * and headless Service stay as they are; every pod runs sshd on its pod IP
 * (kubernetes.sshPort) with the keys of a per-attempt Secret "<job>-ssh",
 * and the pod of completion index 0 is also the launcher: it waits until
 * every pod's sshd answers, writes the contract's hostfile and runs the
 * contract's mpirun, which reaches every pod (its own too) over ssh. The
 * hostfile names the hosts as ModelArts does (launch_mpi_host); the ssh
 * config maps each such name to the pod's DNS name from the headless
 * Service, "<job>-<index>.<job>". The trial entrypoint does the pod's part
 * (docker/trial-entrypoint.sh, AAH_MPI_ROLE=pod). */
#include "runner/backend/kubernetes.h"
#include "runner/backend/mpi_ssh.h" /* mpi_ssh_client_config, mpi_ssh_sshd_config */
#include "runner/backend/ssh_keys.h" /* ssh_keypair_new */
#include "util.h"

#include <math.h>
#include <openssl/crypto.h> /* OPENSSL_cleanse */
#include <openssl/evp.h>    /* EVP_EncodeBlock */
#include <stdlib.h>
#include <string.h>

/* Secret keys (files in KUBERNETES_MPI_SSH_DIR): mpi_ssh.h's, and the hostfile. */
#define KEY_HOSTFILE "hostfile"

/* The Secret's files are 0400; the kubelet adds group read for fsGroup
 * (the pods' users read them through it, root owns them). */
#define SECRET_MODE 0400

char *kubernetes_mpi_secret_name(const char *job)
{
	return xstrfmt("%s-ssh", job);
}

cJSON *kubernetes_mpi_args(const struct aah_launch *l)
{
	cJSON *args = cJSON_CreateArray();
	const struct strvec *a = &l->mpirun_argv;
	for (size_t i = 0; i < a->n; i++) {
		/* each pod has its own devices (the device plugin sets them):
		 * the launcher's must not reach the other pods' ranks */
		if (!strcmp(a->v[i], "-x") && i + 1 < a->n && !strcmp(a->v[i + 1], "CUDA_VISIBLE_DEVICES")) {
			i++;
			continue;
		}
		char *v = kubernetes_escape_expansion(a->v[i]);
		cJSON_AddItemToArray(args, cJSON_CreateString(v));
		free(v);
	}
	return args;
}

/* The pods' ssh: every sshd on kubernetes.sshPort of its pod IP, as the
 * pod's user. */
static struct mpi_ssh mpi_ssh_of(const struct kubernetes_config *kc)
{
	return (struct mpi_ssh){
		.dir = KUBERNETES_MPI_SSH_DIR, .launcher = "launcher pod", .workers = "trial pods",
		.listen = "<its pod IP>", .port = kc->ssh_port, .pods = 1,
	};
}

/* mpirun's ssh: each ModelArts host name goes to its pod's DNS name. */
static void ssh_config(const struct kubernetes_config *kc, const struct aah_launch *l,
		       struct strbuf *sb)
{
	struct mpi_ssh s = mpi_ssh_of(kc);
	struct mpi_ssh_host *h = xcalloc(l->nodes ? l->nodes : 1, sizeof(*h));
	for (unsigned i = 0; i < l->nodes; i++)
		h[i] = (struct mpi_ssh_host){ launch_mpi_host(l, i), l->hosts[i], 0 };
	mpi_ssh_client_config(&s, h, l->nodes, sb);
	for (unsigned i = 0; i < l->nodes; i++)
		free(h[i].alias);
	free(h);
}

static void add_data(cJSON *data, const char *key, const struct strbuf *text)
{
	size_t n = 4 * ((text->len + 2) / 3) + 1;
	char *b64 = xmalloc(n);
	EVP_EncodeBlock((unsigned char *)b64, (const unsigned char *)text->buf, (int)text->len);
	cJSON_AddStringToObject(data, key, b64);
	OPENSSL_cleanse(b64, n);
	free(b64);
}

cJSON *kubernetes_mpi_secret(const struct aah_config *cfg, const struct kubernetes_config *kc,
			     const struct aah_launch *l, const char *job)
{
	struct strbuf id = STRBUF_INIT, id_pub = STRBUF_INIT, hk = STRBUF_INIT,
		      hk_pub = STRBUF_INIT, text = STRBUF_INIT;
	if (ssh_keypair_new(&id, &id_pub) < 0 || ssh_keypair_new(&hk, &hk_pub) < 0) {
		OPENSSL_cleanse(id.buf, id.len);
		strbuf_release(&id);
		strbuf_release(&id_pub);
		strbuf_release(&hk);
		strbuf_release(&hk_pub);
		return NULL;
	}
	char *name = kubernetes_mpi_secret_name(job);
	cJSON *s = cJSON_CreateObject();
	cJSON_AddStringToObject(s, "apiVersion", "v1");
	cJSON_AddStringToObject(s, "kind", "Secret");
	cJSON_AddItemToObject(s, "metadata", kubernetes_spec_metadata(cfg, kc, l, job, "mpi-ssh"));
	cJSON_ReplaceItemInObject(cJSON_GetObjectItem(s, "metadata"), "name", cJSON_CreateString(name));
	cJSON_AddStringToObject(s, "type", "Opaque");
	cJSON *data = cJSON_AddObjectToObject(s, "data");
	add_data(data, MPI_SSH_ID, &id);
	/* the launcher's key may run commands only: no pty, no forwarding */
	strbuf_addf(&text, "restrict %s aah-%s-launcher\n", id_pub.buf, job);
	add_data(data, MPI_SSH_AUTHORIZED, &text);
	add_data(data, MPI_SSH_HOST_KEY, &hk);
	strbuf_reset(&text);
	for (unsigned i = 0; i < l->nodes; i++)
		mpi_ssh_known_host(l->hosts[i], kc->ssh_port, hk_pub.buf, &text);
	add_data(data, MPI_SSH_KNOWN_HOSTS, &text);
	strbuf_reset(&text);
	ssh_config(kc, l, &text);
	add_data(data, MPI_SSH_CONFIG, &text);
	strbuf_reset(&text);
	struct mpi_ssh ms = mpi_ssh_of(kc);
	mpi_ssh_sshd_config(&ms, &text);
	add_data(data, MPI_SSH_SSHD_CONFIG, &text);
	strbuf_reset(&text);
	for (size_t i = 0; i < l->hostfile_lines.n; i++)
		strbuf_addf(&text, "%s\n", l->hostfile_lines.v[i]);
	add_data(data, KEY_HOSTFILE, &text);
	OPENSSL_cleanse(id.buf, id.len);
	OPENSSL_cleanse(hk.buf, hk.len);
	strbuf_release(&id);
	strbuf_release(&id_pub);
	strbuf_release(&hk);
	strbuf_release(&hk_pub);
	strbuf_release(&text);
	free(name);
	return s;
}

void kubernetes_mpi_pod_add(const struct kubernetes_config *kc, const struct aah_launch *l,
			    const char *job, cJSON *pod_spec, cJSON *container)
{
	char *name = kubernetes_mpi_secret_name(job);
	cJSON *vol = cJSON_CreateObject();
	cJSON_AddStringToObject(vol, "name", "mpi-ssh");
	cJSON *sec = cJSON_AddObjectToObject(vol, "secret");
	cJSON_AddStringToObject(sec, "secretName", name);
	cJSON_AddNumberToObject(sec, "defaultMode", SECRET_MODE);
	cJSON_AddItemToArray(cJSON_GetObjectItem(pod_spec, "volumes"), vol);
	cJSON *vm = cJSON_CreateObject();
	cJSON_AddStringToObject(vm, "name", "mpi-ssh");
	cJSON_AddStringToObject(vm, "mountPath", KUBERNETES_MPI_SSH_DIR);
	cJSON_AddBoolToObject(vm, "readOnly", 1);
	cJSON_AddItemToArray(cJSON_GetObjectItem(container, "volumeMounts"), vm);

	cJSON *env = cJSON_GetObjectItem(container, "env");
	char *n = xstrfmt("%u", l->nodes);
	char *wait = xstrfmt("%.0f", kc->pending_timeout > 0 ? ceil(kc->pending_timeout) : 600.0);
	kubernetes_env_literal(env, "AAH_MPI_ROLE", "pod");
	kubernetes_env_field(env, "AAH_MPI_INDEX", KUBERNETES_COMPLETION_INDEX);
	kubernetes_env_field(env, "AAH_POD_IP", "status.podIP");
	kubernetes_env_literal(env, "AAH_MPI_WORKERS", n);
	kubernetes_env_literal(env, "AAH_MPI_SSH_DIR", KUBERNETES_MPI_SSH_DIR);
	kubernetes_env_literal(env, "AAH_MPI_HOSTFILE", l->hostfile);
	kubernetes_env_literal(env, "AAH_MPI_WAIT_S", wait);
	kubernetes_env_literal(env, "OMPI_MCA_plm_rsh_agent", "ssh -F " KUBERNETES_MPI_SSH_DIR "/" MPI_SSH_CONFIG);
	kubernetes_env_literal(env, "OMPI_MCA_plm_rsh_no_tree_spawn", "1");
	/* ModelArts' names are FQDNs: Open MPI would ssh to the first label alone */
	kubernetes_env_literal(env, "OMPI_MCA_orte_keep_fqdn_hostnames", "1");
	free(wait);
	free(n);
	free(name);
}

void kubernetes_mpi_scrub(cJSON *docs)
{
	const cJSON *d;
	cJSON *v;
	cJSON_ArrayForEach(d, docs) {
		const cJSON *kind = cJSON_GetObjectItemCaseSensitive(d, "kind");
		if (!cJSON_IsString(kind) || strcmp(kind->valuestring, "Secret"))
			continue;
		cJSON_ArrayForEach(v, cJSON_GetObjectItemCaseSensitive(d, "data"))
			if (cJSON_IsString(v) && v->valuestring)
				OPENSSL_cleanse(v->valuestring, strlen(v->valuestring));
	}
}
