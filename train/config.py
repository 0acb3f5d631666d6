"""Training configurations: one dataclass, named presets, and `key=value` overrides.

Presets (`--config NAME`):
  micro       64x64, 2+2 layers, length 32: unit tests and overfit checks (tens of ms a step on CPU)
  demo        the README demo: synthetic inks written by datasets_prep.synth, two stages, minutes on a CPU
  tiny        224x224, patch 16, width 128, 4+2 layers, length 150: a smoke run of the paper's canvas
  crohme-cpu  the CPU reference run on CROHME shards (two stages, + real-hand synthetic data; test2014/test2016)
  print-cpu   printed formulas (IM2LATEX-100K + captions drawn with variation), <= 2 hours on 2 CPU cores
  crohme-ship the first run behind the shipped GryphOne: crohme-cpu on `fit`, validated on `valid` (datasets_prep.holdout)
  crohme-ship-ar  the run behind the shipped handwriting reader: the AR baseline alone on crohme-ship's data
  crohme-ship-more  the run behind the shipped GryphOne: a crohme-ship run trained on for 110 minutes (init=)
  crohme-ship-b, crohme-ship-b-more  the second member of the shipped GryphOne ensemble: GryphOne's second
              stage from the `crohme-ship-ar seed=1` reader, then trained on for 100 minutes (init=)
  posformer-paper, hvt-paper  the other two recognizers at their published sizes, for a GPU
  paper       GryphOne as published: ViT-S/8 at 224x224, 5-layer decoder, T=50, batch 32, AdamW 1e-4/1e-3,
              60 epochs, RMML, with the official implementation's masking, KL and sampler
Overrides use dotted keys: `optim.lr=3e-4 model.enc_depth=6 model.loss.T=10 eval.T=1,10 pretrain.steps=0
augment.prob=0.5 log.tensorboard=true`;
`python -m train.run --config NAME --show-config` prints every key with its value.
"""
from __future__ import annotations

import ast
import copy
import dataclasses
from dataclasses import dataclass, field

from model import GryphOneConfig, LossConfig, RecognizerConfig
from model.hvt.recognizer import HVT_PAPER, HVTConfig
from model.posformer.recognizer import PosFormerConfig
from model.registry import config_from_dict, config_keys, recognizer_class, switch_kind

from .augment import AugmentConfig
from .degrade import DegradeConfig


@dataclass
class PretrainConfig:
    """Stage 1 of a two-stage run: the autoregressive reader trains the encoder on the same images for
    `steps` steps, then GryphOne starts from that encoder (model.encoder_init). Why: a diffusion decoder
    alone teaches a from-scratch encoder glyphs far more slowly (BENCHMARKS.md, "The demo's recipe")."""
    steps: int = 0                       # 0: no pretraining stage
    max_minutes: float = 0.0             # >0 (and steps 0): pretrain for this wall time instead
    lr: float = 0.0                      # 0: the run's lr
    max_len: int = 0                     # the AR token window; 0: 2 x model.max_len
    data: str = ""                       # shard root; "": the run's data
    init_decoder: bool = False           # also start GryphOne's decoder blocks from the AR decoder (model.decoder_init)


@dataclass
class SynthConfig:
    """Real-hand synthetic expressions mixed into training (train/synth_data.py); off at count 0."""
    count: int = 0                       # synthetic expressions added to every epoch
    bank: str = "shards/glyph-bank"      # glyph bank folder (built from bank_input when it holds none)
    bank_input: str = ""                 # segmented InkML to build the bank from; "": the folder the train shards came from
    bank_source: str = "crohme"          # its source: crohme | mathwriting
    recombine: float = 0.3               # chance a label is the head of one training label + the tail of another
    cache: str = "shards/synth-cache"    # made once per (bank, labels, count, canvas, seed)


@dataclass
class LogConfig:
    """What the trainer writes besides metrics.jsonl (which stays the record): TensorBoard event files
    in the run folder, when `tensorboard` is installed (train/tb_log.py)."""
    tensorboard: bool = False


