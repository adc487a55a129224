/* Random point reads of a cache file: pread with page caches of several
 * sizes against PRAGMA mmap_size. See run.sh.
 *
 *   coldread build PATH N
 *   coldread read PATH N MODE CACHE_MIB DIST TEMP RUNS READS
 *     MODE  pread | mmap (mmap_size = the file's size rounded up to 1 MiB)
 *     DIST  uniform | hot (80% of reads to the first 20% of the keys; keys are
 *           SHA-256 digests, so the hot keys are spread over every leaf page)
 *     TEMP  warm: the file is read into the OS page cache first, then one
 *                 untimed run warms SQLite's cache, then RUNS timed runs on
 *                 the same connection (the server's reader lives long);
 *           cold: before each run the connection is closed and the file's
 *                 pages are dropped from the OS page cache
 *                 (posix_fadvise DONTNEED; mincore checks), then a new
 *                 connection does READS reads.
 *
 * Each read is its own autocommit transaction, as CacheFile.row, and the
 * digest is computed per read (SHA-256 of a 16-byte key, as the server does
 * per request); the value and metadata are copied out.
 */
#include "common.h"

#include <sys/mman.h>
#include <sys/resource.h>

static void rss(long *anon_kib, long *file_kib) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    *anon_kib = *file_kib = -1;
    while (f && fgets(line, sizeof line, f)) {
        if (!strncmp(line, "RssAnon:", 8)) *anon_kib = atol(line + 8);
        if (!strncmp(line, "RssFile:", 8)) *file_kib = atol(line + 8);
    }
    if (f) fclose(f);
}

/* Bytes this process has made the kernel read from storage. */
static long long storage_read_bytes(void) {
    FILE *f = fopen("/proc/self/io", "r");
    char line[256];
    long long v = -1;
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "read_bytes:", 11)) v = atoll(line + 11);
    if (f) fclose(f);
    return v;
}

/* Fraction of the file's pages in the OS page cache. */
static double resident_fraction(const char *path) {
    int fd = open(path, O_RDONLY);
    if (fd < 0) die("open for mincore", NULL);
    struct stat st;
    fstat(fd, &st);
    size_t pages = ((size_t)st.st_size + 4095) / 4096;
    void *map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
    if (map == MAP_FAILED) die("mmap for mincore", NULL);
    unsigned char *vec = malloc(pages);
    mincore(map, (size_t)st.st_size, vec);
    size_t in = 0;
    for (size_t i = 0; i < pages; i++) in += vec[i] & 1;
    free(vec);
    munmap(map, (size_t)st.st_size);
    close(fd);
    return pages ? (double)in / (double)pages : 0;
}

static void drop_from_os_cache(const char *path) {
    int fd = open(path, O_RDONLY);
    if (fd < 0) die("open for fadvise", NULL);
    fdatasync(fd);
    posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    close(fd);
}

static void read_whole_file(const char *path) {
    int fd = open(path, O_RDONLY);
    if (fd < 0) die("open for warming", NULL);
    static char buf[1 << 20];
    while (read(fd, buf, sizeof buf) > 0) {}
    close(fd);
}

