"""CSV files as tables: ``FROM 'data.csv'``, ``read_csv('a/*.csv', header = false, delim = '|')``.

The schema comes from pyarrow's type inference over the first block of the first file
(integers, floats, dates, timestamps, booleans, else strings; a column that is empty there
is read as strings); every block after it is converted to that schema, so a later value that
does not fit is a one-line error naming the file, not a silent change of type. As in DuckDB
an empty field is NULL and every other text (``NA``, ``null``) is a value.

Reading is streamed: pyarrow's incremental reader parses a block at a time on its own
threads and the scan turns each batch into chunks, so a file larger than memory is fine.
A table of CSV files has one pseudo row group per file (no statistics, so nothing is pruned)
whose row count is estimated from the file size and the first block, for join ordering only.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Iterator

import pyarrow as pa
import pyarrow.csv as pcsv

from sluice.errors import DataError, PlanError
from sluice.catalog import RowGroup, TableInfo
from sluice.io.parquet.metadata import _types

BLOCK_BYTES = 16 << 20


@dataclass(frozen=True)
class CsvOptions:
    header: bool = True
    delimiter: str = ","

    @staticmethod
    def of(options: dict) -> "CsvOptions":
        header = options.get("header", True)
        delim = options.get("delim", options.get("sep", ","))
        if not isinstance(header, bool):
            raise PlanError("read_csv option header must be true or false")
        if not isinstance(delim, str) or len(delim) != 1:
            raise PlanError("read_csv option delim must be one character")
        return CsvOptions(header, delim)


def _read_options(opts: CsvOptions, names: list[str] | None = None) -> pcsv.ReadOptions:
    if opts.header:
        return pcsv.ReadOptions(block_size=BLOCK_BYTES, use_threads=True)
    return pcsv.ReadOptions(block_size=BLOCK_BYTES, use_threads=True,
                            column_names=names, autogenerate_column_names=names is None)


def _convert(types: dict[str, pa.DataType] | None = None, include: list[str] | None = None) -> pcsv.ConvertOptions:
    return pcsv.ConvertOptions(null_values=[""], strings_can_be_null=True, quoted_strings_can_be_null=False,
                               column_types=types, include_columns=include)


def _open(path: str, opts: CsvOptions, convert: pcsv.ConvertOptions, names=None):
    try:
        return pcsv.open_csv(path, read_options=_read_options(opts, names),
                             parse_options=pcsv.ParseOptions(delimiter=opts.delimiter), convert_options=convert)
    except FileNotFoundError:
        raise DataError(f"no such file: {path}") from None
    except (pa.ArrowInvalid, OSError) as e:
        raise DataError(f"cannot read CSV {path}: {str(e).splitlines()[0]}") from None


def load_csv_table(name: str, files: list[str], options: dict) -> TableInfo:
    """The table formed by CSV ``files`` (one schema, inferred from the first)."""
    opts = CsvOptions.of(options)
    reader = _open(files[0], opts, _convert())
    schema = reader.schema
    sample = reader.read_next_batch() if schema.names else None
    reader.close()
    fields = []
    for f in schema:
        t = pa.string() if pa.types.is_null(f.type) else f.type
        if pa.types.is_timestamp(t):
            t = pa.timestamp("us")
        fields.append(pa.field(f.name if opts.header else f"column{len(fields)}", t))
    schema = pa.schema(fields)
    if len(set(n.lower() for n in schema.names)) != len(schema.names):
        raise DataError(f"{files[0]}: CSV header names a column twice")
    types, unsupported = _types(schema)
    size0 = max(os.path.getsize(files[0]), 1)
    per_row = (min(size0, BLOCK_BYTES) / sample.num_rows) if sample is not None and sample.num_rows else 100.0
    groups = tuple(RowGroup(f, 0, max(1, int(os.path.getsize(f) / per_row)), {}, os.path.getsize(f)) for f in files)
    return TableInfo(name, tuple(files), schema, types, groups, unsupported, format="csv",
                     options=tuple(sorted(options.items())))


def read_csv_batches(table: TableInfo, path: str, columns: list[str]) -> Iterator[pa.RecordBatch]:
    """The ``columns`` of one CSV file of ``table``, a block at a time, in the table's types."""
    opts = CsvOptions.of(dict(table.options))
    names = None if opts.header else list(table.arrow_schema.names)
    convert = _convert({c: table.arrow_schema.field(c).type for c in columns}, columns)
    reader = _open(path, opts, convert, names)
    try:
        got = reader.schema.names
        if opts.header and set(columns) - set(got):
            raise DataError(f"{path}: CSV columns {got} differ from the first file's {table.arrow_schema.names}")
        while True:
            try:
                batch = reader.read_next_batch()
            except StopIteration:
                return
            except (pa.ArrowInvalid, OSError) as e:
                raise DataError(f"cannot read CSV {path}: {str(e).splitlines()[0]} (types come from the "
                                f"first block of the first file)") from None
            yield batch
    finally:
        reader.close()