@dataclass
class EvalConfig:
    """What the evaluations score and with which decoders: the quick one every `every` steps (the
    first split, `limit` samples, the recognizer's default decoder at the largest T) and the final one
    (every split, every decoder below). `T`, `seeds` and `samplers` are for recognizers with refinement
    steps (GryphOne's), `beams` for the token recognizers; a recognizer reads the ones it has."""

    splits: tuple[str, ...] = ("valid",)
    every: int = 0                       # steps between quick evals; 0 = at the end only
    limit: int = 200                     # samples in a quick eval
    T: tuple[int, ...] = (1, 10, 50)     # refinement steps to score
    seeds: int = 3                       # sampler seeds for the random re-mask decoder
    samplers: tuple[str, ...] = ("remask", "mask-predict")  # + "remask-keep" (the official sampler)
    beams: tuple[int, ...] = (1,)        # token recognizers: beam widths (1 = greedy)
    markup: str = ""                     # final evaluation: "" HMER metrics; "text" + BLEU-4/edit/exact; "images" + image EM


@dataclass
class DataConfig:
    """What a run trains on and how its labels are read."""

    root: str = "shards/crohme"          # shard root written by datasets_prep.inkml (--data)
    train_split: str = "train"
    extra: tuple[str, ...] = ()          # more split folders trained on with the train split (synth sets its own)
    canvas: tuple[int, int] = (0, 0)     # (H, W) the shards must have; (0, 0): the shards' (their summary.json)
    workers: int = 2                     # DataLoader worker processes
    normalize_labels: bool = False       # the LabelSpec's `normalized`: learn and score tokenizer.normalize(label)
    extended_modifiers: bool = False     # SAT extended modifier set
    vocab_min_count: int = 1
    drop_invalid: bool = True            # skip training samples whose label failed validation
    length_buckets: int = 0              # batches of like label length: sort each run of this many batches by length (0: off)


@dataclass
class OptimConfig:
    """How the weights move: the optimizer, the learning rate over the run, clipping and the EMA."""

    name: str = "adamw"                  # adamw | sgd (momentum below; CoMER's and PosFormer's recipe)
    lr: float = 1e-4
    weight_decay: float = 1e-3           # not on biases, norms, embeddings and position tables (trainer.decays)
    betas: tuple[float, float] = (0.9, 0.999)
    momentum: float = 0.9
    warmup_steps: int = 0
    warmup_start: float = 0.0            # the warmup starts at this share of lr (the official GryphOne: 0.2)
    schedule: str = "constant"           # constant | cosine | step (after warmup; step: lr / 10 at each milestone)
    milestones: tuple[float, ...] = ()   # epochs at which the "step" schedule divides lr by 10
    min_lr_ratio: float = 0.1
    grad_clip: float = 1.0
    ema: float = 0.0                     # EMA decay of the weights; 0 disables


FLAT_EVAL_KEYS = {f"eval_{k}": f"eval.{k}" for k in ("splits", "every", "limit", "T", "seeds", "samplers", "beams",
                                                      "markup")}
FLAT_OPTIM_KEYS = {"optimizer": "optim.name", "lr_milestones": "optim.milestones",
                   **{k: f"optim.{k}" for k in ("lr", "weight_decay", "betas", "momentum", "warmup_steps", "warmup_start",
                                                "schedule", "min_lr_ratio", "grad_clip", "ema")}}
FLAT_DATA_KEYS = {"data": "data.root", "extra_train": "data.extra", "num_workers": "data.workers",
                  **{k: f"data.{k}" for k in ("train_split", "canvas", "normalize_labels", "extended_modifiers",
                                              "vocab_min_count", "drop_invalid")}}
FLAT_KEYS = {**FLAT_EVAL_KEYS, **FLAT_OPTIM_KEYS, **FLAT_DATA_KEYS}
"""The keys as they were spelled before they were grouped: still accepted as overrides, and read
from checkpoints and configs written then."""


