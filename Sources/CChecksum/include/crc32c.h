// CRC-32C (Castagnoli) with the SSE4.2 crc32 instruction, for the
// append-only log's record checksums. The engine keeps its portable
// table-driven version for machines without it.
#ifndef KVCACHE_CRC32C_H
#define KVCACHE_CRC32C_H
#include <stddef.h>
#include <stdint.h>

/// Whether this CPU has the crc32 instruction (x86-64 with SSE4.2).
int kv_crc32c_hardware_available(void);

/// The CRC-32C of `length` bytes at `bytes`, continuing from `crc` (0 to
/// start). Call only when kv_crc32c_hardware_available() returned 1.
uint32_t kv_crc32c_hardware(uint32_t crc, const void *bytes, size_t length);

#endif
