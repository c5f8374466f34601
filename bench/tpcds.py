"""The 99 TPC-DS queries in sluice and DuckDB side by side (``bench/tpch.py --tpcds``).

    python bench/tpcds.py --sf 1 [--device cpu|cuda|auto] [--threads N] [--runs 3]
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from tpch import main  # noqa: E402

if __name__ == "__main__":
    sys.argv.append("--tpcds")
    main()
