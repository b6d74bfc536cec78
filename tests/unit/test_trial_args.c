/* Unit tests for trialimg/args (the table, both value forms, precedence of
 * rank / world size / rendezvous, params.json) and the AIPerf schedule. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fileio.h"
#include "trialimg/args.h"
#include "trialimg/device.h" /* device_batch_rule */
#include "trialimg/schedule.h"
#include "trialimg/train.h"
#include "util.h"

static const char *const *fake_env;

static const char *env_get(const char *name)
{
	for (int i = 0; fake_env && fake_env[i]; i += 2)
		if (!strcmp(fake_env[i], name))
			return fake_env[i + 1];
	return NULL;
}

static char tmp[64];

static void setup(void)
{
	strcpy(tmp, "/tmp/aah-args-XXXXXX");
	cr_assert_not_null(mkdtemp(tmp));
	util_set_quiet(1);
	fake_env = NULL;
}

static void teardown(void)
{
	fileio_remove_tree(tmp);
}

TestSuite(args, .init = setup, .fini = teardown);

#define PARSE(a, ...)                                                                   \
	({                                                                              \
		char *argv_[] = {"aah-trial", "--trial_dir", tmp, __VA_ARGS__};         \
		args_parse(a, (int)ARRAY_SIZE(argv_), argv_, env_get);                  \
	})

Test(args, both_value_forms_aliases_and_unknowns)
{
	struct args a;
	cr_assert_eq(PARSE(&a, "--batch_size=64", "--epoch", "7", "--initial_lr", "0.2",
			   "--unknown_thing", "5", "--other=1", "--resume", "--warmup_2=3"), 0,
		     "%s", util_last_error());
	cr_assert_eq((int)a.batch_size, 64);
	cr_assert_eq(a.epochs, 7);
	cr_assert_float_eq(a.initial_lr, 0.2, 1e-12);
	cr_assert_eq(a.resume, 1);
	cr_assert_eq(a.warmup_2, 3);
	cr_assert_eq(a.warmup_1, 15, "default");
	cr_assert_eq(args_source(&a, "--epochs"), ARGS_FROM_ARGV);
	cr_assert_eq(args_source(&a, "--warmup_3"), ARGS_FROM_DEFAULT);
	cr_assert_str_eq(a.trial_dir, tmp);
	cr_assert_str_eq(a.train_data_dir, "/usr/share/datasets/fashion-mnist");
	args_release(&a);
	cr_assert_eq(PARSE(&a, "--batch_size=13.2", "--kernel_size=5.0", "--dropout_rate=0.13"), 0);
	cr_assert_eq((int)a.batch_size, 13);
	cr_assert_eq(a.kernel_size, 5);
	cr_assert_float_eq(a.dropout_rate, 0.13, 1e-12);
	args_release(&a);
	cr_assert_eq(PARSE(&a, "--epochs=many"), -1);
	cr_assert_not_null(strstr(util_last_error(), "--epochs"));
	args_release(&a);
	cr_assert_eq(PARSE(&a, "--precision=fp8"), -1);
	args_release(&a);
	cr_assert_eq(PARSE(&a, "--conv_algo=fast"), -1);
	cr_assert_not_null(strstr(util_last_error(), "--conv_algo fast: must be one of auto, direct"));
	args_release(&a);
	cr_assert_eq(PARSE(&a, "--conv_algo=direct"), 0, "%s", util_last_error());
	args_release(&a);
}

