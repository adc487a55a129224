#!/bin/sh
# Reproduces the figures of docs/decisions.md, "Cold reads: pread, not mmap
# (measured)". Every compile and run holds the shared CPU lock, released
# between rounds.
#
#   bench/mmap/run.sh [build|warm|cold|summary|truncate|ioerr|all|clean]   (default all)
#
# warm and cold run ROUNDS rounds (default 5); a round runs every
# configuration once, one process each, so the host's drift spreads over all
# of them; summary prints the median over the rounds. A warm process reads
# the file into the OS page cache, warms SQLite's cache with READS untimed
# reads, then times READS reads (default 300,000). A cold process drops the
# file from the OS page cache and times the first COLD_READS reads of a new
# connection (default 20,000). ioerr needs root (loop device, mkfs, mount).
# Files go to $DIR (default /tmp/mmapbench); `run.sh clean` deletes them.
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
DIR=${DIR:-/tmp/mmapbench}
LOCK="flock /tmp/kvcache-cpu.lock"
ROUNDS=${ROUNDS:-5}
READS=${READS:-300000}
COLD_READS=${COLD_READS:-20000}
SIZES="1000000 5000000"
CONFIGS="pread:16 pread:64 pread:256 mmap:2"   # mode:page cache MiB
mkdir -p "$DIR"

compile() {
    for prog in coldread truncate; do
        if [ ! -x "$DIR/$prog" ] || [ "$HERE/$prog.c" -nt "$DIR/$prog" ] || [ "$HERE/common.h" -nt "$DIR/$prog" ]; then
            $LOCK gcc -O2 -Wall -Wextra -o "$DIR/$prog" "$HERE/$prog.c" -lsqlite3 -lcrypto
        fi
    done
}

build() {
    for n in $SIZES; do
        [ -f "$DIR/c$n.sqlite" ] || $LOCK "$DIR/coldread" build "$DIR/c$n.sqlite" "$n"
    done
}

# One round: every size, distribution and configuration once (run locked).
round() {   # warm|cold reads
    for n in $SIZES; do
        for dist in uniform hot; do
            for c in $CONFIGS; do
                "$DIR/coldread" read "$DIR/c$n.sqlite" "$n" "${c%%:*}" "${c##*:}" "$dist" "$1" 1 "$2" \
                    2>>"$DIR/$1.log" | tee -a "$DIR/results.txt"
            done
        done
    done
}

rounds() {   # warm|cold reads
    r=1
    while [ $r -le "$ROUNDS" ]; do
        echo "round $r of $ROUNDS ($1)" >&2
        $LOCK "$HERE/run.sh" _round "$1" "$2"
        r=$((r + 1))
    done
}

# Median over the rounds of each configuration, as a Markdown table.
summary() {
    awk '
    /^RESULT/ {
        for (i = 2; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
        cfg = f["mode"] == "mmap" ? "mmap, 2 MiB cache" : "pread, " f["cache_mib"] " MiB cache"
        k = (f["entries"] / 1000000) "M|" f["dist"] "|" cfg
        t = f["temp"]
        n[k, t]++; rate[k, t, n[k, t]] = f["median"]; cpu[k, t, n[k, t]] = f["cpu_us"]
        anon[k, t] = f["rss_anon_mib"]; file[k, t] = f["rss_file_mib"]; io[k, t, n[k, t]] = f["storage_read_mib"]
        if (!(k in seen)) { seen[k] = 1; order[++keys] = k }
    }
    function med(a, k, t, m,    i, j, v, x) {
        for (i = 1; i <= m; i++) v[i] = a[k, t, i] + 0
        for (i = 2; i <= m; i++) { x = v[i]; for (j = i - 1; j >= 1 && v[j] > x; j--) v[j + 1] = v[j]; v[j + 1] = x }
        return m ? v[int((m + 1) / 2)] : 0
    }
    END {
        print "| entries | keys | configuration | warm reads/s | warm CPU us/read | RssAnon MiB | RssFile MiB | cold reads/s | cold: MiB read from disk | cold RssFile MiB |"
        print "|---|---|---|---|---|---|---|---|---|---|"
        for (i = 1; i <= keys; i++) {
            k = order[i]; split(k, p, "|")
            printf "| %s | %s | %s | %d | %.2f | %.0f | %.0f | %s | %s | %s |\n", p[1], p[2], p[3],
                med(rate, k, "warm", n[k, "warm"]), med(cpu, k, "warm", n[k, "warm"]), anon[k, "warm"], file[k, "warm"],
                n[k, "cold"] ? sprintf("%d", med(rate, k, "cold", n[k, "cold"])) : "-",
                n[k, "cold"] ? sprintf("%.0f", med(io, k, "cold", n[k, "cold"])) : "-",
                n[k, "cold"] ? sprintf("%.0f", file[k, "cold"]) : "-"
        }
        print ""
        print "(medians of " n[order[1], "warm"] " warm and " n[order[1], "cold"] " cold rounds)"
    }' "$DIR/results.txt"
}

# A real EIO: the file on ext4 on a loop device, the device then shrunk to
# end under the middle of the file, the file's pages dropped from the OS cache.
ioerr() {
    I=$DIR/ioerr
    mkdir -p "$I/mnt"
    truncate -s 256M "$I/disk.img"
    L=$(losetup -f --show "$I/disk.img")
    trap 'umount "$I/mnt" 2>/dev/null; losetup -d "$L"; rm -rf "$I"' EXIT
    mkfs.ext4 -q -O ^has_journal "$L"
    mount "$L" "$I/mnt"
    [ -f "$DIR/trunc-src.sqlite" ] || $LOCK "$DIR/truncate" "$DIR" >/dev/null
    F=$I/mnt/c.sqlite
    cp "$DIR/trunc-src.sqlite" "$F"
    sync
    bs=$(stat -f -c %S "$I/mnt")
    mid=$(( $(stat -c %s "$F") / 2 / bs ))
    phys=$(filefrag -v "$F" | awk -v m="$mid" '$1 ~ /^[0-9]+:$/ {
        ls = $2; le = $3; ps = $4; gsub(/[.:]/, "", ls); gsub(/[.:]/, "", le); gsub(/[.:]/, "", ps)
        if (m >= ls + 0 && m <= le + 0) print ps + m - ls }')
    echo "device cut at $((phys * bs)) bytes, under byte $((mid * bs)) of the file"
    truncate -s $((phys * bs)) "$I/disk.img"
    losetup -c "$L"
    for mode in pread mmap; do
        dd if="$F" iflag=nocache count=0 status=none
        $LOCK "$DIR/truncate" read "$F" 200000 $mode
    done
}

case ${1:-all} in
    _round) round "$2" "$3" ;;
    clean) rm -rf "$DIR" ;;
    build) compile; build ;;
    warm) compile; build; rounds warm "$READS"; summary ;;
    cold) compile; build; rounds cold "$COLD_READS"; summary ;;
    summary) summary ;;
    truncate) compile; $LOCK "$DIR/truncate" "$DIR" ;;
    ioerr) compile; ioerr ;;
    all) compile; build; rounds warm "$READS"; rounds cold "$COLD_READS"; summary
         $LOCK "$DIR/truncate" "$DIR"; ioerr ;;
    *) echo "usage: $0 [build|warm|cold|summary|truncate|ioerr|all|clean]" >&2; exit 1 ;;
esac
