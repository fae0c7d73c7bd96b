"""``python -m jaxrod``: the command-line interface (see :mod:`jaxrod.cli`)."""

import sys

from .cli import main

sys.exit(main())
