-- case: only the column used is read
select sum(l_quantity) from lineitem;
-- before
Project SUM(l_quantity)
  Aggregate keys=[] aggs=[SUM(l_quantity) := sum(lineitem.l_quantity)]
    Scan lineitem [lineitem.l_orderkey, lineitem.l_partkey, lineitem.l_suppkey, lineitem.l_linenumber, lineitem.l_quantity, lineitem.l_extendedprice, lineitem.l_discount, lineitem.l_tax, lineitem.l_returnflag, lineitem.l_linestatus, lineitem.l_shipdate, lineitem.l_commitdate, lineitem.l_receiptdate, lineitem.l_shipinstruct, lineitem.l_shipmode, lineitem.l_comment]
-- after
Project SUM(l_quantity)
  Aggregate keys=[] aggs=[SUM(l_quantity) := sum(lineitem.l_quantity)]
    Scan lineitem [lineitem.l_quantity]

-- case: Q9: p_name is read for the LIKE filter but not passed on to the join
select nation, o_year, sum(amount) as sum_profit
from (
  select n_name as nation, extract(year from o_orderdate) as o_year,
    l_extendedprice * (1 - l_discount) - ps_supplycost * l_quantity as amount
  from part, supplier, lineitem, partsupp, orders, nation
  where s_suppkey = l_suppkey and ps_suppkey = l_suppkey and ps_partkey = l_partkey
    and p_partkey = l_partkey and o_orderkey = l_orderkey and s_nationkey = n_nationkey
    and p_name like '%green%'
) as profit
group by nation, o_year
order by nation, o_year desc;
-- before
Sort [profit.nation, profit.o_year desc]
  Project profit.nation, profit.o_year, SUM(amount)
    Aggregate keys=[profit.nation, profit.o_year] aggs=[SUM(amount) := sum(profit.amount)]
      Project profit.nation := nation.n_name, profit.o_year := o_year, profit.amount := amount
        Project nation.n_name, o_year := extract(orders.o_orderdate, 'year'), amount := ((lineitem.l_extendedprice * (1.00 - lineitem.l_discount)) - (partsupp.ps_supplycost * lineitem.l_quantity))
          Join inner [partsupp.ps_suppkey = lineitem.l_suppkey, partsupp.ps_partkey = lineitem.l_partkey]
            Scan partsupp [partsupp.ps_partkey, partsupp.ps_suppkey, partsupp.ps_availqty, partsupp.ps_supplycost, partsupp.ps_comment]
            Join inner [lineitem.l_suppkey = supplier.s_suppkey]
              Join inner [orders.o_orderkey = lineitem.l_orderkey]
                Scan orders [orders.o_orderkey, orders.o_custkey, orders.o_orderstatus, orders.o_totalprice, orders.o_orderdate, orders.o_orderpriority, orders.o_clerk, orders.o_shippriority, orders.o_comment]
                Join inner [lineitem.l_partkey = part.p_partkey]
                  Scan lineitem [lineitem.l_orderkey, lineitem.l_partkey, lineitem.l_suppkey, lineitem.l_linenumber, lineitem.l_quantity, lineitem.l_extendedprice, lineitem.l_discount, lineitem.l_tax, lineitem.l_returnflag, lineitem.l_linestatus, lineitem.l_shipdate, lineitem.l_commitdate, lineitem.l_receiptdate, lineitem.l_shipinstruct, lineitem.l_shipmode, lineitem.l_comment]
                  Scan part [part.p_partkey, part.p_name, part.p_mfgr, part.p_brand, part.p_type, part.p_size, part.p_container, part.p_retailprice, part.p_comment] filter=like(part.p_name, '%green%')
              Join inner [supplier.s_nationkey = nation.n_nationkey]
                Scan supplier [supplier.s_suppkey, supplier.s_name, supplier.s_address, supplier.s_nationkey, supplier.s_phone, supplier.s_acctbal, supplier.s_comment]
                Scan nation [nation.n_nationkey, nation.n_name, nation.n_regionkey, nation.n_comment]
