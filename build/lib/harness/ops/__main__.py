"""`python -m harness.ops`: the op matrix as a coverage table, written to out/ops.json."""

import sys

from harness.ops.matrix import main

sys.exit(main())
