#!/bin/bash
# what produced this folder (1 Dec 2026, 21:52-22:26 UTC); /work/runs/q3 is the quick run of results/quick-restated, /work/runs/dq2/runs/drill the all-token drill (run --quick --drill)
# rehearsal through the whole quick SFT chain, on the quick run's stored trajectories (q3)
# first (run by hand before this script): OMP_NUM_THREADS=1 python $P/rehearse.py --model /work/runs/dq2/runs/drill --trajectories /work/runs/dq2/runs/warmup-still/trajectories --out /work/runs/reh/still --eval-every 25
set -e
cd /work/main
P=experiments/toy_paradox/probes
until [ -f /work/runs/reh/still/rehearse.json ]; do sleep 10; done
echo "$(date +%T) still done" >> /work/runs/chain.log
OMP_NUM_THREADS=2 python -m paravt.cli.main eval --config experiments/toy_paradox/results/lookup-drill/still-eval.yaml --benchmark jsonl --data /work/runs/still-eval --videos /work/runs/still-eval --model /work/runs/reh/still --out /work/runs/still-eval-reh-still --limit 60 > /work/runs/reh/still-eval.log 2>&1
python $P/answers.py /work/runs/still-eval-reh-still >> /work/runs/chain.log
OMP_NUM_THREADS=2 python $P/rehearse.py --model /work/runs/reh/still --trajectories /work/runs/q3/runs/warmup-glimpse/trajectories --out /work/runs/reh/glimpse --steps 150 --eval-every 25 > /work/runs/reh/glimpse.log 2>&1
echo "$(date +%T) glimpse done" >> /work/runs/chain.log
OMP_NUM_THREADS=2 python $P/rehearse.py --model /work/runs/reh/glimpse --trajectories /work/runs/q3/runs/sft-strong/trajectories --out /work/runs/reh/sft --steps 270 --eval-every 30 > /work/runs/reh/sft.log 2>&1
echo "$(date +%T) sft done" >> /work/runs/chain.log
OMP_NUM_THREADS=2 python -m paravt.cli.main eval --config /work/runs/q3/configs/eval-4-parallel.yaml --benchmark jsonl --data /work/runs/q3/toy --videos /work/runs/q3/toy --model /work/runs/reh/sft --out /work/runs/reh/eval-4 --limit 60 > /work/runs/reh/eval-4.log 2>&1
python $P/answers.py /work/runs/reh/eval-4 >> /work/runs/chain.log
echo "$(date +%T) eval-4 done" >> /work/runs/chain.log
OMP_NUM_THREADS=2 python -m paravt.cli.main eval --config /work/runs/q3/configs/eval-4-direct.yaml --benchmark jsonl --data /work/runs/q3/toy --videos /work/runs/q3/toy --model /work/runs/reh/sft --out /work/runs/reh/eval-4-direct --limit 60 > /work/runs/reh/eval-4-direct.log 2>&1
python $P/answers.py /work/runs/reh/eval-4-direct >> /work/runs/chain.log
echo "$(date +%T) all done" >> /work/runs/chain.log
