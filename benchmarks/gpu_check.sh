#!/usr/bin/env bash
# One device lease, one call (<= 9 minutes): benchmarks/gpu_check.py's tables (training MFU eager vs
# compiled at batch 32/64/128 for the three recognizers, decoding FPS eager vs CUDA graphs, the data
# pipeline alone), then, given CROHME shards and the real-hand synthetic split, the `crohme-ship`
# recipe at batch 64, compiled, in the minutes left. What comes back in OUT (8 files at most):
# gpu_check.json, gpu_check.log, train.log, crohme-gryphone-gpu.pt (the slim EMA checkpoint, train.ship),
# run/metrics.jsonl, run/pretrain-metrics.jsonl, run/eval.json.
#   bash benchmarks/gpu_check.sh OUT [DATA] [SYNTH_SPLIT] [CHECK_MIN] [PRE_MIN] [STAGE2_MIN]
# DATA: shards from datasets_prep.inkml + datasets_prep.holdout, without train/ (fit, valid, test2014,
# test2016, summary.json, holdout.json: ~26 MB); SYNTH_SPLIT: the 10,000 real-hand expressions the
# preset draws, made here on the CPU (the device has no cairo), e.g. shards/synth-cache-fit/bank-*/shards/train
# (~27 MB). Both travel in one ignored folder named in the call's carry, e.g.
#   echo /.carry/ >> .git/info/exclude; mkdir -p .carry/crohme && cp -r shards/crohme-96x384/{fit,valid,\
#   test2014,test2016,summary.json,holdout.json} .carry/crohme/ && cp -r shards/synth-cache-fit/bank-*/shards .carry/synth
#   device run: bash benchmarks/gpu_check.sh $OUT .carry/crohme .carry/synth/train   (carry: [".carry"])
# The checkout with its shipped weights (~94 MB) is over the 64 MiB a device call may send: keep them
# out of the working tree for the call (benchmarks/device_tree.py says what travels; exit 0 = it fits):
#   git sparse-checkout set --no-cone '/*' '!/model/weights/' && python benchmarks/device_tree.py --carry .carry
#   ... the device call ...;  git sparse-checkout disable
# SMOKE=1: on the CPU, tiny sizes and seconds of training (checks the script, measures nothing).
set -uo pipefail
out=${1:?OUT}; data=${2:-}; synth=${3:-}; check=${4:-4.5}; pre=${5:-1.0}; stage2=${6:-2.0}
mkdir -p "$out"
tmp=$(mktemp -d)
smoke=(); run_opts=()
if [ "${SMOKE:-0}" = 1 ]; then
  smoke=(--smoke); run_opts=(device=cpu compile=false threads=1 data.workers=0 batch_size=4 eval.limit=10 eval.T=1
                             eval.seeds=1 eval.samplers=mask-predict)
else
  run_opts=(compile=true data.workers=6 threads=4 batch_size=64)
fi
rc=0
PYTHONUNBUFFERED=1 python3 benchmarks/gpu_check.py "${smoke[@]}" --budget-minutes "$check" --json "$out/gpu_check.json" \
    ${data:+--data "$data"} > "$out/gpu_check.log" 2>&1 || rc=1
grep -v "^[VW][0-9]" "$out/gpu_check.log" | tail -40
if [ -n "$data" ] && [ -n "$synth" ]; then
  PYTHONUNBUFFERED=1 python3 -m train.run --config crohme-ship --fresh "data.root=$data" "out=$tmp/run" \
      "pretrain.max_minutes=$pre" "max_minutes=$stage2" synth.count=0 "data.extra=$synth" \
      "${run_opts[@]}" > "$out/train.log" 2>&1 || rc=1
  mkdir -p "$out/run"
  cp "$tmp"/run/{metrics.jsonl,eval.json} "$out/run/" 2>/dev/null
  cp "$tmp"/run/pretrain/metrics.jsonl "$out/run/pretrain-metrics.jsonl" 2>/dev/null
  tail -25 "$out/train.log"
  python3 -m train.ship --ckpt "$tmp/run/ckpt.pt" --name crohme-gryphone-gpu --sampler mask-predict --T 10 \
      --folder "$tmp/weights" --no-onnx \
      --summary "GryphOne, crohme-ship at batch 64 on one GPU (CROHME: research use only)" \
    && cp "$tmp/weights/crohme-gryphone-gpu.pt" "$out/" || rc=1
fi
rm -rf "$tmp"
exit $rc
