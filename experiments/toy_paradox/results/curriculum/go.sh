set -e
cd /tmp/c; export OMP_NUM_THREADS=2
P="python /work/probe/probe.py --traj /tmp/long/sft/trajectories --steps 0"
t0=$(date +%s)
paravt sft --config A.yaml > A.log 2>&1; echo "A done $(( $(date +%s)-t0 ))s"
$P --model /tmp/c/A/final 2>&1 | grep step | sed 's/^/A long-probe /'
paravt sft --config B.yaml > B.log 2>&1; echo "B done $(( $(date +%s)-t0 ))s"
$P --model /tmp/c/B/final 2>&1 | grep step | sed 's/^/B long-probe /'
paravt make-toy-task /tmp/c/evalset --n 60 --seed 0 --split eval --set 'question_types=["mcq"]' --set visibility_videos=0 > ev.log 2>&1
paravt sft --config C.yaml > C.log 2>&1; echo "C done $(( $(date +%s)-t0 ))s"
$P --model /tmp/c/C/final 2>&1 | grep step | sed 's/^/C long-probe /'
