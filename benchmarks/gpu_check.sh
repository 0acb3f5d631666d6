#!/usr/bin/env bash
# One device lease, one call (<= 9 minutes): benchmarks/gpu_check.py's tables (training MFU eager vs
# compiled at batch 32/64/128 for the three recognizers, decoding FPS eager vs CUDA graphs, the data
# pipeline alone), then, given CROHME shards and a glyph bank, the `crohme-ship` recipe at batch 64,
# compiled, in the minutes left; its slim checkpoint comes back in OUT/weights/ (train.ship), its log,
# metrics and validation scores in OUT/run/.
#   bash benchmarks/gpu_check.sh OUT [DATA] [BANK] [CHECK_MIN] [PRE_MIN] [STAGE2_MIN]
# DATA: shards from datasets_prep.inkml + datasets_prep.holdout (fit, valid; ~30 MB without train/),
# BANK: the glyph bank of fit's writers (python -m datasets_prep.synth.bank; ~18 MB), both carried.
# SMOKE=1: on the CPU, tiny sizes and seconds of training (checks the script, measures nothing).
set -uo pipefail
out=${1:?OUT}; data=${2:-}; bank=${3:-}; check=${4:-4.5}; pre=${5:-1.0}; stage2=${6:-2.0}
mkdir -p "$out"
tmp=$(mktemp -d)
smoke=(); run_smoke=()
if [ "${SMOKE:-0}" = 1 ]; then
  smoke=(--smoke); run_smoke=(device=cpu compile=false threads=1 num_workers=0 batch_size=4 synth.count=40
                              eval_limit=10 eval_T=1 eval_seeds=1 eval_samplers=mask-predict)
else
  run_smoke=(compile=true num_workers=6 threads=4 batch_size=64)
fi
rc=0
PYTHONUNBUFFERED=1 python3 benchmarks/gpu_check.py "${smoke[@]}" --budget-minutes "$check" --json "$out/gpu_check.json" \
    ${data:+--data "$data"} > "$out/gpu_check.log" 2>&1 || rc=1
grep -v "^[VW][0-9]" "$out/gpu_check.log" | tail -40
if [ -n "$data" ] && [ -n "$bank" ]; then
  PYTHONUNBUFFERED=1 python3 -m train.run --config crohme-ship --fresh "data=$data" "out=$tmp/run" \
      "pretrain.max_minutes=$pre" "max_minutes=$stage2" "synth.bank=$bank" "synth.cache=$tmp/synth" \
      "${run_smoke[@]}" > "$out/train.log" 2>&1 || rc=1
  mkdir -p "$out/run"
  cp "$tmp"/run/{metrics.jsonl,eval.json,config.json,curves.png} "$out/run/" 2>/dev/null
  cp "$tmp"/run/pretrain/metrics.jsonl "$out/run/pretrain-metrics.jsonl" 2>/dev/null
  tail -25 "$out/train.log"
  python3 -m train.ship --ckpt "$tmp/run/ckpt.pt" --name crohme-gryphone-gpu --sampler mask-predict --T 10 \
      --folder "$out/weights" --no-onnx \
      --summary "GryphOne, crohme-ship at batch 64 on one GPU (CROHME: research use only)" || rc=1
fi
rm -rf "$tmp"
exit $rc
