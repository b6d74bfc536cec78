/* fuzz.h: what every libFuzzer target in tests/fuzz/ shares: the entry
 * points, a quiet library and a private scratch directory for the readers
 * that take a path rather than a buffer. */
#ifndef AAH_FUZZ_H
#define AAH_FUZZ_H

#include <stddef.h>
#include <stdint.h>

/* The libFuzzer interface (also called by driver.c, the plain-main
 * fallback used when clang's fuzzer runtime is missing): each target
 * defines LLVMFuzzerTestOneInput; fuzz.c's LLVMFuzzerInitialize calls
 * fuzz_init. */
int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Silence error()/warning() and create the scratch directory (once). */
void fuzz_init(void);
/* The scratch directory, removed at exit. */
const char *fuzz_dir(void);
/* Write data to <fuzz_dir>/<name> (replacing it) and return that path
 * (static storage: valid until the next call). Aborts when it cannot: a
 * fuzzer whose input never reaches the code under test finds nothing. */
const char *fuzz_write(const char *name, const uint8_t *data, size_t size);

#endif
