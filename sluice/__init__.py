"""sluice: SQL over Parquet on PyTorch tensors, on CPU or GPU.

>>> import sluice
>>> con = sluice.connect("data/tpch-sf1")            # doctest: +SKIP
>>> con.sql("select count(*) from lineitem").to_arrow()  # doctest: +SKIP
"""

from sluice.config import Config
from sluice.engine import Connection, Relation, connect
from sluice.errors import SluiceError

__all__ = ["Config", "Connection", "Relation", "SluiceError", "connect", "sql"]
__version__ = "0.1.0"


def sql(query: str, data=None, **settings) -> Relation:
    """One-shot: ``sluice.sql("select ...", data="DIR")``."""
    return connect(data, **settings).sql(query)
