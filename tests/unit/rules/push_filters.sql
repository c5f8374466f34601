-- case: Q7: (n1 = FRANCE and n2 = GERMANY) or (n1 = GERMANY and n2 = FRANCE) implies a filter on each nation scan
select supp_nation, cust_nation, l_year, sum(volume) as revenue
from (
  select n1.n_name as supp_nation, n2.n_name as cust_nation, extract(year from l_shipdate) as l_year,
    l_extendedprice * (1 - l_discount) as volume
  from supplier, lineitem, orders, customer, nation n1, nation n2
  where s_suppkey = l_suppkey and o_orderkey = l_orderkey and c_custkey = o_custkey
    and s_nationkey = n1.n_nationkey and c_nationkey = n2.n_nationkey
    and ((n1.n_name = 'FRANCE' and n2.n_name = 'GERMANY') or (n1.n_name = 'GERMANY' and n2.n_name = 'FRANCE'))
    and l_shipdate between date '1995-01-01' and date '1996-12-31'
) as shipping
group by supp_nation, cust_nation, l_year
order by supp_nation, cust_nation, l_year;
-- before
Sort [shipping.supp_nation, shipping.cust_nation, shipping.l_year]
  Project shipping.supp_nation, shipping.cust_nation, shipping.l_year, SUM(volume)
    Aggregate keys=[shipping.supp_nation, shipping.cust_nation, shipping.l_year] aggs=[SUM(volume) := sum(shipping.volume)]
      Project shipping.supp_nation := n1.n_name, shipping.cust_nation := n2.n_name, shipping.l_year := l_year, shipping.volume := volume
        Project n1.n_name, n2.n_name, l_year := extract(lineitem.l_shipdate, 'year'), volume := (lineitem.l_extendedprice * (1.00 - lineitem.l_discount))
          Filter (((n1.n_name = 'FRANCE') AND (n2.n_name = 'GERMANY')) OR ((n1.n_name = 'GERMANY') AND (n2.n_name = 'FRANCE')))
            Join inner [lineitem.l_orderkey = orders.o_orderkey]
              Join inner [lineitem.l_suppkey = supplier.s_suppkey]
                Filter (lineitem.l_shipdate <= DATE '1996-12-31')
                  Filter (lineitem.l_shipdate >= DATE '1995-01-01')
                    Scan lineitem [lineitem.l_orderkey, lineitem.l_partkey, lineitem.l_suppkey, lineitem.l_linenumber, lineitem.l_quantity, lineitem.l_extendedprice, lineitem.l_discount, lineitem.l_tax, lineitem.l_returnflag, lineitem.l_linestatus, lineitem.l_shipdate, lineitem.l_commitdate, lineitem.l_receiptdate, lineitem.l_shipinstruct, lineitem.l_shipmode, lineitem.l_comment]
                Join inner [supplier.s_nationkey = n1.n_nationkey]
                  Scan supplier [supplier.s_suppkey, supplier.s_name, supplier.s_address, supplier.s_nationkey, supplier.s_phone, supplier.s_acctbal, supplier.s_comment]
                  Filter ((n1.n_name = 'FRANCE') OR (n1.n_name = 'GERMANY'))
                    Scan nation [n1.n_nationkey, n1.n_name, n1.n_regionkey, n1.n_comment] as n1
              Join inner [orders.o_custkey = customer.c_custkey]
                Scan orders [orders.o_orderkey, orders.o_custkey, orders.o_orderstatus, orders.o_totalprice, orders.o_orderdate, orders.o_orderpriority, orders.o_clerk, orders.o_shippriority, orders.o_comment]
                Join inner [customer.c_nationkey = n2.n_nationkey]
                  Scan customer [customer.c_custkey, customer.c_name, customer.c_address, customer.c_nationkey, customer.c_phone, customer.c_acctbal, customer.c_mktsegment, customer.c_comment]
                  Filter ((n2.n_name = 'GERMANY') OR (n2.n_name = 'FRANCE'))
                    Scan nation [n2.n_nationkey, n2.n_name, n2.n_regionkey, n2.n_comment] as n2
