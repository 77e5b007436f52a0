# Sourced by test.sh: start a throw-away PostgreSQL server on a Unix socket for the store tests
# and export DPSCALE_TEST_POSTGRES_URL. The server stops when the sourcing shell exits.
_pg_bin=$(dirname "$(ls /usr/lib/postgresql/*/bin/initdb 2>/dev/null | sort -V | tail -n 1)" 2>/dev/null || true)
if [ -z "$_pg_bin" ] || [ ! -x "$_pg_bin/initdb" ]; then
    _pg_bin=$(dirname "$(command -v initdb 2>/dev/null || echo /nonexistent/initdb)")
fi
_pg_start() {
    _pg_dir=$(mktemp -d /tmp/dpscale-pg.XXXXXX)
    _pg_run=()
    if [ "$(id -u)" -eq 0 ]; then
        id -u dpscale-pg >/dev/null 2>&1 || useradd --system --no-create-home dpscale-pg
        chown dpscale-pg "$_pg_dir"
        _pg_run=(runuser -u dpscale-pg --)
    fi
    "${_pg_run[@]}" "$_pg_bin/initdb" -D "$_pg_dir/data" -U dpscale -A trust >/dev/null
    "${_pg_run[@]}" "$_pg_bin/pg_ctl" -D "$_pg_dir/data" -w -s -l "$_pg_dir/log" \
        -o "-k $_pg_dir -c listen_addresses='' -c fsync=off" start
    trap '"${_pg_run[@]}" "$_pg_bin/pg_ctl" -D "$_pg_dir/data" -m immediate -s stop; rm -rf "$_pg_dir"' EXIT
    export DPSCALE_TEST_POSTGRES_URL="postgresql+psycopg://dpscale@/postgres?host=$_pg_dir"
}
if [ -x "$_pg_bin/initdb" ]; then
    source "$(dirname "${BASH_SOURCE[0]}")/stage.sh"
    stage "PostgreSQL server for the store tests" _pg_start
else
    echo "setup: PostgreSQL not found: the PostgreSQL store tests will be skipped" >&2
fi
