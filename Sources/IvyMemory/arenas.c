#include "IvyMemory.h"

#include <malloc.h>

int ivy_cap_malloc_arenas(int arenas) {
    return mallopt(M_ARENA_MAX, arenas) == 1;
}