-- after
Sort [shipping.supp_nation, shipping.cust_nation, shipping.l_year]
  Project shipping.supp_nation, shipping.cust_nation, shipping.l_year, SUM(volume)
    Aggregate keys=[shipping.supp_nation, shipping.cust_nation, shipping.l_year] aggs=[SUM(volume) := sum(shipping.volume)]
      Project shipping.supp_nation := n1.n_name, shipping.cust_nation := n2.n_name, shipping.l_year := l_year, shipping.volume := volume
        Project n1.n_name, n2.n_name, l_year := extract(lineitem.l_shipdate, 'year'), volume := (lineitem.l_extendedprice * (1.00 - lineitem.l_discount))
          Filter (((n1.n_name = 'FRANCE') AND (n2.n_name = 'GERMANY')) OR ((n1.n_name = 'GERMANY') AND (n2.n_name = 'FRANCE')))
            Join inner [lineitem.l_orderkey = orders.o_orderkey]
              Join inner [lineitem.l_suppkey = supplier.s_suppkey]
                Scan lineitem [lineitem.l_orderkey, lineitem.l_partkey, lineitem.l_suppkey, lineitem.l_linenumber, lineitem.l_quantity, lineitem.l_extendedprice, lineitem.l_discount, lineitem.l_tax, lineitem.l_returnflag, lineitem.l_linestatus, lineitem.l_shipdate, lineitem.l_commitdate, lineitem.l_receiptdate, lineitem.l_shipinstruct, lineitem.l_shipmode, lineitem.l_comment] filter=((lineitem.l_shipdate <= DATE '1996-12-31') AND (lineitem.l_shipdate >= DATE '1995-01-01'))
                Join inner [supplier.s_nationkey = n1.n_nationkey]
                  Scan supplier [supplier.s_suppkey, supplier.s_name, supplier.s_address, supplier.s_nationkey, supplier.s_phone, supplier.s_acctbal, supplier.s_comment]
                  Scan nation [n1.n_nationkey, n1.n_name, n1.n_regionkey, n1.n_comment] as n1 filter=((n1.n_name = 'FRANCE') OR (n1.n_name = 'GERMANY'))
              Join inner [orders.o_custkey = customer.c_custkey]
                Scan orders [orders.o_orderkey, orders.o_custkey, orders.o_orderstatus, orders.o_totalprice, orders.o_orderdate, orders.o_orderpriority, orders.o_clerk, orders.o_shippriority, orders.o_comment]
                Join inner [customer.c_nationkey = n2.n_nationkey]
                  Scan customer [customer.c_custkey, customer.c_name, customer.c_address, customer.c_nationkey, customer.c_phone, customer.c_acctbal, customer.c_mktsegment, customer.c_comment]
                  Scan nation [n2.n_nationkey, n2.n_name, n2.n_regionkey, n2.n_comment] as n2 filter=((n2.n_name = 'GERMANY') OR (n2.n_name = 'FRANCE'))

-- case: a filter over a derived table reaches the scan
select count(*) from (select * from orders) o where o.o_orderkey < 10;
-- before
Project COUNT(*)
  Aggregate keys=[] aggs=[COUNT(*) := count(*)]
    Filter (o.o_orderkey < 10)
      Project o.o_orderkey := orders.o_orderkey, o.o_custkey := orders.o_custkey, o.o_orderstatus := orders.o_orderstatus, o.o_totalprice := orders.o_totalprice, o.o_orderdate := orders.o_orderdate, o.o_orderpriority := orders.o_orderpriority, o.o_clerk := orders.o_clerk, o.o_shippriority := orders.o_shippriority, o.o_comment := orders.o_comment
        Project orders.o_orderkey, orders.o_custkey, orders.o_orderstatus, orders.o_totalprice, orders.o_orderdate, orders.o_orderpriority, orders.o_clerk, orders.o_shippriority, orders.o_comment
          Scan orders [orders.o_orderkey, orders.o_custkey, orders.o_orderstatus, orders.o_totalprice, orders.o_orderdate, orders.o_orderpriority, orders.o_clerk, orders.o_shippriority, orders.o_comment]
