/*
 * ceiling.c: the C ceiling for kvcache-server's storage engine.
 *
 * Runs exactly the engine's SQL (Sources/SQLiteKVCache) on the same schema
 * and pragmas, from C with nothing in between: statements prepared once with
 * SQLITE_PREPARE_PERSISTENT, SHA-256 of the key (the primary key) through one
 * reused EVP_MD_CTX and an EVP_MD_fetch'd SHA256, blobs bound SQLITE_STATIC.
 * It is the fastest this SQL can go on this machine, so Swift / C says how
 * much the Swift layer costs.
 *
 *   gcc -O2 ceiling.c -lsqlite3 -lcrypto -o ceiling
 *   ./ceiling --entries N --mode put1|put1000|get|ingest --dir D [--ops K] [--seed S]
 *             [--wal-autocheckpoint PAGES]  (not set by default: SQLite's 1000)
 *             [--batch B] [--report-every R] [--cache-mib M] [--checkpoint-pages P]  (ingest)
 *
 * Like kvcache-bench (Sources/kvcache-bench), it first fills an empty cache
 * with N entries, key:0 ... key:<N-1>, 1000 puts per transaction (untimed),
 * then times K operations on random existing keys:
 *
 * put1     K overwrites, one transaction per put (default K = 5000)
 * put1000  K overwrites, 1000 puts per transaction (default K = 100000)
 * get      K gets (default K = 200000)
 *
 * Values are 100 bytes, metadata empty, no expiry. Prints one JSON line:
 *   {"impl":"c","mode":"put1","entries":N,"ops":K,"seconds":S,"ops_per_sec":R}
 *
 * ingest   the ceiling for sustained new-key ingest (issue 13; bench/scale.py
 *          compares the server against it): N new keys key:000000000000 ...
 *          (redis-benchmark's names, as the server gets them), timed from an
 *          empty cache, in batches of --batch (default 50000) keys, each batch
 *          sorted by digest and applied in one transaction with the server
 *          writer's statement (INSERT ... ON CONFLICT(digest) DO UPDATE) and
 *          its stats UPDATE, on the writer connection's settings: WAL,
 *          synchronous=FULL (the server's writer fsyncs each commit),
 *          wal_autocheckpoint=0 and a PASSIVE checkpoint after a commit once
 *          the WAL passes --checkpoint-pages (default 4000, as the server),
 *          --cache-mib page cache (default 8: the server's writer gets half of
 *          sqlite-cache-size, 16mb). Digesting and sorting are timed too.
 *          --report-every R prints a JSON line each R keys:
 *            {"impl":"c","mode":"ingest","rows":n,"seconds":S,"window_rows":R,
 *             "window_seconds":W,"window_rate":r}
 *          then the summary line above (ops = entries = N).
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <sqlite3.h>

#define VALUE_SIZE 100

static sqlite3 *db;
static EVP_MD *sha256;
static EVP_MD_CTX *mdctx;

static sqlite3_stmt *st_begin, *st_commit, *st_rowinfo, *st_insert, *st_update, *st_stats, *st_get;

/* Running totals, saved by the stats UPDATE once per transaction. */
static int64_t t_entries, t_bytes, t_next_seq = 1, t_volatile;
static double t_expires_sum;

static void die(const char *what) {
    fprintf(stderr, "ceiling: %s: %s\n", what, db ? sqlite3_errmsg(db) : "(no database)");
    exit(2);
}

static void exec_sql(const char *sql) {
    char *err = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &err) != SQLITE_OK) {
        fprintf(stderr, "ceiling: %s: %s\n", sql, err ? err : "?");
        exit(2);
    }
}

static sqlite3_stmt *prepare(const char *sql) {
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v3(db, sql, -1, SQLITE_PREPARE_PERSISTENT, &st, NULL) != SQLITE_OK) die(sql);
    return st;
}

