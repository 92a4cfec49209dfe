/* fuzz.h - the entry point that every tests/fuzz/fuzz_*.c defines.
 *
 * With clang -fsanitize=fuzzer, libFuzzer's main() calls it; in the replay build
 * (build/tests/fuzz/fuzz_X_replay) tests/fuzz/replay.c's main() calls it once per corpus file.
 */
#ifndef KC_TESTS_FUZZ_H
#define KC_TESTS_FUZZ_H

#include <stddef.h>
#include <stdint.h>

/* Run one input. `data` is only valid during the call. Always returns 0; a bug aborts. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#endif
