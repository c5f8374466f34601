"""Distributed execution over torch.distributed: every rank runs the same plan on its share
of the row groups; exchanges move rows between ranks (PystachIO §3, §5).

- :mod:`sluice.dist.group`: the process group of this process (joined from torchrun's
  environment), collective timeouts, the plan fingerprint check.
- :mod:`sluice.dist.wire`: chunks to bytes and back (strings travel by value).
- :mod:`sluice.dist.launch`: ``--ranks N`` starts N local ranks through PyTorch's elastic
  launcher and reports the first failure in one line.

Lowering decides where exchanges go (:mod:`sluice.physical.lower`); the exchange operator
runs them (:mod:`sluice.exec.exchange`).
"""