Test(args, rank_world_and_rendezvous_precedence)
{
	struct args a;
	static const char *const env1[] = {"VC_TASK_INDEX", "2", "RANK", "1", "SLURM_PROCID", "3",
					   "VC_WORKER_NUM", "4", "MASTER_ADDR", "10.0.0.1",
					   "MASTER_PORT", "29500", NULL};
	fake_env = env1;
	cr_assert_eq(PARSE(&a, "--seed=3"), 0, "%s", util_last_error());
	cr_assert_eq(a.rank, 1, "PyTorch RANK comes before VC_TASK_INDEX");
	cr_assert_eq(a.world_size, 4);
	cr_assert_str_eq(a.rdv_host, "10.0.0.1");
	cr_assert_eq(a.rdv_port, 29500);
	args_release(&a);
	/* the command line wins over everything */
	cr_assert_eq(PARSE(&a, "--rank", "0", "--world_size=2", "--init_method",
			   "tcp://host-0.svc:1234"), 0);
	cr_assert_eq(a.rank, 0);
	cr_assert_eq(a.world_size, 2);
	cr_assert_str_eq(a.rdv_host, "host-0.svc");
	cr_assert_eq(a.rdv_port, 1234);
	args_release(&a);
	/* Slurm alone; Volcano hosts with a port */
	static const char *const env2[] = {"SLURM_PROCID", "1", "SLURM_NTASKS", "2",
					   "VC_WORKER_HOSTS", "w0,w1", "MASTER_PORT", "7000", NULL};
	fake_env = env2;
	cr_assert_eq(PARSE(&a, "--seed=1"), 0, "%s", util_last_error());
	cr_assert_eq(a.rank, 1);
	cr_assert_eq(a.world_size, 2);
	cr_assert_str_eq(a.rdv_host, "w0");
	cr_assert_eq(a.rdv_port, 7000);
	args_release(&a);
	/* several ranks and no way to meet */
	static const char *const env3[] = {"RANK_ID", "0", "RANK_SIZE", "2", NULL};
	fake_env = env3;
	cr_assert_eq(PARSE(&a, "--seed=1"), -1);
	cr_assert_not_null(strstr(util_last_error(), "rendezvous"));
	args_release(&a);
	cr_assert_eq(PARSE(&a, "--rank=2", "--world_size=2", "--init_method=tcp://h:1"), -1);
	args_release(&a);
	cr_assert_eq(PARSE(&a, "--world_size=2", "--init_method=env://"), -1);
	args_release(&a);
}

Test(args, params_json_and_trial_dir_defaults)
{
	struct args a;
	char *p = xstrfmt("%s/params.json", tmp), *arch = xstrfmt("%s/arch.json", tmp);
	const char *doc = "{\"format\":\"aah-params/1\",\"trial_seq\":5,\"tuner\":\"x\","
			  "\"parameters\":{\"dropout_rate\":0.25,\"batch_size\":40.7,"
			  "\"kernel_size\":3,\"learning_rate\":0.01,\"not_an_arg\":\"z\"}}";
	cr_assert_eq(fileio_write_atomic(p, doc, strlen(doc)), 0);
	cr_assert_eq(fileio_write_atomic(arch, "{}", 2), 0);
	cr_assert_eq(PARSE(&a, "--batch_size=32"), 0, "%s", util_last_error());
	cr_assert_str_eq(a.params, p);
	cr_assert_str_eq(a.arch, arch);
	cr_assert_eq(a.trial_seq, 5);
	cr_assert_float_eq(a.dropout_rate, 0.25, 1e-12);
	cr_assert_eq((int)a.batch_size, 32, "the command line wins over params.json");
	cr_assert_float_eq(a.initial_lr, 0.01, 1e-12, "learning_rate replaces initial_lr");
	cr_assert_eq(args_source(&a, "--dropout_rate"), ARGS_FROM_PARAMS);
	args_release(&a);
	/* AIPerf's batch: the tuned 40.7 times 32 GiB wins over the command's */
	cr_assert_eq(PARSE(&a, "--batch_size=448", "--batch_scale=32"), 0, "%s", util_last_error());
	cr_assert_eq((int)a.batch_size, 1302, "%g", a.batch_size);
	args_release(&a);
	/* AIPerf's --slave: the runner's AAH_SLAVE (trialConcurrency), unless the
	 * command gives its own */
	static const char *const slave[] = {"AAH_SLAVE", "14", NULL};
	fake_env = slave;
	cr_assert_eq(PARSE(&a, "--seed=1"), 0);
	cr_assert_eq(a.slave, 14);
	args_release(&a);
	cr_assert_eq(PARSE(&a, "--slave", "2"), 0);
	cr_assert_eq(a.slave, 2, "the command's --slave wins");
	args_release(&a);
	/* AAH_TRIAL_SEQ beats params.json; AAH_TRIAL_DIR is the default trial dir */
	static const char *const env[] = {"AAH_TRIAL_SEQ", "9", NULL};
	fake_env = env;
	cr_assert_eq(PARSE(&a, "--seed=1"), 0);
	cr_assert_eq(a.trial_seq, 9);
	args_release(&a);
	static const char *const env2[] = {"AAH_TRIAL_DIR", "/nonexistent-trial", "AAH_TRIAL_ID", "000012", NULL};
	fake_env = env2;
	char *argv[] = {"aah-trial"};
	cr_assert_eq(args_parse(&a, 1, argv, env_get), 0);
	cr_assert_str_eq(a.trial_dir, "/nonexistent-trial");
	cr_assert_null(a.arch);
	cr_assert_eq(a.trial_seq, 12);
	args_release(&a);
	free(p);
	free(arch);
}

