/* kubernetes_kubectl.c: one kubectl call with the config's global flags
 * (argv vectors, never a shell) and what its refusal means: tried again,
 * or not, and said in words a cluster operator can act on. */
#include "runner/backend/kubernetes.h"
#include "runner/backend/proc.h" /* PROC_TIMEOUT_STATUS */
#include "util.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static int contains(const char *hay, const char *const *needles)
{
	for (; *needles; needles++)
		if (strstr(hay, *needles))
			return 1;
	return 0;
}

/* The first line of kubectl's complaint, for a message. */
static void first_line(char *dst, size_t n, const char *s)
{
	while (*s == ' ' || *s == '\n')
		s++;
	size_t len = strcspn(s, "\n");
	snprintf(dst, n, "%.*s", (int)(len < n - 1 ? len : n - 1), s);
}

static const char *const forbidden[] = { "Forbidden", "forbidden", NULL };
static const char *const exists[] = { "AlreadyExists", "already exists", NULL };
static const char *const permanent[] = { "NotFound", "not found", "is invalid", "Invalid value",
					 "error validating", "unknown flag", "Unauthorized",
					 "must be logged in", NULL };

/* A refusal the API server would repeat is not worth another try. */
static int kubectl_transient(const char *err, int exit_code)
{
	(void)exit_code;
	return !contains(err, forbidden) && !contains(err, exists) && !contains(err, permanent);
}

int kubernetes_kubectl(const struct kubernetes_config *kc, const char *const *args,
		       const char *input, struct strbuf *out, long retries)
{
	struct strvec argv = STRVEC_INIT;
	strvec_push(&argv, kc->kubectl);
	if (kc->kubeconfig)
		strvec_pushf(&argv, "--kubeconfig=%s", kc->kubeconfig);
	if (kc->context)
		strvec_pushf(&argv, "--context=%s", kc->context);
	strvec_pushf(&argv, "--namespace=%s", kc->namespace_);
	/* kubectl's own limit per request, and ours on the whole call */
	strvec_pushf(&argv, "--request-timeout=%.0fs", ceil(kc->kubectl_timeout));
	strvec_pushv(&argv, args);
	const struct backend_tool tool = {
		.name = "kubernetes",
		.missing = "install kubectl or set kubernetes.kubectl",
		.timeout = 2 * kc->kubectl_timeout + 1,
		.retries = retries,
		.pause = 0.2,
		.transient = kubectl_transient,
	};
	struct strbuf err = STRBUF_INIT;
	int code = backend_run_tool(&tool, strvec_view(&argv), input, out, &err);
	char line[200];
	first_line(line, sizeof(line), strbuf_str(&err));
	int r;
	if (code < 0) {
		r = KUBECTL_PERMANENT;
	} else if (code == 0) {
		r = KUBECTL_OK;
	} else if (code == PROC_TIMEOUT_STATUS) {
		r = KUBECTL_TRANSIENT;
		error("kubectl %s: no answer within %.0fs (API server unreachable or slow)", args[0],
		      kc->kubectl_timeout);
	} else if (contains(err.buf, forbidden)) {
		r = KUBECTL_PERMANENT;
		error("kubectl %s: forbidden in namespace '%s': %s (grant the runner's "
		      "ServiceAccount the Role in k8s/rbac.yaml)",
		      args[0], kc->namespace_, line);
	} else if (contains(err.buf, exists)) {
		r = KUBECTL_EXISTS;
		error("kubectl %s: %s", args[0], line);
	} else if (contains(err.buf, permanent)) {
		r = KUBECTL_PERMANENT;
		error("kubectl %s: %s", args[0], line);
	} else {
		r = KUBECTL_TRANSIENT;
		error("kubectl %s failed (exit %d): %s", args[0], code, *line ? line : "no message");
	}
	strbuf_release(&err);
	strvec_clear(&argv);
	return r;
}