static void step_done(sqlite3_stmt *st, const char *what) {
    int rc = sqlite3_step(st);
    if (rc != SQLITE_DONE && rc != SQLITE_ROW) die(what);
    while (rc == SQLITE_ROW) rc = sqlite3_step(st);
    if (rc != SQLITE_DONE) die(what);
    sqlite3_reset(st);
}

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static double wall_seconds(void) {
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (double)tv.tv_sec + tv.tv_usec / 1e6;
}

static void digest(const unsigned char *key, size_t len, unsigned char out[32]) {
    unsigned int n = 0;
    if (EVP_DigestInit_ex2(mdctx, sha256, NULL) != 1 || EVP_DigestUpdate(mdctx, key, len) != 1 ||
        EVP_DigestFinal_ex(mdctx, out, &n) != 1 || n != 32) {
        fprintf(stderr, "ceiling: SHA-256 failed in OpenSSL\n");
        exit(2);
    }
}

static long wal_autocheckpoint = -1; /* -1: SQLite's default (1000 pages), as the brief's pragmas */
/* ingest: the server writer's settings (CacheFile.configureWriter). */
static int ingest_mode = 0;
static long cache_mib = 8;
static long checkpoint_pages = 4000;
static int wal_pages = 0;
static sqlite3_stmt *st_upsert;

static int on_wal_commit(void *arg, sqlite3 *handle, const char *name, int pages) {
    (void)arg; (void)handle; (void)name;
    wal_pages = pages;
    return SQLITE_OK;
}

static void open_cache(const char *dir) {
    char path[4096];
    if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
        perror(dir);
        exit(2);
    }
    snprintf(path, sizeof path, "%s/ceiling.sqlite", dir);
    unlink(path);
    char side[4200];
    snprintf(side, sizeof side, "%s-wal", path);
    unlink(side);
    snprintf(side, sizeof side, "%s-shm", path);
    unlink(side);
    int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE;
    if (sqlite3_open_v2(path, &db, flags, NULL) != SQLITE_OK) die("open");
    /* The engine's pragmas: shared locking (its WAL checkpoints run on a
     * second connection), WAL, synchronous=NORMAL, a 16 MiB page cache. */
    if (ingest_mode) {
        char pragmas[512];
        snprintf(pragmas, sizeof pragmas,
                 "PRAGMA page_size=4096; PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; "
                 "PRAGMA wal_autocheckpoint=0; PRAGMA journal_size_limit=%d; PRAGMA cache_size=-%ld; "
                 "PRAGMA temp_store=MEMORY;", 16 << 20, cache_mib * 1024);
        exec_sql(pragmas);
        sqlite3_wal_hook(db, on_wal_commit, NULL);
    } else {
        exec_sql("PRAGMA page_size=4096; PRAGMA journal_mode=WAL; "
                 "PRAGMA synchronous=NORMAL; PRAGMA cache_size=-16384; PRAGMA temp_store=MEMORY;");
    }
    if (wal_autocheckpoint >= 0) {
        char pragma[64];
        snprintf(pragma, sizeof pragma, "PRAGMA wal_autocheckpoint=%ld", wal_autocheckpoint);
        exec_sql(pragma);
    }
    exec_sql("BEGIN IMMEDIATE;"
             "CREATE TABLE entries(digest BLOB PRIMARY KEY NOT NULL, size INTEGER NOT NULL, "
             "storage_date REAL NOT NULL, seq INTEGER NOT NULL, expires_at INTEGER, key BLOB NOT NULL, "
             "metadata BLOB NOT NULL, value BLOB NOT NULL, kind INTEGER NOT NULL DEFAULT 0) WITHOUT ROWID;"
             "CREATE INDEX entries_by_age ON entries(storage_date, seq);"
             "CREATE INDEX entries_by_expiry ON entries(expires_at) WHERE expires_at IS NOT NULL;"
             "CREATE TABLE stats(id INTEGER PRIMARY KEY CHECK (id = 1), entries INTEGER NOT NULL, "
             "bytes INTEGER NOT NULL, next_seq INTEGER NOT NULL, volatile INTEGER NOT NULL, "
             "expires_sum REAL NOT NULL);"
             "INSERT INTO stats VALUES (1, 0, 0, 1, 0, 0);"
             "PRAGMA user_version=2;"
             "COMMIT;");

    st_begin = prepare("BEGIN IMMEDIATE");
    st_commit = prepare("COMMIT");
    st_rowinfo = prepare("SELECT size, expires_at FROM entries WHERE digest = ?");
    /* As the engine: the existence lookup says whether to INSERT or UPDATE. */
    st_insert = prepare(
        "INSERT INTO entries(size, storage_date, seq, expires_at, key, metadata, value, kind, digest) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)");
    st_update = prepare(
        "UPDATE entries SET size = ?, storage_date = ?, seq = ?, expires_at = ?, key = ?, metadata = ?, "
        "value = ?, kind = ? WHERE digest = ?");
    st_stats = prepare(
        "UPDATE stats SET entries = ?, bytes = ?, next_seq = ?, volatile = ?, expires_sum = ? WHERE id = 1");
    st_get = prepare("SELECT storage_date, metadata, value, expires_at, kind FROM entries WHERE digest = ?");
    /* The server writer's statement (CacheFile+Apply.swift). */
    st_upsert = prepare(
        "INSERT INTO entries(size, storage_date, seq, expires_at, key, metadata, value, kind, digest) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) "
        "ON CONFLICT(digest) DO UPDATE SET size = excluded.size, storage_date = excluded.storage_date, "
        "seq = excluded.seq, expires_at = excluded.expires_at, key = excluded.key, "
        "metadata = excluded.metadata, value = excluded.value, kind = excluded.kind");
}

