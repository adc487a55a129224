// Header-only (include/prefetch.h); SwiftPM wants a source file in a C target.
#include "prefetch.h"
