"""A Parquet page decoder in torch: the same code decodes on CUDA tensors and on CPU tensors.

Layout: :mod:`bits` (byte/bit gathers, varints, following chains of variable-length records
without a loop over them), :mod:`hybrid` (the RLE/bit-packed hybrid of levels and dictionary
indices), :mod:`delta` (DELTA_BINARY_PACKED and the delta string encodings), :mod:`values`
(PLAIN, BYTE_STREAM_SPLIT, dictionaries) and :mod:`column` (pages of column chunks -> a sluice
Column). Every function works on all pages of a read task at once: a kernel per step of the
format, not a kernel (or a Python iteration) per page, run or value.
"""
