/* What a cache file cut short does to a reader, with mmap and with pread.
 *
 *   truncate DIR
 *     Builds DIR/trunc-src.sqlite (200,000 entries, the server's schema),
 *     and for each mode (mmap: mmap_size covering the file, 2 MiB page cache;
 *     pread: 16 MiB page cache) and each moment of the cut, on a fresh copy:
 *     a child process opens the copy, reads 1,000 random keys, then another
 *     process truncate(2)s the file to half its size, and the child goes on
 *     reading. The moments:
 *       between-reads   the cut falls between two autocommit reads (as
 *                       CacheFile.row, one transaction per read), the WAL
 *                       empty (SQLite takes the file's size from fstat)
 *       between-reads,wal  the same with a committed write in the WAL, as
 *                       in a serving cache (the size then comes from the WAL)
 *       in-transaction  the cut falls inside an open read transaction
 *       mid-scan        the cut falls while a statement walks the table
 *                       (CacheFile.allRows; FileKeys scans likewise)
 *     Reports how the child ended: the SQLite result code, or the signal.
 *
 *   truncate read PATH N MODE
 *     Opens PATH (made unreadable past some offset by run.sh's I/O-error
 *     test) and reads random keys of 0..N-1 until one fails; reports the same.
 */
#include "common.h"

#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>

#define SRC_ENTRIES 200000

static const char *code_name(int rc) {
    switch (rc) {
    case SQLITE_OK: return "SQLITE_OK";
    case SQLITE_ROW: return "SQLITE_ROW";
    case SQLITE_DONE: return "SQLITE_DONE";
    case SQLITE_IOERR: return "SQLITE_IOERR";
    case SQLITE_IOERR_READ: return "SQLITE_IOERR_READ";
    case SQLITE_IOERR_SHORT_READ: return "SQLITE_IOERR_SHORT_READ";
    case SQLITE_IOERR_FSTAT: return "SQLITE_IOERR_FSTAT";
    case SQLITE_IOERR_SHMMAP: return "SQLITE_IOERR_SHMMAP";
    case SQLITE_IOERR_MMAP: return "SQLITE_IOERR_MMAP";
    case SQLITE_IOERR_CORRUPTFS: return "SQLITE_IOERR_CORRUPTFS";
    case SQLITE_CORRUPT: return "SQLITE_CORRUPT";
    case SQLITE_CORRUPT_INDEX: return "SQLITE_CORRUPT_INDEX";
    case SQLITE_NOTADB: return "SQLITE_NOTADB";
    case SQLITE_CANTOPEN: return "SQLITE_CANTOPEN";
    default: return "(other)";
    }
}

/* Shared with the parent, so it can tell how far a killed child got. */
struct progress {
    long reads_before_cut, reads_after_cut;
    int rc;
    char msg[200];
};
static struct progress *prog;

static sqlite3 *open_reader(const char *path, int use_mmap) {
    sqlite3 *db = open_db(path, 0);
    struct stat st;
    stat(path, &st);
    configure_reader(db, use_mmap ? 2048 : 16384, use_mmap ? (long long)st.st_size + (1 << 20) : 0);
    return db;
}

/* One point read; returns SQLITE_ROW, SQLITE_DONE or the failure. */
static int read_key(sqlite3 *db, sqlite3_stmt *st, uint64_t i) {
    unsigned char digest[32];
    key_digest(i, digest);
    sqlite3_bind_blob(st, 1, digest, 32, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        volatile unsigned char c = ((const unsigned char *)sqlite3_column_blob(st, 5))[0];
        (void)c;
    }
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
        rc = sqlite3_extended_errcode(db);
        snprintf(prog->msg, sizeof prog->msg, "%s", sqlite3_errmsg(db));
    }
    sqlite3_reset(st);
    return rc;
}

static void cut_in_half(const char *path) {
    struct stat st;
    stat(path, &st);
    pid_t pid = fork();
    if (pid == 0) _exit(truncate(path, st.st_size / 2) == 0 ? 0 : 1);
    int status;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) die("truncate", NULL);
}

enum moment { BETWEEN_READS, BETWEEN_READS_WAL, IN_TRANSACTION, MID_SCAN };
static const char *moment_name[] = {"between-reads", "between-reads,wal", "in-transaction", "mid-scan"};

