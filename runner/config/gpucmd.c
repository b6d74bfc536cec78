/* gpucmd.c: AIPerf's GPU command form under aah. AIPerf's configs say
 * `gpuNum: 0` and name a node's GPUs in the command
 * (CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7 python3 imagenet_train.py ...), the
 * Keras script driving them all. With aah-trial in that command the runner
 * starts one process, which trains on the first GPU it sees: the others
 * stay idle, with no word. check and create warn (cfg->notice). */
#include <string.h>

#include "runner/config/gpucmd.h"
#include "util.h"

#define VAR "CUDA_VISIBLE_DEVICES="

/* Does the word at p start a command or an assignment (not part of one)? */
static int word_start(const char *cmd, const char *p)
{
	if (p == cmd)
		return 1;
	char b = p[-1];
	if (strchr(" \t\n;&|(", b))
		return 1;
	return 0;
}

int gpucmd_visible_devices(const char *cmd, char *ids, size_t ids_size)
{
	const char *p = cmd;
	if (ids_size)
		*ids = '\0';
	while ((p = strstr(p, VAR)) && !word_start(cmd, p))
		p += strlen(VAR);
	if (!p)
		return 0;
	p += strlen(VAR);
	char quote = (*p == '"' || *p == '\'') ? *p++ : 0;
	size_t n = 0;
	int count = 0, in_id = 0;
	for (; *p && (quote ? *p != quote : !strchr(" \t\n;&|)", *p)); p++) {
		if (n + 1 < ids_size)
			ids[n++] = *p;
		if (*p == ',') {
			in_id = 0;
		} else if (*p != ' ' && !in_id) {
			in_id = 1;
			count++;
		}
	}
	if (ids_size)
		ids[n < ids_size ? n : ids_size - 1] = '\0';
	return count;
}

char *gpucmd_notice(const char *file, unsigned line, unsigned col, const char *cmd,
		    long gpu_num)
{
	char ids[128];
	int n = gpucmd_visible_devices(cmd, ids, sizeof(ids));
	if (n < 2 || gpu_num > 1)
		return NULL;
	return xstrfmt("%s:%u:%u: 'trial.command' sets CUDA_VISIBLE_DEVICES=%s (%d GPUs) with "
		       "trial.gpuNum %ld, AIPerf's form: aah-trial trains one process per GPU "
		       "that gpuNum counts, so this trains on the first GPU alone and leaves %d "
		       "idle. The fix, one line: gpuNum: %d (the runner then starts %d processes, "
		       "each with its own CUDA_VISIBLE_DEVICES; drop it from the command)",
		       file, line, col, ids, n, gpu_num, n - 1, n, n);
}
