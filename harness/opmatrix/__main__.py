"""`python -m harness.opmatrix`: the op matrix as a coverage table, written to out/ops.json.

The numerics profile (``--numerics``, else ``[tool.conformance]``) is put in force before the
matrix imports numpy and torch: the op matrix compares kernels whose bits it decides."""

import sys
from pathlib import Path

from harness import numerics, project

_entry = project.enter_numerics(sys.argv[1:], Path.cwd())
if isinstance(_entry, numerics.NumericsError):
    print(f"python -m harness.opmatrix: error: {_entry}", file=sys.stderr)
    sys.exit(2)

from harness.opmatrix.matrix import main

sys.exit(main())
