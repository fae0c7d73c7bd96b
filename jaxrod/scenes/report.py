"""``[output] quantities``: what a run of a model file reports, one line per quantity.

Each entry of :data:`QUANTITIES` maps a name to ``(kinds, function)``: the model kinds it applies
to (``"system"`` for rigid-body systems, ``"rod"`` for rods and scenes, ``"hybrid"`` for rods
attached to bodies) and a function
``(model, traj) -> str`` of the trajectory (arrays from the run, no new simulation).
"""

from __future__ import annotations

__all__ = ["QUANTITIES", "default_quantities", "summary_lines"]


def _vec(v):
    return "(" + ", ".join(f"{float(x):+.6f}" for x in v) + ")"


def _positions(loaded, traj):
    import numpy as np

    pos = np.asarray(traj.positions)[-1]
    if loaded.body_names:  # the body centres come last (after the rod nodes of a hybrid system)
        bodies = pos[len(pos) - len(loaded.body_names):]
        return "\n".join(f"position  {n:<12} {_vec(p)} m" for n, p in zip(loaded.body_names, bodies))
    return f"position  tip          {_vec(pos[-1])} m"


def _energy(loaded, traj):
    import numpy as np

    e = np.asarray(_energy_jit(loaded.model, traj.positions, traj.frames, traj.v))
    drift = np.max(np.abs(e - e[0]))
    return f"energy    {e[0]:+.9e} J at start, {e[-1]:+.9e} J at the end, max |E - E0| = {drift:.3e} J"


def _constraint_error(loaded, traj):
    import numpy as np

    g = np.asarray(_constraints_jit(loaded.model, traj.positions, traj.frames))
    worst = float(np.max(np.abs(g))) if g.size else 0.0
    return f"joints    max |constraint| over the run {worst:.3e} (m or rad)"


def _tip(loaded, traj):
    import numpy as np

    tip = np.asarray(traj.tip)
    return f"tip       {_vec(tip[-1])} m at the end, moved {np.linalg.norm(tip[-1] - tip[0]):.6e} m"


#: quantity name -> (model kinds, ``(loaded, traj) -> str``)
QUANTITIES = {
    "positions": (("system", "rod", "hybrid"), _positions),
    "energy": (("system",), _energy),
    "constraint_error": (("system",), _constraint_error),
    "tip": (("rod",), _tip),
}


def default_quantities(kind):
    return {"system": ("positions", "energy", "constraint_error"), "hybrid": ("positions",)}.get(kind, ("tip",))


def summary_lines(loaded, traj):
    """The report lines of ``loaded.quantities`` for trajectory ``traj``."""
    return [QUANTITIES[q][1](loaded, traj) for q in loaded.quantities]


def _energy_jit(model, positions, frames, v):
    # one compiled call: evaluated op by op the report compiled ~20 small programs per run
    import equinox as eqx

    return eqx.filter_jit(_energy_of)(model, positions, frames, v)


def _constraints_jit(model, positions, frames):
    import equinox as eqx

    return eqx.filter_jit(_constraints_of)(model, positions, frames)


def _energy_of(model, positions, frames, v):
    return model.energy(positions, frames, v)


def _constraints_of(model, positions, frames):
    return model.constraint_values(positions, frames)