@dataclass
class TrainConfig:
    name: str = "custom"
    data: DataConfig = field(default_factory=DataConfig)  # the shards, their canvas and how labels are read
    out: str = "runs/custom"
    eval: EvalConfig = field(default_factory=EvalConfig)  # what the quick and final evaluations score
    model: RecognizerConfig = field(default_factory=GryphOneConfig)  # model.kind picks the recognizer
    pretrain: PretrainConfig = field(default_factory=PretrainConfig)
    augment: AugmentConfig = field(default_factory=AugmentConfig)  # training images only (train/augment.py)
    degrade: DegradeConfig = field(default_factory=DegradeConfig)  # training images only (train/degrade.py)
    synth: SynthConfig = field(default_factory=SynthConfig)
    log: LogConfig = field(default_factory=LogConfig)
    batch_size: int = 32                 # global batch (split across DDP ranks)
    optim: OptimConfig = field(default_factory=OptimConfig)  # optimizer, learning-rate schedule, clipping, EMA
    epochs: float = 60.0
    max_steps: int = 0                   # >0 overrides epochs
    max_minutes: float = 0.0             # >0: stop (with a checkpoint) after this wall time
    seed: int = 0
    init: str = ""                       # fine-tune: start every weight (and the vocabulary) from this checkpoint of the same recognizer; fresh optimizer and schedule
    log_every: int = 20
    ckpt_every: int = 500
    device: str = "auto"                 # auto | cpu | cuda
    compile: bool | None = None          # None: on for CUDA, off on CPU
    compile_parts: bool = False          # compile the recognizer's train_parts (HVT's attention) even where compile is off
    compile_windows: int = 4             # a compiled token loss cuts its window to one of this many widths (1: always max_len)
    bf16: bool | None = None             # None: on for CUDA, off on CPU
    threads: int = 0                     # torch CPU threads; 0 = torch default
    ddp_check: bool = False              # each rank writes a digest of its parameters at the end (tests)


def _micro() -> TrainConfig:
    m = GryphOneConfig(patch=16, enc_dim=64, enc_depth=2, enc_heads=4, dec_dim=64,
                    dec_depth=2, dec_heads=4, dropout=0.0, max_len=32, loss=LossConfig(T=10))
    return TrainConfig(name="micro", out="runs/micro", model=m, batch_size=8, max_steps=600, log_every=50,
                       ckpt_every=0, eval=EvalConfig(T=(1, 10), seeds=1, splits=("train",)),
                       optim=OptimConfig(lr=3e-3, weight_decay=0.0), data=DataConfig(workers=0))


def _demo() -> TrainConfig:
    """A few CPU minutes on the project's own synthetic inks (~0.25 GFLOP per training image), in two
    stages: 1,000 steps of the AR reader train the encoder (and the decoder blocks GryphOne starts
    from), then 1,500 GryphOne steps with the reader kept as an auxiliary loss (BENCHMARKS.md: each
    of the three measured separately). The RMML KL term is ramped in over 400 steps."""
    m = GryphOneConfig(patch=16, enc_dim=96, enc_depth=3, enc_heads=4, conv_stem=True,
                    dec_dim=96, dec_depth=2, dec_heads=4, dropout=0.1, max_len=24,
                    loss=LossConfig(T=10, kl_warmup_steps=400), aux_reader_weight=1.0)
    return TrainConfig(name="demo", out="runs/demo", model=m,
                       pretrain=PretrainConfig(steps=1000, init_decoder=True), batch_size=32, max_steps=1500,
                       log_every=50, ckpt_every=400,
                       eval=EvalConfig(every=400, limit=100, T=(1, 10), seeds=2, splits=("test",)),
                       optim=OptimConfig(lr=2e-3, weight_decay=1e-2, warmup_steps=50, schedule="cosine"),
                       data=DataConfig(root="runs/demo/shards", workers=1))


def _tiny() -> TrainConfig:
    m = GryphOneConfig(patch=16, enc_dim=128, enc_depth=4, enc_heads=4, dec_dim=128,
                    dec_depth=2, dec_heads=4, dropout=0.1, max_len=150)
    return TrainConfig(name="tiny", out="runs/tiny", model=m, batch_size=8, max_steps=2000,
                       eval=EvalConfig(T=(1, 10)), optim=OptimConfig(lr=5e-4, warmup_steps=200, schedule="cosine"))


