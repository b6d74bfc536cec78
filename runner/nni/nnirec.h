/* nnirec.h: NNI's trial records, read as NNI's own SDK writes them: the
 * ME-framed records it appends to $NNI_SYS_DIR/.nni/metrics and the
 * NNISDK_MEb'...' lines it prints on platforms other than local, each
 * decoded and checked against the trial it must come from (docs/nni.md).
 *
 * A record is the JSON {"parameter_id", "trial_job_id", "type",
 * "sequence", "value"}, "value" being the metric as JSON text (a number,
 * or a dict whose "default" is one). In the file each record is framed as
 * "ME", its length in six digits (newline included), the JSON and "\n". */
#ifndef AAH_NNIREC_H
#define AAH_NNIREC_H

#include <stddef.h>

enum nnirec_type {
	NNIREC_PERIODICAL,        /* nni.report_intermediate_result */
	NNIREC_FINAL,             /* nni.report_final_result */
};

struct nnirec {
	enum nnirec_type type;
	long sequence;            /* PERIODICAL: 0, 1, ... in the order the trial reported */
	double value;             /* the metric, in [0,1]: an accuracy */
	char *value_json;         /* "value" as the trial dumped it (a dict keeps its other
				   * keys); owned */
};

struct nnirec_list {
	struct nnirec *v;
	size_t n, alloc;
};
#define NNIREC_LIST_INIT { NULL, 0, 0 }
void nnirec_list_release(struct nnirec_list *l);

/* The trial records must come from: its NNI_TRIAL_JOB_ID and the
 * parameter_id of its parameter.cfg. */
struct nnirec_trial {
	const char *job_id;
	long parameter_id;
};

/* The ME-framed records of buf (len bytes of `file`, from byte `base` of
 * it on), appended to out. A record whose bytes have not all arrived is
 * left for later: *used says how many bytes were whole records. With
 * `ended` (the trial's processes are gone, nothing more will come) such a
 * record is an error too. 0, or -1 at the first bad record (the error
 * names the file, the record's byte and what is wrong), with the records
 * before it in out and *used at its start. */
int nnirec_read_frames(const char *file, const char *buf, size_t len, size_t base, int ended,
		       const struct nnirec_trial *who, struct nnirec_list *out, size_t *used);

/* The records of the NNISDK_MEb'...' lines of buf (len bytes of a log,
 * `file`, whose first line is number `line`), appended to out. A last line
 * without its newline is left for later unless ended; *used says how many
 * bytes were whole lines, *lines how many lines they were. Errors as
 * nnirec_read_frames, naming the line. */
int nnirec_read_lines(const char *file, const char *buf, size_t len, unsigned long line,
		      int ended, const struct nnirec_trial *who, struct nnirec_list *out,
		      size_t *used, unsigned long *lines);

#endif
