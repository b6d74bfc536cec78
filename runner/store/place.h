/* place.h: an attempt's place made ready before its launch (expdir.h,
 * "attempts' places"): the trial's proposal copied in and, for a launch
 * that resumes, the last checkpoint and the epochs that led to it. */
#ifndef AAH_PLACE_H
#define AAH_PLACE_H

/* Make trial seq's place `place` (expdir_place_name) ready: made, with the
 * trial's arch.json, params.json and morph.json copied in from the trial
 * directory (morph.json's way to its parent made from the place); with
 * resume, place `from`'s checkpoint/ (its files, not their temps) and the
 * whole lines of its metrics.jsonl too: the last checkpoint, whatever a
 * launch cut off there writes later. Nothing is copied into the trial
 * directory itself (""), nor from a place into itself. */
int place_prepare(const char *expdir, unsigned seq, const char *place, const char *from,
		  int resume);

/* The trial's proposal (arch.json, params.json, morph.json) from its
 * directory into a launch's place dir, when that is another: for a
 * proposal made in the trial (`propose --exec`), after its place was made. */
int place_copy_proposal(const char *trial_dir, const char *place_dir);

#endif