/* The child: reads, the cut, reads until something fails (or 20,000 reads). */
static void child(const char *path, int use_mmap, enum moment m) {
    if (m == BETWEEN_READS_WAL) {
        /* A writer commits one row and stays open, so the WAL keeps the frame. */
        sqlite3 *w = open_db(path, 0);
        exec(w, "PRAGMA journal_mode=WAL");
        exec(w, "PRAGMA wal_autocheckpoint=0");
        exec(w, "UPDATE stats SET bytes = bytes + 1 WHERE id = 1");
    }
    sqlite3 *db = open_reader(path, use_mmap);
    sqlite3_stmt *st;
    uint64_t rng = 42;
    int rc = SQLITE_OK;
    if (m == MID_SCAN) {
        if (sqlite3_prepare_v2(db,
                               "SELECT digest, key, size, expires_at, storage_date, seq, kind FROM entries"
                               " ORDER BY digest",
                               -1, &st, NULL) != SQLITE_OK)
            die("prepare scan", db);
        while (prog->reads_before_cut < 1000 && (rc = sqlite3_step(st)) == SQLITE_ROW) prog->reads_before_cut++;
        cut_in_half(path);
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) prog->reads_after_cut++;
        if (rc != SQLITE_DONE) {
            rc = sqlite3_extended_errcode(db);
            snprintf(prog->msg, sizeof prog->msg, "%s", sqlite3_errmsg(db));
        }
        prog->rc = rc;
        _exit(0);
    }
    if (sqlite3_prepare_v2(db, point_read, -1, &st, NULL) != SQLITE_OK) die("prepare", db);
    if (m == IN_TRANSACTION) exec(db, "BEGIN");
    for (int i = 0; i < 1000; i++) {
        rc = read_key(db, st, xorshift(&rng) % SRC_ENTRIES);
        if (rc != SQLITE_ROW) {
            prog->rc = rc;
            _exit(1);
        }
        prog->reads_before_cut++;
    }
    cut_in_half(path);
    for (int i = 0; i < 20000; i++) {
        rc = read_key(db, st, xorshift(&rng) % SRC_ENTRIES);
        if (rc != SQLITE_ROW) break;
        prog->reads_after_cut++;
    }
    prog->rc = rc;
    _exit(0);
}

static void report(const char *mode, const char *what, int status) {
    char after[128];
    if (!strcmp(what, "unreadable"))
        snprintf(after, sizeof after, "after %ld good reads", prog->reads_after_cut);
    else
        snprintf(after, sizeof after, "after %ld reads before the cut and %ld after", prog->reads_before_cut,
                 prog->reads_after_cut);
    printf("%-6s %-18s ", mode, what);
    if (WIFSIGNALED(status))
        printf("killed by signal %d (%s) %s\n", WTERMSIG(status), strsignal(WTERMSIG(status)), after);
    else
        printf("%s (%d) \"%s\" %s\n", code_name(prog->rc), prog->rc, prog->msg, after);
    fflush(stdout);
}

static void copy_file(const char *from, const char *to) {
    int in = open(from, O_RDONLY), out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (in < 0 || out < 0) die("copy", NULL);
    struct stat st;
    fstat(in, &st);
    off_t left = st.st_size;
    while (left > 0) {
        ssize_t n = copy_file_range(in, NULL, out, NULL, (size_t)left, 0);
        if (n <= 0) die("copy_file_range", NULL);
        left -= n;
    }
    close(in);
    close(out);
}

static int run_forked(void (*body)(const char *, int, int), const char *path, int use_mmap, int arg) {
    memset(prog, 0, sizeof *prog);
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        body(path, use_mmap, arg);
        _exit(0);
    }
    int status;
    waitpid(pid, &status, 0);
    return status;
}

static void moment_child(const char *path, int use_mmap, int m) { child(path, use_mmap, (enum moment)m); }

static void read_all_child(const char *path, int use_mmap, int n) {
    sqlite3 *db = open_reader(path, use_mmap);
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, point_read, -1, &st, NULL) != SQLITE_OK) {
        prog->rc = sqlite3_extended_errcode(db);
        snprintf(prog->msg, sizeof prog->msg, "%s", sqlite3_errmsg(db));
        _exit(0);
    }
    uint64_t rng = 7;
    int rc = SQLITE_ROW;
    for (int i = 0; i < n && rc == SQLITE_ROW; i++) {
        rc = read_key(db, st, xorshift(&rng) % (uint64_t)n);
        if (rc == SQLITE_ROW) prog->reads_after_cut++;
    }
    prog->rc = rc;
}

int main(int argc, char **argv) {
    prog = mmap(NULL, sizeof *prog, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (argc == 5 && !strcmp(argv[1], "read")) {
        int use_mmap = !strcmp(argv[4], "mmap");
        int status = run_forked(read_all_child, argv[2], use_mmap, atoi(argv[3]));
        report(use_mmap ? "mmap" : "pread", "unreadable", status);
        return 0;
    }
    if (argc != 2) {
        fprintf(stderr, "usage: %s DIR | read PATH N mmap|pread\n", argv[0]);
        return 1;
    }
    char src[4096], copy[4096];
    snprintf(src, sizeof src, "%s/trunc-src.sqlite", argv[1]);
    snprintf(copy, sizeof copy, "%s/trunc-copy.sqlite", argv[1]);
    build_file(src, SRC_ENTRIES, 0);
    struct stat st;
    stat(src, &st);
    printf("file: %lld bytes (%d entries), cut to %lld\n", (long long)st.st_size, SRC_ENTRIES,
           (long long)st.st_size / 2);
    for (int use_mmap = 1; use_mmap >= 0; use_mmap--) {
        for (int m = BETWEEN_READS; m <= MID_SCAN; m++) {
            copy_file(src, copy);
            char side[4200];
            snprintf(side, sizeof side, "%s-wal", copy);
            unlink(side);
            snprintf(side, sizeof side, "%s-shm", copy);
            unlink(side);
            int status = run_forked(moment_child, copy, use_mmap, m);
            report(use_mmap ? "mmap" : "pread", moment_name[m], status);
        }
    }
    unlink(copy);
    return 0;
}
