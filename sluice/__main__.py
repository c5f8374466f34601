"""``python -m sluice`` (and ``torchrun ... -m sluice query ...``): the command line.

Under torchrun the process leaves with ``os._exit`` once the command is done and its output
flushed: the interpreter's teardown would otherwise run the process group's destructors while
a peer may already be gone, and one of two torchrun nodes was seen to keep its launcher waiting
after the query had finished and its result was written (CI, once in seven runs)."""

import os
import sys

if sys.argv[1:2] == ["torchrun"]:  # before torch loads (below): c10's level is read once then
    os.environ.setdefault("TORCH_CPP_LOG_LEVEL", "FATAL")

from sluice.cli import main  # noqa: E402
from sluice.ranks.job_env import in_torchrun  # noqa: E402

if __name__ == "__main__":
    if not in_torchrun():
        main()
    code = 1
    try:
        main()
        code = 0
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
