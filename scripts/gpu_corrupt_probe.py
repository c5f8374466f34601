"""What nvCOMP does with a corrupt stream, in a process of its own (a fault takes the CUDA
context, or the process, with it): decompress garbage of one codec, report what was raised,
then whether the context still works and whether the process survives its objects' cleanup.

    python scripts/gpu_corrupt_probe.py SNAPPY
"""

import gc
import sys

import numpy as np
import pyarrow as pa
import torch

from sluice.io.parquet.decode import nvcomp

codec = sys.argv[1]
sys.path.insert(0, "tests/decode")
from test_device_codecs import _Layout, _data, _gzip_member  # noqa: E402  (_Layout re-exported there)

data = _data(100_000)
comp = bytearray(_gzip_member(data) if codec == "GZIP" else pa.Codec(codec.lower()).compress(data, asbytes=True))
rng = np.random.default_rng(0)
comp[20:len(comp) - 20] = rng.integers(0, 256, len(comp) - 40, dtype=np.uint8).tobytes()
lay = _Layout()
lay.add(bytes(comp), codec, len(data))
try:
    got = nvcomp.decompress(lay.parts, lay.size, "cuda")
    torch.cuda.synchronize()
    print(f"{codec}: no error; output equals input: {got[:lay.size].cpu().numpy().tobytes() == data}", flush=True)
except Exception as e:  # noqa: BLE001
    print(f"{codec}: raised {type(e).__name__}: {str(e)[:300]}", flush=True)
try:
    print(f"{codec}: context after: {torch.ones(4, device='cuda').sum().item()}", flush=True)
except Exception as e:  # noqa: BLE001
    print(f"{codec}: context lost: {type(e).__name__}: {str(e)[:200]}", flush=True)
gc.collect()
print(f"{codec}: survived cleanup", flush=True)