static double cpu_seconds(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
           ru.ru_stime.tv_usec / 1e6;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static uint64_t pick(uint64_t *rng, uint64_t n, int hot) {
    uint64_t r = xorshift(rng);
    if (!hot) return r % n;
    uint64_t hot_n = n / 5;
    if ((r >> 40) % 10 < 8) return xorshift(rng) % hot_n;
    return hot_n + xorshift(rng) % (n - hot_n);
}

static volatile uint64_t sink;

/* `reads` point reads; returns how many found a row. */
static uint64_t run_reads(sqlite3 *db, sqlite3_stmt *st, uint64_t n, int hot, uint64_t reads, uint64_t seed) {
    uint64_t rng = seed, found = 0;
    unsigned char digest[32], copy[VALUE_BYTES + 64];
    for (uint64_t r = 0; r < reads; r++) {
        key_digest(pick(&rng, n, hot), digest);
        sqlite3_bind_blob(st, 1, digest, 32, SQLITE_STATIC);
        int rc = sqlite3_step(st);
        if (rc == SQLITE_ROW) {
            double date = sqlite3_column_double(st, 0);
            sqlite3_int64 seq = sqlite3_column_int64(st, 1);
            int null_exp = sqlite3_column_type(st, 2) == SQLITE_NULL;
            sqlite3_int64 kind = sqlite3_column_int64(st, 3);
            int mlen = sqlite3_column_bytes(st, 4);
            memcpy(copy, sqlite3_column_blob(st, 4), (size_t)mlen);
            int vlen = sqlite3_column_bytes(st, 5);
            memcpy(copy, sqlite3_column_blob(st, 5), (size_t)(vlen < (int)sizeof copy ? vlen : (int)sizeof copy));
            sink += (uint64_t)date + (uint64_t)seq + (uint64_t)null_exp + (uint64_t)kind + copy[0];
            found++;
        } else if (rc != SQLITE_DONE) {
            fprintf(stderr, "step: %d %s\n", rc, sqlite3_errmsg(db));
            exit(3);
        }
        sqlite3_reset(st);
    }
    return found;
}

int main(int argc, char **argv) {
    if (argc == 4 && !strcmp(argv[1], "build")) {
        build_file(argv[2], strtoull(argv[3], NULL, 10), 1);
        return 0;
    }
    if (argc != 10 || strcmp(argv[1], "read")) {
        fprintf(stderr, "usage: %s build PATH N | read PATH N pread|mmap CACHE_MIB uniform|hot warm|cold RUNS READS\n",
                argv[0]);
        return 1;
    }
    const char *path = argv[2];
    uint64_t n = strtoull(argv[3], NULL, 10);
    int use_mmap = !strcmp(argv[4], "mmap");
    long cache_mib = atol(argv[5]);
    int hot = !strcmp(argv[6], "hot");
    int cold = !strcmp(argv[7], "cold");
    int runs = atoi(argv[8]);
    uint64_t reads = strtoull(argv[9], NULL, 10);

    struct stat st;
    if (stat(path, &st) != 0) die(path, NULL);
    long long map_bytes = use_mmap ? ((long long)st.st_size + (1 << 20)) & ~((1LL << 20) - 1) : 0;

    /* What the digest costs alone, to read the figures against. */
    {
        uint64_t rng = 1;
        unsigned char d[32];
        double t = now_seconds();
        for (int i = 0; i < 200000; i++) {
            key_digest(pick(&rng, n, hot), d);
            sink += d[0];
        }
        fprintf(stderr, "digest+pick alone: %.0f ns/read\n", (now_seconds() - t) / 200000 * 1e9);
    }

    sqlite3 *db = NULL;
    sqlite3_stmt *stmt = NULL;
    double rate[64], io_mib[64], cpu_us[64];
    long anon = 0, file = 0;
    if (runs > 64) runs = 64;
    if (!cold) read_whole_file(path);
    for (int run = cold ? 0 : -1; run < runs; run++) {
        if (!db || cold) {
            if (db) {
                sqlite3_finalize(stmt);
                sqlite3_close(db);
            }
            if (cold) drop_from_os_cache(path);
            double resident = resident_fraction(path);
            db = open_db(path, 0);
            configure_reader(db, cache_mib * 1024, map_bytes);
            if (sqlite3_prepare_v3(db, point_read, -1, SQLITE_PREPARE_PERSISTENT, &stmt, NULL) != SQLITE_OK)
                die("prepare", db);
            if (run <= 0)
                fprintf(stderr, "%s: %lld pages, mmap_size %lld, cache_size %lld, in OS cache %.1f%%\n", path,
                        pragma_int(db, "PRAGMA page_count"), pragma_int(db, "PRAGMA mmap_size"),
                        pragma_int(db, "PRAGMA cache_size"), resident * 100);
            else if (cold)
                fprintf(stderr, "  before run %d: in OS cache %.1f%%\n", run + 1, resident * 100);
        }
        int dummy, hit_hi;
        sqlite3_db_status(db, SQLITE_DBSTATUS_CACHE_HIT, &dummy, &hit_hi, 1);
        sqlite3_db_status(db, SQLITE_DBSTATUS_CACHE_MISS, &dummy, &hit_hi, 1);
        long long io0 = storage_read_bytes();
        double cpu0 = cpu_seconds();
        double t = now_seconds();
        uint64_t found = run_reads(db, stmt, n, hot, reads, 0x1234567ULL * (uint64_t)(run + 2));
        double secs = now_seconds() - t;
        double cpu = cpu_seconds() - cpu0;
        int hits, misses, used;
        sqlite3_db_status(db, SQLITE_DBSTATUS_CACHE_HIT, &hits, &dummy, 0);
        sqlite3_db_status(db, SQLITE_DBSTATUS_CACHE_MISS, &misses, &dummy, 0);
        sqlite3_db_status(db, SQLITE_DBSTATUS_CACHE_USED, &used, &dummy, 0);
        rss(&anon, &file);
        long long io = storage_read_bytes() - io0;
        if (found != reads) {
            fprintf(stderr, "found %llu of %llu\n", (unsigned long long)found, (unsigned long long)reads);
            return 3;
        }
        if (run < 0) {
            fprintf(stderr, "  warm-up: %.0f reads/s\n", reads / secs);
            continue;
        }
        rate[run] = reads / secs;
        cpu_us[run] = cpu / (double)reads * 1e6;
        fprintf(stderr,
                "  run %d: %.0f reads/s  %.2f us CPU/read  page cache hits %.1f%% (%d used MiB)  RssAnon %ld KiB  RssFile %ld KiB"
                "  read from storage %.1f MiB, file now %.0f%% in OS cache\n",
                run + 1, rate[run], cpu / (double)reads * 1e6, hits + misses ? 100.0 * hits / (hits + misses) : 0.0, used >> 20, anon, file,
                io / 1048576.0, resident_fraction(path) * 100);
        io_mib[run] = io / 1048576.0;
    }
    double sorted[64];
    memcpy(sorted, rate, sizeof(double) * (size_t)runs);
    qsort(sorted, (size_t)runs, sizeof(double), cmp_double);
    double cpu_sorted[64];
    memcpy(cpu_sorted, cpu_us, sizeof(double) * (size_t)runs);
    qsort(cpu_sorted, (size_t)runs, sizeof(double), cmp_double);
    printf("RESULT entries=%llu mode=%s cache_mib=%ld dist=%s temp=%s reads=%llu median=%.0f min=%.0f max=%.0f "
           "cpu_us=%.2f rss_anon_mib=%.1f rss_file_mib=%.1f file_mib=%.0f storage_read_mib=%.1f\n",
           (unsigned long long)n, use_mmap ? "mmap" : "pread", cache_mib, hot ? "hot" : "uniform",
           cold ? "cold" : "warm", (unsigned long long)reads, sorted[runs / 2], sorted[0], sorted[runs - 1],
           cpu_sorted[runs / 2],
           anon / 1024.0, file / 1024.0, st.st_size / 1048576.0, io_mib[runs - 1]);
    sqlite3_finalize(stmt);
    sqlite3_close(db);
    return 0;
}
