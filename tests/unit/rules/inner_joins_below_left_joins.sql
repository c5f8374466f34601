-- case: inner joins on the preserved side go below the left join (nation filters customer before orders is probed)
select count(*) from customer left join orders on c_custkey = o_custkey, nation
where c_nationkey = n_nationkey and n_name = 'FRANCE';
-- before
Project COUNT(*)
  Aggregate keys=[] aggs=[COUNT(*) := count(*)]
    InnerJoins [(customer.c_nationkey = nation.n_nationkey), (nation.n_name = 'FRANCE')]
      Join left [customer.c_custkey = orders.o_custkey]
        Scan customer [customer.c_custkey, customer.c_name, customer.c_address, customer.c_nationkey, customer.c_phone, customer.c_acctbal, customer.c_mktsegment, customer.c_comment]
        Scan orders [orders.o_orderkey, orders.o_custkey, orders.o_orderstatus, orders.o_totalprice, orders.o_orderdate, orders.o_orderpriority, orders.o_clerk, orders.o_shippriority, orders.o_comment]
      Scan nation [nation.n_nationkey, nation.n_name, nation.n_regionkey, nation.n_comment]
-- after
Project COUNT(*)
  Aggregate keys=[] aggs=[COUNT(*) := count(*)]
    Join left [customer.c_custkey = orders.o_custkey]
      InnerJoins [(customer.c_nationkey = nation.n_nationkey), (nation.n_name = 'FRANCE')]
        Scan customer [customer.c_custkey, customer.c_name, customer.c_address, customer.c_nationkey, customer.c_phone, customer.c_acctbal, customer.c_mktsegment, customer.c_comment]
        Scan nation [nation.n_nationkey, nation.n_name, nation.n_regionkey, nation.n_comment]
      Scan orders [orders.o_orderkey, orders.o_custkey, orders.o_orderstatus, orders.o_totalprice, orders.o_orderdate, orders.o_orderpriority, orders.o_clerk, orders.o_shippriority, orders.o_comment]
