#!/bin/sh
# Installs what the tests need and this host lacks, from Debian's packages: setpriv
# (util-linux) for the tests that run commands as `nobody`, and munge (munged, mungekey)
# for the MUNGE client's tests. Idempotent: a host that has everything is left alone.
# Later issues add their packages (Open MPI, PostgreSQL) here.
set -eu

missing=""
command -v setpriv >/dev/null 2>&1 || missing="$missing util-linux"
# munged and mungekey are in /usr/sbin, which an ordinary user's PATH may lack.
{ [ -x /usr/sbin/munged ] || command -v munged >/dev/null 2>&1; } \
    && { [ -x /usr/sbin/mungekey ] || command -v mungekey >/dev/null 2>&1; } \
    || missing="$missing munge"

[ -z "$missing" ] && exit 0
if ! command -v apt-get >/dev/null 2>&1; then
    echo "etc/test-deps.sh: the tests need:$missing; install them (no apt-get here)" >&2
    exit 1
fi
if [ "$(id -u)" -ne 0 ]; then
    echo "etc/test-deps.sh: the tests need:$missing; run this script as root to install them" >&2
    exit 1
fi
echo "etc/test-deps.sh: installing$missing"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing >/dev/null
