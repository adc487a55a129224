// The server loop's clocks, one per thread (C11 _Thread_local): the time
// the running command started and a replayed record's time. Swift has no
// thread-local variables; a pthread key cost two library calls (and a lazy
// global's check) per command, these a load each. 0 means none.
#ifndef KVCACHE_THREAD_CLOCK_H
#define KVCACHE_THREAD_CLOCK_H
#include <stdint.h>

extern _Thread_local int64_t kv_thread_command_time;
extern _Thread_local int64_t kv_thread_clock_override;

static inline int64_t kv_command_time_get(void) { return kv_thread_command_time; }
static inline void kv_command_time_set(int64_t value) { kv_thread_command_time = value; }
static inline int64_t kv_clock_override_get(void) { return kv_thread_clock_override; }
static inline void kv_clock_override_set(int64_t value) { kv_thread_clock_override = value; }

#endif