static void close_cache(void) {
    sqlite3_finalize(st_begin);
    sqlite3_finalize(st_commit);
    sqlite3_finalize(st_rowinfo);
    sqlite3_finalize(st_insert);
    sqlite3_finalize(st_update);
    sqlite3_finalize(st_stats);
    sqlite3_finalize(st_get);
    sqlite3_finalize(st_upsert);
    exec_sql("PRAGMA wal_checkpoint(TRUNCATE)");
    sqlite3_close_v2(db);
    db = NULL;
}

static const unsigned char value[VALUE_SIZE] = {
#define X8 'x', 'x', 'x', 'x', 'x', 'x', 'x', 'x'
    X8, X8, X8, X8, X8, X8, X8, X8, X8, X8, X8, X8, 'x', 'x', 'x', 'x'
#undef X8
};
static const unsigned char empty_metadata[1] = {0};

static void begin(void) { step_done(st_begin, "BEGIN IMMEDIATE"); }

static void commit(void) {
    sqlite3_bind_int64(st_stats, 1, t_entries);
    sqlite3_bind_int64(st_stats, 2, t_bytes);
    sqlite3_bind_int64(st_stats, 3, t_next_seq);
    sqlite3_bind_int64(st_stats, 4, t_volatile);
    sqlite3_bind_double(st_stats, 5, t_expires_sum);
    step_done(st_stats, "UPDATE stats");
    step_done(st_commit, "COMMIT");
}

