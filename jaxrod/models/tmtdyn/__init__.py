"""TMTDyn's reduced rod models (Sadati et al., spec seed004 sections 3.4, 5.1-5.5), as implicit
models for :func:`jaxrod.simulate`, :func:`jaxrod.solve_static` and :func:`jaxrod.modal`.

section.py: the section/material (:class:`RodSection`), the TMT inertial forces (with the
gyroscopic term) and the clamped-rod plumbing shared by both models.
rom.py: :class:`ROMModel`, polynomial position and orientation (TMTDyn ROM, ``6 n_r`` states).
eba.py: :class:`EBAModel`, lumped nodes with absolute poses joined by EB beams (``6 n_d`` states);
its ``beam_frame="node"`` is TMTDyn's EBR in absolute coordinates (see eba.py on EBR vs PCS).
"""

from .eba import BEAM_FRAMES, LUMPINGS, EBAModel, beam_deformation
from .rom import ROMModel
from .section import ClampedRodModel, RodSection, tmt_inertial_forces

__all__ = ["BEAM_FRAMES", "LUMPINGS", "ClampedRodModel", "EBAModel", "ROMModel", "RodSection", "beam_deformation",
           "tmt_inertial_forces"]
