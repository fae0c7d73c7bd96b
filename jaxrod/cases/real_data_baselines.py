"""Model-free baselines on the two measured data sets (STIFF-FLOP, DisMech soft limb), fitted on the
same training data as our models and scored with the same metric on the same windows, beside the
numbers the docs pages report for our fitted models. NumPy only: no simulation, no compilation.

STIFF-FLOP (:func:`stiff_flop_baselines`)
    Training samples: those of our fit (:data:`jaxrod.cases.stiff_flop_calibration.TRAIN`, NoLoad
    0-29 s, the 581 rows ``rec.window(0, 29)[:n + 1]``). Inputs: the three gauge pressures [bar]
    smoothed as the model's are (TMTDyn's 9-sample centred mean). For the *fit* the smoothing runs
    over the training slice alone, so no held-out sample enters it (our model's fit smooths the
    whole recording first: its last four training inputs see up to 0.2 s past 29 s, all pairs at
    rest there; the baseline fitted either way agrees within 0.0004 mm on every window, measured).
    For the *predictions* the inputs are the whole recording's smoothed pressures, exactly those the
    model is fed. Targets: the tip position [m]. Baselines: the rest tip (README's "constant
    shape"), the mean training tip (:func:`~jaxrod.calibrate.baselines.constant_baseline`) and the
    pressure-only linear map ``tip = W [p0, p1, p2, 1]`` (tip loads ignored, no dynamics).
    Scored with TMTDyn's metric (:func:`jaxrod.datasets.stiff_flop.tip_error`) on every window of
    README's table (dynamic: ``rec.window(t0, t1)[:n + 1]`` as the model's runs; static: the rows
    of the evaluation times), on the whole Load1/Load2 recordings and on Load2 after TMTDyn's window.

Soft limb (:func:`soft_limb_baselines`, :func:`tip_extrapolation_baselines`)
    :func:`soft_limb_baselines` scores the original figure, README's "held-out tip" in the
    all-tags alignment (tag 109 out of the loss and of the base-angle fit but setting the scale and
    the tag arc lengths; mean distance of the predicted and measured tag 109 over all 170 valid
    frames, mm, in :func:`jaxrod.datasets.soft_limb.derive_alignment`'s ``"all-tags"`` alignment).
    The tip-free figures and their baselines (same alignment, same frames, each row saying whether
    it uses tag 109) are :func:`tip_extrapolation_baselines`, recorded with the model by
    ``benchmarks/soft_limb_tip_free.py``. Baselines with no model:
    continue the 107 -> 108 chord by its own length (no tip information at all) or by the mean
    108 -> 109 length over the training frames (all 170 for README's figure: the same tag-109
    information our held-out fit receives through the scale and the tag arc lengths; the mean
    length *is* the fit's 108 -> 109 arc-length spacing). A stricter frame split (first half of the
    valid frames trains, second half is scored) adds the constant tip, a linear map from tags
    102-108 to the tip and a linear map from the four SMA PWM duties to the tip; our model was not
    run on that split.
"""

from __future__ import annotations

import numpy as np

from ..calibrate.baselines import (
    chord_extrapolation,
    constant_baseline,
    linear_map_baseline,
    mean_distance,
)
from ..datasets import stiff_flop as sf

__all__ = [
    "LIMB_MODEL_README",
    "STIFF_FLOP_MODEL_README",
    "STIFF_FLOP_PUBLISHED",
    "format_soft_limb",
    "format_stiff_flop",
    "soft_limb_baselines",
    "tip_extrapolation_baselines",
    "stiff_flop_baselines",
]

#: training window of our STIFF-FLOP fit (same as ``stiff_flop_calibration.TRAIN``; repeated here
#: so this module needs no JAX; a test checks that they agree)
TRAIN = ("NoLoad", 0.0, 29.0)
PRESSURE_UNIT = 1e5  # Pa per bar: a fixed unit, not a statistic of the data