/* One put of key:<n>, inside an open transaction: the engine's rowInfo, then its upsert. */
static void put(uint64_t n) {
    char key[32];
    int klen = snprintf(key, sizeof key, "key:%" PRIu64, n);
    unsigned char d[32];
    digest((const unsigned char *)key, (size_t)klen, d);

    int64_t old_size = -1;
    sqlite3_bind_blob(st_rowinfo, 1, d, 32, SQLITE_STATIC);
    int rc = sqlite3_step(st_rowinfo);
    if (rc == SQLITE_ROW) old_size = sqlite3_column_int64(st_rowinfo, 0);
    else if (rc != SQLITE_DONE) die("SELECT size, expires_at");
    sqlite3_reset(st_rowinfo);

    int64_t size = klen + 0 + VALUE_SIZE;
    sqlite3_stmt *st = old_size >= 0 ? st_update : st_insert;
    sqlite3_bind_int64(st, 1, size);
    sqlite3_bind_double(st, 2, wall_seconds());
    sqlite3_bind_int64(st, 3, t_next_seq++);
    sqlite3_bind_null(st, 4);
    sqlite3_bind_blob(st, 5, key, klen, SQLITE_STATIC);
    sqlite3_bind_blob(st, 6, empty_metadata, 0, SQLITE_STATIC);
    sqlite3_bind_blob(st, 7, value, VALUE_SIZE, SQLITE_STATIC);
    sqlite3_bind_int64(st, 8, 0);
    sqlite3_bind_blob(st, 9, d, 32, SQLITE_STATIC);
    step_done(st, old_size >= 0 ? "UPDATE entries" : "INSERT INTO entries");

    if (old_size >= 0) {
        t_entries -= 1;
        t_bytes -= old_size;
    }
    t_entries += 1;
    t_bytes += size;
}

static unsigned char got_key[64], got_meta[64], got_value[VALUE_SIZE * 2];

/* One get of key:<n>: returns 1 if found. Copies the row out, as the engine does. */
static int get(uint64_t n) {
    char key[32];
    int klen = snprintf(key, sizeof key, "key:%" PRIu64, n);
    unsigned char d[32];
    digest((const unsigned char *)key, (size_t)klen, d);
    sqlite3_bind_blob(st_get, 1, d, 32, SQLITE_STATIC);
    int rc = sqlite3_step(st_get);
    int found = 0;
    if (rc == SQLITE_ROW) {
        double date = sqlite3_column_double(st_get, 0);
        int ml = sqlite3_column_bytes(st_get, 1);
        const void *m = sqlite3_column_blob(st_get, 1);
        int vl = sqlite3_column_bytes(st_get, 2);
        const void *v = sqlite3_column_blob(st_get, 2);
        int has_expiry = sqlite3_column_type(st_get, 3) != SQLITE_NULL;
        int kind = sqlite3_column_int(st_get, 4);
        if (ml > (int)sizeof got_meta || vl > (int)sizeof got_value) die("row too large");
        memcpy(got_key, key, (size_t)klen);  /* the key asked for, as the engine keeps it */
        if (ml) memcpy(got_meta, m, (size_t)ml);
        if (vl) memcpy(got_value, v, (size_t)vl);
        (void)kind;
        found = date > 0 && !has_expiry && vl == VALUE_SIZE;
    } else if (rc != SQLITE_DONE) {
        die("SELECT storage_date, metadata, value, expires_at, kind");
    }
    sqlite3_reset(st_get);
    return found;
}

/* ingest: one pending key of a batch, its digest first (sorted by it). */
struct pending {
    unsigned char digest[32];
    char key[24];
    int klen;
};

static int by_digest(const void *a, const void *b) {
    return memcmp(((const struct pending *)a)->digest, ((const struct pending *)b)->digest, 32);
}

/* Times N new keys in digest-sorted batches, as the server's writer applies
 * them; prints a JSON line every report_every keys. Returns the seconds. */
