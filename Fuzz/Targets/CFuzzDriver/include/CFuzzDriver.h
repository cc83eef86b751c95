// libFuzzer's driver entry point (compiler-rt's FuzzerInterface.h), for a fuzz target whose `main` SwiftPM renames.
#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*callback)(const uint8_t *data, size_t size));