-- after
Project COUNT(*)
  Aggregate keys=[] aggs=[COUNT(*) := count(*)]
    Project o.o_orderkey := orders.o_orderkey, o.o_custkey := orders.o_custkey, o.o_orderstatus := orders.o_orderstatus, o.o_totalprice := orders.o_totalprice, o.o_orderdate := orders.o_orderdate, o.o_orderpriority := orders.o_orderpriority, o.o_clerk := orders.o_clerk, o.o_shippriority := orders.o_shippriority, o.o_comment := orders.o_comment
      Project orders.o_orderkey, orders.o_custkey, orders.o_orderstatus, orders.o_totalprice, orders.o_orderdate, orders.o_orderpriority, orders.o_clerk, orders.o_shippriority, orders.o_comment
        Scan orders [orders.o_orderkey, orders.o_custkey, orders.o_orderstatus, orders.o_totalprice, orders.o_orderdate, orders.o_orderpriority, orders.o_clerk, orders.o_shippriority, orders.o_comment] filter=(orders.o_orderkey < 10)

-- case: a LEFT JOIN on a filtered dimension's key sinks to it
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
    Join left [nation.n_regionkey = region.r_regionkey]
      Join inner [lineitem.l_orderkey = orders.o_orderkey]
        Scan lineitem [lineitem.l_orderkey, lineitem.l_partkey, lineitem.l_suppkey, lineitem.l_linenumber, lineitem.l_quantity, lineitem.l_extendedprice, lineitem.l_discount, lineitem.l_tax, lineitem.l_returnflag, lineitem.l_linestatus, lineitem.l_shipdate, lineitem.l_commitdate, lineitem.l_receiptdate, lineitem.l_shipinstruct, lineitem.l_shipmode, lineitem.l_comment]
        Join inner [orders.o_custkey = customer.c_custkey]
          Filter (orders.o_orderdate < DATE '1995-01-01')
            Scan orders [orders.o_orderkey, orders.o_custkey, orders.o_orderstatus, orders.o_totalprice, orders.o_orderdate, orders.o_orderpriority, orders.o_clerk, orders.o_shippriority, orders.o_comment]
          Join inner [customer.c_nationkey = nation.n_nationkey]
            Scan customer [customer.c_custkey, customer.c_name, customer.c_address, customer.c_nationkey, customer.c_phone, customer.c_acctbal, customer.c_mktsegment, customer.c_comment]
            Filter (nation.n_name = 'FRANCE')
              Scan nation [nation.n_nationkey, nation.n_name, nation.n_regionkey, nation.n_comment]
      Scan region [region.r_regionkey, region.r_name, region.r_comment]
-- after
Project nation.n_name, COUNT(*)
  Aggregate keys=[nation.n_name] aggs=[COUNT(*) := count(*)]
    Join inner [lineitem.l_orderkey = orders.o_orderkey]
      Scan lineitem [lineitem.l_orderkey, lineitem.l_partkey, lineitem.l_suppkey, lineitem.l_linenumber, lineitem.l_quantity, lineitem.l_extendedprice, lineitem.l_discount, lineitem.l_tax, lineitem.l_returnflag, lineitem.l_linestatus, lineitem.l_shipdate, lineitem.l_commitdate, lineitem.l_receiptdate, lineitem.l_shipinstruct, lineitem.l_shipmode, lineitem.l_comment]
      Join inner [orders.o_custkey = customer.c_custkey]
        Scan orders [orders.o_orderkey, orders.o_custkey, orders.o_orderstatus, orders.o_totalprice, orders.o_orderdate, orders.o_orderpriority, orders.o_clerk, orders.o_shippriority, orders.o_comment] filter=(orders.o_orderdate < DATE '1995-01-01')
        Join inner [customer.c_nationkey = nation.n_nationkey]
          Scan customer [customer.c_custkey, customer.c_name, customer.c_address, customer.c_nationkey, customer.c_phone, customer.c_acctbal, customer.c_mktsegment, customer.c_comment]
          Join left [nation.n_regionkey = region.r_regionkey]
            Scan nation [nation.n_nationkey, nation.n_name, nation.n_regionkey, nation.n_comment] filter=(nation.n_name = 'FRANCE')
            Scan region [region.r_regionkey, region.r_name, region.r_comment]

