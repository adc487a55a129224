#include "crc32c.h"
#include <string.h>

#if defined(__x86_64__)
#include <nmmintrin.h>

int kv_crc32c_hardware_available(void) {
    return __builtin_cpu_supports("sse4.2") ? 1 : 0;
}

__attribute__((target("sse4.2")))
uint32_t kv_crc32c_hardware(uint32_t crc, const void *bytes, size_t length) {
    const unsigned char *p = bytes;
    uint64_t c = ~crc;
    while (length >= 8) {
        uint64_t word;
        memcpy(&word, p, 8);
        c = _mm_crc32_u64(c, word);
        p += 8;
        length -= 8;
    }
    uint32_t c32 = (uint32_t)c;
    while (length > 0) {
        c32 = _mm_crc32_u8(c32, *p++);
        length--;
    }
    return ~c32;
}
#else
int kv_crc32c_hardware_available(void) { return 0; }

uint32_t kv_crc32c_hardware(uint32_t crc, const void *bytes, size_t length) {
    (void)bytes; (void)length;
    return crc;
}
#endif