-- after
Sort [profit.nation, profit.o_year desc]
  Project profit.nation, profit.o_year, SUM(amount)
    Aggregate keys=[profit.nation, profit.o_year] aggs=[SUM(amount) := sum(profit.amount)]
      Project profit.nation := nation.n_name, profit.o_year := o_year, profit.amount := amount
        Project nation.n_name, o_year := extract(orders.o_orderdate, 'year'), amount := ((lineitem.l_extendedprice * (1.00 - lineitem.l_discount)) - (partsupp.ps_supplycost * lineitem.l_quantity))
          Join inner [partsupp.ps_suppkey = lineitem.l_suppkey, partsupp.ps_partkey = lineitem.l_partkey] outputs=[partsupp.ps_supplycost, orders.o_orderdate, lineitem.l_quantity, lineitem.l_extendedprice, lineitem.l_discount, nation.n_name]
            Scan partsupp [partsupp.ps_partkey, partsupp.ps_suppkey, partsupp.ps_supplycost]
            Join inner [lineitem.l_suppkey = supplier.s_suppkey] outputs=[orders.o_orderdate, lineitem.l_partkey, lineitem.l_suppkey, lineitem.l_quantity, lineitem.l_extendedprice, lineitem.l_discount, nation.n_name]
              Join inner [orders.o_orderkey = lineitem.l_orderkey] outputs=[orders.o_orderdate, lineitem.l_partkey, lineitem.l_suppkey, lineitem.l_quantity, lineitem.l_extendedprice, lineitem.l_discount]
                Scan orders [orders.o_orderkey, orders.o_orderdate]
                Join inner [lineitem.l_partkey = part.p_partkey] outputs=[lineitem.l_orderkey, lineitem.l_partkey, lineitem.l_suppkey, lineitem.l_quantity, lineitem.l_extendedprice, lineitem.l_discount]
                  Scan lineitem [lineitem.l_orderkey, lineitem.l_partkey, lineitem.l_suppkey, lineitem.l_quantity, lineitem.l_extendedprice, lineitem.l_discount]
                  Scan part [part.p_partkey, part.p_name] filter=like(part.p_name, '%green%') outputs=[part.p_partkey]
              Join inner [supplier.s_nationkey = nation.n_nationkey] outputs=[supplier.s_suppkey, nation.n_name]
                Scan supplier [supplier.s_suppkey, supplier.s_nationkey]
                Scan nation [nation.n_nationkey, nation.n_name]

-- case: Q5: above the orders-customer join only o_orderkey and c_nationkey are used, so the join emits two columns
select n_name, sum(l_extendedprice * (1 - l_discount)) as revenue
from customer, orders, lineitem, supplier, nation, region
where c_custkey = o_custkey and l_orderkey = o_orderkey and l_suppkey = s_suppkey
  and c_nationkey = s_nationkey and s_nationkey = n_nationkey and n_regionkey = r_regionkey
  and r_name = 'ASIA' and o_orderdate >= date '1994-01-01'
  and o_orderdate < date '1994-01-01' + interval '1' year
group by n_name
order by revenue desc;
-- before
Sort [SUM(l_extendedprice * (1 - l_discount)) desc]
  Project nation.n_name, SUM(l_extendedprice * (1 - l_discount))
    Aggregate keys=[nation.n_name] aggs=[SUM(l_extendedprice * (1 - l_discount)) := sum((lineitem.l_extendedprice * (1.00 - lineitem.l_discount)))]
      Join inner [lineitem.l_orderkey = orders.o_orderkey, supplier.s_nationkey = customer.c_nationkey]
        Join inner [lineitem.l_suppkey = supplier.s_suppkey]
          Scan lineitem [lineitem.l_orderkey, lineitem.l_partkey, lineitem.l_suppkey, lineitem.l_linenumber, lineitem.l_quantity, lineitem.l_extendedprice, lineitem.l_discount, lineitem.l_tax, lineitem.l_returnflag, lineitem.l_linestatus, lineitem.l_shipdate, lineitem.l_commitdate, lineitem.l_receiptdate, lineitem.l_shipinstruct, lineitem.l_shipmode, lineitem.l_comment]
          Join inner [supplier.s_nationkey = nation.n_nationkey]
            Scan supplier [supplier.s_suppkey, supplier.s_name, supplier.s_address, supplier.s_nationkey, supplier.s_phone, supplier.s_acctbal, supplier.s_comment]
            Join inner [nation.n_regionkey = region.r_regionkey]
              Scan nation [nation.n_nationkey, nation.n_name, nation.n_regionkey, nation.n_comment]
              Scan region [region.r_regionkey, region.r_name, region.r_comment] filter=(region.r_name = 'ASIA')
        Join inner [orders.o_custkey = customer.c_custkey]
          Scan orders [orders.o_orderkey, orders.o_custkey, orders.o_orderstatus, orders.o_totalprice, orders.o_orderdate, orders.o_orderpriority, orders.o_clerk, orders.o_shippriority, orders.o_comment] filter=((orders.o_orderdate < DATE '1995-01-01') AND (orders.o_orderdate >= DATE '1994-01-01'))
          Scan customer [customer.c_custkey, customer.c_name, customer.c_address, customer.c_nationkey, customer.c_phone, customer.c_acctbal, customer.c_mktsegment, customer.c_comment]