def _crohme_cpu() -> TrainConfig:
    """Sized for under two hours on 2 CPU cores, everything included: 96x384 canvas (CROHME's median
    aspect is 3.5), conv stem + patch 16 (144 tokens) with one residual 3x3 unit after each stem downsampling but
    the first (`stem_blocks=1`: test2014 8.8% against 4.9% without, side by side, BENCHMARKS.md),
    width 96; two
    stages (45 minutes of the AR reader on the encoder, then 50 of GryphOne from its encoder and
    decoder, the reader kept as an auxiliary loss); brace-normalized labels; the RMML KL ramped in
    over 1,000 steps; 10,000 real-hand synthetic expressions drawn with a glyph bank cut from the
    training inks (the AR baseline 13.4% -> 19.6% on test2014 with them, side by side). On both cores
    this preset reads test2014 16.1% / test2016 14.4% (mask-predict T=10) in 97 minutes (BENCHMARKS.md).
    `compile_parts`: with model.kind=hvt its coverage attention is compiled (1.13x per step, same losses);
    the other recognizers have no such parts."""
    m = GryphOneConfig(patch=16, enc_dim=96, enc_depth=4, enc_heads=4, conv_stem=True,
                    stem_blocks=1, dec_dim=96, dec_depth=2, dec_heads=4, dropout=0.1, max_len=64,
                    loss=LossConfig(T=10, kl_warmup_steps=1000), aux_reader_weight=1.0)
    return TrainConfig(name="crohme-cpu", out="runs/crohme-cpu", model=m,
                       pretrain=PretrainConfig(max_minutes=45, max_len=100, init_decoder=True), batch_size=16,
                       max_minutes=50, ckpt_every=250, synth=SynthConfig(count=10000), compile_parts=True,
                       eval=EvalConfig(every=1000, limit=150, splits=("test2014", "test2016"), T=(1, 10), seeds=3),
                       optim=OptimConfig(lr=1e-3, weight_decay=1e-2, warmup_steps=300, schedule="cosine", ema=0.999),
                       data=DataConfig(root="shards/crohme-96x384", workers=1, normalize_labels=True))


def _crohme_ship() -> TrainConfig:
    """The first run behind the shipped GryphOne (`crohme-ship-more` trains it on; model/weights/MODEL_CARD.md): `crohme-cpu`
    trained on `fit` and validated on `valid`, the two cut from CROHME train by writer
    (`python -m datasets_prep.holdout`; the glyph bank leaves the validation writers out), with a
    longer second stage (45 + 85 minutes on both cores), since GryphOne's CROHME figure follows its
    stage-2 steps (BENCHMARKS.md). Every choice (checkpoint, decoder) is made on `valid`; the test
    splits are read once, afterwards, with `train.eval`."""
    cfg = _crohme_cpu()
    cfg.name, cfg.out, cfg.data.train_split, cfg.eval.splits = "crohme-ship", "runs/crohme-ship", "fit", ("valid",)
    cfg.pretrain.max_minutes, cfg.max_minutes = 45, 85
    cfg.synth.bank, cfg.synth.cache = "shards/glyph-bank-fit", "shards/synth-cache-fit"
    return cfg


def _crohme_ship_ar() -> TrainConfig:
    """The run behind the shipped handwriting reader `crohme-ar` (model/weights/MODEL_CARD.md):
    `crohme-ship`'s data, writer-disjoint split and real-hand synthetic set, the AR baseline alone for
    110 minutes (one stage; its token window 100), greedy and beam 5 scored on `valid` at the end. The
    shipped run took one thread beside a second run (`threads=1`); alone on two cores the same minutes
    buy more steps."""
    cfg = _crohme_ship()
    cfg.name, cfg.out = "crohme-ship-ar", "runs/crohme-ship-ar"
    cfg.model = switch_kind(cfg.model, "ar")
    cfg.model.max_len, cfg.max_minutes, cfg.eval.beams = 100, 110, (1, 5)
    return cfg


def _crohme_ship_more() -> TrainConfig:
    """The run behind the shipped GryphOne (model/weights/crohme-gryphone): a `crohme-ship` run trained on
    for 110 more minutes. Every weight and the vocabulary start from that run's EMA weights (`init=`),
    with a fresh cosine schedule from half its peak learning rate (5e-4); no stage 1. Chosen on `valid`
    over the run it continues and over GryphOne's second stage started from a 110-minute AR reader
    (BENCHMARKS.md). The shipped run took one thread beside a second run (`threads=1`)."""
    cfg = _crohme_ship()
    cfg.name, cfg.out, cfg.init = "crohme-ship-more", "runs/crohme-ship-more", "runs/crohme-ship/ckpt.pt"
    cfg.pretrain.max_minutes, cfg.max_minutes, cfg.optim.lr = 0, 110, 5e-4
    return cfg


