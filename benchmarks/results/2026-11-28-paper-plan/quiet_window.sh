#!/bin/bash
# A quiet window: pause the campaign's processes, measure, resume them whatever happens.
cd /work/main
export FEDKIT_DATA=/work/shared/data
PIDS=$(pgrep -f "slice5.py|ipykernel_launcher" | tr '\n' ' ')
echo "pausing $PIDS"; kill -STOP $PIDS
trap 'kill -CONT $PIDS; echo resumed $PIDS' EXIT
sleep 5; uptime
D=benchmarks/results/2026-11-28-paper-plan; mkdir -p $D
( time fedkit figures --plan --scale paper ) > $D/plan.txt 2>&1; uptime
for w in adult fc500 tfcnn lstm; do
  echo "== $w"; uptime
  timeout 900 python benchmarks/engines.py --workload $w --passes 5 --threads 2 > /tmp/quiet/engines_$w.log 2>&1; echo rc $?
  tail -15 /tmp/quiet/engines_$w.log
done
uptime
timeout 600 python benchmarks/seeds.py --seeds 3 --passes 3 > /tmp/quiet/seeds.log 2>&1; echo seeds rc $?; tail -8 /tmp/quiet/seeds.log
uptime
