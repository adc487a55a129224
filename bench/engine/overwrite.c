// What SQLite spends overwriting rows of the server's schema, in the
// writer's shape: one transaction of digest-sorted keys, then a RESTART
// checkpoint. Compares the upsert that moves the row in the age index
// (INSERT ... ON CONFLICT DO UPDATE of every column), a plain UPDATE, and
// the writer's upsert since stop 38, which keeps the row's place
// (storage_date, seq) and writes written_date and written_seq. Debian's
// libsqlite3, the server's pragmas (WAL, synchronous=NORMAL, an 8 MiB page
// cache; 4 KiB pages unless PAGE_SIZE says otherwise).
//
//   cc -O2 -o /tmp/overwrite bench/engine/overwrite.c -lsqlite3
//   cd "$(mktemp -d)" && [PAGE_SIZE=N] /tmp/overwrite ROWS ROUNDS MODE [KEYS_PER_ROUND]
//
// MODE 0: moving upsert, 1: update, 2: keeping upsert. Round 0 inserts
// ROWS rows (100-byte values); each later round overwrites KEYS_PER_ROUND
// of them (default all) and prints the microseconds a key, commit and
// checkpoint included. Every value is the same bytes, so the table's cell
// changes only where the statement writes a new date and order.
// Stop 37: 1000000 3 0 50000 -> 23 us a key (the server's writer then: 22-24).
// Stop 38: 1000000 2 0 50000 -> 22-32 us; 1000000 2 2 50000 -> 15-17 us.
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static sqlite3 *db;

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static void run(const char *sql) {
    char *error = 0;
    if (sqlite3_exec(db, sql, 0, 0, &error) != SQLITE_OK) {
        fprintf(stderr, "%s: %s\n", sql, error);
        exit(1);
    }
}

static int compare(const void *a, const void *b) { return memcmp(a, b, 32); }

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: overwrite ROWS ROUNDS MODE(0 moving upsert, 1 update, 2 keeping upsert) [KEYS_PER_ROUND]\n");
        return 2;
    }
    int rows = atoi(argv[1]), rounds = atoi(argv[2]), update = atoi(argv[3]);
    int perRound = argc > 4 ? atoi(argv[4]) : rows;
    int stride = perRound > 0 && perRound < rows ? rows / perRound : 1;
    unlink("t.db"); unlink("t.db-wal"); unlink("t.db-shm");
    if (sqlite3_open("t.db", &db) != SQLITE_OK) return 1;
    char pragmas[256];
    snprintf(pragmas, sizeof pragmas, "PRAGMA page_size=%s;", getenv("PAGE_SIZE") ? getenv("PAGE_SIZE") : "4096");
    run(pragmas);
    run("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA cache_size=-8192; "
        "PRAGMA wal_autocheckpoint=0;");
    run("CREATE TABLE entries(digest BLOB PRIMARY KEY NOT NULL, size INTEGER NOT NULL, storage_date REAL NOT NULL, "
        "seq INTEGER NOT NULL, expires_at INTEGER, key BLOB NOT NULL, metadata BLOB NOT NULL, value BLOB NOT NULL, "
        "kind INTEGER NOT NULL DEFAULT 0, written_date REAL, written_seq INTEGER) WITHOUT ROWID;"
        "CREATE INDEX entries_by_age ON entries(storage_date, seq);"
        "CREATE INDEX entries_by_expiry ON entries(expires_at) WHERE expires_at IS NOT NULL;");
    unsigned char (*digests)[32] = malloc(32 * (size_t)rows);
    srand(1);
    for (int i = 0; i < rows; i++)
        for (int j = 0; j < 32; j++) digests[i][j] = (unsigned char)rand();
    qsort(digests, rows, 32, compare);
    sqlite3_stmt *upsert, *plain, *keep;
    sqlite3_prepare_v2(db, "INSERT INTO entries(size, storage_date, seq, expires_at, key, metadata, value, kind, digest, "
                           "written_date, written_seq) "
                           "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?2, ?3) ON CONFLICT(digest) DO UPDATE SET "
                           "size = excluded.size, storage_date = excluded.storage_date, seq = excluded.seq, "
                           "expires_at = excluded.expires_at, key = excluded.key, metadata = excluded.metadata, "
                           "value = excluded.value, kind = excluded.kind", -1, &upsert, 0);
    sqlite3_prepare_v2(db, "UPDATE entries SET size = ?1, storage_date = ?2, seq = ?3, expires_at = ?4, key = ?5, "
                           "metadata = ?6, value = ?7, kind = ?8 WHERE digest = ?9", -1, &plain, 0);
    sqlite3_prepare_v2(db, "INSERT INTO entries(size, storage_date, seq, expires_at, key, metadata, value, kind, digest) "
                           "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9) ON CONFLICT(digest) DO UPDATE SET "
                           "size = excluded.size, written_date = excluded.storage_date, written_seq = excluded.seq, "
                           "expires_at = excluded.expires_at, key = excluded.key, metadata = excluded.metadata, "
                           "value = excluded.value, kind = excluded.kind WHERE storage_date <= excluded.storage_date",
                       -1, &keep, 0);
    char key[17], value[100];
    memset(value, 'x', sizeof value);
    long seq = 0;
    for (int round = 0; round <= rounds; round++) {
        sqlite3_stmt *s = round == 0 || !update ? upsert : update == 1 ? plain : keep;
        double started = now();
        int count = 0;
        run("BEGIN IMMEDIATE");
        for (int i = 0; i < rows; i++) {
            // A spread-out subset of the keys, still in digest order.
            if (round > 0 && stride > 1 && ((unsigned)i * 2654435761u >> 7) % stride != (unsigned)round % stride) continue;
            count++;
            seq++;
            snprintf(key, sizeof key, "key:%012d", i);
            sqlite3_bind_int64(s, 1, 116);
            sqlite3_bind_double(s, 2, 1.7e9 + seq * 1e-6);
            sqlite3_bind_int64(s, 3, seq);
            sqlite3_bind_null(s, 4);
            sqlite3_bind_blob(s, 5, key, 16, SQLITE_TRANSIENT);
            sqlite3_bind_blob(s, 6, "", 0, SQLITE_TRANSIENT);
            sqlite3_bind_blob(s, 7, value, sizeof value, SQLITE_TRANSIENT);
            sqlite3_bind_int64(s, 8, 0);
            sqlite3_bind_blob(s, 9, digests[i], 32, SQLITE_TRANSIENT);
            if (sqlite3_step(s) != SQLITE_DONE) { fprintf(stderr, "step: %s\n", sqlite3_errmsg(db)); return 1; }
            if (s != upsert && sqlite3_changes(db) != 1) { fprintf(stderr, "update missed a row\n"); return 1; }
            sqlite3_reset(s);
        }
        run("COMMIT");
        run("PRAGMA wal_checkpoint(RESTART)");
        if (round > 0)
            printf("%s, %d rows, round %d: %d keys, %.2f us a key\n", update == 2 ? "keeping upsert" : update ? "update" : "moving upsert", rows, round, count,
                   (now() - started) * 1e6 / count);
    }
    sqlite3_close(db);
    return 0;
}