def _crohme_ship_b() -> TrainConfig:
    """GryphOne's second stage started from another run's AR reader, for a second GryphOne that errs
    otherwise than `crohme-ship-more` (the shipped GryphOne ensemble, model/weights/MODEL_CARD.md): encoder
    and decoder from `python -m train.run --config crohme-ship-ar seed=1 out=runs/crohme-ship-ar-seed1`,
    110 minutes on `crohme-ship`'s data; `crohme-ship-b-more` trains it on. The shipped run took one
    thread beside a second run (`threads=1`)."""
    cfg = _crohme_ship()
    cfg.name, cfg.out, cfg.max_minutes = "crohme-ship-b", "runs/crohme-ship-b", 110
    cfg.model.encoder_init = cfg.model.decoder_init = "runs/crohme-ship-ar-seed1/ckpt.pt"
    return cfg


def _crohme_ship_b_more() -> TrainConfig:
    """`crohme-ship-b` trained on for 100 minutes as `crohme-ship-more` trains `crohme-ship` on (init=, a
    fresh cosine from 5e-4), with seed 1 (another order of the data)."""
    cfg = _crohme_ship_more()
    cfg.name, cfg.out, cfg.init = "crohme-ship-b-more", "runs/crohme-ship-b-more", "runs/crohme-ship-b/ckpt.pt"
    cfg.max_minutes, cfg.seed = 100, 1
    return cfg


def _print_cpu() -> TrainConfig:
    """Printed formulas on 2 CPU cores in under two hours, everything included: `crohme-cpu`'s model on
    64x512 images of printed formulas (`shards/printed-64x512`, made by benchmarks/print_cpu.sh:
    IM2LATEX-100K's validation formulas split by formula, plus the CROHME 2014 and HME100K captions as
    more training formulas, drawn by TeX where it is installed and by the layout engine otherwise,
    training images each with its own size, skew, blur, noise and JPEG; docs/datasets.md), labels as written
    (im2markup's spacing, which the printed metrics score against), no handwriting synthesis, 50 + 60
    minutes for GryphOne's two stages and the final evaluation with the image-to-markup metrics (BLEU-4,
    edit score, exact match, image exact match) on valid, test and test_varied. The one-stage
    recognizers take the whole budget and count tokens, not SAT positions:
    `model.kind=ar model.max_len=160 max_minutes=110` (likewise hvt; posformer keeps two stages with
    `model.encoder=vit model.max_len=160`)."""
    cfg = _crohme_cpu()
    cfg.name, cfg.data.root, cfg.out = "print-cpu", "shards/printed-64x512", "runs/print-cpu"
    cfg.eval.splits, cfg.eval.markup, cfg.data.normalize_labels = ("valid", "test", "test_varied"), "images", False
    cfg.model.max_len, cfg.pretrain.max_len = 120, 160
    cfg.pretrain.max_minutes, cfg.max_minutes = 50, 60
    cfg.synth = SynthConfig(count=0)
    return cfg


def _paper() -> TrainConfig:
    """The published recipe, with the official implementation's choices where the paper is silent
    (docs/training.md, docs/model.md): warm-up from 0.2 x lr over 100 steps, lr / 10 at epoch 50; the
    official decoder (fixed unit sin-cos positions, one table
    for symbols and modifiers, post-add blocks with normed projections), streams masked independently
    with t ~ U(0, 1), KL to a detached target, the keep-visible sampler evaluated beside the paper's,
    grad-norm clip 10, 100 warm-up steps. Start the encoder from DINO ViT-S/8 weights with
    `model.encoder_init=PATH` where you have them."""
    m = GryphOneConfig(patch=8, enc_dim=384, enc_depth=12, enc_heads=6, dec_dim=384,
                    dec_depth=5, dec_heads=8, dropout=0.3, max_len=150,
                    dec_pos="fixed", dec_shared_table=True, dec_block="official",
                    loss=LossConfig(T=50, rmml=True, mask_mode="independent", kl_detach=True))
    return TrainConfig(name="paper", out="runs/paper", model=m, batch_size=32, epochs=60, ckpt_every=2000,
                       eval=EvalConfig(splits=("valid", "test"), T=(1, 10, 50), samplers=("remask-keep", "remask"), seeds=10),
                       optim=OptimConfig(lr=1e-4, weight_decay=1e-3, warmup_steps=100, warmup_start=0.2, schedule="step", milestones=(50.0,), grad_clip=10.0),
                       data=DataConfig(root="shards/mathwriting", workers=6))


