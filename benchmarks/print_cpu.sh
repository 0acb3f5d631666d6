#!/usr/bin/env bash
# The `print-cpu` runs from the LaTeX corpora: split IM2LATEX-100K's validation formulas by formula
# (the CROHME 2014 and HME100K captions join train only), draw every split with TeX where `latex` and
# `dvipng` are installed and the layout engine for the rest (--renderer auto; print_summary.json says
# which drew each image), train with per-image variation, valid/test clean, test also varied and
# drawn by the engine alone (test_engine), convert at 64x512, then train the recognizers named on the
# command line side by side, one thread each. RENDERER=layout draws everything with the engine.
#   bash benchmarks/print_cpu.sh LATEX_DIR [WORK_DIR] [KIND ...]
# KIND: ar hvt diffusion posformer, or HVT's ablations hvt-pos1d (1D positions) and hvt-nocls (the LSTM
# starts from the mean patch output, not [CLS]); KIND-sN trains KIND with seed=N (ar ar-s1: two AR
# readers side by side); OVERRIDES="key=value ..." is passed to every run.
# ENSEMBLE=1: after the runs, join the token recognizers' runs (AR, PosFormer, HVT; two or more) into
# one reader (train.ensemble: runs/print-cpu-ens.json) and read valid and test with it, greedy and
# beam 5 (runs/print-cpu-ens-eval.json). Two one-thread AR runs side by side fill a 2-core machine's
# budget once: the ensemble costs no more wall minutes than one run.
# LATEX_DIR holds im2latex100k_val_norm.txt, crohme2014_train_captions.txt, hme100k_test.tsv.
# WORK_DIR (default .) gets printed-corpus/, printed/, shards/printed-64x512 and runs/print-cpu-KIND.
# SMOKE=1 draws 300 formulas and trains each KIND for a few seconds (checks the script).
# FONTS: the TeX fonts each train and valid image is typeset in, one drawn per image (default
# cm,times,palatino, as the shipped print-ar was trained; FONTS=cm for Computer Modern alone); each font
# but cm adds a test split (test_times, test_palatino: the test formulas in that font). Any of
# datasets_prep.synth.tex.FONTS; the five of tex.FONT_PACKAGES need texlive-fonts-extra, and a font TeX
# lacks stops the script before anything is drawn.
# UNSEEN: TeX fonts kept out of training, each drawn as a test split of its own (default euler,sans:
# test_euler, test_sans, the test formulas in Euler's upright letters and in sans-serif math); UNSEEN=
# for none. Why: a reader is handed fonts its training never showed it; these splits say how it reads them.
# REPEAT=k (default 4, as the shipped print-ar was trained; 0 for none): draw the main corpus's own
# training formulas (printed-corpus/train_main.txt, the IM2LATEX ones, which valid and test resemble)
# k more times, each copy with its own seed, so its own fonts, sizes and degradations (splits
# train_main1..k), and train on them beside train (data.extra). Why: the captions that join train are
# four in five of its formulas and far shorter.
# FONT_COPIES=k (default 0): the last k of those REPEAT copies typeset in COPY_FONTS instead (default
# kpfonts,utopia,charter,stix2,schoolbook, the faces of texlive-fonts-extra; splits train_fontsI, with
# copy I's seed, so only the font differs). Why: more faces than the three of FONTS, for readers handed
# documents set otherwise; UNSEEN stays out of training either way.
# RENAME=k (default 0): k more copies of those formulas with their symbols renamed
# (datasets_prep.synth.rename: structure kept, letters, digits and Greek letters redrawn; splits
# train_renamed1..k, seeds 101..), trained on beside the others: formulas the decoder has not seen,
# shaped like valid and test's.
set -euo pipefail
latex=${1:?LATEX_DIR}; work=${2:-.}; shift $(( $# >= 2 ? 2 : $# ))
kinds=("$@"); [ ${#kinds[@]} -gt 0 ] || kinds=(ar hvt)
corpus=$work/printed-corpus; img=$work/printed; data=$work/shards/printed-64x512
r=${RENDERER:-auto}; fonts=${FONTS:-cm,times,palatino}; repeat=${REPEAT:-4}; renamed=${RENAME:-0}
unseen=${UNSEEN-euler,sans}; font_copies=${FONT_COPIES:-0}; copy_fonts=${COPY_FONTS:-kpfonts,utopia,charter,stix2,schoolbook}
(( font_copies <= repeat )) || { echo "FONT_COPIES ($font_copies) must not exceed REPEAT ($repeat)" >&2; exit 2; }
copy_name() { if (( $1 > repeat - font_copies )); then echo "train_fonts$1"; else echo "train_main$1"; fi; }
count=(); budget=(); [ "${SMOKE:-0}" = 1 ] && { count=(--count 300); budget=(max_minutes=0.1 pretrain.max_minutes=0.05 eval.limit=10 eval.splits=valid eval.markup=text); }
if [ ! -d "$data/test" ]; then
  if [ "$r" != layout ]; then  # a font TeX lacks stops here, naming its package (the drawing below goes on past refusals)
    python -c 'import sys; from datasets_prep.synth import tex
try:
    tex.check_tex()
except tex.TexUnavailable:
    sys.exit(0)  # no TeX: --renderer auto draws with the engine, tex refuses below
try:
    tex.check_fonts(f for f in sys.argv[1:] if f)
except (tex.TexUnavailable, ValueError) as e:
    print(f"error: {e}", file=sys.stderr); sys.exit(2)' ${fonts//,/ } ${unseen//,/ } $( (( font_copies > 0 )) && echo "${copy_fonts//,/ }")
  fi
  python -m datasets_prep.split_corpus "$latex/im2latex100k_val_norm.txt" --out "$corpus" \
      --extra "$latex/crohme2014_train_captions.txt" "$latex/hme100k_test.tsv"
  copy() {  # the main corpus's formulas once more, with seed $1: its own fonts, sizes and degradations
    local name f=$fonts; name=$(copy_name "$1"); [[ $name == train_fonts* ]] && f=$copy_fonts
    python -m datasets_prep.synth --style print --renderer "$r" --vary --seed "$1" --fonts "$f" \
        --labels "$corpus/train_main.txt" --split "$name" --out "$img" --quiet "${count[@]}" || true
  }
  # two processes, one per core: train (about 1.75 copies' work) then the last copies, and the first
  # two thirds of the copies beside it
  first=$(( (2 * repeat + 2) / 3 ))
  { python -m datasets_prep.synth --style print --renderer "$r" --vary --fonts "$fonts" --labels "$corpus/train.txt" \
        --split train --out "$img" --quiet "${count[@]}" || true
    for i in $(seq $(( first + 1 )) "$repeat"); do copy "$i"; done; } &
  for i in $(seq 1 "$first"); do copy "$i"; done
  wait
  for i in $(seq 1 "$renamed"); do  # renamed copies, one per core
    python -m datasets_prep.synth.rename "$corpus/train_main.txt" --out "$corpus/train_renamed$i.txt" --seed "$i" >/dev/null
    python -m datasets_prep.synth --style print --renderer "$r" --vary --seed $(( 100 + i )) --fonts "$fonts" \
        --labels "$corpus/train_renamed$i.txt" --split "train_renamed$i" --out "$img" --quiet "${count[@]}" || true &
    if (( i % 2 == 0 )); then wait; fi
  done
  wait
  python -m datasets_prep.synth --style print --renderer "$r" --fonts "$fonts" --labels "$corpus/valid.txt" --split valid \
      --out "$img" --quiet "${count[@]}" || true
  python -m datasets_prep.synth --style print --renderer "$r" --labels "$corpus/test.txt" --split test --out "$img" \
      --quiet "${count[@]}" || true
  for f in ${fonts//,/ }; do
    [ "$f" = cm ] || python -m datasets_prep.synth --style print --renderer "$r" --fonts "$f" --labels "$corpus/test.txt" \
        --split "test_$f" --out "$img" --quiet "${count[@]}" || true
  done
  for f in ${unseen//,/ }; do
    [[ ",$fonts," == *",$f,"* ]] || python -m datasets_prep.synth --style print --renderer "$r" --fonts "$f" \
        --labels "$corpus/test.txt" --split "test_$f" --out "$img" --quiet "${count[@]}" || true
  done
  python -m datasets_prep.synth --style print --renderer "$r" --vary --seed 1 --labels "$corpus/test.txt" \
      --split test_varied --out "$img" --quiet "${count[@]}" || true
  python -m datasets_prep.synth --style print --renderer layout --labels "$corpus/test.txt" --split test_engine \
      --out "$img" --quiet "${count[@]}" || true
  python -m tokenizer.check "$img/valid/labels.tsv" "$img/test/labels.tsv" --against "$img/train/labels.tsv" --max-leak 0 >/dev/null
  for i in $(seq 1 "$renamed"); do
    python -m tokenizer.check "$img/valid/labels.tsv" "$img/test/labels.tsv" --against "$img/train_renamed$i/labels.tsv" \
        --max-leak 0 >/dev/null
  done
  python -m datasets_prep.images --src folder --input "$img" --size 64x512 --out "$data" --workers 2
fi
mkdir -p "$work/runs"
extras=$( { for i in $(seq 1 "$repeat"); do echo "$data/$(copy_name "$i")"; done; seq -f "$data/train_renamed%g" 1 "$renamed"; } | paste -sd, -)
extra_train=(); [ -n "$extras" ] && extra_train=("data.extra=$extras")
for name in "${kinds[@]}"; do
  kind=${name%-s[0-9]*}; seed=(); [ "$kind" != "$name" ] && seed=("seed=${name##*-s}")
  case $kind in
    diffusion) extra=() ;;
    posformer) extra=(model.kind=posformer model.encoder=vit model.max_len=160 max_minutes=110 pretrain.max_minutes=0) ;;  # one stage: its own AR decoder trains the encoder
    hvt-pos1d) extra=(model.kind=hvt model.pos_2d=false model.max_len=160 max_minutes=110) ;;   # HVT's ablations
    hvt-nocls) extra=(model.kind=hvt model.cls_init=false model.max_len=160 max_minutes=110) ;;
    *) extra=("model.kind=$kind" model.max_len=160 max_minutes=110) ;;
  esac
  # shellcheck disable=SC2086  # OVERRIDES is a list of key=value words
  python -m train.run --config print-cpu --fresh --data "$data" --out "$work/runs/print-cpu-$name" threads=1 \
      "${extra[@]}" "${seed[@]}" "${extra_train[@]}" "${budget[@]}" ${OVERRIDES:-} > "$work/runs/print-cpu-$name.log" 2>&1 &
done
wait
for name in "${kinds[@]}"; do tail -n 30 "$work/runs/print-cpu-$name.log"; done
if [ "${ENSEMBLE:-0}" = 1 ]; then
  members=(); for name in "${kinds[@]}"; do   # GryphOne (diffusion) reads SAT labels: it cannot join them
    [ "${name%-s[0-9]*}" = diffusion ] || members+=("$work/runs/print-cpu-$name")
  done
  [ ${#members[@]} -ge 2 ] || { echo "ENSEMBLE=1 needs two or more token recognizers' runs" >&2; exit 2; }
  limit=(); [ "${SMOKE:-0}" = 1 ] && limit=(--limit 10)
  python -m train.ensemble "${members[@]}" --out "$work/runs/print-cpu-ens.json"
  python -m train.eval --ckpt "$work/runs/print-cpu-ens.json" --data "$data" --splits valid,test --markup text \
      --beams 1,5 --threads 2 "${limit[@]}" --json "$work/runs/print-cpu-ens-eval.json"
fi
