/* elastic.h: how a running trial learns its new world size. The runner
 * writes <trial_dir>/world_size (one integer, atomically); the trial never
 * calls the runner. At a step boundary, after the allreduce, rank 0 reads
 * it and tells the other ranks; on a change rank 0 saves a mid-epoch
 * checkpoint and every rank exits with ELASTIC_EXIT_RESIZE, for the runner
 * to relaunch the trial on the new world size with --resume. */
#ifndef AAH_ELASTIC_H
#define AAH_ELASTIC_H

/* Exit status of every rank of a trial that stopped to be resized. */
#define ELASTIC_EXIT_RESIZE 85

/* The world size the runner asks of the trial in trial_dir: 0 to stop at
 * the next step boundary with a checkpoint (its devices were taken away),
 * else the new size; -1 when it asks nothing (no file, or not a number
 * from 0 to 65536). */
int elastic_target(const char *trial_dir);

#endif