def _posformer_paper() -> TrainConfig:
    """PosFormer as published for a GPU (its public config): DenseNet-B, d_model 256, 3 decoder layers,
    FFN 1024, dropout 0.3, IAC, the position-forest branch, L2R + R2L training with bidirectional
    beam reranking (beam 10), batch 8, SGD (momentum 0.9) at lr 0.08, 300 epochs. CoMER's
    plateau-driven lr decay and scale augmentation are not here: cosine decay to 0.1 x lr instead,
    and `augment.prob` for augmentation (docs/model.md)."""
    m = PosFormerConfig(max_len=200, bidirectional=True)
    return TrainConfig(name="posformer-paper", out="runs/posformer-paper", model=m, batch_size=8, epochs=300,
                       ckpt_every=2000,
                       eval=EvalConfig(splits=("test2014", "test2016", "test2019"), beams=(1, 10)),
                       optim=OptimConfig(name="sgd", lr=0.08, weight_decay=1e-4, schedule="cosine"),
                       data=DataConfig(root="shards/crohme", workers=6, normalize_labels=True))


def _hvt_paper() -> TrainConfig:
    """HVT at the sizes chosen for the paper's description (model.hvt.recognizer.HVT_PAPER: a 32-layer ResNet, 6 ViT
    blocks, [CLS] initial state, coverage attention) on printed formulas (IM2LATEX-100K shards); the
    paper gives no optimizer settings: AdamW 3e-4 with warm-up and cosine decay, batch 32, 30 epochs."""
    m = HVTConfig(max_len=200, **HVT_PAPER)
    return TrainConfig(name="hvt-paper", out="runs/hvt-paper", model=m, batch_size=32, epochs=30, ckpt_every=2000,
                       compile_parts=True,
                       eval=EvalConfig(splits=("valid", "test"), beams=(1, 5)),
                       optim=OptimConfig(lr=3e-4, warmup_steps=1000, schedule="cosine"),
                       data=DataConfig(root="shards/im2latex", workers=6))


PRESETS = {"micro": _micro, "demo": _demo, "tiny": _tiny, "crohme-cpu": _crohme_cpu, "crohme-ship": _crohme_ship,
           "crohme-ship-ar": _crohme_ship_ar, "crohme-ship-more": _crohme_ship_more, "crohme-ship-b": _crohme_ship_b,
           "crohme-ship-b-more": _crohme_ship_b_more, "print-cpu": _print_cpu,
           "paper": _paper,
           "posformer-paper": _posformer_paper, "hvt-paper": _hvt_paper}


def preset(name: str) -> TrainConfig:
    if name not in PRESETS:
        raise ValueError(f"unknown config {name!r}; choose from {', '.join(PRESETS)}")
    return PRESETS[name]()


def _parse_value(text: str, current: object) -> object:
    if isinstance(current, bool) or current is None:
        low = text.lower()
        if low in ("true", "1", "yes", "on"):
            return True
        if low in ("false", "0", "no", "off"):
            return False
        if low in ("none", "auto"):
            return None
    if isinstance(current, tuple):
        parts = [p for p in text.split(",") if p]
        numeric = all(p.replace(".", "", 1).lstrip("-").isdigit() for p in parts)
        kind = type(current[0]) if current else (float if numeric and parts else str)
        sep_text = text.replace("x", ",") if kind in (int, float) else text
        return tuple(kind(p) for p in sep_text.split(",") if p)
    if isinstance(current, bool):
        raise ValueError(f"expected true/false, got {text!r}")
    if isinstance(current, int):
        value = float(text)
        if not value.is_integer():
            raise ValueError(f"expected an integer, got {text!r}")
        return int(value)
    if isinstance(current, float):
        return float(text)
    if isinstance(current, str):
        return text
    return ast.literal_eval(text)


