-- case: JOIN ... ON chain before a LEFT JOIN (TPC-DS Q72's shape): the WHERE conjuncts join the run of inner joins below the left join, where order_joins sees them
select n_name, count(*) as n from lineitem
join orders on l_orderkey = o_orderkey
join customer on o_custkey = c_custkey
join nation on c_nationkey = n_nationkey
left join region on n_regionkey = r_regionkey
where n_name = 'FRANCE' and o_orderdate < date '1995-01-01'
group by n_name;
-- before
Project nation.n_name, COUNT(*)
  Aggregate keys=[nation.n_name] aggs=[COUNT(*) := count(*)]
    Filter ((nation.n_name = 'FRANCE') AND (orders.o_orderdate < DATE '1995-01-01'))
      Join left [nation.n_regionkey = region.r_regionkey]
        InnerJoins [(lineitem.l_orderkey = orders.o_orderkey), (orders.o_custkey = customer.c_custkey), (customer.c_nationkey = nation.n_nationkey)]
          Scan lineitem [lineitem.l_orderkey, lineitem.l_partkey, lineitem.l_suppkey, lineitem.l_linenumber, lineitem.l_quantity, lineitem.l_extendedprice, lineitem.l_discount, lineitem.l_tax, lineitem.l_returnflag, lineitem.l_linestatus, lineitem.l_shipdate, lineitem.l_commitdate, lineitem.l_receiptdate, lineitem.l_shipinstruct, lineitem.l_shipmode, lineitem.l_comment]
          Scan orders [orders.o_orderkey, orders.o_custkey, orders.o_orderstatus, orders.o_totalprice, orders.o_orderdate, orders.o_orderpriority, orders.o_clerk, orders.o_shippriority, orders.o_comment]
          Scan customer [customer.c_custkey, customer.c_name, customer.c_address, customer.c_nationkey, customer.c_phone, customer.c_acctbal, customer.c_mktsegment, customer.c_comment]
          Scan nation [nation.n_nationkey, nation.n_name, nation.n_regionkey, nation.n_comment]
        Scan region [region.r_regionkey, region.r_name, region.r_comment]
-- after
Project nation.n_name, COUNT(*)
  Aggregate keys=[nation.n_name] aggs=[COUNT(*) := count(*)]
    Join left [nation.n_regionkey = region.r_regionkey]
      InnerJoins [(lineitem.l_orderkey = orders.o_orderkey), (orders.o_custkey = customer.c_custkey), (customer.c_nationkey = nation.n_nationkey), (nation.n_name = 'FRANCE'), (orders.o_orderdate < DATE '1995-01-01')]
        Scan lineitem [lineitem.l_orderkey, lineitem.l_partkey, lineitem.l_suppkey, lineitem.l_linenumber, lineitem.l_quantity, lineitem.l_extendedprice, lineitem.l_discount, lineitem.l_tax, lineitem.l_returnflag, lineitem.l_linestatus, lineitem.l_shipdate, lineitem.l_commitdate, lineitem.l_receiptdate, lineitem.l_shipinstruct, lineitem.l_shipmode, lineitem.l_comment]
        Scan orders [orders.o_orderkey, orders.o_custkey, orders.o_orderstatus, orders.o_totalprice, orders.o_orderdate, orders.o_orderpriority, orders.o_clerk, orders.o_shippriority, orders.o_comment]
        Scan customer [customer.c_custkey, customer.c_name, customer.c_address, customer.c_nationkey, customer.c_phone, customer.c_acctbal, customer.c_mktsegment, customer.c_comment]
        Scan nation [nation.n_nationkey, nation.n_name, nation.n_regionkey, nation.n_comment]
      Scan region [region.r_regionkey, region.r_name, region.r_comment]

-- case: a conjunct on the null-extended side of the LEFT JOIN stays above it; one without a column stays where it is
select count(*) from nation join region on n_regionkey = r_regionkey left join supplier on s_nationkey = n_nationkey
where s_acctbal > 0 and n_name <> 'FRANCE' and 1 = 1;
-- before
Project COUNT(*)
  Aggregate keys=[] aggs=[COUNT(*) := count(*)]
    Filter ((supplier.s_acctbal > 0.00) AND (nation.n_name <> 'FRANCE') AND True)
      Join left [nation.n_nationkey = supplier.s_nationkey]
        InnerJoins [(nation.n_regionkey = region.r_regionkey)]
          Scan nation [nation.n_nationkey, nation.n_name, nation.n_regionkey, nation.n_comment]
          Scan region [region.r_regionkey, region.r_name, region.r_comment]
        Scan supplier [supplier.s_suppkey, supplier.s_name, supplier.s_address, supplier.s_nationkey, supplier.s_phone, supplier.s_acctbal, supplier.s_comment]
-- after
Project COUNT(*)
  Aggregate keys=[] aggs=[COUNT(*) := count(*)]
    Filter ((supplier.s_acctbal > 0.00) AND True)
      Join left [nation.n_nationkey = supplier.s_nationkey]
        InnerJoins [(nation.n_regionkey = region.r_regionkey), (nation.n_name <> 'FRANCE')]
          Scan nation [nation.n_nationkey, nation.n_name, nation.n_regionkey, nation.n_comment]
          Scan region [region.r_regionkey, region.r_name, region.r_comment]
        Scan supplier [supplier.s_suppkey, supplier.s_name, supplier.s_address, supplier.s_nationkey, supplier.s_phone, supplier.s_acctbal, supplier.s_comment]

-- case: no conjunct goes below a RIGHT JOIN (it would keep rows the WHERE removes)
select count(*) from nation join region on n_regionkey = r_regionkey right join supplier on s_nationkey = n_nationkey
where n_name <> 'FRANCE';
-- before
Project COUNT(*)
  Aggregate keys=[] aggs=[COUNT(*) := count(*)]
    Filter (nation.n_name <> 'FRANCE')
      Join right [nation.n_nationkey = supplier.s_nationkey]
        InnerJoins [(nation.n_regionkey = region.r_regionkey)]
          Scan nation [nation.n_nationkey, nation.n_name, nation.n_regionkey, nation.n_comment]
          Scan region [region.r_regionkey, region.r_name, region.r_comment]
        Scan supplier [supplier.s_suppkey, supplier.s_name, supplier.s_address, supplier.s_nationkey, supplier.s_phone, supplier.s_acctbal, supplier.s_comment]
-- after
unchanged

-- case: a single table: the filter stays a Filter (push_filters takes it to the scan)
select count(*) from orders where o_orderkey < 10;
-- before
Project COUNT(*)
  Aggregate keys=[] aggs=[COUNT(*) := count(*)]
    Filter (orders.o_orderkey < 10)
      Scan orders [orders.o_orderkey, orders.o_custkey, orders.o_orderstatus, orders.o_totalprice, orders.o_orderdate, orders.o_orderpriority, orders.o_clerk, orders.o_shippriority, orders.o_comment]
-- after
unchanged