Test(args, help_lists_every_argument_and_variable)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	args_help(f);
	fclose(f);
	static const char *const names[] = {
		"--batch_size", "--epochs", "--epoch", "--initial_lr", "--final_lr", "--warmup_1",
		"--warmup_2", "--warmup_3", "--train_data_dir", "--val_data_dir", "--slave", "--ip",
		"--num_parallel_calls", "--smooth_factor", "--arch", "--params", "--dataset",
		"--trial_dir", "--threads", "--seed", "--precision", "--patience", "--resume",
		"--init_method", "--rank", "--world_size", "--data_url", "--train_url",
		"VC_TASK_INDEX", "VC_WORKER_NUM", "VC_WORKER_HOSTS", "MA_NUM_HOSTS", "RANK_ID",
		"RANK_SIZE", "MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "SLURM_PROCID",
		"SLURM_NTASKS", "AAH_TRIAL_DIR", "AAH_TRIAL_SEQ",
	};
	for (size_t i = 0; i < ARRAY_SIZE(names); i++)
		cr_assert_not_null(strstr(text, names[i]), "--help lacks %s", names[i]);
	free(text);
}

Test(args, aiperf_epoch_budget_and_lr)
{
	struct args a;
	cr_assert_eq(PARSE(&a, "--slave=2", "--warmup_1=1", "--warmup_2=2", "--warmup_3=3",
			   "--epochs=4", "--initial_lr=0.1", "--final_lr=0.001"), 0);
	int budget[8], pat[8];
	for (int s = 1; s <= 8; s++) {
		a.trial_seq = s;
		budget[s - 1] = schedule_epoch_budget(&a, &pat[s - 1]);
	}
	int want[8] = {1, 1, 2, 2, 3, 3, 4, 4}, want_pat[8] = {6, 6, 8, 8, 10, 10, 12, 12};
	for (int i = 0; i < 8; i++) {
		cr_assert_eq(budget[i], want[i], "trial_seq %d", i + 1);
		cr_assert_eq(pat[i], want_pat[i]);
	}
	a.trial_seq = 100;
	int p;
	schedule_epoch_budget(&a, &p);
	cr_assert_eq(p, 20, "AIPerf caps patience at 20");
	cr_assert_float_eq(schedule_lr(&a, 0, 100), 0.1, 1e-12);
	cr_assert_float_eq(schedule_lr(&a, 99, 100), 0.001, 1e-12);
	double prev = 1;
	for (long t = 0; t < 100; t++) {
		double lr = schedule_lr(&a, t, 100);
		cr_assert_leq(lr, prev);
		prev = lr;
	}
	args_release(&a);
}

/* --deadline: the budget that fits what is left of the time, between
 * epochs and within one. */
