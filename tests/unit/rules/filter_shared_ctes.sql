-- case: every reference to a shared CTE filters it: the OR of their conditions goes into the CTE
with m as (select o_custkey, extract(month from o_orderdate) mo, count(*) c from orders group by 1, 2) select a.o_custkey, a.c, b.c from m a, m b where a.o_custkey = b.o_custkey and a.mo = 4 and b.mo = 5;
-- before
Project a.o_custkey, a.c, b.c
  Join inner [a.o_custkey = b.o_custkey]
    Project a.o_custkey := orders.o_custkey, a.mo := EXTRACT(MONTH FROM o_orderdate), a.c := COUNT(*)
      Filter (EXTRACT(MONTH FROM o_orderdate) = 4)
        Shared #1
          Project orders.o_custkey, EXTRACT(MONTH FROM o_orderdate), COUNT(*)
            Aggregate keys=[orders.o_custkey, EXTRACT(MONTH FROM o_orderdate) := extract(orders.o_orderdate, 'month')] aggs=[COUNT(*) := count(*)]
              Scan orders [orders.o_orderkey, orders.o_custkey, orders.o_orderstatus, orders.o_totalprice, orders.o_orderdate, orders.o_orderpriority, orders.o_clerk, orders.o_shippriority, orders.o_comment]
    Project b.o_custkey := orders.o_custkey, b.mo := EXTRACT(MONTH FROM o_orderdate), b.c := COUNT(*)
      Filter (EXTRACT(MONTH FROM o_orderdate) = 5)
        Shared #1 (as above)
-- after
Project a.o_custkey, a.c, b.c
  Join inner [a.o_custkey = b.o_custkey]
    Project a.o_custkey := orders.o_custkey, a.mo := EXTRACT(MONTH FROM o_orderdate), a.c := COUNT(*)
      Filter (EXTRACT(MONTH FROM o_orderdate) = 4)
        Shared #1
          Project orders.o_custkey, EXTRACT(MONTH FROM o_orderdate), COUNT(*)
            Aggregate keys=[orders.o_custkey, EXTRACT(MONTH FROM o_orderdate) := extract(orders.o_orderdate, 'month')] aggs=[COUNT(*) := count(*)]
              Scan orders [orders.o_orderkey, orders.o_custkey, orders.o_orderstatus, orders.o_totalprice, orders.o_orderdate, orders.o_orderpriority, orders.o_clerk, orders.o_shippriority, orders.o_comment] filter=((extract(orders.o_orderdate, 'month') = 4) OR (extract(orders.o_orderdate, 'month') = 5))
    Project b.o_custkey := orders.o_custkey, b.mo := EXTRACT(MONTH FROM o_orderdate), b.c := COUNT(*)
      Filter (EXTRACT(MONTH FROM o_orderdate) = 5)
        Shared #1 (as above)

-- case: one reference unfiltered: the CTE stays whole
with m as (select o_custkey, extract(month from o_orderdate) mo, count(*) c from orders group by 1, 2) select a.o_custkey, a.c, b.c from m a, m b where a.o_custkey = b.o_custkey and a.mo = 4;
-- before
Project a.o_custkey, a.c, b.c
  Join inner [b.o_custkey = a.o_custkey]
    Project b.o_custkey := orders.o_custkey, b.mo := EXTRACT(MONTH FROM o_orderdate), b.c := COUNT(*)
      Shared #1
        Project orders.o_custkey, EXTRACT(MONTH FROM o_orderdate), COUNT(*)
          Aggregate keys=[orders.o_custkey, EXTRACT(MONTH FROM o_orderdate) := extract(orders.o_orderdate, 'month')] aggs=[COUNT(*) := count(*)]
            Scan orders [orders.o_orderkey, orders.o_custkey, orders.o_orderstatus, orders.o_totalprice, orders.o_orderdate, orders.o_orderpriority, orders.o_clerk, orders.o_shippriority, orders.o_comment]
    Project a.o_custkey := orders.o_custkey, a.mo := EXTRACT(MONTH FROM o_orderdate), a.c := COUNT(*)
      Filter (EXTRACT(MONTH FROM o_orderdate) = 4)
        Shared #1 (as above)
-- after
unchanged
