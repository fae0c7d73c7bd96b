"""Displacement scale of the figures and GIFs (:mod:`jaxrod.plot`) and the CLI's ``--exaggerate``.

No simulation runs here: a 1 m cantilever along x whose tip moves by 1 cm in z (the size of the
``cantilever-a1`` example's motion) is built from the first-mode-like shape ``(x/L)^2``, and the
tests read the texts and line data of the figures' artists.

* The automatic factor follows the documented rule, worked out here by hand: the largest round
  factor (1, 2, 5, 10, ...) keeping the drawn displacement within 25 % of the body's extent, 1
  when the motion already reaches 10 % of it; a 1 cm motion of a 1 m rod gets 20.
* The factor is written on the figure and in every GIF frame's title; drawn shapes are
  ``reference + factor * displacement``; the tip-displacement panel stays in true millimetres.
* A model with a floor stays at true scale unless a factor is asked for.
* Every axis label of the 3-D panels and of a two-panel GIF frame lies inside the figure.
"""

import argparse
import contextlib
import io
from types import SimpleNamespace

import numpy as np
import pytest
from matplotlib.text import Text

from jaxrod import plot
from jaxrod.cli import _exaggeration, main
from jaxrod.models.der.contact import FloorContact

L, N = 1.0, 21


def _rod_traj(amplitude, n_times=41):
    """A 1 m rod along x vibrating in z with tip amplitude ``amplitude`` [m] over one period."""
    x = np.linspace(0.0, L, N)
    t = np.linspace(0.0, 2.0, n_times)
    pos = np.zeros((n_times, N, 3))
    pos[..., 0] = x
    pos[..., 2] = amplitude * np.sin(np.pi * t)[:, None] * (x / L)[None] ** 2
    return SimpleNamespace(times=t, positions=pos)


def _texts(fig):
    return [t.get_text() for t in fig.findobj(Text)]


def _xz_axes(fig):
    (ax,) = [a for a in fig.axes if a.get_title().startswith("centerline, x-z projection")]
    return ax


@pytest.mark.parametrize(
    "disp, factor",
    [
        (0.01, 20.0),  # 0.25 / 0.01 = 25 -> 20 (the a1 example)
        (0.001, 200.0),  # 250 -> 200
        (0.0125, 20.0),  # exactly 25 % at 20
        (0.03, 5.0),  # 8.3 -> 5
        (0.09, 2.0),  # 2.8 -> 2
        (0.1, 1.0),  # reaches 10 %: true scale
        (0.4, 1.0),
        (0.0, 1.0),  # nothing moves
        (1e-12, 1.0),  # round-off, not motion
    ],
)
def test_auto_rule(disp, factor):
    tr = _rod_traj(disp)
    assert plot.displacement_scale(tr.positions, tr.positions[0]) == factor


def test_a1_sized_motion_is_magnified_and_said(tmp_path):
    tr = _rod_traj(0.01)
    pos, t = tr.positions, tr.times
    fig = plot.plot_trajectory(tr, tmp_path / "a.png", title="a1")
    assert fig.exaggeration == 20.0
    assert sum("displacement x 20" in s for s in _texts(fig)) == 2  # the x-z and 3-D panels
    # the drawn shapes: reference + 20 x displacement (the final frame and the furthest one)
    ax = _xz_axes(fig)
    final = [ln for ln in ax.lines if ln.get_label() == f"t = {t[-1]:.3g} s"][0].get_xydata()
    np.testing.assert_allclose(final, (pos[0] + 20.0 * (pos[-1] - pos[0]))[:, [0, 2]], rtol=0, atol=1e-15)
    (far,) = [ln for ln in ax.lines if "furthest" in ln.get_label()]
    np.testing.assert_allclose(far.get_xydata()[-1], [L, 20.0 * 0.01], rtol=0, atol=1e-12)  # t = 0.5 s: the crest
    (ax3,) = [a for a in fig.axes if a.name == "3d"]
    z3 = ax3.lines[1].get_data_3d()[2]
    np.testing.assert_allclose(z3, 20.0 * pos[-1, :, 2], rtol=0, atol=1e-15)
    # the time series stays in true units: millimetres of the true tip motion
    ax_t = fig.axes[0]
    assert ax_t.get_ylabel() == "tip displacement [mm]"
    (uz,) = [ln for ln in ax_t.lines if ln.get_label() == "$u_z$"]
    np.testing.assert_allclose(uz.get_ydata(), 10.0 * np.sin(np.pi * t), rtol=0, atol=1e-12)


def test_large_motion_and_explicit_factors():
    big = _rod_traj(0.3)
    fig = plot.plot_trajectory(big)
    assert fig.exaggeration == 1.0
    assert not any("displacement x" in s for s in _texts(fig))
    # true scale draws the positions themselves
    np.testing.assert_array_equal(_xz_axes(fig).lines[1].get_xydata(), big.positions[-1][:, [0, 2]])
    small = _rod_traj(0.01)
    for given in (1, 3.5, 1000):
        fig = plot.plot_trajectory(small, exaggeration=given)
        assert fig.exaggeration == given
        final = _xz_axes(fig).lines[1].get_xydata()[:, 1]
        np.testing.assert_allclose(final, given * small.positions[-1, :, 2], rtol=0, atol=1e-12)
    assert not any("displacement x" in s for s in _texts(plot.plot_trajectory(small, exaggeration=1)))


def test_floor_scenes_stay_at_true_scale():
    """A magnified shape would sink into the floor, which is drawn where it is."""
    tr = _rod_traj(0.01)
    model = SimpleNamespace(contacts=(FloorContact(offset=-0.05),))
    assert plot.displacement_scale(tr.positions, tr.positions[0], model=model) == 1.0
    assert plot.plot_trajectory(tr, model=model).exaggeration == 1.0
    assert plot.rods._animation(tr, max_frames=2, model=model).exaggeration == 1.0
    assert plot.plot_trajectory(tr, model=model, exaggeration=10).exaggeration == 10.0  # asked for


