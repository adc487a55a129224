// A hint to load memory into the cache before it is read. Swift has no
// prefetch; a pass over many keys' slots (sealing a batch, taking one back)
// waits on a cache miss per slot otherwise, one after another.
#ifndef KVCACHE_PREFETCH_H
#define KVCACHE_PREFETCH_H

// The first `lines` 64-byte lines at `address` (read, kept in every level).
static inline void kv_prefetch(const void *address, int lines) {
    const char *p = (const char *)address;
    for (int i = 0; i < lines; i++) __builtin_prefetch(p + 64 * i, 0, 3);
}

// The bytes a block from malloc() has room for (at least what was asked):
// a key's slot keeps no capacity of the block its bytes spilled to.
#include <malloc.h>
static inline size_t kv_usable_size(void *block) {
    return malloc_usable_size(block);
}

#endif