#: our fitted model's errors [mm] as docs/papers/tmtdyn-stiff-flop.md reports them today ("STIFF-FLOP on measured data",
#: table produced by ``jaxrod calibrate stiff-flop``, jaxrod.scenes.stiff_flop.FITTED values); not re-run.
STIFF_FLOP_MODEL_README = {
    ("dynamic", "NoLoad", "7-29 s"): 1.50,
    ("dynamic", "NoLoad", "29-54 s"): 3.50,
    ("dynamic", "Load1", "5-33 s"): 6.28,
    ("dynamic", "Load2", "5-9.7 s"): 7.32,
    ("static", "NoLoad", "4 times < 29 s"): 1.84,
    ("static", "NoLoad", "5 times > 29 s"): 4.40,
    ("static", "Load1", "11 times"): 9.65,
    ("static", "Load2", "7 times"): 12.08,
}
STIFF_FLOP_MODEL_SOURCE = ("docs/papers/tmtdyn-stiff-flop.md 'STIFF-FLOP on measured data' table "
                           "(jaxrod calibrate stiff-flop; not re-run)")
#: TMTDyn's published errors [mm] (the STIFF-FLOP docs page / spec 9.5) by (kind, recording); whole recordings, its own
#: windows and inputs: not comparable (see docs/papers/tmtdyn-stiff-flop.md)
STIFF_FLOP_PUBLISHED = {
    ("dynamic", "NoLoad"): "3.5 ROM / 3.0 EBA (7-54 s)",
    ("static", "NoLoad"): "6.0 ROM / 5.2 EBA (all 9 times)",
    ("dynamic", "Load1"): "9.0 ROM (tip load, pooled)",
    ("dynamic", "Load2"): "9.0 ROM (tip load, pooled)",
    ("static", "Load1"): "12.5 ROM (tip load, pooled)",
    ("static", "Load2"): "12.5 ROM (tip load, pooled)",
}
#: soft limb: the held-out tip figure of our fit (docs/papers/soft-limb.md, issue 12; README before the docs site)
LIMB_MODEL_README = 1.94
LIMB_MODEL_SOURCE = ("docs/papers/soft-limb.md soft-limb table (jaxrod calibrate soft-limb --alignment all-tags, tip "
                     "out of the loss but setting the scale; not re-run); tip-free figures: "
                     "benchmarks/results/soft_limb_tip_free.json")
LIMB_PUBLISHED = "DisMech 2.9 (not comparable: other frames, unstated scale)"

#: dynamic windows: the docs table's four, then the ones it lacks
_DYNAMIC_EXTRA = (
    ("NoLoad", 7.0, 54.0, "mixed (7-29 s in-sample)"),
    ("NoLoad", 29.0, 54.65, "held-out"),
    ("Load1", 0.0, 55.4, "held-out"),
    ("Load2", 0.0, 39.7, "held-out"),
    ("Load2", 9.7, 39.7, "held-out"),
)
_DYNAMIC = (
    ("NoLoad", 7.0, 29.0, "in-sample"),
    ("NoLoad", 29.0, 54.0, "held-out"),
    ("Load1", 5.0, 33.0, "held-out"),
    ("Load2", 5.0, 9.7, "held-out"),
) + _DYNAMIC_EXTRA


def _window_rows(rec, t0, t1):
    n = int(round((t1 - t0) / sf.SAMPLE_DT))
    return rec.window(t0, t1)[: n + 1]


SMOOTHINGS = ("centred", "trailing")