-- after
Sort [SUM(l_extendedprice * (1 - l_discount)) desc]
  Project nation.n_name, SUM(l_extendedprice * (1 - l_discount))
    Aggregate keys=[nation.n_name] aggs=[SUM(l_extendedprice * (1 - l_discount)) := sum((lineitem.l_extendedprice * (1.00 - lineitem.l_discount)))]
      Join inner [lineitem.l_orderkey = orders.o_orderkey, supplier.s_nationkey = customer.c_nationkey] outputs=[lineitem.l_extendedprice, lineitem.l_discount, nation.n_name]
        Join inner [lineitem.l_suppkey = supplier.s_suppkey] outputs=[lineitem.l_orderkey, lineitem.l_extendedprice, lineitem.l_discount, supplier.s_nationkey, nation.n_name]
          Scan lineitem [lineitem.l_orderkey, lineitem.l_suppkey, lineitem.l_extendedprice, lineitem.l_discount]
          Join inner [supplier.s_nationkey = nation.n_nationkey] outputs=[supplier.s_suppkey, supplier.s_nationkey, nation.n_name]
            Scan supplier [supplier.s_suppkey, supplier.s_nationkey]
            Join inner [nation.n_regionkey = region.r_regionkey] outputs=[nation.n_nationkey, nation.n_name]
              Scan nation [nation.n_nationkey, nation.n_name, nation.n_regionkey]
              Scan region [region.r_regionkey, region.r_name] filter=(region.r_name = 'ASIA') outputs=[region.r_regionkey]
        Join inner [orders.o_custkey = customer.c_custkey] outputs=[orders.o_orderkey, customer.c_nationkey]
          Scan orders [orders.o_orderkey, orders.o_custkey, orders.o_orderdate] filter=((orders.o_orderdate < DATE '1995-01-01') AND (orders.o_orderdate >= DATE '1994-01-01')) outputs=[orders.o_orderkey, orders.o_custkey]
          Scan customer [customer.c_custkey, customer.c_nationkey]