Test(args, deadline_budget_counts_the_epochs_that_fit)
{
	/* between epochs: 2 done, 100 s left at 30 s each: 3 more */
	cr_assert_eq(schedule_deadline_budget(2, 10, 100, 30, 0, 0), 5);
	/* never above the budget, however far the deadline */
	cr_assert_eq(schedule_deadline_budget(2, 10, 1e12, 30, 0, 0), 10);
	cr_assert_eq(schedule_deadline_budget(2, 4, 100, 30, 0, 0), 4);
	/* passed, or too close for one more: the epochs done */
	cr_assert_eq(schedule_deadline_budget(2, 10, -5, 30, 0, 0), 2);
	cr_assert_eq(schedule_deadline_budget(2, 10, 29.9, 30, 0, 0), 2);
	/* within an epoch that needs 20 s more: it finishes, then 80 s fit 2 */
	cr_assert_eq(schedule_deadline_budget(0, 10, 100, 30, 20, 0), 3);
	cr_assert_eq(schedule_deadline_budget(0, 10, 10, 30, 20, 0), 1);
	cr_assert_eq(schedule_deadline_budget(0, 10, -10, 30, 20, 0), 1);
	/* nothing timed: the budget stands */
	cr_assert_eq(schedule_deadline_budget(1, 10, 5, 0, 0, 0), 10);
	/* a cut is the same with growth allowed */
	cr_assert_eq(schedule_deadline_budget(0, 10, 100, 30, 20, 1), 3);
}

/* Growth: a budget of 4 whose end would leave 1 to 3 epochs takes them; 4
 * or more left would hold another trial of 4 epochs, and stay. */
Test(args, deadline_budget_grows_into_an_end_too_short_for_another)
{
	/* in the first epoch, 10 s of it left, then 170 s: 1 + 5 */
	cr_assert_eq(schedule_deadline_budget(0, 4, 180, 30, 10, 1), 6);
	cr_assert_eq(schedule_deadline_budget(0, 4, 180, 30, 10, 0), 4);
	/* exactly the budget, or one more */
	cr_assert_eq(schedule_deadline_budget(0, 4, 110, 30, 10, 1), 4);
	cr_assert_eq(schedule_deadline_budget(0, 4, 140, 30, 10, 1), 5);
	/* 7 fit: 3 left after the budget, taken; 8 fit: 4 left, not */
	cr_assert_eq(schedule_deadline_budget(0, 4, 200, 30, 10, 1), 7);
	cr_assert_eq(schedule_deadline_budget(0, 4, 230, 30, 10, 1), 4);
	/* a far deadline, and one that does not overflow */
	cr_assert_eq(schedule_deadline_budget(0, 4, 1e12, 30, 10, 1), 4);
	cr_assert_eq(schedule_deadline_budget(0, 100000, 1e300, 1e-300, 0, 1), 100000);
}

/* --partial_epoch: the same budget to the step. Its whole epochs are the
 * ones schedule_deadline_budget counts; what is left of the time after
 * them, a tenth of an epoch or more, ends the budget as a part of one. */
Test(args, deadline_epochs_fit_the_budget_to_the_step)
{
	/* between epochs: 2 done, 100 s left at 30 s each: 3 and a third */
	cr_assert_float_eq(schedule_deadline_epochs(2, 10, 100, 30, 0, 0), 2 + 100.0 / 30, 1e-12);
	/* a part under a tenth of an epoch is dropped: 2 s of 30 */
	cr_assert_float_eq(schedule_deadline_epochs(2, 10, 92, 30, 0, 0), 5, 1e-12);
	cr_assert_float_eq(schedule_deadline_epochs(2, 10, 93, 30, 0, 0), 5.1, 1e-12);
	/* passed, or too close for a tenth: the epochs done; within an epoch,
	 * it finishes */
	cr_assert_float_eq(schedule_deadline_epochs(2, 10, -5, 30, 0, 0), 2, 1e-12);
	cr_assert_float_eq(schedule_deadline_epochs(2, 10, 2.9, 30, 0, 0), 2, 1e-12);
	cr_assert_float_eq(schedule_deadline_epochs(0, 10, -10, 30, 20, 0), 1, 1e-12);
	cr_assert_float_eq(schedule_deadline_epochs(0, 10, 35, 30, 20, 0), 1.5, 1e-12);
	/* never above the budget, a part of one included; nothing timed */
	cr_assert_float_eq(schedule_deadline_epochs(2, 3.5, 1e12, 30, 0, 0), 3.5, 1e-12);
	cr_assert_float_eq(schedule_deadline_epochs(2, 3.5, 100, 30, 0, 0), 3.5, 1e-12);
	cr_assert_float_eq(schedule_deadline_epochs(2, 3.5, 40, 30, 0, 0), 2 + 40.0 / 30, 1e-12);
	cr_assert_float_eq(schedule_deadline_epochs(1, 10, 5, 0, 0, 0), 10, 1e-12);
	/* the whole epochs agree with schedule_deadline_budget's */
	for (double left = -10; left < 400; left += 7.3)
		for (int grow = 0; grow < 2; grow++) {
			double e = schedule_deadline_epochs(0, 4, left, 30, 10, grow);
			int b = schedule_deadline_budget(0, 4, left, 30, 10, grow);
			cr_assert(floor(e) == b || (grow && b == 4 && floor(e) == 4 && e > 4),
				  "%g s left, grow %d: %g epochs against %d", left, grow, e, b);
		}
}