def stiff_flop_baselines(recordings=None, smoothing="centred") -> dict:
    """Fit the STIFF-FLOP baselines on the training samples and score every window (module
    docstring). ``recordings``: ``{name: Recording}`` (default: read the three). ``smoothing``:
    the pressures as the model receives them, ``"centred"`` (TMTDyn's 9-sample centred mean, the
    default) or ``"trailing"`` (the causal 9-sample mean of ``jaxrod calibrate stiff-flop
    --smoothing trailing``). Returns a dict: ``train`` (window, rows), ``W`` (3 x 4, tip [m] per
    bar and offset), ``mean_tip`` [m], ``rows`` (one dict per window: kind, recording, window,
    split, n, rest_tip_mm, constant_mm, linear_map_mm, model_mm (README or ``None``), published)."""
    if smoothing not in SMOOTHINGS:
        raise ValueError(f"smoothing must be one of {SMOOTHINGS}, got {smoothing!r}")
    smooth = sf.smooth_moving_average if smoothing == "centred" else sf.trailing_moving_average
    recs = recordings or {n: sf.read_recording(n) for n in sf.RECORDINGS}
    name, t0, t1 = TRAIN
    train = recs[name]
    tr = _window_rows(train, t0, t1)
    u_train = smooth(train.pressures[tr]) / PRESSURE_UNIT  # slice only: no look-ahead
    y_train = train.tip[tr]
    lin, W = linear_map_baseline(u_train, y_train)
    const, mean_tip = constant_baseline(y_train)
    inputs = {n: smooth(r.pressures) / PRESSURE_UNIT for n, r in recs.items()}

    def score(rec, rows):
        y = rec.tip[rows]
        u = inputs[rec.name][rows]
        rest = np.broadcast_to(rec.tip[0], y.shape)
        return (1e3 * mean_distance(rest, y), 1e3 * mean_distance(const(u), y), 1e3 * mean_distance(lin(u), y))

    out = []

    def add(kind, rec_name, window, split, rows):
        r0, c, l = score(recs[rec_name], rows)
        model = STIFF_FLOP_MODEL_README.get((kind, rec_name, window))
        out.append(dict(kind=kind, recording=rec_name, window=window, split=split, n=int(len(rows)),
                        rest_tip_mm=r0, constant_mm=c, linear_map_mm=l, model_mm=model,
                        published=STIFF_FLOP_PUBLISHED.get((kind, rec_name), "")))

    for rec_name, a, b, split in _DYNAMIC:
        add("dynamic", rec_name, f"{a:g}-{b:g} s", split, _window_rows(recs[rec_name], a, b))
    for rec_name in sf.RECORDINGS:
        rec = recs[rec_name]
        at = np.asarray(sf.STATIC_TIMES[rec_name])
        if rec_name == name:
            groups = [("in-sample", at < t1, f"{int((at < t1).sum())} times < {t1:g} s"),
                      ("held-out", at >= t1, f"{int((at >= t1).sum())} times > {t1:g} s")]
        else:
            groups = [("held-out", at == at, f"{at.size} times")]
        for split, sel, label in groups:
            add("static", rec_name, label, split, rec.rows(at[sel]))
    kind = "centred" if smoothing == "centred" else "trailing (causal)"
    return dict(train=dict(recording=name, window=f"{t0:g}-{t1:g} s", n=int(tr.size),
                           inputs=f"p0 p1 p2 [bar], 9-sample {kind} mean over the training slice"),
                W=W.tolist(), mean_tip=mean_tip.tolist(), rows=out)


def _f(x):
    return "-" if x is None else f"{x:.2f}"


def _winner(r):
    """Which of our model and the best fitted baseline is lower (``None`` without a model number)."""
    if r["model_mm"] is None:
        return ""
    best = min(r["constant_mm"], r["linear_map_mm"])
    return "model" if r["model_mm"] < best else ("linear map" if r["linear_map_mm"] <= r["constant_mm"] else "constant")


