#ifndef IVY_MEMORY_H
#define IVY_MEMORY_H

/// Caps how many malloc arenas glibc keeps (mallopt's M_ARENA_MAX, which Swift's Glibc module
/// does not expose); answers whether glibc took the setting.
int ivy_cap_malloc_arenas(int arenas);

#endif