/* --partial_epoch, the quickstart's last trials: an epoch of 49 s (46 of
 * training, 3 of evaluation), an eighth of it trained, 24 s left. The
 * epoch under way cannot end in time (40 s of training and 3 of evaluation
 * are left); its part that can is 0.125 + (24 - 3) / 46 = 0.582. */
Test(args, the_epoch_under_way_ends_at_the_part_the_deadline_leaves)
{
	cr_assert_float_eq(schedule_cut_under_way(0, 0.125, 24, 46, 3), 0.125 + 21.0 / 46, 1e-12);
	cr_assert_float_eq(schedule_cut_under_way(3, 0.125, 24, 46, 3), 3.125 + 21.0 / 46, 1e-12);
	/* the epoch fits: it finishes, as does one whose part would stay
	 * under a tenth, or under what is trained (the evaluation alone does
	 * not fit: the deadline cancels it as before) */
	cr_assert_float_eq(schedule_cut_under_way(0, 0.125, 44, 46, 3), 1, 1e-12);
	cr_assert_float_eq(schedule_cut_under_way(0, 0.05, 4.5, 46, 3), 1, 1e-12);
	cr_assert_float_eq(schedule_cut_under_way(0, 0.05, 7.7, 46, 3), 0.05 + 4.7 / 46, 1e-12);
	cr_assert_float_eq(schedule_cut_under_way(0, 0.5, 2.9, 46, 3), 1, 1e-12);
	cr_assert_float_eq(schedule_cut_under_way(0, 0.5, 3, 46, 3), 0.5, 1e-12);
	cr_assert_float_eq(schedule_cut_under_way(2, 0.5, -1, 46, 3), 3, 1e-12);
	/* nothing timed */
	cr_assert_float_eq(schedule_cut_under_way(1, 0.5, 10, 0, 0), 2, 1e-12);
}

/* The guard in the epoch that ends the budget: a make run trial whose last
 * part, 0.81 of an epoch, was fitted to 56.5 s left at 65.9 s an epoch, then
 * trained slower. A quarter in, 40 s left, 0.6 s of evaluation: at 62 s of
 * training an epoch (this epoch's pace) the rest, 0.56 of an epoch, and the
 * evaluation take 35.3 s and fit; at 68 s they take 38.7 s, 39.6 with a
 * fortieth to spare, and still fit (the whole twentieth would not: no cut
 * for a pace within the spare the budget was fitted with); at 72 s they
 * take 40.9 s and do not, and the part that fits with the twentieth is
 * 0.25 + (40 / 1.05 - 0.6) / 72. */
