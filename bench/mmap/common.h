/* Shared by coldread.c and truncate.c: the server's schema and pragmas
 * (Sources/SQLiteKVCache/Storage/CacheFile.swift), building a cache file of
 * N entries, and the point read of CacheFile.row. */
#ifndef MMAPBENCH_COMMON_H
#define MMAPBENCH_COMMON_H

#define _GNU_SOURCE
#define OPENSSL_API_COMPAT 0x10100000L /* SHA256_Init, as the server */
#include <errno.h>
#include <fcntl.h>
#include <openssl/sha.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define VALUE_BYTES 100

/* CacheFile.createSchema, verbatim, plus the stats table of recreateSchema. */
static const char *create_schema =
    "CREATE TABLE entries(\n"
    "    digest BLOB PRIMARY KEY NOT NULL,\n"
    "    size INTEGER NOT NULL,\n"
    "    storage_date REAL NOT NULL,\n"
    "    seq INTEGER NOT NULL,\n"
    "    expires_at INTEGER,\n"
    "    key BLOB NOT NULL,\n"
    "    metadata BLOB NOT NULL,\n"
    "    value BLOB NOT NULL,\n"
    "    kind INTEGER NOT NULL DEFAULT 0\n"
    ") WITHOUT ROWID;\n"
    "CREATE INDEX entries_by_age ON entries(storage_date, seq);\n"
    "CREATE INDEX entries_by_expiry ON entries(expires_at) WHERE expires_at IS NOT NULL;\n"
    "CREATE TABLE stats(\n"
    "    id INTEGER PRIMARY KEY CHECK (id = 1),\n"
    "    entries INTEGER NOT NULL,\n"
    "    bytes INTEGER NOT NULL,\n"
    "    next_seq INTEGER NOT NULL,\n"
    "    volatile INTEGER NOT NULL,\n"
    "    expires_sum REAL NOT NULL,\n"
    "    applied_lsn INTEGER NOT NULL DEFAULT 0,\n"
    "    file_id INTEGER NOT NULL DEFAULT 0\n"
    ");\n"
    "PRAGMA user_version=3;\n";

/* The statement of CacheFile.row. */
static const char *point_read =
    "SELECT storage_date, seq, expires_at, kind, metadata, value FROM entries WHERE digest = ?";

static void die(const char *what, sqlite3 *db) {
    fprintf(stderr, "%s: %s\n", what, db ? sqlite3_errmsg(db) : strerror(errno));
    exit(2);
}

static void exec(sqlite3 *db, const char *sql) {
    char *err = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &err) != SQLITE_OK) {
        fprintf(stderr, "%s: %s\n", sql, err);
        exit(2);
    }
}

/* Flags of SQLiteConnection (Sources/SQLiteKVCache/SQLite.swift). */
static sqlite3 *open_db(const char *path, int create) {
    sqlite3 *db = NULL;
    int flags = SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0) | SQLITE_OPEN_NOMUTEX |
                SQLITE_OPEN_EXRESCODE;
    if (sqlite3_open_v2(path, &db, flags, NULL) != SQLITE_OK) die("open", db);
    return db;
}

/* The reader connection of CacheFile.configureReader, with this run's page
 * cache and mmap size (0: pread, SQLite's default here). */
static void configure_reader(sqlite3 *db, long cache_kib, long long mmap_bytes) {
    char sql[128];
    snprintf(sql, sizeof sql, "PRAGMA cache_size=-%ld", cache_kib);
    exec(db, sql);
    exec(db, "PRAGMA temp_store=MEMORY");
    exec(db, "PRAGMA query_only=1");
    sqlite3_busy_timeout(db, 5000);
    snprintf(sql, sizeof sql, "PRAGMA mmap_size=%lld", mmap_bytes);
    exec(db, sql);
}

static long long pragma_int(sqlite3 *db, const char *sql) {
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) die(sql, db);
    long long v = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int64(st, 0) : -1;
    sqlite3_finalize(st);
    return v;
}

static int key_text(uint64_t i, char *out) { return sprintf(out, "key:%012llu", (unsigned long long)i); }

