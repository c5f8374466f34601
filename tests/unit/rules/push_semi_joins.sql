-- case: Q18: the IN subquery filters orders before orders meet lineitem
select c_name, c_custkey, o_orderkey, o_orderdate, o_totalprice, sum(l_quantity)
from customer, orders, lineitem
where o_orderkey in (select l_orderkey from lineitem group by l_orderkey having sum(l_quantity) > 300)
  and c_custkey = o_custkey and o_orderkey = l_orderkey
group by c_name, c_custkey, o_orderkey, o_orderdate, o_totalprice
order by o_totalprice desc, o_orderdate
limit 100;
-- before
Sort [orders.o_totalprice desc, orders.o_orderdate] limit=100
  Project customer.c_name, customer.c_custkey, orders.o_orderkey, orders.o_orderdate, orders.o_totalprice, SUM(l_quantity)#2
    Aggregate keys=[customer.c_name, customer.c_custkey, orders.o_orderkey, orders.o_orderdate, orders.o_totalprice] aggs=[SUM(l_quantity)#2 := sum(lineitem.l_quantity)]
      Join semi [orders.o_orderkey = lineitem.l_orderkey#2]
        Join inner [lineitem.l_orderkey = orders.o_orderkey]
          Scan lineitem [lineitem.l_orderkey, lineitem.l_partkey, lineitem.l_suppkey, lineitem.l_linenumber, lineitem.l_quantity, lineitem.l_extendedprice, lineitem.l_discount, lineitem.l_tax, lineitem.l_returnflag, lineitem.l_linestatus, lineitem.l_shipdate, lineitem.l_commitdate, lineitem.l_receiptdate, lineitem.l_shipinstruct, lineitem.l_shipmode, lineitem.l_comment]
          Join inner [orders.o_custkey = customer.c_custkey]
            Scan orders [orders.o_orderkey, orders.o_custkey, orders.o_orderstatus, orders.o_totalprice, orders.o_orderdate, orders.o_orderpriority, orders.o_clerk, orders.o_shippriority, orders.o_comment]
            Scan customer [customer.c_custkey, customer.c_name, customer.c_address, customer.c_nationkey, customer.c_phone, customer.c_acctbal, customer.c_mktsegment, customer.c_comment]
        Project lineitem.l_orderkey#2
          Filter (SUM(l_quantity) > 300.00)
            Aggregate keys=[lineitem.l_orderkey#2] aggs=[SUM(l_quantity) := sum(lineitem.l_quantity#2)]
              Scan lineitem [lineitem.l_orderkey#2 := l_orderkey, lineitem.l_partkey#2 := l_partkey, lineitem.l_suppkey#2 := l_suppkey, lineitem.l_linenumber#2 := l_linenumber, lineitem.l_quantity#2 := l_quantity, lineitem.l_extendedprice#2 := l_extendedprice, lineitem.l_discount#2 := l_discount, lineitem.l_tax#2 := l_tax, lineitem.l_returnflag#2 := l_returnflag, lineitem.l_linestatus#2 := l_linestatus, lineitem.l_shipdate#2 := l_shipdate, lineitem.l_commitdate#2 := l_commitdate, lineitem.l_receiptdate#2 := l_receiptdate, lineitem.l_shipinstruct#2 := l_shipinstruct, lineitem.l_shipmode#2 := l_shipmode, lineitem.l_comment#2 := l_comment]
-- after
Sort [orders.o_totalprice desc, orders.o_orderdate] limit=100
  Project customer.c_name, customer.c_custkey, orders.o_orderkey, orders.o_orderdate, orders.o_totalprice, SUM(l_quantity)#2
    Aggregate keys=[customer.c_name, customer.c_custkey, orders.o_orderkey, orders.o_orderdate, orders.o_totalprice] aggs=[SUM(l_quantity)#2 := sum(lineitem.l_quantity)]
      Join inner [lineitem.l_orderkey = orders.o_orderkey]
        Scan lineitem [lineitem.l_orderkey, lineitem.l_partkey, lineitem.l_suppkey, lineitem.l_linenumber, lineitem.l_quantity, lineitem.l_extendedprice, lineitem.l_discount, lineitem.l_tax, lineitem.l_returnflag, lineitem.l_linestatus, lineitem.l_shipdate, lineitem.l_commitdate, lineitem.l_receiptdate, lineitem.l_shipinstruct, lineitem.l_shipmode, lineitem.l_comment]
        Join inner [orders.o_custkey = customer.c_custkey]
          Join semi [orders.o_orderkey = lineitem.l_orderkey#2]
            Scan orders [orders.o_orderkey, orders.o_custkey, orders.o_orderstatus, orders.o_totalprice, orders.o_orderdate, orders.o_orderpriority, orders.o_clerk, orders.o_shippriority, orders.o_comment]
            Project lineitem.l_orderkey#2
              Filter (SUM(l_quantity) > 300.00)
                Aggregate keys=[lineitem.l_orderkey#2] aggs=[SUM(l_quantity) := sum(lineitem.l_quantity#2)]
                  Scan lineitem [lineitem.l_orderkey#2 := l_orderkey, lineitem.l_partkey#2 := l_partkey, lineitem.l_suppkey#2 := l_suppkey, lineitem.l_linenumber#2 := l_linenumber, lineitem.l_quantity#2 := l_quantity, lineitem.l_extendedprice#2 := l_extendedprice, lineitem.l_discount#2 := l_discount, lineitem.l_tax#2 := l_tax, lineitem.l_returnflag#2 := l_returnflag, lineitem.l_linestatus#2 := l_linestatus, lineitem.l_shipdate#2 := l_shipdate, lineitem.l_commitdate#2 := l_commitdate, lineitem.l_receiptdate#2 := l_receiptdate, lineitem.l_shipinstruct#2 := l_shipinstruct, lineitem.l_shipmode#2 := l_shipmode, lineitem.l_comment#2 := l_comment]
          Scan customer [customer.c_custkey, customer.c_name, customer.c_address, customer.c_nationkey, customer.c_phone, customer.c_acctbal, customer.c_mktsegment, customer.c_comment]

-- case: an EXISTS over columns of both joined tables cannot move onto either one
select count(*) from orders, customer where o_custkey = c_custkey and exists (select * from nation where n_nationkey = c_nationkey and n_regionkey = o_shippriority);
-- before
Project COUNT(*)
  Aggregate keys=[] aggs=[COUNT(*) := count(*)]
    Join semi [customer.c_nationkey = nation.n_nationkey, orders.o_shippriority = nation.n_regionkey]
      Join inner [orders.o_custkey = customer.c_custkey]
        Scan orders [orders.o_orderkey, orders.o_custkey, orders.o_orderstatus, orders.o_totalprice, orders.o_orderdate, orders.o_orderpriority, orders.o_clerk, orders.o_shippriority, orders.o_comment]
        Scan customer [customer.c_custkey, customer.c_name, customer.c_address, customer.c_nationkey, customer.c_phone, customer.c_acctbal, customer.c_mktsegment, customer.c_comment]
      Project nation.n_nationkey, nation.n_name, nation.n_regionkey, nation.n_comment
        Scan nation [nation.n_nationkey, nation.n_name, nation.n_regionkey, nation.n_comment]
-- after
unchanged