static double ingest(long long entries, long long batch, long long report_every) {
    struct pending *rows = malloc(sizeof *rows * (size_t)batch);
    if (!rows) {
        fprintf(stderr, "ceiling: out of memory for a batch of %lld\n", batch);
        exit(2);
    }
    double t0 = now_seconds(), window_start = t0;
    long long window_rows = 0;
    for (long long n = 0; n < entries; n += batch) {
        long long count = entries - n < batch ? entries - n : batch;
        for (long long i = 0; i < count; i++) {
            struct pending *r = &rows[i];
            r->klen = snprintf(r->key, sizeof r->key, "key:%012lld", n + i);
            digest((const unsigned char *)r->key, (size_t)r->klen, r->digest);
        }
        qsort(rows, (size_t)count, sizeof *rows, by_digest);
        begin();
        double date = wall_seconds();
        for (long long i = 0; i < count; i++) {
            struct pending *r = &rows[i];
            int64_t size = r->klen + VALUE_SIZE;
            sqlite3_bind_int64(st_upsert, 1, size);
            sqlite3_bind_double(st_upsert, 2, date);
            sqlite3_bind_int64(st_upsert, 3, t_next_seq++);
            sqlite3_bind_null(st_upsert, 4);
            sqlite3_bind_blob(st_upsert, 5, r->key, r->klen, SQLITE_STATIC);
            sqlite3_bind_blob(st_upsert, 6, empty_metadata, 0, SQLITE_STATIC);
            sqlite3_bind_blob(st_upsert, 7, value, VALUE_SIZE, SQLITE_STATIC);
            sqlite3_bind_int64(st_upsert, 8, 0);
            sqlite3_bind_blob(st_upsert, 9, r->digest, 32, SQLITE_STATIC);
            step_done(st_upsert, "INSERT ... ON CONFLICT DO UPDATE");
            t_entries += 1;
            t_bytes += size;
        }
        commit();
        if (wal_pages >= checkpoint_pages) {
            int log_frames = 0, copied = 0;
            int rc = sqlite3_wal_checkpoint_v2(db, NULL, SQLITE_CHECKPOINT_PASSIVE, &log_frames, &copied);
            if (rc == SQLITE_OK && log_frames == copied) wal_pages = 0;
        }
        window_rows += count;
        if (report_every > 0 && (window_rows >= report_every || n + count >= entries)) {
            double now = now_seconds();
            printf("{\"impl\":\"c\",\"mode\":\"ingest\",\"rows\":%lld,\"seconds\":%.6f,\"window_rows\":%lld,"
                   "\"window_seconds\":%.6f,\"window_rate\":%.1f}\n",
                   n + count, now - t0, window_rows, now - window_start,
                   now > window_start ? window_rows / (now - window_start) : 0.0);
            fflush(stdout);
            window_rows = 0;
            window_start = now;
        }
    }
    free(rows);
    return now_seconds() - t0;
}

static uint64_t rng_state = 88172645463325252ULL;
static uint64_t next_random(void) { /* xorshift64* */
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 2685821657736338717ULL;
}

static void usage(FILE *to) {
    fprintf(to,
            "usage: ceiling --entries N --mode put1|put1000|get|ingest --dir D [--ops K] [--seed S]\n"
            "               [--wal-autocheckpoint PAGES]   (default: SQLite's, 1000)\n"
            "Fills N entries (untimed), then times K operations on random existing keys:\n"
            "  put1     K overwrites, one transaction per put (default K 5000)\n"
            "  put1000  K overwrites, 1000 per transaction (default K 100000)\n"
            "  get      K gets (default K 200000)\n"
            "  ingest   N new keys from empty, digest-sorted batches (--batch B, default 50000), the server\n"
            "           writer's upsert and settings (--cache-mib, --checkpoint-pages, --report-every R)\n"
            "Prints one JSON line: {\"impl\":\"c\",\"mode\":...,\"entries\":N,\"ops\":...,\"seconds\":...,\"ops_per_sec\":...}\n");
}

