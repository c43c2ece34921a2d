#!/bin/sh
# A one-host cluster in /tmp/pbs-demo: pbsctl starts pbs_server, pbs_mom and pbs_sched,
# a job runs as `nobody`, its output is shown, and the cluster is stopped.
set -eu
BIN=$(cd "$(dirname "$0")/.." && pwd)/target/debug
DEMO=/tmp/pbs-demo
[ -f "$DEMO/pbs.conf" ] && PBS_CONF_FILE="$DEMO/pbs.conf" "$BIN/pbsctl" stop >/dev/null 2>&1 || true
rm -rf "$DEMO" && mkdir -p "$DEMO/work" && chmod 755 "$DEMO" && chmod 1777 "$DEMO/work"
cat > "$DEMO/pbs.conf" <<CONF
PBS_SERVER=$(hostname)
PBS_HOME=$DEMO/home
PBS_BATCH_SERVICE_PORT=${PBS_DEMO_PORT:-15001}
PBS_MOM_SERVICE_PORT=${PBS_DEMO_MOM_PORT:-15002}
PBS_START_SERVER=1
PBS_START_SCHED=1
PBS_START_MOM=1
CONF
export PBS_CONF_FILE="$DEMO/pbs.conf"
"$BIN/pbsctl" start
trap '"$BIN/pbsctl" stop' EXIT
# Keep finished jobs visible to qstat -x.
"$BIN/qmgr" -c "set server job_history_enable = True"
cd "$DEMO/work"
RUN="setpriv --reuid=65534 --regid=65534 --clear-groups"
JOB=$(printf '#!/bin/sh\n#PBS -N hello\n#PBS -S /bin/sh\n#PBS -l walltime=00:05:00\necho "hello from $(hostname) as $(id -un), job $PBS_JOBID on $(cat $PBS_NODEFILE)"\n' | $RUN "$BIN/qsub")
echo "submitted $JOB"
# Wait (up to 30 s) until the job has finished.
i=0
until "$BIN/qstat" -x -f "$JOB" 2>/dev/null | grep -q 'job_state = F'; do
    i=$((i + 1)); [ $i -lt 600 ] || { echo "job did not finish"; "$BIN/qstat" -f "$JOB"; exit 1; }
    sleep 0.05
done
"$BIN/pbsnodes" -a
"$BIN/qstat" -x
echo "--- hello.o${JOB%%.*}:"
cat "hello.o${JOB%%.*}"