Test(args, the_guard_ends_a_slow_last_epoch_at_the_part_that_still_fits)
{
	cr_assert_float_eq(schedule_guard_part(0.25, 0.81, 40, 62, 0.6, 1.05), 0.81, 1e-12);
	cr_assert_float_eq(schedule_guard_part(0.25, 0.81, 40, 68, 0.6, 1.05), 0.81, 1e-12);
	cr_assert_float_eq(schedule_guard_part(0.25, 0.81, 40, 72, 0.6, 1.05),
			   0.25 + (40 / 1.05 - 0.6) / 72, 1e-12);
	/* a whole last epoch (planned 1) is cut the same way */
	cr_assert_float_eq(schedule_guard_part(0.5, 1, 40, 72, 0.6, 1.05), 1, 1e-12);
	cr_assert_float_eq(schedule_guard_part(0.5, 1, 30, 72, 0.6, 1.05),
			   0.5 + (30 / 1.05 - 0.6) / 72, 1e-12);
	/* nothing more fits, not even the evaluation: it ends now, never
	 * before what is trained */
	cr_assert_float_eq(schedule_guard_part(0.5, 0.9, 0.3, 72, 0.6, 1.05), 0.5, 1e-12);
	cr_assert_float_eq(schedule_guard_part(0.5, 0.9, -5, 72, 0.6, 1.05), 0.5, 1e-12);
	/* never later than planned, however much time is left */
	for (double left = -10; left < 200; left += 3.7) {
		double p = schedule_guard_part(0.3, 0.7, left, 60, 1, 1.05);
		cr_assert(p >= 0.3 && p <= 0.7, "%g s left: %g", left, p);
	}
	/* nothing timed: as planned */
	cr_assert_float_eq(schedule_guard_part(0.3, 0.7, 1, 0, 0, 1.05), 0.7, 1e-12);
}

/* The least part of an epoch a trial ends at under a deadline: the share
 * trained at its first estimate (the first step, then an eighth); a whole
 * epoch of one step. The quickstart's 937 steps: 118 at the estimate. */
Test(args, the_least_part_is_what_the_first_estimate_has_trained)
{
	cr_assert_eq(schedule_probe_steps(937), 118);
	cr_assert_float_eq(schedule_least_part(937), 118.0 / 937, 1e-12);
	cr_assert_eq(schedule_probe_steps(8), 2);
	cr_assert_float_eq(schedule_least_part(8), 0.25, 1e-12);
	cr_assert_eq(schedule_probe_steps(1), 2);
	cr_assert_float_eq(schedule_least_part(1), 1, 1e-12);
	cr_assert_float_eq(schedule_least_part(0), 1, 1e-12);
	/* never under the tenth schedule_cut_under_way keeps */
	for (long n = 1; n < 5000; n += 7)
		cr_assert(schedule_least_part(n) >= SCHEDULE_MIN_PART, "%ld", n);
}

/* Growth to the step: the quickstart's last round, a budget of 2 with 232 s
 * to the end at 67.6 s an epoch, takes 3.56 epochs instead of 3 and 45 s
 * idle; a part of an epoch past the budget is taken as well (whole epochs
 * would stay at the budget); 2 epochs left after the budget stay. */
Test(args, deadline_epochs_grow_into_the_end_to_the_step)
{
	double e = schedule_deadline_epochs(0, 2, 232, 67.6, 59, 1);
	cr_assert_float_eq(e, 1 + (232 - 59) / 67.6, 1e-12);
	cr_assert(e > 3.5 && e < 3.6, "%g", e);
	cr_assert_float_eq(schedule_deadline_epochs(0, 2, 232, 67.6, 59, 0), 2, 1e-12);
	cr_assert_float_eq(schedule_deadline_epochs(0, 4, 125, 30, 10, 1), 1 + 115.0 / 30, 1e-12);
	cr_assert_float_eq(schedule_deadline_epochs(0, 4, 150, 30, 10, 1), 1 + 140.0 / 30, 1e-12);
	cr_assert_eq(schedule_deadline_budget(0, 4, 150, 30, 10, 1), 5);
	cr_assert_float_eq(schedule_deadline_epochs(0, 4, 250, 30, 10, 1), 4, 1e-12);
}

/* A time budget (maxExecShare) and a budget a deadline grew: the slot's
 * last trial keeps the end of the run when its own budget fits the time
 * budget (quickstart: 4 grown to 6, cut to 5, left 40 s to two one-epoch
 * trials); a first round too long for the share is cut as before. */