-- case: an ON conjunct on the null-extended side of a LEFT JOIN alone filters that side; one on the preserved side stays in the join
select count(*) from nation left join supplier on s_nationkey = n_nationkey and s_acctbal > 0 and n_regionkey = 1;
-- before
Project COUNT(*)
  Aggregate keys=[] aggs=[COUNT(*) := count(*)]
    Join left [nation.n_nationkey = supplier.s_nationkey] residual=((supplier.s_acctbal > 0.00) AND (nation.n_regionkey = 1))
      Scan nation [nation.n_nationkey, nation.n_name, nation.n_regionkey, nation.n_comment]
      Scan supplier [supplier.s_suppkey, supplier.s_name, supplier.s_address, supplier.s_nationkey, supplier.s_phone, supplier.s_acctbal, supplier.s_comment]
-- after
Project COUNT(*)
  Aggregate keys=[] aggs=[COUNT(*) := count(*)]
    Join left [nation.n_nationkey = supplier.s_nationkey] residual=(nation.n_regionkey = 1)
      Scan nation [nation.n_nationkey, nation.n_name, nation.n_regionkey, nation.n_comment]
      Scan supplier [supplier.s_suppkey, supplier.s_name, supplier.s_address, supplier.s_nationkey, supplier.s_phone, supplier.s_acctbal, supplier.s_comment] filter=(supplier.s_acctbal > 0.00)

-- case: ASOF join: a WHERE condition on the left side goes below it; one on the right side stays above (it must not change which right row is nearest)
select o_orderkey, l_linenumber from orders asof join lineitem on o_orderkey = l_orderkey and o_orderdate <= l_shipdate
where o_totalprice > 1000 and l_quantity < 5
-- before
Project orders.o_orderkey, lineitem.l_linenumber
  Filter ((orders.o_totalprice > 1000.00) AND (lineitem.l_quantity < 5.00))
    AsofJoin inner [orders.o_orderkey = lineitem.l_orderkey, orders.o_orderdate <= lineitem.l_shipdate]
      Scan orders [orders.o_orderkey, orders.o_custkey, orders.o_orderstatus, orders.o_totalprice, orders.o_orderdate, orders.o_orderpriority, orders.o_clerk, orders.o_shippriority, orders.o_comment]
      Scan lineitem [lineitem.l_orderkey, lineitem.l_partkey, lineitem.l_suppkey, lineitem.l_linenumber, lineitem.l_quantity, lineitem.l_extendedprice, lineitem.l_discount, lineitem.l_tax, lineitem.l_returnflag, lineitem.l_linestatus, lineitem.l_shipdate, lineitem.l_commitdate, lineitem.l_receiptdate, lineitem.l_shipinstruct, lineitem.l_shipmode, lineitem.l_comment]
-- after
Project orders.o_orderkey, lineitem.l_linenumber
  Filter (lineitem.l_quantity < 5.00)
    AsofJoin inner [orders.o_orderkey = lineitem.l_orderkey, orders.o_orderdate <= lineitem.l_shipdate]
      Scan orders [orders.o_orderkey, orders.o_custkey, orders.o_orderstatus, orders.o_totalprice, orders.o_orderdate, orders.o_orderpriority, orders.o_clerk, orders.o_shippriority, orders.o_comment] filter=(orders.o_totalprice > 1000.00)
      Scan lineitem [lineitem.l_orderkey, lineitem.l_partkey, lineitem.l_suppkey, lineitem.l_linenumber, lineitem.l_quantity, lineitem.l_extendedprice, lineitem.l_discount, lineitem.l_tax, lineitem.l_returnflag, lineitem.l_linestatus, lineitem.l_shipdate, lineitem.l_commitdate, lineitem.l_receiptdate, lineitem.l_shipinstruct, lineitem.l_shipmode, lineitem.l_comment]
