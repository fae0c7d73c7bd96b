"""Rigid bodies: mass, inertia tensor and initial pose/velocity (the parameters of a body).

The dynamics live in :mod:`jaxrod.system.multibody`; a :class:`RigidBody` only holds data and
checks it when built.
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ..geometry import quat_to_rotation
from ..validation import as_floats


def _f64(x):
    return jnp.asarray(x, dtype=jnp.float64)


def _concrete(x):
    """Host copy of ``x`` for validation, or ``None`` under tracing (checks run eagerly only)."""
    if isinstance(x, jax.core.Tracer):
        return None
    return np.asarray(x, dtype=float)


def _check_vector(owner, name, value, size):
    v = _concrete(value)
    if v is None:
        return
    if v.shape != (size,) or not np.all(np.isfinite(v)):
        raise ValueError(f"{owner}.{name} must be {size} finite numbers, got {np.asarray(value).tolist()!r}")


class RigidBody(eqx.Module):
    """A rigid body: mass properties about its centre of mass and its initial state.

    The body frame is attached at the centre of mass; ``orientation`` maps body-frame vectors to
    the world frame (``x_world = position + R @ x_body``, ``R = quat_to_rotation(orientation)``).

    Attributes:
        name: unique name joints refer to (static).
        mass: mass [kg], finite and > 0. Numbers are SI values: a unit string (``"1 kg"``) is
            refused naming the parameter (unit strings are read in model files only).
        inertia: ``(3, 3)`` inertia tensor about the centre of mass in the BODY frame [kg m^2]:
            symmetric positive definite, principal moments satisfying the triangle inequality
            ``I1 + I2 >= I3`` (any real mass distribution does). A ``(3,)`` input is taken as the
            diagonal.
        position: ``(3,)`` initial centre-of-mass position in the world frame [m].
        orientation: ``(4,)`` initial orientation, scalar-first quaternion ``(w, x, y, z)``; any
            non-zero quaternion is accepted and normalised.
        velocity: ``(3,)`` initial centre-of-mass velocity in the world frame [m/s].
        angular_velocity: ``(3,)`` initial angular velocity in the BODY frame [rad/s].
        force: ``(3,)`` constant force at the centre of mass, world frame [N] (gravity is a system
            setting, not included here).
        torque: ``(3,)`` constant torque, world frame [N m].
    """

    name: str = eqx.field(static=True)
    mass: jax.Array
    inertia: jax.Array
    position: jax.Array
    orientation: jax.Array
    velocity: jax.Array
    angular_velocity: jax.Array
    force: jax.Array
    torque: jax.Array

    def __init__(self, name, mass, inertia, position=(0.0, 0.0, 0.0), orientation=(1.0, 0.0, 0.0, 0.0),
                 velocity=(0.0, 0.0, 0.0), angular_velocity=(0.0, 0.0, 0.0), force=(0.0, 0.0, 0.0),
                 torque=(0.0, 0.0, 0.0)):
        if not isinstance(name, str) or not name or name == "world":
            raise ValueError(f"RigidBody.name must be a non-empty string other than 'world', got {name!r}")
        for field, value, unit in (("mass", mass, "kg"), ("inertia", inertia, "kg m^2"), ("position", position, "m"),
                                   ("orientation", orientation, ""), ("velocity", velocity, "m/s"),
                                   ("angular_velocity", angular_velocity, "rad/s"), ("force", force, "N"),
                                   ("torque", torque, "N m")):
            as_floats(f"RigidBody({name!r}).{field}", value, unit)  # a unit string: named, see UNIT_STRING_NOTE
        o = _concrete(orientation)
        if o is not None and (o.shape != (4,) or not np.all(np.isfinite(o)) or np.linalg.norm(o) < 1e-12):
            raise ValueError(
                f"RigidBody({name!r}).orientation must be a finite non-zero quaternion (w, x, y, z), "
                f"got {np.asarray(orientation).tolist()!r}"
            )
        i = _concrete(inertia)
        if i is not None and i.shape not in ((3,), (3, 3)):
            raise ValueError(f"RigidBody({name!r}).inertia must have shape (3, 3) or (3,), got shape {i.shape}")
        self.name = name
        self.mass = _f64(mass)
        self.inertia = jnp.diag(_f64(inertia)) if np.ndim(inertia) == 1 else _f64(inertia)
        self.position = _f64(position)
        self.orientation = _f64(orientation) / jnp.linalg.norm(_f64(orientation))
        self.velocity = _f64(velocity)
        self.angular_velocity = _f64(angular_velocity)
        self.force = _f64(force)
        self.torque = _f64(torque)

    def __check_init__(self):
        owner = f"RigidBody({self.name!r})"
        m = _concrete(self.mass)
        if m is not None and (m.shape != () or not np.isfinite(m) or m <= 0):
            raise ValueError(f"{owner}.mass must be a finite number > 0 [kg], got {np.asarray(self.mass).tolist()!r}")
        inertia = _concrete(self.inertia)
        if inertia is not None:
            if not np.all(np.isfinite(inertia)) or not np.allclose(inertia, inertia.T, rtol=1e-12, atol=0):
                raise ValueError(
                    f"{owner}.inertia must be a finite symmetric (3, 3) matrix [kg m^2], got {inertia.tolist()}"
                )
            ev = np.linalg.eigvalsh(inertia)
            if ev[0] <= 0:
                raise ValueError(
                    f"{owner}.inertia must be positive definite [kg m^2]; its principal moments are {ev.tolist()}"
                )
            if ev[0] + ev[1] < ev[2] * (1 - 1e-12):
                raise ValueError(
                    f"{owner}.inertia: principal moments {ev.tolist()} violate the triangle inequality "
                    "I1 + I2 >= I3 that every mass distribution satisfies"
                )
        for field in ("position", "velocity", "angular_velocity", "force", "torque"):
            _check_vector(owner, field, getattr(self, field), 3)

    def rotation(self):
        """``(3, 3)`` initial rotation matrix (body -> world)."""
        return quat_to_rotation(self.orientation)