Test(args, time_budget_leaves_a_grown_budget_whole_when_its_own_fits)
{
	/* own 4 grown to 6; 150 s at 25 s an epoch fit 5 of them: 6 stands */
	cr_assert_eq(schedule_time_budget(0, 6, 4, 150, 25, 10), 6);
	/* own 4 grown to 6, 80 s fit 3: under its own, cut to 3 */
	cr_assert_eq(schedule_time_budget(0, 6, 4, 80, 25, 10), 3);
	/* not grown: cut to what fits, never above the budget */
	cr_assert_eq(schedule_time_budget(0, 4, 4, 80, 25, 10), 3);
	cr_assert_eq(schedule_time_budget(0, 4, 4, 150, 25, 10), 4);
	/* one core, first round: own 8 grown to 10, 150 s at 60 s fit 2 */
	cr_assert_eq(schedule_time_budget(0, 10, 8, 150, 60, 50), 2);
	/* later in the run, between epochs: 3 done of a grown 6, own 4 fits */
	cr_assert_eq(schedule_time_budget(3, 6, 4, 40, 25, 0), 6);
	/* a budget a deadline cut below its own is cut further as before */
	cr_assert_eq(schedule_time_budget(0, 3, 4, 30, 25, 10), 1);
}

/* Issue 13 #7: every number argument has a range; a value outside it, from
 * the command line, the environment or params.json, is refused naming the
 * argument and the range (--threads 100000 segfaulted in libgomp, --epochs
 * -1 trained 0 epochs, --train_samples -1 meant all, --world_size 0). */
Test(args, numbers_out_of_range_name_the_argument_and_range)
{
	static const char *const bad[][2] = {
		{ "--threads=100000", "--threads must be between 0 and 1024, got 100000" },
		{ "--batch_size=100000", "--batch_size must be between 1 and 65536, got 100000" },
		{ "--batch_size=0.5", "--batch_size must be between 1 and 65536, got 0.5" },
		{ "--epochs=-1", "--epochs must be between 1 and 100000, got -1" },
		{ "--epoch=0", "--epochs must be between 1 and 100000, got 0" },
		{ "--train_samples=-1", "--train_samples must be between 0 and 1000000000, got -1" },
		{ "--val_samples=-5", "--val_samples must be between 0 and 1000000000, got -5" },
		{ "--world_size=0", "--world_size must be between 1 and 65536, got 0" },
		{ "--rank=-1", "--rank must be between 0 and 65535, got -1" },
		{ "--seed=99999999999999999999", "--seed must be between 0 and 4294967295" },
		{ "--momentum=2", "--momentum must be between 0 and 1, got 2" },
		{ "--dist_timeout=0", "--dist_timeout must be between 0.1 and 86400, got 0" },
	};
	struct args a;
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		cr_assert_eq(PARSE(&a, (char *)bad[i][0]), -1, "%s was accepted", bad[i][0]);
		cr_assert(strstr(util_last_error(), bad[i][1]), "%s: '%s' lacks '%s'", bad[i][0],
			  util_last_error(), bad[i][1]);
		args_release(&a);
	}
	/* from the environment: the variable, then the argument it sets */
	static const char *const env[] = { "AAH_THREADS", "100000", NULL };
	fake_env = env;
	cr_assert_eq(PARSE(&a, "--epochs=3"), -1);
	cr_assert(strstr(util_last_error(), "AAH_THREADS: --threads must be between 0 and 1024"),
		  "%s", util_last_error());
	args_release(&a);
	fake_env = NULL;
	/* a count past the CPUs online is lowered to them, not run for minutes */
	cr_assert_eq(PARSE(&a, "--threads=1024"), 0, "%s", util_last_error());
	cr_assert_leq(a.threads, sysconf(_SC_NPROCESSORS_ONLN));
	cr_assert_gt(a.threads, 0);
	args_release(&a);
	/* the edges are inside */
	cr_assert_eq(PARSE(&a, "--train_samples=0", "--epochs=1", "--batch_size=65536"), 0,
		     "%s", util_last_error());
	args_release(&a);
}

/* Issue 13 #10: with no trial directory, arch or params named, nothing is
 * trained in the current directory: usage, exit 2 (main). */