def format_stiff_flop(res: dict) -> str:
    """Markdown table of :func:`stiff_flop_baselines` (mm, TMTDyn's metric); rows that carry
    ``paper_model_mm`` (the unfitted Table-2 model, simulated elsewhere) get that column too."""
    paper = any(r.get("paper_model_mm") is not None for r in res["rows"])
    lines = ["| study | recording | window | split | n | rest tip | constant (train mean) | linear map p->tip "
             + ("| paper model, unfitted " if paper else "")
             + "| our model (README) | lower | TMTDyn published |",
             "|---|---|---|---|---|---|---|---|---|---|---|" + ("---|" if paper else "")]
    for r in res["rows"]:
        lines.append(f"| {r['kind']} | {r['recording']} | {r['window']} | {r['split']} | {r['n']} | "
                     f"{r['rest_tip_mm']:.2f} | {r['constant_mm']:.2f} | {r['linear_map_mm']:.2f} | "
                     + (f"{_f(r.get('paper_model_mm'))} | " if paper else "")
                     + f"{_f(r['model_mm'])} | {_winner(r)} | {r['published']} |")
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# soft limb
# ---------------------------------------------------------------------------------------------
_PWM = ("pwm_duty_limb0_fwd", "pwm_duty_limb0_rev", "pwm_duty_limb1_fwd", "pwm_duty_limb1_rev")


def soft_limb_baselines(data=None) -> dict:
    """The soft-limb tip (tag 109) baselines (module docstring). ``data``: a
    :class:`~jaxrod.datasets.soft_limb.SoftLimbData` (default: read the shared file). Distances in mm
    in the all-tags alignment (all valid frames and tag 109 set the scale, as in README's original figure)."""
    from ..datasets.soft_limb import derive_alignment, read_soft_limb_csv, resolve_data_path, select_frames

    if data is None:
        data = read_soft_limb_csv(resolve_data_path(None))
    rows = select_frames(data)
    al = derive_alignment(data, alignment="all-tags")
    T = al.to_metres(data.tags_px[rows])  # (F, 9, 2) [m]
    p107, p108, tip = T[:, 6], T[:, 7], T[:, 8]
    F = len(rows)

    def mm(pred, sel=slice(None)):
        return 1e3 * mean_distance(pred[sel], tip[sel])

    own = chord_extrapolation(p107, p108)
    length_all = float(np.mean(np.linalg.norm(tip - p108, axis=1)))
    by_mean = chord_extrapolation(p107, p108, length_all)
    out = [dict(evaluation=f"tag 109, all {F} valid frames (all-tags alignment: tag 109 sets the scale)",
                split="held-out tag; frames all in training", n=F,
                chord_own_mm=mm(own), chord_mean_mm=mm(by_mean), chord_mean_length_mm=1e3 * length_all,
                constant_mm=None, linear_tags_mm=None, linear_pwm_mm=None,
                model_mm=LIMB_MODEL_README, published=LIMB_PUBLISHED)]
    # stricter: first half of the valid frames trains, second half is scored
    k = F // 2
    tr, te = slice(0, k), slice(k, F)
    length_tr = float(np.mean(np.linalg.norm(tip[tr] - p108[tr], axis=1)))
    const, _ = constant_baseline(tip[tr])
    tags = T[:, 1:8].reshape(F, -1)  # tags 102-108 (x, z)
    lin_t, _ = linear_map_baseline(tags[tr], tip[tr])
    pwm = np.stack([data.columns[c][rows] for c in _PWM], axis=1)
    lin_p, _ = linear_map_baseline(pwm[tr], tip[tr])
    out.append(dict(evaluation=f"tag 109, frames {k}-{F - 1} (trained on valid frames 0-{k - 1})",
                    split="held-out frames", n=F - k,
                    chord_own_mm=mm(own, te), chord_mean_mm=mm(chord_extrapolation(p107, p108, length_tr), te),
                    chord_mean_length_mm=1e3 * length_tr,
                    constant_mm=mm(const(F), te), linear_tags_mm=mm(lin_t(tags), te),
                    linear_pwm_mm=mm(lin_p(pwm), te), model_mm=None, published=""))
    return dict(frames=F, scale_mm_per_px=1e3 * al.scale, rows=out)


