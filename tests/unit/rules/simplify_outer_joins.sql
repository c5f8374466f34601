-- case: a condition whose every OR branch compares an orders column rejects the NULL-extended rows: the left join becomes inner, one run of three relations
select n_name, count(*) from customer left join orders on c_custkey = o_custkey, nation
where o_orderpriority = n_comment or o_shippriority = n_nationkey group by n_name;
-- before
Project nation.n_name, COUNT(*)
  Aggregate keys=[nation.n_name] aggs=[COUNT(*) := count(*)]
    InnerJoins [((orders.o_orderpriority = nation.n_comment) OR (orders.o_shippriority = nation.n_nationkey))]
      Join left [customer.c_custkey = orders.o_custkey]
        Scan customer [customer.c_custkey, customer.c_name, customer.c_address, customer.c_nationkey, customer.c_phone, customer.c_acctbal, customer.c_mktsegment, customer.c_comment]
        Scan orders [orders.o_orderkey, orders.o_custkey, orders.o_orderstatus, orders.o_totalprice, orders.o_orderdate, orders.o_orderpriority, orders.o_clerk, orders.o_shippriority, orders.o_comment]
      Scan nation [nation.n_nationkey, nation.n_name, nation.n_regionkey, nation.n_comment]
-- after
Project nation.n_name, COUNT(*)
  Aggregate keys=[nation.n_name] aggs=[COUNT(*) := count(*)]
    InnerJoins [((orders.o_orderpriority = nation.n_comment) OR (orders.o_shippriority = nation.n_nationkey)), (customer.c_custkey = orders.o_custkey)]
      Scan customer [customer.c_custkey, customer.c_name, customer.c_address, customer.c_nationkey, customer.c_phone, customer.c_acctbal, customer.c_mktsegment, customer.c_comment]
      Scan orders [orders.o_orderkey, orders.o_custkey, orders.o_orderstatus, orders.o_totalprice, orders.o_orderdate, orders.o_orderpriority, orders.o_clerk, orders.o_shippriority, orders.o_comment]
      Scan nation [nation.n_nationkey, nation.n_name, nation.n_regionkey, nation.n_comment]

-- case: a condition true for NULL orders columns keeps the left join
select n_name, count(*) from customer left join orders on c_custkey = o_custkey, nation
where o_orderpriority is null or o_shippriority = n_nationkey group by n_name;
-- before
Project nation.n_name, COUNT(*)
  Aggregate keys=[nation.n_name] aggs=[COUNT(*) := count(*)]
    InnerJoins [(is_null(orders.o_orderpriority) OR (orders.o_shippriority = nation.n_nationkey))]
      Join left [customer.c_custkey = orders.o_custkey]
        Scan customer [customer.c_custkey, customer.c_name, customer.c_address, customer.c_nationkey, customer.c_phone, customer.c_acctbal, customer.c_mktsegment, customer.c_comment]
        Scan orders [orders.o_orderkey, orders.o_custkey, orders.o_orderstatus, orders.o_totalprice, orders.o_orderdate, orders.o_orderpriority, orders.o_clerk, orders.o_shippriority, orders.o_comment]
      Scan nation [nation.n_nationkey, nation.n_name, nation.n_regionkey, nation.n_comment]
-- after
unchanged

-- case: coalesce over an orders column keeps the left join
select n_name, count(*) from customer left join orders on c_custkey = o_custkey, nation
where coalesce(o_shippriority, 0) = n_nationkey group by n_name;
-- before
Project nation.n_name, COUNT(*)
  Aggregate keys=[nation.n_name] aggs=[COUNT(*) := count(*)]
    InnerJoins [(coalesce(orders.o_shippriority, 0) = nation.n_nationkey)]
      Join left [customer.c_custkey = orders.o_custkey]
        Scan customer [customer.c_custkey, customer.c_name, customer.c_address, customer.c_nationkey, customer.c_phone, customer.c_acctbal, customer.c_mktsegment, customer.c_comment]
        Scan orders [orders.o_orderkey, orders.o_custkey, orders.o_orderstatus, orders.o_totalprice, orders.o_orderdate, orders.o_orderpriority, orders.o_clerk, orders.o_shippriority, orders.o_comment]
      Scan nation [nation.n_nationkey, nation.n_name, nation.n_regionkey, nation.n_comment]
-- after
unchanged
