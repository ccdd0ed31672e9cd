#include "IvyStamp.h"

// The marker lives in this file only, so that it occurs once in the binary, where
// scripts/package looks for the slot.
#define MARKER "#ivy-build-stamp-slot:"

// scripts/package writes a release's stamp (Sources/IvyCore/BuildStamp.swift) over this slot in
// place, in the built binary's read-only data. The program reads it from its own memory, never
// from its file: a stamp kept there survives `strip` (which drops whatever follows the ELF
// image), an execute-only install (mode 0711: the file cannot be read) and a run through
// `ld.so` (where /proc/self/exe is the loader). `volatile`, so that the compiler reads the
// bytes the binary holds, never the NULs it was given here.
__attribute__((used)) static const volatile unsigned char slot[IVY_STAMP_SLOT_SIZE] = MARKER;

size_t ivy_build_stamp(unsigned char *out, size_t capacity) {
    size_t start = sizeof(MARKER) - 1;
    size_t count = IVY_STAMP_SLOT_SIZE - start;
    if (count > capacity) count = capacity;
    for (size_t index = 0; index < count; index++) out[index] = slot[start + index];
    return count;
}
