-- case: a join inside an IN subquery whose columns above come from one side becomes a semi join
select count(*) from orders where o_orderkey in (select l_orderkey from lineitem join part on l_partkey = p_partkey where p_size = 15);
-- before
Project COUNT(*)
  Aggregate keys=[] aggs=[COUNT(*) := count(*)]
    Join semi [orders.o_orderkey = lineitem.l_orderkey]
      Scan orders [orders.o_orderkey, orders.o_custkey, orders.o_orderstatus, orders.o_totalprice, orders.o_orderdate, orders.o_orderpriority, orders.o_clerk, orders.o_shippriority, orders.o_comment]
      Project lineitem.l_orderkey
        Join inner [lineitem.l_partkey = part.p_partkey]
          Scan lineitem [lineitem.l_orderkey, lineitem.l_partkey, lineitem.l_suppkey, lineitem.l_linenumber, lineitem.l_quantity, lineitem.l_extendedprice, lineitem.l_discount, lineitem.l_tax, lineitem.l_returnflag, lineitem.l_linestatus, lineitem.l_shipdate, lineitem.l_commitdate, lineitem.l_receiptdate, lineitem.l_shipinstruct, lineitem.l_shipmode, lineitem.l_comment]
          Filter (part.p_size = 15)
            Scan part [part.p_partkey, part.p_name, part.p_mfgr, part.p_brand, part.p_type, part.p_size, part.p_container, part.p_retailprice, part.p_comment]
-- after
Project COUNT(*)
  Aggregate keys=[] aggs=[COUNT(*) := count(*)]
    Join semi [orders.o_orderkey = lineitem.l_orderkey]
      Scan orders [orders.o_orderkey, orders.o_custkey, orders.o_orderstatus, orders.o_totalprice, orders.o_orderdate, orders.o_orderpriority, orders.o_clerk, orders.o_shippriority, orders.o_comment]
      Project lineitem.l_orderkey
        Join semi [lineitem.l_partkey = part.p_partkey]
          Scan lineitem [lineitem.l_orderkey, lineitem.l_partkey, lineitem.l_suppkey, lineitem.l_linenumber, lineitem.l_quantity, lineitem.l_extendedprice, lineitem.l_discount, lineitem.l_tax, lineitem.l_returnflag, lineitem.l_linestatus, lineitem.l_shipdate, lineitem.l_commitdate, lineitem.l_receiptdate, lineitem.l_shipinstruct, lineitem.l_shipmode, lineitem.l_comment]
          Filter (part.p_size = 15)
            Scan part [part.p_partkey, part.p_name, part.p_mfgr, part.p_brand, part.p_type, part.p_size, part.p_container, part.p_retailprice, part.p_comment]

-- case: a join whose both sides' columns are used above stays inner
select count(*) from orders where o_orderkey in (select l_orderkey + p_size from lineitem join part on l_partkey = p_partkey where p_size = 15);
-- before
Project COUNT(*)
  Aggregate keys=[] aggs=[COUNT(*) := count(*)]
    Join semi [orders.o_orderkey = l_orderkey + p_size]
      Scan orders [orders.o_orderkey, orders.o_custkey, orders.o_orderstatus, orders.o_totalprice, orders.o_orderdate, orders.o_orderpriority, orders.o_clerk, orders.o_shippriority, orders.o_comment]
      Project l_orderkey + p_size := (lineitem.l_orderkey + part.p_size)
        Join inner [lineitem.l_partkey = part.p_partkey]
          Scan lineitem [lineitem.l_orderkey, lineitem.l_partkey, lineitem.l_suppkey, lineitem.l_linenumber, lineitem.l_quantity, lineitem.l_extendedprice, lineitem.l_discount, lineitem.l_tax, lineitem.l_returnflag, lineitem.l_linestatus, lineitem.l_shipdate, lineitem.l_commitdate, lineitem.l_receiptdate, lineitem.l_shipinstruct, lineitem.l_shipmode, lineitem.l_comment]
          Filter (part.p_size = 15)
            Scan part [part.p_partkey, part.p_name, part.p_mfgr, part.p_brand, part.p_type, part.p_size, part.p_container, part.p_retailprice, part.p_comment]
-- after
unchanged
