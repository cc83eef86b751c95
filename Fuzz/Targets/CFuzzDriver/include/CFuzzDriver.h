// libFuzzer's driver entry point (compiler-rt's FuzzerInterface.h), for a fuzz target whose `main` SwiftPM renames.
#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*callback)(const uint8_t *data, size_t size));

/// LeakSanitizer's `__lsan_disable` and `__lsan_enable` when it is linked in (under `-sanitize=address`), else
/// nothing: allocations this thread makes between the two are never reported as leaks. For what LeakSanitizer
/// cannot see is still referenced, such as the side table a Swift weak reference gives a long-lived object (its
/// address is kept shifted in the object's reference count).
void CFuzzDriverIgnoreLeaksBegin(void);
void CFuzzDriverIgnoreLeaksEnd(void);
