#!/usr/bin/env bash
# How the shipped GryphOne (model/weights/crohme-gryphone, the page's model) is made, from the CROHME folder the README
# names, on a 2-core CPU (~4 h 20 min in all): convert, cut a validation split by writer, train the
# `crohme-ship` preset, train it on with `crohme-ship-more` (110 minutes more, init= its weights),
# choose the decoder on the validation split, read the test splits once, ship.
#   bash benchmarks/ship_crohme.sh CROHME_DIR [WORK_DIR]
# CROHME_DIR holds train/, test2014/, test2016/ (InkML). WORK_DIR (default .) gets shards/ and runs/.
# SMOKE=1 runs every step at a few seconds of training (checks the script, ships nothing).
set -euo pipefail
crohme=${1:?CROHME_DIR}; work=${2:-.}
data=$work/shards/crohme-96x384; first=$work/runs/crohme-ship; run=$work/runs/crohme-ship-more
smoke=(); [ "${SMOKE:-0}" = 1 ] && smoke=(max_minutes=0.1 synth.count=200 eval.limit=20 eval.T=1 eval.seeds=1)
smoke1=(); [ "${SMOKE:-0}" = 1 ] && smoke1=(pretrain.max_minutes=0.1 "${smoke[@]}")
limit=(); [ "${SMOKE:-0}" = 1 ] && limit=(--limit 20)
[ -d "$data/test2016" ] || python -m datasets_prep.inkml --src crohme --input "$crohme/train" "$crohme/test2014" \
    "$crohme/test2016" --size 96x384 --out "$data"
[ -d "$data/valid" ] || python -m datasets_prep.holdout "$data" --from train --fit fit --valid valid --fraction 0.06 --seed 0
python -m train.run --config crohme-ship --fresh threads=2 "data.root=$data" "out=$first" \
    "synth.bank=$work/shards/glyph-bank-fit" "synth.cache=$work/shards/synth-cache-fit" "${smoke1[@]}"
python -m train.run --config crohme-ship-more --fresh threads=2 "data.root=$data" "out=$run" "init=$first/ckpt.pt" \
    "synth.bank=$work/shards/glyph-bank-fit" "synth.cache=$work/shards/synth-cache-fit" "${smoke[@]}"
# choose on valid: every GryphOne decoder, and the stage-1 AR reader (a token recognizer in its own right)
python -m train.eval --ckpt "$run/ckpt.pt" --data "$data" --splits valid --T 1,10,20 \
    --samplers remask,mask-predict,remask-keep --seeds 3 --threads 2 --json "$run/eval-valid.json" "${limit[@]}"
python -m train.eval --ckpt "$first/pretrain/ckpt.pt" --data "$data" --splits valid --beams 1,5 --threads 2 \
    --json "$first/pretrain/eval-valid.json" "${limit[@]}"
read -r sampler T < <(python benchmarks/pick_decoder.py "$run/eval-valid.json" --split valid)
echo "decoder chosen on valid: $sampler T=$T"
# the test splits, once, for the choices made
python -m train.eval --ckpt "$run/ckpt.pt" --data "$data" --splits test2014,test2016 --T 1,10 \
    --samplers remask,mask-predict --seeds 3 --threads 2 --json "$run/eval-test.json" "${limit[@]}"
python -m train.eval --ckpt "$first/pretrain/ckpt.pt" --data "$data" --splits test2014,test2016 --beams 1,5 --threads 2 \
    --json "$first/pretrain/eval-test.json" "${limit[@]}"
[ "${SMOKE:-0}" = 1 ] && { echo "smoke: done, nothing shipped"; exit 0; }
python -m train.ship --ckpt "$run/ckpt.pt" --name crohme-gryphone --sampler "$sampler" --T "$T" --default page \
    --summary "GryphOne trained on CROHME 2014 train (research use only); see model/weights/MODEL_CARD.md"
