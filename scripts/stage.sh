# Sourced by the setup scripts: `stage WHAT COMMAND...` runs COMMAND and says on stderr, in one
# short line, what ran and how long it took:  "setup: Python packages (web): 38.2 s".
# On a terminal the line starts when the stage does ("setup: Python packages (web) ..."), so a
# long install is never silent; elsewhere (CI logs) it is written whole when the stage ends.
# The line goes to STAGE_FD (default 2): setup.sh points it past its filter of pip's noise.
stage() {
    local what=$1 start=${EPOCHREALTIME/./} fd=${STAGE_FD:-2} shown=""
    shift
    if [ -t "$fd" ]; then
        printf 'setup: %s ... ' "$what" >&"$fd"
        shown=1
    fi
    "$@"  # not in a condition: under set -e a failing step stops the script, saying why
    local us=$((${EPOCHREALTIME/./} - start))
    local took
    took=$(printf '%d.%d s' $((us / 1000000)) $((us / 100000 % 10)))
    if [ -n "$shown" ]; then
        printf '%s\n' "$took" >&"$fd"
    else
        printf 'setup: %s: %s\n' "$what" "$took" >&"$fd"
    fi
}
