// libFuzzer (linked by -sanitize=fuzzer) defines LLVMFuzzerRunDriver; here only LeakSanitizer's switches, wrapped.
#include "CFuzzDriver.h"

// Weak: defined by the sanitizer runtime under -sanitize=address, absent (null) in the plain build.
void __lsan_disable(void) __attribute__((weak));
void __lsan_enable(void) __attribute__((weak));

void CFuzzDriverIgnoreLeaksBegin(void) {
    if (__lsan_disable) __lsan_disable();
}

void CFuzzDriverIgnoreLeaksEnd(void) {
    if (__lsan_enable) __lsan_enable();
}
