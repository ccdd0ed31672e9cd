#ifndef IVY_STAMP_H
#define IVY_STAMP_H

#include <stddef.h>

/// The bytes the slot reserves, its marker included. scripts/package knows this size too.
#define IVY_STAMP_SLOT_SIZE 4096

/// Copies what follows the slot's marker (the stamp's length in 8 digits, then the stamp; all
/// NUL in a binary scripts/package has not stamped) into `out`; answers how many bytes.
size_t ivy_build_stamp(unsigned char *out, size_t capacity);

#endif
