#!/usr/bin/env bash
# Run pytest as an unprivileged user (default: nobody), for the sandbox's attack suite.
#
#   tests/agent/tools/run_unprivileged.sh [pytest arguments...]      (started as root)
#
# The venv's interpreter must be readable by that user. When it lives below a directory the
# user cannot enter (a pyenv under /root, say), the run happens in a private mount namespace
# where each such directory is replaced by an empty tmpfs that shows only the entries the
# interpreter and the repository need; nothing changes outside that namespace.
set -euo pipefail
cd "$(dirname "$0")/../../.."
export REPO="$PWD"
export RUN_AS="${MOSCOPT_UNPRIVILEGED_USER:-nobody}"
VENV="${MOSCOPT_CI_VENV:-.venv}"
case "$VENV" in
    /*) export PY="$VENV/bin/python" ;;
    *) export PY="$REPO/$VENV/bin/python" ;;
esac
RUN_GID="$(id -g "$RUN_AS")"
export RUN_GID

if [ "$(id -u)" != 0 ]; then
    echo "run_unprivileged.sh: must be started as root (it drops to $RUN_AS)" >&2
    exit 2
fi

as_user() {
    setpriv --reuid="$RUN_AS" --regid="$RUN_GID" --clear-groups --inh-caps=-all \
        env -i PATH=/usr/local/bin:/usr/bin:/bin HOME=/tmp LANG=C.UTF-8 \
        PYTHONDONTWRITEBYTECODE=1 "$@"
}

# Make every path in NEEDED_PATHS reachable: a directory the user cannot enter is covered by a
# tmpfs holding just the needed entries, bound from the original (kept reachable for root).
expose() {
    local stash path parent rest name dir next
    declare -A hidden=()
    stash="$(mktemp -d)"
    while IFS= read -r path; do
        parent=""
        rest="${path#/}"
        while [ -n "$rest" ]; do
            name="${rest%%/*}"
            if [ "$name" = "$rest" ]; then rest=""; else rest="${rest#*/}"; fi
            dir="$parent/$name"
            next="${rest%%/*}"
            if [ -z "${hidden[$dir]:-}" ] && [ -d "$dir" ] && [ -n "$next" ] &&
                ! setpriv --reuid="$RUN_AS" --regid="$RUN_GID" --clear-groups test -x "$dir"; then
                hidden[$dir]="$stash/$(echo "$dir" | tr / _)"
                mkdir -p "${hidden[$dir]}"
                mount --bind "$dir" "${hidden[$dir]}"
                mount -t tmpfs -o mode=0755 tmpfs "$dir"
            fi
            if [ -n "${hidden[$dir]:-}" ] && [ -n "$next" ] && [ ! -e "$dir/$next" ]; then
                mkdir -p "$dir/$next"
                mount --bind "${hidden[$dir]}/$next" "$dir/$next"
            fi
            parent="$dir"
        done
    done <<< "$NEEDED_PATHS"
}

if as_user "$PY" -I -c pass 2>/dev/null; then
    cd "$REPO"
    as_user "$PY" -m pytest -p no:cacheprovider "$@"
    exit
fi
NEEDED_PATHS="$("$PY" -I -c '
import os, sys
for p in {os.path.realpath(sys.executable), sys.prefix, sys.base_prefix, sys.argv[1]}:
    print(os.path.realpath(p))' "$REPO")"
export NEEDED_PATHS
exec unshare --mount --propagation private bash -c "set -euo pipefail
$(declare -f as_user expose)
expose
cd \"\$REPO\"
as_user \"\$PY\" -m pytest -p no:cacheprovider \"\$@\"" bash "$@"
