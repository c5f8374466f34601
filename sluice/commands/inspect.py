"""``sluice inspect``: a Parquet file's layout -- row groups, pages, encodings, codecs -- as text
or JSON. It reads only footers and page headers: no torch (tests/test_cli.py checks it)."""

from __future__ import annotations

import json

from sluice.layout.inspect import format_report, inspect_file, parquet_files


def run(args, argv: list[str]) -> int:
    """Each file's layout."""
    infos = [inspect_file(f, pages=not args.no_pages) for f in parquet_files(args.path)]
    print(json.dumps(infos, indent=1) if args.json else "\n\n".join(format_report(i) for i in infos))
    return 0
