"""A porting bug on purpose: the engine side reshapes a batch to the wrong shape and raises.

Run by the README to show the traceback of a side that raised.
"""

import numpy as np

from harness.case import agree

BATCH = np.arange(6, dtype=np.float32)


def as_rows(x):
    return x.reshape(4, -1)  # 6 elements do not make 4 rows


def torch_side():
    return {"rows": BATCH.reshape(2, 3)}


def engine_side():
    return {"rows": as_rows(BATCH)}


CHECKS = [agree("rows")]
