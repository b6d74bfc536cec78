/* fuzz_journal.c: journal.jsonl -> expdir_replay, with a visitor that reads
 * every field an event carries (as experiment.c and report/load.c do). */
#include <string.h>

#include "fuzz.h"
#include "runner/store/expdir.h" /* expdir_replay, struct expdir_event */

static int visit(const struct expdir_event *ev, void *arg)
{
	size_t *sum = arg;
	const char *strs[] = { ev->name, ev->job, ev->gpus, ev->reason, ev->exp_name,
			       expdir_event_name(ev->kind), expdir_state_name(ev->state) };
	for (size_t i = 0; i < sizeof(strs) / sizeof(strs[0]); i++)
		if (strs[i])
			*sum += strlen(strs[i]);
	*sum += ev->trial_seq + ev->attempt + (size_t)ev->slot + (size_t)ev->exit_code;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t sum = 0;
	fuzz_write("journal.jsonl", data, size);
	expdir_replay(fuzz_dir(), visit, &sum);
	return 0;
}