def _type_reference(target, leaf: str) -> object:
    """The value an override of `leaf` is parsed like: its current value, except that a float field a
    preset set to a whole number (`max_minutes=50`) still takes fractions (`max_minutes=2.5`)."""
    current = getattr(target, leaf)
    default = next(f.default for f in dataclasses.fields(target) if f.name == leaf)
    if isinstance(default, float) and isinstance(current, int) and not isinstance(current, bool):
        return float(current)
    return current


def apply_overrides(cfg: TrainConfig, overrides: list[str]) -> TrainConfig:
    """Return a copy of cfg with `a.b.c=value` overrides applied; unknown keys are an error.

    `model.kind=NAME` is applied first, whatever its place: the preset's model settings that the new
    kind shares (encoder, widths, window) carry over, the rest take that kind's defaults, and a key
    the chosen kind does not have is an error listing the ones it has."""
    cfg = copy.deepcopy(cfg)
    pairs = []
    for item in overrides:
        if "=" not in item:
            raise ValueError(f"override {item!r} is not key=value")
        key, text = item.split("=", 1)
        key = key.strip()
        pairs.append((FLAT_KEYS.get(key, key), text))
    for key, text in pairs:
        if key == "model.kind":
            recognizer_class(text)  # a clear error for an unknown kind
            cfg.model = switch_kind(cfg.model, text)
    for key, text in pairs:
        if key != "model.kind":
            _set(cfg, key, text)
    inert = recognizer_class(cfg.model.kind).inert_keys(cfg.model)
    for key, _ in pairs:
        leaf = key.removeprefix("model.")
        if key.startswith("model.") and leaf in inert:
            raise ValueError(f"{key} does nothing for model.kind={cfg.model.kind} {inert[leaf]}")
    if cfg.compile_windows < 1:
        raise ValueError(f"compile_windows must be >= 1 (1: every step on the full window), got {cfg.compile_windows}")
    return cfg


def _set(cfg: TrainConfig, key: str, text: str) -> None:
    target: object = cfg
    *path, leaf = key.split(".")
    for part in path:
        if not dataclasses.is_dataclass(target) or not hasattr(target, part):
            raise ValueError(f"unknown config key {key!r}")
        target = getattr(target, part)
    if not dataclasses.is_dataclass(target) or leaf not in {f.name for f in dataclasses.fields(target)}:
        if path[:1] == ["model"]:
            raise ValueError(f"unknown config key {key!r} for model.kind={cfg.model.kind}; its keys: "
                             f"{', '.join(config_keys(cfg.model.kind))}")
        raise ValueError(f"unknown config key {key!r}")
    try:
        setattr(target, leaf, _parse_value(text, _type_reference(target, leaf)))
    except (ValueError, SyntaxError) as exc:
        raise ValueError(f"bad value for {key}: {text!r} ({exc})") from None


def to_dict(cfg: TrainConfig) -> dict:
    return dataclasses.asdict(cfg)


def stored_eval_splits(d: dict) -> tuple[str, ...]:
    """The evaluation splits of a stored config dict, in either spelling (FLAT_EVAL_KEYS)."""
    return tuple(d.get("eval", {}).get("splits", d.get("eval_splits", ("valid",))))


def _built(cls, values: dict):
    """A config group from its stored dict (JSON lists back to the tuples the fields hold)."""
    tuples = {f.name for f in dataclasses.fields(cls) if isinstance(getattr(cls(), f.name), tuple)}
    return cls(**{k: tuple(v) if k in tuples else v for k, v in values.items()})


def from_dict(d: dict) -> TrainConfig:
    d = dict(d)
    groups = {name: dict(d[name]) if isinstance(d.get(name), dict) else {} for name in ("eval", "optim", "data")}
    for flat, dotted in FLAT_KEYS.items():  # a config written before its keys were grouped
        if flat in d and not isinstance(d[flat], dict):  # ("data" was the shard root; now it is the group)
            group, key = dotted.split(".")
            groups[group][key] = d.pop(flat)
    d.update({name: _built(cls, groups[name]) for name, cls in
              (("eval", EvalConfig), ("optim", OptimConfig), ("data", DataConfig))})
    d["model"] = config_from_dict(d["model"])
    for name, cls in (("pretrain", PretrainConfig), ("augment", AugmentConfig), ("degrade", DegradeConfig),
                      ("synth", SynthConfig), ("log", LogConfig)):
        d[name] = _built(cls, d.get(name, {}))
    return TrainConfig(**d)
