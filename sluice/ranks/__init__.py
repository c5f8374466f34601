"""Distributed execution over torch.distributed: every rank runs the same plan on its share
of the row groups; exchanges move rows between ranks (PystachIO §3, §5).

- :mod:`sluice.ranks.group`: the process group of this process (joined from torchrun's
  environment), collective timeouts, the plan fingerprint check.
- :mod:`sluice.ranks.wire`: chunks to bytes and back (strings travel by value).

The local launcher (``--ranks N``: :mod:`sluice.launch` and its :mod:`sluice.launch_worker`)
lives beside the CLI, not here, because a rank it starts may run a CLI command line: nothing
in this package imports the front layer. (The package was ``sluice/dist/``, a name tools read
as build output.)

Lowering decides where exchanges go (:mod:`sluice.physical.lower`); the exchange operator
runs them (:mod:`sluice.exec.exchange`).
"""
