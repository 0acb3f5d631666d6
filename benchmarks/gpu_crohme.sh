#!/usr/bin/env bash
# CROHME on one GPU, three recognizers side by side on the same data: GryphOne (crohme-cpu's two
# stages), the AR baseline and PosFormer (crohme-cpu's two stages), each trained on CROHME train plus
# the cached 10,000 real-hand synthetic expressions (passed as an extra split, so the GPU machine
# needs neither the glyph bank nor the InkML), at batch 64, then evaluated on test2014 and test2016
# by train.run itself. What it answers: how far crohme-cpu's recipe goes when it is given more images
# per minute than two CPU cores can give it.
#
# Prepare here (CPU): the shards (README, "CROHME") and the synthetic set:
#   python -c "from train.config import preset; from train.synth_data import prepare_synth; \
#              from datasets_prep.render_spec import RenderSpec; print(prepare_synth(preset('crohme-cpu'), RenderSpec((96, 384))))"
# then on the device (carry shards/crohme-96x384 and the printed split's parent):
#   bash benchmarks/gpu_crohme.sh OUT_DIR SYNTH_SPLIT [PRETRAIN_MIN] [STAGE2_MIN] [DEVICE]
# Each run's folder is OUT_DIR/<run>/ (log.txt, metrics, eval.json, model card, curves, checkpoints),
# written as it goes, so a call cut short keeps what it reached. DEVICE=cpu with minutes of 0.1 is the
# local smoke of this script.
set -uo pipefail
out=${1:?OUT_DIR}; synth=${2:?SYNTH_SPLIT}; pre=${3:-2.5}; stage2=${4:-3.0}; device=${5:-cuda}
data=${DATA:-shards/crohme-96x384}
mkdir -p "$out"
total=$(python3 -c "print($pre + $stage2)")
common=(--data "$data" --fresh synth.count=0 "data.extra=$synth" "device=$device" compile=false batch_size=64
        ckpt_every=100000)
if [ "$device" = cpu ]; then common+=(data.workers=0 threads=1 eval.limit=20 eval.T=1 eval.seeds=1)
else common+=(data.workers=3 threads=2); fi
declare -A args=(
  [gryphone]="pretrain.max_minutes=$pre max_minutes=$stage2"
  [ar]="model.kind=ar model.max_len=100 max_minutes=$total"
  [posformer]="model.kind=posformer model.encoder=vit model.max_len=100 pretrain.max_minutes=$pre max_minutes=$stage2"
)
pids=()
for name in gryphone ar posformer; do
  mkdir -p "$out/$name"
  # shellcheck disable=SC2086
  PYTHONUNBUFFERED=1 python3 -m train.run --config crohme-cpu --out "$out/$name" "${common[@]}" ${args[$name]} \
      > "$out/$name/log.txt" 2>&1 &
  pids+=($!)
done
rc=0
for i in "${!pids[@]}"; do wait "${pids[$i]}" || rc=1; done
for name in gryphone ar posformer; do
  echo "== $name"; grep -E "stopped|samples$|^  [a-z]|\[run\] done|error" "$out/$name/log.txt" | tail -20
done
exit $rc