-- case: two whole-partition window aggregates: the second one's Shared holds the first's, and pruning reaches the inner one too
select sum(x) from (select avg(l_extendedprice) over (partition by l_suppkey) + sum(l_quantity) over (partition by l_returnflag) x from lineitem);
-- before
Project SUM(x)
  Aggregate keys=[] aggs=[SUM(x) := sum(unnamed_subquery1.x)]
    Project unnamed_subquery1.x := x
      Project x := (AVG(l_extendedprice) OVER (PARTITION BY l_suppke + SUM(l_quantity) OVER (PARTITION BY l_returnflag))
        Project lineitem.l_orderkey, lineitem.l_partkey, lineitem.l_suppkey, lineitem.l_linenumber, lineitem.l_quantity, lineitem.l_extendedprice, lineitem.l_discount, lineitem.l_tax, lineitem.l_returnflag, lineitem.l_linestatus, lineitem.l_shipdate, lineitem.l_commitdate, lineitem.l_receiptdate, lineitem.l_shipinstruct, lineitem.l_shipmode, lineitem.l_comment, AVG(l_extendedprice) OVER (PARTITION BY l_suppke, SUM(l_quantity) OVER (PARTITION BY l_returnflag)
          Join inner [is_null(lineitem.l_returnflag) = is_null(partition_key#2), coalesce(lineitem.l_returnflag, '') = coalesce(partition_key#2, '')]
            Shared #1
              Project lineitem.l_orderkey, lineitem.l_partkey, lineitem.l_suppkey, lineitem.l_linenumber, lineitem.l_quantity, lineitem.l_extendedprice, lineitem.l_discount, lineitem.l_tax, lineitem.l_returnflag, lineitem.l_linestatus, lineitem.l_shipdate, lineitem.l_commitdate, lineitem.l_receiptdate, lineitem.l_shipinstruct, lineitem.l_shipmode, lineitem.l_comment, AVG(l_extendedprice) OVER (PARTITION BY l_suppke
                Join inner [is_null(lineitem.l_suppkey) = is_null(partition_key), coalesce(lineitem.l_suppkey, 0) = coalesce(partition_key, 0)]
                  Shared #2
                    Scan lineitem [lineitem.l_orderkey, lineitem.l_partkey, lineitem.l_suppkey, lineitem.l_linenumber, lineitem.l_quantity, lineitem.l_extendedprice, lineitem.l_discount, lineitem.l_tax, lineitem.l_returnflag, lineitem.l_linestatus, lineitem.l_shipdate, lineitem.l_commitdate, lineitem.l_receiptdate, lineitem.l_shipinstruct, lineitem.l_shipmode, lineitem.l_comment]
                  Aggregate keys=[partition_key := lineitem.l_suppkey] aggs=[AVG(l_extendedprice) OVER (PARTITION BY l_suppke := avg(lineitem.l_extendedprice)]
                    Shared #2 (as above)
            Aggregate keys=[partition_key#2 := lineitem.l_returnflag] aggs=[SUM(l_quantity) OVER (PARTITION BY l_returnflag) := sum(lineitem.l_quantity)]
              Shared #1 (as above)
-- after
Project SUM(x)
  Aggregate keys=[] aggs=[SUM(x) := sum(unnamed_subquery1.x)]
    Project unnamed_subquery1.x := x
      Project x := (AVG(l_extendedprice) OVER (PARTITION BY l_suppke + SUM(l_quantity) OVER (PARTITION BY l_returnflag))
        Project AVG(l_extendedprice) OVER (PARTITION BY l_suppke, SUM(l_quantity) OVER (PARTITION BY l_returnflag)
          Join inner [is_null(lineitem.l_returnflag) = is_null(partition_key#2), coalesce(lineitem.l_returnflag, '') = coalesce(partition_key#2, '')] outputs=[AVG(l_extendedprice) OVER (PARTITION BY l_suppke, SUM(l_quantity) OVER (PARTITION BY l_returnflag)]
            Shared #1
              Project lineitem.l_quantity, lineitem.l_returnflag, AVG(l_extendedprice) OVER (PARTITION BY l_suppke
                Join inner [is_null(lineitem.l_suppkey) = is_null(partition_key), coalesce(lineitem.l_suppkey, 0) = coalesce(partition_key, 0)] outputs=[lineitem.l_quantity, lineitem.l_returnflag, AVG(l_extendedprice) OVER (PARTITION BY l_suppke]
                  Shared #2
                    Scan lineitem [lineitem.l_suppkey, lineitem.l_quantity, lineitem.l_extendedprice, lineitem.l_returnflag]
                  Aggregate keys=[partition_key := lineitem.l_suppkey] aggs=[AVG(l_extendedprice) OVER (PARTITION BY l_suppke := avg(lineitem.l_extendedprice)]
                    Shared #2 (as above)
            Aggregate keys=[partition_key#2 := lineitem.l_returnflag] aggs=[SUM(l_quantity) OVER (PARTITION BY l_returnflag) := sum(lineitem.l_quantity)]
              Shared #1 (as above)

-- case: ASOF join: each side keeps the columns its keys, inequality and conditions read, and those wanted above
select o_orderkey from orders asof left join lineitem on o_orderkey = l_orderkey and o_orderdate <= l_shipdate and o_totalprice + l_tax > 3 and l_quantity < 5
-- before
Project orders.o_orderkey
  AsofJoin left [orders.o_orderkey = lineitem.l_orderkey, orders.o_orderdate <= lineitem.l_shipdate] residual=((orders.o_totalprice + lineitem.l_tax) > 3.00)
    Scan orders [orders.o_orderkey, orders.o_custkey, orders.o_orderstatus, orders.o_totalprice, orders.o_orderdate, orders.o_orderpriority, orders.o_clerk, orders.o_shippriority, orders.o_comment]
    Scan lineitem [lineitem.l_orderkey, lineitem.l_partkey, lineitem.l_suppkey, lineitem.l_linenumber, lineitem.l_quantity, lineitem.l_extendedprice, lineitem.l_discount, lineitem.l_tax, lineitem.l_returnflag, lineitem.l_linestatus, lineitem.l_shipdate, lineitem.l_commitdate, lineitem.l_receiptdate, lineitem.l_shipinstruct, lineitem.l_shipmode, lineitem.l_comment] filter=(lineitem.l_quantity < 5.00)
-- after
Project orders.o_orderkey
  AsofJoin left [orders.o_orderkey = lineitem.l_orderkey, orders.o_orderdate <= lineitem.l_shipdate] residual=((orders.o_totalprice + lineitem.l_tax) > 3.00) outputs=[orders.o_orderkey]
    Scan orders [orders.o_orderkey, orders.o_totalprice, orders.o_orderdate]
    Scan lineitem [lineitem.l_orderkey, lineitem.l_quantity, lineitem.l_tax, lineitem.l_shipdate] filter=(lineitem.l_quantity < 5.00) outputs=[lineitem.l_orderkey, lineitem.l_tax, lineitem.l_shipdate]