Test(args, nothing_named_is_a_usage_error)
{
	struct args a;
	char *argv0[] = { "aah-trial" };
	cr_assert_eq(args_parse(&a, 1, argv0, env_get), -1, "aah-trial alone was accepted");
	cr_assert_eq(a.usage, 1);
	cr_assert(strstr(util_last_error(), "nothing to train"), "%s", util_last_error());
	args_release(&a);
	char *argv1[] = { "aah-trial", "--epochs", "3" };
	cr_assert_eq(args_parse(&a, 3, argv1, env_get), -1);
	cr_assert_eq(a.usage, 1);
	args_release(&a);
	static const char *const env[] = { "AAH_TRIAL_DIR", tmp, NULL };
	fake_env = env;
	cr_assert_eq(args_parse(&a, 1, argv0, env_get), 0, "%s", util_last_error());
	cr_assert_str_eq(a.trial_dir, tmp);
	args_release(&a);
	fake_env = NULL;
	char *argv2[] = { "aah-trial", "--arch", "/nonexistent/arch.json" };
	cr_assert_eq(args_parse(&a, 3, argv2, env_get), 0, "%s", util_last_error());
	args_release(&a);
}

/* --batch_rule aiperf (trialimg/device.c): per GPU, 14 (or the tuner's
 * batch_size) times the GPU's memory in GiB, rounded as AIPerf's
 * utils.MinGpuMem; without a GPU, or with the rule off, the batch stays. */
Test(args, aiperf_batch_rule_from_the_gpu_memory)
{
	struct args a;
	struct trial_device d;
	int batch;
	cr_assert_eq(PARSE(&a, "--batch_rule=aiperf", "--batch_size=448"), 0, "%s", util_last_error());
	cr_assert_str_eq(a.batch_rule, "aiperf");
	memset(&d, 0, sizeof(d));
	d.gpu = 1;
	d.dev.mem_gib = 79.2;          /* an H100 80GB HBM3 */
	batch = 448;
	device_batch_rule(&d, &a, &batch);
	cr_assert_eq(batch, 14 * 79);
	cr_assert_str_eq(d.batch_rule, "aiperf: 14 (the rule's) x 79 GiB = 1106");
	d.dev.mem_gib = 31.74;         /* a 32 GB V100: AIPerf's 448 */
	device_batch_rule(&d, &a, &batch);
	cr_assert_eq(batch, 448);
	d.gpu = 0;                     /* no GPU: the command's batch */
	d.batch_rule[0] = '\0';
	batch = 256;
	device_batch_rule(&d, &a, &batch);
	cr_assert_eq(batch, 256);
	cr_assert_str_eq(d.batch_rule, "");
	args_release(&a);

	/* the tuner's batch_size (AIPerf's 12 to 14) is the multiplier, even
	 * beside a --batch_scale that scaled it and a command's --batch_size */
	char *p = xstrfmt("%s/params.json", tmp);
	const char *doc = "{\"format\":\"aah-params/1\",\"parameters\":{\"batch_size\":12}}";
	cr_assert_eq(fileio_write_atomic(p, doc, strlen(doc)), 0);
	cr_assert_eq(PARSE(&a, "--batch_rule=aiperf", "--batch_size=448", "--batch_scale=32"), 0);
	d.gpu = 1;
	d.dev.mem_gib = 79.2;
	device_batch_rule(&d, &a, &batch);
	cr_assert_eq(batch, 12 * 79);
	cr_assert_str_eq(d.batch_rule, "aiperf: 12 (params.json's batch_size) x 79 GiB = 948");
	args_release(&a);
	/* off: nothing changes */
	cr_assert_eq(PARSE(&a, "--batch_size=64"), 0);
	cr_assert_str_eq(a.batch_rule, "off");
	batch = 64;
	d.batch_rule[0] = '\0';
	device_batch_rule(&d, &a, &batch);
	cr_assert_eq(batch, 64);
	cr_assert_str_eq(d.batch_rule, "");
	args_release(&a);
	cr_assert_neq(PARSE(&a, "--batch_rule=huge"), 0);
	cr_assert(strstr(util_last_error(), "--batch_rule huge: must be off or aiperf"), "%s",
		  util_last_error());
	args_release(&a);
	free(p);
}
