/* Unit tests for trialimg/train through train_run: a whole trial on a JPEG
 * folder written here from Fashion-MNIST images, and a corrupt image that
 * fails the trial with the file named in result.json, the loader thread's
 * message whole. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jpeglib.h>

#include "fileio.h"
#include "jsonfile.h"
#include "trialimg/args.h"
#include "trialimg/data/dataset.h"
#include "trialimg/model.h"
#include "trialimg/train.h"
#include "util.h"

static char tmp[64];

static void setup(void)
{
	strcpy(tmp, "/tmp/aah-train-XXXXXX");
	cr_assert_not_null(mkdtemp(tmp));
	util_set_quiet(1);
}

static void teardown(void)
{
	fileio_remove_tree(tmp);
}

TestSuite(train, .init = setup, .fini = teardown);

static void write_jpeg(const char *path, const uint8_t *px)
{
	struct jpeg_compress_struct c;
	struct jpeg_error_mgr e;
	FILE *f = fopen(path, "wb");
	cr_assert_not_null(f);
	c.err = jpeg_std_error(&e);
	jpeg_create_compress(&c);
	jpeg_stdio_dest(&c, f);
	c.image_width = 28, c.image_height = 28, c.input_components = 1;
	c.in_color_space = JCS_GRAYSCALE;
	jpeg_set_defaults(&c);
	jpeg_set_quality(&c, 95, TRUE);
	jpeg_start_compress(&c, TRUE);
	while (c.next_scanline < 28) {
		JSAMPROW row = (JSAMPROW)(px + c.next_scanline * 28);
		jpeg_write_scanlines(&c, &row, 1);
	}
	jpeg_finish_compress(&c);
	jpeg_destroy_compress(&c);
	fclose(f);
}

/* <tmp>/<split>/<class>/<i>.jpg from Fashion-MNIST test images [from, from+n) */
static char *write_split(const struct dataset *fm, const char *split, int from, int n)
{
	char *root = xstrfmt("%s/%s", tmp, split);
	for (int i = from; i < from + n; i++) {
		char *d = xstrfmt("%s/c%d", root, fm->labels[i]);
		cr_assert_eq(fileio_mkdir_p(d, 0755), 0);
		char *p = xstrfmt("%s/%05d.jpg", d, i);
		write_jpeg(p, fm->pixels + (size_t)i * 784);
		free(p);
		free(d);
	}
	return root;
}

static const char *no_env(const char *name)
{
	(void)name;
	return NULL;
}

/* Runs one trial over the JPEG folders; returns train_run's status and
 * the parsed result.json (the caller deletes it). */
static cJSON *run_trial(const char *train, const char *val, int *rc)
{
	char *arch = xstrfmt("%s/arch.json", tmp), *dir = xstrfmt("%s/trial", tmp);
	struct arch net;
	model_default_arch(&net, 28, 28, 1, 10);
	cJSON *doc = arch_to_json(&net);
	arch_release(&net);
	cr_assert_eq(jsonfile_write(arch, doc), 0);
	cJSON_Delete(doc);
	char *argv[] = {"aah-trial", "--trial_dir", dir, "--arch", arch, "--train_data_dir",
			(char *)train, "--val_data_dir", (char *)val, "--warmup_1", "2",
			"--threads", "1", "--batch_size", "16", "--initial_lr", "0.1",
			"--num_parallel_calls", "2"};
	struct args a;
	cr_assert_eq(args_parse(&a, (int)ARRAY_SIZE(argv), argv, no_env), 0, "%s", util_last_error());
	volatile sig_atomic_t stop = 0;
	*rc = train_run(&a, &stop);
	args_release(&a);
	char *res = xstrfmt("%s/result.json", dir);
	cJSON *r = NULL;
	cr_assert_eq(jsonfile_read(res, &r), 0, "%s", util_last_error());
	free(res);
	free(arch);
	free(dir);
	return r;
}

Test(train, trial_on_jpeg_folders)
{
	struct dataset fm;
	cr_assert_eq(dataset_open(&fm, "auto", "/usr/share/datasets/fashion-mnist", 0, NULL), 0);
	char *train = write_split(&fm, "train", 0, 480), *val = write_split(&fm, "val", 500, 200);
	int rc;
	cJSON *r = run_trial(train, val, &rc);
	cr_assert_eq(rc, 0, "%s", util_last_error());
	const char *status;
	double acc;
	cr_assert_eq(json_get_string("result", r, "status", 0, &status), 0);
	cr_assert_str_eq(status, "succeeded");
	cr_assert_eq(json_get_number("result", r, "best_val_acc", 0, &acc), 0);
	cr_assert_gt(acc, 0.3, "two epochs on 480 JPEGs should beat chance clearly: %g", acc);
	cJSON_Delete(r);

	/* a corrupt validation image fails the trial and is named */
	char *bad = xstrfmt("%s/c0/broken.jpg", val);
	FILE *f = fopen(bad, "wb");
	cr_assert_not_null(f);
	fputs("definitely not a JPEG", f);
	fclose(f);
	r = run_trial(train, val, &rc);
	cr_assert_neq(rc, 0);
	const char *why;
	cr_assert_eq(json_get_string("result", r, "stop_reason", 0, &why), 0);
	cr_assert_not_null(strstr(why, "broken.jpg"), "%s", why);
	cr_assert_eq(json_get_string("result", r, "status", 0, &status), 0);
	cr_assert_str_eq(status, "failed");
	cJSON_Delete(r);
	free(bad);
	free(train);
	free(val);
	dataset_release(&fm);
}

Test(train, truncated_training_image_fails_with_the_whole_message)
{
	struct dataset fm;
	cr_assert_eq(dataset_open(&fm, "auto", "/usr/share/datasets/fashion-mnist", 0, NULL), 0);
	char split[241]; /* a long folder name: the message is longer than 256 bytes */
	memset(split, 't', sizeof(split) - 1);
	split[sizeof(split) - 1] = '\0';
	char *train = write_split(&fm, split, 0, 64), *val = write_split(&fm, "val", 500, 32);
	struct ops_shape want = {28, 28, 1};
	struct dataset d;
	cr_assert_eq(dataset_open(&d, "imagefolder", train, 1, &want), 0, "%s", util_last_error());
	float px[784];
	cr_assert_eq(truncate(d.paths[7], 20), 0);
	cr_assert_eq(d.get(&d, 7, px, 1, 1), -1, "'%s' still decodes", d.paths[7]);
	char *msg = xstrdup(util_last_error()); /* what the loader's worker thread meets */
	cr_assert_gt(strlen(msg), 256, "%s", msg);
	dataset_release(&d);
	int rc;
	cJSON *r = run_trial(train, val, &rc);
	cr_assert_neq(rc, 0);
	const char *why, *status;
	cr_assert_eq(json_get_string("result", r, "stop_reason", 0, &why), 0);
	cr_assert_not_null(strstr(why, "cannot read a training batch: "), "%s", why);
	cr_assert_not_null(strstr(why, msg), "'%s' lacks '%s'", why, msg);
	cr_assert_eq(json_get_string("result", r, "status", 0, &status), 0);
	cr_assert_str_eq(status, "failed");
	cJSON_Delete(r);
	free(msg);
	free(train);
	free(val);
	dataset_release(&fm);
}