def tip_extrapolation_baselines(targets, alignment) -> list:
    """Model-free predictions of the tip tag (109) from tags 107 and 108 of the same frame, in the
    alignment ``alignment`` (a :class:`~jaxrod.datasets.soft_limb.Alignment`) of ``targets``
    ``(F, 9, 2)`` [m], each scored like the model's held-out tip (distance to the measured tag 109,
    mm, mean and max over the ``F`` frames). Each row says which information it uses:

    * ``chord_own``: continue the 107 -> 108 chord by its own length (tags 107-108 of the frame);
    * ``chord_nominal``: by the nominal tag spacing 0.15 m / 8 (known geometry);
    * ``chord_model_gap``: by the arc-length gap ``s_109 - s_108`` the model's tag positions assume
      (the alignment's; tip-free unless the alignment uses tag 109);
    * ``chord_mean_tip_gap``: by the mean measured 108 -> 109 length over the ``F`` frames (USES
      TAG 109: an upper reference, not a tip-free prediction).

    The scale is ``alignment``'s, so with the tip-free alignment only the last row uses tag 109."""
    from ..datasets.soft_limb import NOMINAL_TAG_SPACING

    T = np.asarray(targets, dtype=float)
    if T.ndim != 3 or T.shape[1:] != (9, 2):
        raise ValueError(f"targets must be (F, 9, 2) tag positions [m], got shape {T.shape}")
    p107, p108, tip = T[:, 6], T[:, 7], T[:, 8]
    s = np.asarray(alignment.tag_arclength, dtype=float)
    gap = float(s[8] - s[7])
    mean_gap = float(np.mean(np.linalg.norm(tip - p108, axis=1)))
    scale_note = ("scale from tags 101-108" if not alignment.uses_tip
                  else "scale uses tag 109 (all-tags alignment)")
    rows = [
        ("chord_own", "continue the 107->108 chord by its own length", None, False,
         "tags 107-108 of the frame"),
        ("chord_nominal", f"continue the 107->108 chord by the nominal spacing "
         f"{NOMINAL_TAG_SPACING * 1e3:.2f} mm", NOMINAL_TAG_SPACING, False,
         "tags 107-108 and the nominal geometry"),
        ("chord_model_gap", f"continue the 107->108 chord by the model's 108->109 arc gap "
         f"{gap * 1e3:.2f} mm", gap, alignment.uses_tip,
         f"tags 107-108 and the alignment's tag arc lengths ({alignment.alignment})"),
        ("chord_mean_tip_gap", f"continue the 107->108 chord by the mean measured 108->109 length "
         f"{mean_gap * 1e3:.2f} mm", mean_gap, True,
         f"tags 107-108 and tag 109 of all {len(T)} frames (USES THE TIP)"),
    ]
    out = []
    for key, what, length, uses_tip, info in rows:
        pred = chord_extrapolation(p107, p108, length)
        d = 1e3 * np.linalg.norm(pred - tip, axis=1)
        out.append(dict(key=key, baseline=what, length_mm=None if length is None else 1e3 * length,
                        uses_tip=bool(uses_tip or alignment.uses_tip), information=f"{info}; {scale_note}",
                        mean_mm=float(d.mean()), max_mm=float(d.max()), n=int(len(T))))
    return out


def format_soft_limb(res: dict) -> str:
    """Markdown table of :func:`soft_limb_baselines` (mm, mean tip distance)."""
    lines = ["| evaluation | split | n | chord 107->108, own length | chord, mean 108->109 length (training) "
             "| constant (train mean) | linear map tags 102-108 -> tip | linear map PWM -> tip "
             "| our model (README) | published |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in res["rows"]:
        lines.append(f"| {r['evaluation']} | {r['split']} | {r['n']} | {r['chord_own_mm']:.2f} | "
                     f"{r['chord_mean_mm']:.2f} ({r['chord_mean_length_mm']:.2f} mm) | {_f(r['constant_mm'])} | "
                     f"{_f(r['linear_tags_mm'])} | {_f(r['linear_pwm_mm'])} | {_f(r['model_mm'])} | {r['published']} |")
    return "\n".join(lines)
