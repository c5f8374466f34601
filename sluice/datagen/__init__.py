"""Benchmark data generators (TPC-H, SSB, TPC-DS, ClickBench, nested events) as Parquet: one module each, the output
folder rules in :mod:`sluice.datagen.folders`, the executables found by :mod:`sluice.datagen.tools`."""
