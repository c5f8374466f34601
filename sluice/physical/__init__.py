"""The physical layer: from a logical plan to the operators that run it.

Lowering (:mod:`sluice.physical.lower`) decides everything about how a plan runs that the
logical plan leaves open -- which side of each join builds (:mod:`sluice.physical.joins`),
where rows must be partitioned or gathered (:mod:`sluice.physical.properties`), which scans
a join's runtime filters reach (:mod:`sluice.physical.filter_placement`) -- once, with every
fact it uses in one :class:`~sluice.physical.lower.LoweringState` (settings, statistics,
this process's rank and the number of ranks). Operators (:mod:`sluice.exec`) only execute
what lowering decided.
"""
