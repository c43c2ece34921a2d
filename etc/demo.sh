#!/bin/sh
# A one-host cluster in /tmp/pbs-demo: start pbs_server, submit a job, show it, stop.
set -eu
BIN=$(cd "$(dirname "$0")/.." && pwd)/target/debug
DEMO=/tmp/pbs-demo
rm -rf "$DEMO" && mkdir -p "$DEMO" && chmod 755 "$DEMO"
cat > "$DEMO/pbs.conf" <<CONF
PBS_SERVER=$(hostname)
PBS_HOME=$DEMO/home
PBS_BATCH_SERVICE_PORT=${PBS_DEMO_PORT:-15001}
CONF
export PBS_CONF_FILE="$DEMO/pbs.conf"
"$BIN/pbs_server" 2>"$DEMO/server.stderr" &
SERVER=$!
trap 'kill $SERVER 2>/dev/null; wait $SERVER 2>/dev/null || true' EXIT
# Wait until the server answers.
i=0
until "$BIN/qstat" -B >/dev/null 2>&1; do
    i=$((i + 1)); [ $i -lt 200 ] || { cat "$DEMO/server.stderr"; exit 1; }
    sleep 0.05
done
cd "$DEMO"
RUN="setpriv --reuid=65534 --regid=65534 --clear-groups"
JOB=$(printf '#!/bin/sh\n#PBS -N hello\n#PBS -l walltime=00:05:00\necho hello from $(hostname)\n' | $RUN "$BIN/qsub")
echo "submitted $JOB"
"$BIN/qstat"
"$BIN/qstat" -f "$JOB"