int main(int argc, char **argv) {
    long long entries = -1, ops = -1, batch = 50000, report_every = 0;
    const char *mode = NULL, *dir = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        }
        if (i + 1 >= argc) {
            usage(stderr);
            return 2;
        }
        if (!strcmp(a, "--entries")) entries = atoll(argv[++i]);
        else if (!strcmp(a, "--mode")) mode = argv[++i];
        else if (!strcmp(a, "--dir")) dir = argv[++i];
        else if (!strcmp(a, "--ops")) ops = atoll(argv[++i]);
        else if (!strcmp(a, "--seed")) rng_state = (uint64_t)atoll(argv[++i]) | 1;
        else if (!strcmp(a, "--wal-autocheckpoint")) wal_autocheckpoint = atol(argv[++i]);
        else if (!strcmp(a, "--batch")) batch = atoll(argv[++i]);
        else if (!strcmp(a, "--report-every")) report_every = atoll(argv[++i]);
        else if (!strcmp(a, "--cache-mib")) cache_mib = atol(argv[++i]);
        else if (!strcmp(a, "--checkpoint-pages")) checkpoint_pages = atol(argv[++i]);
        else {
            usage(stderr);
            return 2;
        }
    }
    if (entries <= 0 || !mode || !dir ||
        (strcmp(mode, "put1") && strcmp(mode, "put1000") && strcmp(mode, "get") && strcmp(mode, "ingest")) ||
        batch <= 0 || cache_mib <= 0) {
        usage(stderr);
        return 2;
    }
    ingest_mode = !strcmp(mode, "ingest");

    sha256 = EVP_MD_fetch(NULL, "SHA256", NULL);
    mdctx = EVP_MD_CTX_new();
    if (!sha256 || !mdctx) {
        fprintf(stderr, "ceiling: OpenSSL has no SHA256\n");
        return 2;
    }
    open_cache(dir);

    if (ingest_mode) {
        double seconds = ingest(entries, batch, report_every);
        if (t_entries != entries) {
            fprintf(stderr, "ceiling: %lld entries at the end, expected %lld\n", (long long)t_entries, entries);
            return 2;
        }
        close_cache();
        EVP_MD_CTX_free(mdctx);
        EVP_MD_free(sha256);
        printf("{\"impl\":\"c\",\"mode\":\"ingest\",\"entries\":%lld,\"ops\":%lld,\"batch\":%lld,"
               "\"cache_mib\":%ld,\"checkpoint_pages\":%ld,\"seconds\":%.6f,\"ops_per_sec\":%.1f}\n",
               entries, entries, batch, cache_mib, checkpoint_pages, seconds, seconds > 0 ? entries / seconds : 0.0);
        return 0;
    }

    /* Fill N entries, 1000 per transaction, untimed. */
    for (long long n = 0; n < entries; n += 1000) {
        begin();
        for (long long k = n; k < n + 1000 && k < entries; k++) put((uint64_t)k);
        commit();
    }

    double seconds;
    if (!strcmp(mode, "put1")) {
        if (ops <= 0) ops = 5000;
        double t0 = now_seconds();
        for (long long i = 0; i < ops; i++) {
            begin();
            put(next_random() % (uint64_t)entries);
            commit();
        }
        seconds = now_seconds() - t0;
    } else if (!strcmp(mode, "put1000")) {
        if (ops <= 0) ops = 100000;
        double t0 = now_seconds();
        for (long long i = 0; i < ops; i += 1000) {
            begin();
            for (long long k = i; k < i + 1000 && k < ops; k++) put(next_random() % (uint64_t)entries);
            commit();
        }
        seconds = now_seconds() - t0;
    } else {
        if (ops <= 0) ops = 200000;
        long long hits = 0;
        double t0 = now_seconds();
        for (long long i = 0; i < ops; i++) hits += get(next_random() % (uint64_t)entries);
        seconds = now_seconds() - t0;
        if (hits != ops) {
            fprintf(stderr, "ceiling: %lld of %lld gets missed\n", ops - hits, ops);
            return 2;
        }
    }
    if (t_entries != entries) {
        fprintf(stderr, "ceiling: %lld entries at the end, expected %lld\n", (long long)t_entries, entries);
        return 2;
    }
    close_cache();
    EVP_MD_CTX_free(mdctx);
    EVP_MD_free(sha256);

    printf("{\"impl\":\"c\",\"mode\":\"%s\",\"entries\":%lld,\"ops\":%lld,\"seconds\":%.6f,\"ops_per_sec\":%.1f}\n",
           mode, entries, ops, seconds, seconds > 0 ? ops / seconds : 0.0);
    return 0;
}
