"""DuckDB's limits on string positions, lengths and sizes, checked over the rows that have a
value (DuckDB checks each non-NULL row: a NULL string never fails).

SUBSTRING's offset and length, and LEFT's length, must lie in [-2**32, 2**32 - 1] ("Substring
offset outside of supported range"); REPEAT's result in 4294967295 bytes. Positions beyond the
range once reached pyarrow as they were (an offset of -2**63 was a negative buffer size, 2**63 - 1
an OverflowError: internal errors). A result DuckDB gives that an Arrow string array cannot
hold (2 GiB) is refused in one line.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import torch

from sluice.chunk import Column, host_tensor, lookup, to_device
from sluice.errors import UnsupportedError
from sluice.kernels.checks import fail_if

#: DuckDB's supported range of a SUBSTRING offset or length (uint32's maximum and its negative - 1).
POSITION_MAX = 2 ** 32 - 1
POSITION_MIN = -(2 ** 32)
#: DuckDB's largest string, in bytes.
STRING_MAX = 2 ** 32 - 1
#: The most bytes one Arrow string array (int32 offsets) holds.
ARROW_STRING_MAX = 2 ** 31 - 1


def rows_with_values(a: Column, rows: int) -> torch.Tensor:
    """A flag per row of ``a`` that is not NULL (0-d for a constant over ``rows`` rows)."""
    flag = torch.ones(a.data.shape, dtype=torch.bool, device=a.data.device)
    if a.is_const and rows == 0:
        flag = ~flag
    return flag if a.valid is None else flag & a.valid


def check_position(a: Column, rows: int, value: int | None, what: str) -> int | None:
    """Raise DuckDB's error if a non-NULL row meets ``value`` (SUBSTRING's 'offset' or
    'length') outside the supported range; the value clamped into it, for the kernels."""
    if value is None:
        return None
    if value < POSITION_MIN:
        fail_if(rows_with_values(a, rows), f"Substring {what} outside of supported range (< {POSITION_MIN})")
    elif value > POSITION_MAX:
        fail_if(rows_with_values(a, rows), f"Substring {what} outside of supported range (> {POSITION_MAX})")
    return min(max(value, POSITION_MIN), POSITION_MAX)


def check_repeat(a: Column, rows: int, times: int) -> pa.Array:
    """REPEAT's size limits over the rows with a value; the dictionary to repeat, with the
    entries no such row may repeat emptied (their copies would be built for nothing)."""
    d = a.dictionary if a.dictionary.type == pa.string() else a.dictionary.cast(pa.string())
    if times <= 1 or len(d) == 0:
        return d
    size = pc.binary_length(d).fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
    over = (size > 0) & (size > STRING_MAX // times)
    beyond_arrow = (size > 0) & (size > ARROW_STRING_MAX // times)
    has = rows_with_values(a, rows)
    for flags, message, error in (
            (over, f"REPEAT: a string of {times} copies passes the maximum string size ({STRING_MAX} bytes)", None),
            (beyond_arrow, f"REPEAT results of 2 GiB or more ({times} copies)", UnsupportedError)):
        if flags.any():
            per_row = lookup(to_device(host_tensor(flags), a.data.device), a.data)
            if error is None:
                fail_if(per_row, message, has)
            else:
                fail_if(per_row, message, has, error)
    if beyond_arrow.any():
        d = pc.if_else(pa.array(beyond_arrow), pa.scalar("", pa.string()), d)
    return d


def arrow_string_limit(fn, what: str):
    """``fn()`` (an Arrow string kernel), its 2 GiB capacity error as a one-line refusal."""
    try:
        return fn()
    except (pa.ArrowCapacityError, pa.ArrowInvalid) as e:
        if isinstance(e, pa.ArrowInvalid) and "overflow" not in str(e):
            raise
        raise UnsupportedError(f"{what} results of 2 GiB or more in one chunk") from None
