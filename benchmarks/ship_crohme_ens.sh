#!/usr/bin/env bash
# How the shipped GryphOne ensemble (model/weights/crohme-gryphone-ens, the page's model) is made, after
# benchmarks/ship_crohme.sh (its shards, its hold-out and runs/crohme-ship-more, the first candidate), on a
# 2-core CPU (~5 h 30 min more): the AR reader of `crohme-ship-ar seed=1`, GryphOne's second stage from it
# (`crohme-ship-b`), that run trained on (`crohme-ship-b-more`); then the members and their count chosen on
# the validation split (benchmarks/pick_members.py), the decoder too (pick_decoder.py), the test splits
# read once, and the ensemble shipped over its members.
#   bash benchmarks/ship_crohme_ens.sh [WORK_DIR]
# WORK_DIR (default .) holds shards/ and runs/ as ship_crohme.sh left them.
# SMOKE=1 runs every step at a few seconds of training (checks the script, ships nothing).
set -euo pipefail
work=${1:-.}
data=$work/shards/crohme-96x384; runs=$work/runs
smoke=(); [ "${SMOKE:-0}" = 1 ] && smoke=(max_minutes=0.1 synth.count=200 eval.limit=20 eval.T=1 eval.seeds=1 eval.beams=1)
limit=(); [ "${SMOKE:-0}" = 1 ] && limit=(--limit 20)
synth=("synth.bank=$work/shards/glyph-bank-fit" "synth.cache=$work/shards/synth-cache-fit" "data.root=$data")
[ -f "$runs/crohme-ship-more/ckpt.pt" ] || { echo "run benchmarks/ship_crohme.sh first ($runs/crohme-ship-more)"; exit 1; }
python -m train.run --config crohme-ship-ar --fresh threads=2 seed=1 "out=$runs/crohme-ship-ar-seed1" "${synth[@]}" "${smoke[@]}"
python -m train.run --config crohme-ship-b --fresh threads=2 "out=$runs/crohme-ship-b" "${synth[@]}" \
    "model.encoder_init=$runs/crohme-ship-ar-seed1/ckpt.pt" "model.decoder_init=$runs/crohme-ship-ar-seed1/ckpt.pt" \
    "${smoke[@]}"
python -m train.run --config crohme-ship-b-more --fresh threads=2 "out=$runs/crohme-ship-b-more" \
    "init=$runs/crohme-ship-b/ckpt.pt" "${synth[@]}" "${smoke[@]}"
# choose on valid: the members (each alone, then prefixes in that order), then the ensemble's decoder
python benchmarks/pick_members.py "$runs/crohme-ship-more" "$runs/crohme-ship-b-more" "$runs/crohme-ship" \
    "$runs/crohme-ship-b" --data "$data" --split valid --sampler mask-predict --T 10 \
    --out "$runs/crohme-gryphone-ens.json" --json "$runs/crohme-gryphone-ens-members.json" "${limit[@]}"
python -m train.eval --ckpt "$runs/crohme-gryphone-ens.json" --data "$data" --splits valid --T 1,10,20 \
    --samplers remask,mask-predict,remask-keep --seeds 3 --threads 2 --json "$runs/crohme-gryphone-ens-valid.json" "${limit[@]}"
read -r sampler T < <(python benchmarks/pick_decoder.py "$runs/crohme-gryphone-ens-valid.json" --split valid)
echo "decoder chosen on valid: $sampler T=$T"
# the test splits, once, for the choices made
python -m train.eval --ckpt "$runs/crohme-gryphone-ens.json" --data "$data" --splits test2014,test2016 --T 1,10 \
    --samplers remask,mask-predict --seeds 3 --threads 2 --json "$runs/crohme-gryphone-ens-test.json" "${limit[@]}"
[ "${SMOKE:-0}" = 1 ] && { echo "smoke: done, nothing shipped"; exit 0; }
# ship each chosen member not shipped yet, then the ensemble over them (no weights copied)
members=()
while read -r member; do
    case "${member%%/*}" in
        crohme-ship-more) members+=(crohme-gryphone); continue ;;   # shipped by ship_crohme.sh
        crohme-ship-b-more) name=crohme-gryphone-b ;;
        crohme-ship-b) name=crohme-gryphone-b0 ;;
        crohme-ship) name=crohme-gryphone-85 ;;
    esac
    python -m train.ship --ckpt "$runs/$member" --name "$name" --sampler "$sampler" --T "$T" \
        --summary "GryphOne, a member of crohme-gryphone-ens (research use only); see model/weights/MODEL_CARD.md"
    members+=("$name")
done < <(python -c "import json,sys; print('\n'.join(json.load(open(sys.argv[1]))['members']))" "$runs/crohme-gryphone-ens.json")
python -m train.ship --members "$(IFS=,; echo "${members[*]}")" --name crohme-gryphone-ens --sampler "$sampler" --T "$T" \
    --default page --summary "GryphOne models read as one ensemble (research use only); see model/weights/MODEL_CARD.md"