@pytest.mark.parametrize("bad", ["big", "AUTO", 0, -2.0, float("nan"), float("inf"), True, None])
def test_bad_exaggeration(bad):
    tr = _rod_traj(0.01)
    for call in (
        lambda: plot.plot_trajectory(tr, exaggeration=bad),
        lambda: plot.plot_static(tr.positions[-1], reference_positions=tr.positions[0], exaggeration=bad),
        lambda: plot.rods._animation(tr, exaggeration=bad),
        lambda: plot.displacement_scale(tr.positions, tr.positions[0], bad),
    ):
        with pytest.raises(ValueError, match=r"exaggeration must be 'auto' or a finite number > 0.*got"):
            call()


def test_gif_frames_say_the_factor(tmp_path):
    tr = _rod_traj(0.01)
    pos = tr.positions
    anim = plot.rods._animation(tr, max_frames=5, title="a1")
    assert anim.exaggeration == 20.0
    line = anim.animated[0]
    for i in anim.idx:
        anim.set_frame(i)
        assert anim.ttl.get_text() == f"a1: t = {tr.times[i]:.3f} s\nshape: displacement x 20"
        np.testing.assert_allclose(line.get_xydata(), (pos[0] + 20.0 * (pos[i] - pos[0]))[:, [0, 2]], rtol=0,
                                   atol=1e-15)
    anim = plot.rods._animation(tr, max_frames=2, exaggeration=1)
    anim.set_frame(anim.idx[-1])
    assert "displacement" not in anim.ttl.get_text()
    path = tmp_path / "a.gif"
    assert plot.animate_trajectory(tr, path, max_frames=3, dpi=40) == path


def test_static_figure_scale():
    tr = _rod_traj(0.01)
    rest, bent = tr.positions[0], tr.positions[10]  # tip 1 cm up
    fig = plot.plot_static(bent, reference_positions=rest)
    assert fig.exaggeration == 20.0
    assert sum("displacement x 20" in s for s in _texts(fig)) == 2
    drawn = [ln for ln in _xz_axes(fig).lines if ln.get_label() == "equilibrium"][0].get_xydata()
    np.testing.assert_allclose(drawn, (rest + 20.0 * (bent - rest))[:, [0, 2]], rtol=0, atol=1e-15)
    # no reference: nothing to measure a displacement from
    assert plot.plot_static(bent).exaggeration == 1.0
    with pytest.raises(ValueError, match="needs reference_positions"):
        plot.plot_static(bent, exaggeration=5)


def _inside(fig, bb):
    return fig.bbox.x0 <= bb.x0 and bb.x1 <= fig.bbox.x1 and fig.bbox.y0 <= bb.y0 and bb.y1 <= fig.bbox.y1


def _label_boxes(fig):
    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    return [(a.axis_name, a.label.get_window_extent(r)) for ax in fig.axes if ax.name == "3d"
            for a in (ax.xaxis, ax.yaxis, ax.zaxis)]


def test_3d_axis_labels_inside_the_figure():
    tr = _rod_traj(0.01)
    figs = [
        plot.plot_trajectory(tr, title="a1"),
        plot.plot_static(tr.positions[10], reference_positions=tr.positions[0]),
        plot.rods._animation(tr, view="3d").fig,
    ]
    for fig in figs:
        boxes = _label_boxes(fig)
        assert len(boxes) == 3
        for name, bb in boxes:
            assert _inside(fig, bb), f"{name} label at {bb.extents}, figure {fig.bbox.extents}"


def test_gif_labels_inside_the_frame():
    """Two equal-aspect panels side by side (motion along y too): every label and the two-line
    title lie inside the frame as laid out for the GIF."""
    tr = _rod_traj(0.01)
    tr.positions[..., 1] = 0.5 * tr.positions[..., 2] + 0.05 * np.sin(np.linspace(0, 6, N))
    anim = plot.rods._animation(tr, title="helix-b1")
    assert len(anim.fig.axes) == 2
    anim.freeze(80)
    r = anim.fig.canvas.get_renderer()
    for ax in anim.fig.axes:
        for label in (ax.xaxis.label, ax.yaxis.label):
            bb = label.get_window_extent(r)
            assert _inside(anim.fig, bb), f"{label.get_text()} at {bb.extents}, frame {anim.fig.bbox.extents}"
    assert anim.ttl.get_text().count("\n") == 1 and _inside(anim.fig, anim.ttl.get_window_extent(r))


def test_long_title_is_wrapped_inside_the_figure():
    fig = plot.plot_static(_rod_traj(0.01).positions[10], title="a long scene description, " * 8)
    fig.canvas.draw()
    bb = fig._suptitle.get_window_extent(fig.canvas.get_renderer())
    assert fig.bbox.x0 <= bb.x0 and bb.x1 <= fig.bbox.x1


def test_cli_converter():
    assert _exaggeration("auto") == "auto"
    assert _exaggeration("1") == 1.0 and _exaggeration("20") == 20.0 and _exaggeration("2.5") == 2.5
    for bad in ("0", "-3", "nan", "inf", "x20", "", "Auto"):
        with pytest.raises(argparse.ArgumentTypeError, match=r"must be 'auto' or a number > 0 \(1: true scale\)"):
            _exaggeration(bad)
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        assert main(["simulate", "cantilever-a1", "--exaggerate", "0"]) == 2
    assert "--exaggerate" in err.getvalue() and "'auto'" in err.getvalue()
