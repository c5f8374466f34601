"""sluice's own Parquet page decoder (``decoder=device``), on the scan's device.

Layout: :mod:`column` (a column's spec, the host's codecs, what decoding holds),
:mod:`page_index` (page headers as numpy arrays, cached with the footers), :mod:`kernel_column`
(a read task's pages -> one Column: layout, decompression, descriptors, launches),
:mod:`kernels` (the Triton page kernels, one module per job), :mod:`dict_strings` (string
dictionaries, read on the host) and :mod:`nvcomp` (pages decompressed on a GPU). Every launch
works on all pages of a read task's column at once: a kernel per step of the format, not a
kernel (or a Python iteration) per page, run or value.
"""
