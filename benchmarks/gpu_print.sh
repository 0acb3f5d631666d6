#!/usr/bin/env bash
# Printed formulas on one GPU lease (<= 9 minutes): HVT and the AR baseline side by side on the same
# printed shards, `print-cpu`'s recipe at batch 64, then each evaluated on valid and test (BLEU-4,
# edit score, exact match) by train.run itself, and each checkpoint slimmed to its EMA weights
# (train.ship --no-onnx) so it comes back in OUT. What it answers: how far HVT, whose LSTM step keeps
# it to ~8k steps in two CPU hours (45.9 BLEU-4), goes when a GPU gives it more steps; its checkpoint
# is one a CPU session can train on (`init=`) and ship.
#
# Prepare here (CPU): a subset of the printed shards that travels (the call takes 64 MiB in all), and
# the checkout without its shipped weights (benchmarks/device_tree.py):
#   echo /.carry/ >> .git/info/exclude
#   python -m datasets_prep.subset shards/printed-64x512 .carry/printed --split train=7200 \
#       --split train_main1=5200 --split valid --split test --max-mib 58
#   git sparse-checkout set --no-cone '/*' '!/model/weights/' && python benchmarks/device_tree.py --carry .carry
# device run (carry: [".carry"]), then `git sparse-checkout disable` here:
#   bash benchmarks/gpu_print.sh $OUT .carry/printed [MINUTES]
# The runs build their vocabulary from the subset's labels: the subset above holds 362 of the whole
# set's 383 tokens, and 3 of 419 valid and 5 of 444 test labels use one outside it (read as UNK).
# Or the whole train split with 4 gray levels (53.8 MiB; the call 57.4 MiB; BENCHMARKS "Fewer gray
# levels on the wire"): 3.3 times the training images and the CPU readers' vocabulary, at a measured
# cost: a reader trained on from the same weights and seed on 4-level copies with DEGRADE=0.5 read
# stored valid images 1.2 BLEU-4 lower greedy, 0.9 lower with beam 5, than on the stored images
# (BENCHMARKS, "`print-ar-r2` trained on a sixth time"); so the stored subset stays first. Add
# DEGRADE=0.5 to draw blur and noise again:
#   python -m datasets_prep.subset shards/printed-64x512 .carry/printed-q4 --split train --split valid \
#       --split test --quantize train --max-mib 58
# OUT/hvt and OUT/ar each get log.txt, metrics.jsonl, eval.json and NAME.pt (8 files: the tool's cap).
# Extra splits of DATA named train_* join training (data.extra). COMPILE=1 compiles (HVT: its attention,
# `compile_parts`; the AR baseline: its loss); the default is eager throughout, as the one GPU training
# call so far ran (a compile that fails or recompiles costs minutes a lease does not have).
# DEGRADE=P draws blur, noise and stroke weight again on a share P of the training images at every step
# (degrade.prob, train/degrade.py; meant for training splits that travel quantized; default off).
# SMOKE=1: on the CPU, tiny sizes and seconds of training (checks the script, measures nothing).
set -uo pipefail
out=${1:?OUT}; data=${2:?DATA}; minutes=${3:-6.5}
mkdir -p "$out"
tmp=$(mktemp -d)
terms="research use only: drawn from formulas of IM2LATEX-100K (arXiv), the CROHME 2014 training captions (TC11 terms: research use, not commercial) and the HME100K test captions (released for research)"
extra=$(python3 - "$data" <<'EOF'
import sys
from datasets_prep.shards import ShardError, split_names
try:
    names = split_names(sys.argv[1])
except ShardError as exc:
    sys.exit(f"error: {exc}")
print(",".join(f"{sys.argv[1]}/{s}" for s in names if s.startswith("train_")))
EOF
) || exit 2
common=(--config print-cpu --fresh --data "$data" model.max_len=160 "max_minutes=$minutes" ckpt_every=500
        eval.splits=valid,test eval.markup=text ${extra:+"data.extra=$extra"} "degrade.prob=${DEGRADE:-0}")
if [ "${SMOKE:-0}" = 1 ]; then
  common+=(device=cpu compile=false compile_parts=false threads=1 num_workers=0 batch_size=4 eval.limit=8 eval.every=0
           model.enc_dim=16 model.dec_dim=16)
else
  common+=(device=cuda batch_size=64 num_workers=3 threads=2 bf16=true)
  if [ "${COMPILE:-0}" = 1 ]; then common+=(compile=true compile_parts=true); else common+=(compile=false compile_parts=false); fi
fi
pids=()
for name in hvt ar; do
  mkdir -p "$out/$name"
  PYTHONUNBUFFERED=1 python3 -m train.run --out "$tmp/$name" "${common[@]}" "model.kind=$name" > "$out/$name/log.txt" 2>&1 &
  pids+=($!)
done
rc=0
for pid in "${pids[@]}"; do wait "$pid" || rc=1; done
for name in hvt ar; do
  echo "== $name"; grep -E "stopped|samples|BLEU|\[run\] done|error" "$out/$name/log.txt" | tail -12
  cp "$tmp/$name/metrics.jsonl" "$tmp/$name/eval.json" "$out/$name/" 2>/dev/null
  python3 -m train.ship --ckpt "$tmp/$name/ckpt.pt" --name "print-$name-gpu" --sampler greedy --T 1 \
      --folder "$tmp/weights" --no-onnx --terms "$terms" \
      --summary "$name, print-cpu's recipe at batch 64 for $minutes minutes on one GPU" > /dev/null \
    && cp "$tmp/weights/print-$name-gpu.pt" "$out/$name/" || rc=1
done
rm -rf "$tmp"
exit $rc
