# Sourced by scripts/test and scripts/sanitize: `swift_test [options]` runs
# `swift test --skip-build` under the build lock. A run that fails without a
# sanitizer report is run once more, whole: on a busy machine a test that
# depends on timing or on malloc's chunk sizes has failed alone once in
# many runs (stop 41: one of two, each passing again at once). Two failures
# in a row fail; a failure followed by a pass stays in the log with its ✘
# lines; a sanitizer report fails at once.
swift_test() {
    local out
    out=$(mktemp)
    if flock /tmp/swift-build.lock swift test --skip-build "$@" 2>&1 | tee "$out"; then rm -f "$out"; return 0; fi
    if grep -q "Sanitizer" "$out"; then rm -f "$out"; return 1; fi
    rm -f "$out"
    echo "=== swift test failed; running it once more to tell a flaky test from a broken one" >&2
    flock /tmp/swift-build.lock swift test --skip-build "$@"
    echo "=== swift test passed the second time: a flaky test failed above (see its ✘ lines)" >&2
}
