cd /tmp/c; export OMP_NUM_THREADS=2
for m in parallel direct; do
 t0=$(date +%s)
 paravt eval --config eval-$m.yaml --benchmark jsonl --data /tmp/c/evalset --videos /tmp/c/evalset --model /tmp/c/C/final --out /tmp/c/evC-$m --limit 24 > evC-$m.log 2>&1
 echo "$m $(( $(date +%s)-t0 ))s"; python -c "import json;s=json.load(open('/tmp/c/evC-$m/summary.json'));m=s['metrics'];print(m['variants']['robust'].get('accuracy'), m['tools']['usage_rate'], m['tools']['avg_calls'], m['errors'])"
done
