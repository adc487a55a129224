#include "thread_clock.h"

_Thread_local int64_t kv_thread_command_time = 0;
_Thread_local int64_t kv_thread_clock_override = 0;
