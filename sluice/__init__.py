"""sluice: SQL over Parquet on PyTorch tensors, on CPU or GPU.

>>> import sluice
>>> con = sluice.connect("data/tpch-sf1")            # doctest: +SKIP
>>> con.sql("select count(*) from lineitem").to_arrow()  # doctest: +SKIP
"""

import importlib
import os

# Torch's OpenMP threads spin after every parallel region by default; with decode threads
# sharing the cores (the overlapped scan) the spinning took their CPU time: Q1 SF10 used
# 7.9 CPU-s spinning vs 5.3 CPU-s passive, 4.1 s vs 2.9 s wall. Must precede the torch import
# (libgomp reads it once when loaded); a value set by the user wins.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

from sluice.errors import SluiceError  # noqa: E402

__all__ = ["Config", "Connection", "Relation", "SluiceError", "connect", "sql"]
__version__ = "0.1.0"

#: Loaded on first use (PEP 562): importing ``sluice.errors`` or running ``sluice --help``,
#: ``inspect``, ``rewrite`` or ``datagen`` does not pay for importing torch (about 3 s).
_LAZY = {"Config": "sluice.config", "Connection": "sluice.engine", "Relation": "sluice.engine",
         "connect": "sluice.engine"}


def __getattr__(name: str):
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)  # deferred: `import sluice` stays light; engine and torch load on first use
        globals()[name] = value
        return value
    raise AttributeError(f"module 'sluice' has no attribute {name!r}")


def sql(query: str, data=None, **settings):
    """One-shot: ``sluice.sql("select ...", data="DIR")``."""
    from sluice.engine import connect  # deferred: keeps `sluice --help` free of numpy, pyarrow, sqlglot, torch
    return connect(data, **settings).sql(query)