static void key_digest(uint64_t i, unsigned char digest[32]) {
    char key[32];
    int n = key_text(i, key);
    /* The low-level calls on the stack, as the server (SHA256() allocates a context per call). */
    SHA256_CTX ctx;
    SHA256_Init(&ctx);
    SHA256_Update(&ctx, key, (size_t)n);
    SHA256_Final(digest, &ctx);
}

static uint64_t xorshift(uint64_t *s) {
    uint64_t x = *s;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return x * 0x2545F4914F6CDD1DULL;
}

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Builds `path` with n entries the way the server's writer leaves it: WAL,
 * synchronous=NORMAL, page_size 4096, keys arriving in key order (so in
 * random digest order), committed 10,000 rows at a time, then checkpointed. */
static void build_file(const char *path, uint64_t n, int verbose) {
    unlink(path);
    char side[4200];
    snprintf(side, sizeof side, "%s-wal", path);
    unlink(side);
    snprintf(side, sizeof side, "%s-shm", path);
    unlink(side);
    sqlite3 *db = open_db(path, 1);
    exec(db, "PRAGMA page_size=4096");
    exec(db, "PRAGMA journal_mode=WAL");
    exec(db, "PRAGMA synchronous=NORMAL");
    exec(db, "PRAGMA cache_size=-2097152"); /* build speed only: the layout does not depend on it */
    exec(db, "PRAGMA temp_store=MEMORY");
    exec(db, "BEGIN IMMEDIATE");
    exec(db, create_schema);
    exec(db, "INSERT INTO stats VALUES (1, 0, 0, 1, 0, 0, 0, 12345)");
    exec(db, "COMMIT");
    sqlite3_stmt *ins;
    if (sqlite3_prepare_v2(db,
                           "INSERT INTO entries(size, storage_date, seq, expires_at, key, metadata, value, kind, digest)"
                           " VALUES (?, ?, ?, NULL, ?, x'', ?, 0, ?)",
                           -1, &ins, NULL) != SQLITE_OK)
        die("prepare insert", db);
    uint64_t rng = 0x9E3779B97F4A7C15ULL;
    double t0 = now_seconds(), base = 1.7e9;
    unsigned char value[VALUE_BYTES], digest[32];
    char key[32];
    exec(db, "BEGIN IMMEDIATE");
    for (uint64_t i = 0; i < n; i++) {
        int klen = key_text(i, key);
        key_digest(i, digest);
        for (int b = 0; b < VALUE_BYTES; b += 8) {
            uint64_t r = xorshift(&rng);
            memcpy(value + b, &r, VALUE_BYTES - b < 8 ? (size_t)(VALUE_BYTES - b) : 8);
        }
        sqlite3_bind_int64(ins, 1, klen + VALUE_BYTES);
        sqlite3_bind_double(ins, 2, base + (double)i * 1e-4);
        sqlite3_bind_int64(ins, 3, (sqlite3_int64)i + 1);
        sqlite3_bind_blob(ins, 4, key, klen, SQLITE_STATIC);
        sqlite3_bind_blob(ins, 5, value, VALUE_BYTES, SQLITE_STATIC);
        sqlite3_bind_blob(ins, 6, digest, 32, SQLITE_STATIC);
        if (sqlite3_step(ins) != SQLITE_DONE) die("insert", db);
        sqlite3_reset(ins);
        if ((i + 1) % 10000 == 0) {
            exec(db, "COMMIT");
            exec(db, "BEGIN IMMEDIATE");
        }
        if (verbose && (i + 1) % 1000000 == 0)
            fprintf(stderr, "  %llu rows, %.0fs\n", (unsigned long long)(i + 1), now_seconds() - t0);
    }
    char sql[256];
    snprintf(sql, sizeof sql, "UPDATE stats SET entries = %llu, bytes = %llu, next_seq = %llu WHERE id = 1",
             (unsigned long long)n, (unsigned long long)(n * (16 + VALUE_BYTES)), (unsigned long long)n + 1);
    exec(db, sql);
    exec(db, "COMMIT");
    sqlite3_finalize(ins);
    exec(db, "PRAGMA wal_checkpoint(TRUNCATE)");
    if (verbose)
        fprintf(stderr, "built %s: %llu rows, %lld pages, %.1fs\n", path, (unsigned long long)n,
                pragma_int(db, "PRAGMA page_count"), now_seconds() - t0);
    sqlite3_close(db);
}

#endif
