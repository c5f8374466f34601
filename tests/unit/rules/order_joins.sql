-- case: Q5: the translator's one run of six relations becomes a tree of five inner joins; customer and supplier (sharing only nationkey) are not joined first, many-to-many
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
      InnerJoins [(customer.c_custkey = orders.o_custkey), (lineitem.l_orderkey = orders.o_orderkey), (lineitem.l_suppkey = supplier.s_suppkey), (customer.c_nationkey = supplier.s_nationkey), (supplier.s_nationkey = nation.n_nationkey), (nation.n_regionkey = region.r_regionkey), (region.r_name = 'ASIA'), (orders.o_orderdate >= DATE '1994-01-01'), (orders.o_orderdate < DATE '1995-01-01')]
        Scan customer [customer.c_custkey, customer.c_name, customer.c_address, customer.c_nationkey, customer.c_phone, customer.c_acctbal, customer.c_mktsegment, customer.c_comment]
        Scan orders [orders.o_orderkey, orders.o_custkey, orders.o_orderstatus, orders.o_totalprice, orders.o_orderdate, orders.o_orderpriority, orders.o_clerk, orders.o_shippriority, orders.o_comment]
        Scan lineitem [lineitem.l_orderkey, lineitem.l_partkey, lineitem.l_suppkey, lineitem.l_linenumber, lineitem.l_quantity, lineitem.l_extendedprice, lineitem.l_discount, lineitem.l_tax, lineitem.l_returnflag, lineitem.l_linestatus, lineitem.l_shipdate, lineitem.l_commitdate, lineitem.l_receiptdate, lineitem.l_shipinstruct, lineitem.l_shipmode, lineitem.l_comment]
        Scan supplier [supplier.s_suppkey, supplier.s_name, supplier.s_address, supplier.s_nationkey, supplier.s_phone, supplier.s_acctbal, supplier.s_comment]
        Scan nation [nation.n_nationkey, nation.n_name, nation.n_regionkey, nation.n_comment]
        Scan region [region.r_regionkey, region.r_name, region.r_comment]
-- after
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
              Filter (region.r_name = 'ASIA')
                Scan region [region.r_regionkey, region.r_name, region.r_comment]
        Join inner [orders.o_custkey = customer.c_custkey]
          Filter (orders.o_orderdate < DATE '1995-01-01')
            Filter (orders.o_orderdate >= DATE '1994-01-01')
              Scan orders [orders.o_orderkey, orders.o_custkey, orders.o_orderstatus, orders.o_totalprice, orders.o_orderdate, orders.o_orderpriority, orders.o_clerk, orders.o_shippriority, orders.o_comment]
          Scan customer [customer.c_custkey, customer.c_name, customer.c_address, customer.c_nationkey, customer.c_phone, customer.c_acctbal, customer.c_mktsegment, customer.c_comment]

-- case: Q8: lineitem meets the part filter (1/150) before the orders of two years (~2/7)
select o_year, sum(case when nation = 'BRAZIL' then volume else 0 end) / sum(volume) as mkt_share
from (
  select extract(year from o_orderdate) as o_year, l_extendedprice * (1 - l_discount) as volume,
    n2.n_name as nation
  from part, supplier, lineitem, orders, customer, nation n1, nation n2, region
  where p_partkey = l_partkey and s_suppkey = l_suppkey and l_orderkey = o_orderkey
    and o_custkey = c_custkey and c_nationkey = n1.n_nationkey and n1.n_regionkey = r_regionkey
    and r_name = 'AMERICA' and s_nationkey = n2.n_nationkey
    and o_orderdate between date '1995-01-01' and date '1996-12-31' and p_type = 'ECONOMY ANODIZED STEEL'
) as all_nations
group by o_year
order by o_year;
-- before
Sort [all_nations.o_year]
  Project all_nations.o_year, mkt_share := (SUM(CASE WHEN nation = 'BRAZIL' THEN volume ELSE / SUM(volume))
    Aggregate keys=[all_nations.o_year] aggs=[SUM(CASE WHEN nation = 'BRAZIL' THEN volume ELSE := sum(case((all_nations.nation = 'BRAZIL'), all_nations.volume, 0.0000)), SUM(volume) := sum(all_nations.volume)]
      Project all_nations.o_year := o_year, all_nations.volume := volume, all_nations.nation := n2.n_name
        Project o_year := extract(orders.o_orderdate, 'year'), volume := (lineitem.l_extendedprice * (1.00 - lineitem.l_discount)), n2.n_name
          InnerJoins [(part.p_partkey = lineitem.l_partkey), (supplier.s_suppkey = lineitem.l_suppkey), (lineitem.l_orderkey = orders.o_orderkey), (orders.o_custkey = customer.c_custkey), (customer.c_nationkey = n1.n_nationkey), (n1.n_regionkey = region.r_regionkey), (region.r_name = 'AMERICA'), (supplier.s_nationkey = n2.n_nationkey), (orders.o_orderdate >= DATE '1995-01-01'), (orders.o_orderdate <= DATE '1996-12-31'), (part.p_type = 'ECONOMY ANODIZED STEEL')]
            Scan part [part.p_partkey, part.p_name, part.p_mfgr, part.p_brand, part.p_type, part.p_size, part.p_container, part.p_retailprice, part.p_comment]
            Scan supplier [supplier.s_suppkey, supplier.s_name, supplier.s_address, supplier.s_nationkey, supplier.s_phone, supplier.s_acctbal, supplier.s_comment]
            Scan lineitem [lineitem.l_orderkey, lineitem.l_partkey, lineitem.l_suppkey, lineitem.l_linenumber, lineitem.l_quantity, lineitem.l_extendedprice, lineitem.l_discount, lineitem.l_tax, lineitem.l_returnflag, lineitem.l_linestatus, lineitem.l_shipdate, lineitem.l_commitdate, lineitem.l_receiptdate, lineitem.l_shipinstruct, lineitem.l_shipmode, lineitem.l_comment]
            Scan orders [orders.o_orderkey, orders.o_custkey, orders.o_orderstatus, orders.o_totalprice, orders.o_orderdate, orders.o_orderpriority, orders.o_clerk, orders.o_shippriority, orders.o_comment]
            Scan customer [customer.c_custkey, customer.c_name, customer.c_address, customer.c_nationkey, customer.c_phone, customer.c_acctbal, customer.c_mktsegment, customer.c_comment]
            Scan nation [n1.n_nationkey, n1.n_name, n1.n_regionkey, n1.n_comment] as n1
            Scan nation [n2.n_nationkey, n2.n_name, n2.n_regionkey, n2.n_comment] as n2
            Scan region [region.r_regionkey, region.r_name, region.r_comment]
-- after
Sort [all_nations.o_year]
  Project all_nations.o_year, mkt_share := (SUM(CASE WHEN nation = 'BRAZIL' THEN volume ELSE / SUM(volume))
    Aggregate keys=[all_nations.o_year] aggs=[SUM(CASE WHEN nation = 'BRAZIL' THEN volume ELSE := sum(case((all_nations.nation = 'BRAZIL'), all_nations.volume, 0.0000)), SUM(volume) := sum(all_nations.volume)]
      Project all_nations.o_year := o_year, all_nations.volume := volume, all_nations.nation := n2.n_name
        Project o_year := extract(orders.o_orderdate, 'year'), volume := (lineitem.l_extendedprice * (1.00 - lineitem.l_discount)), n2.n_name
          Join inner [supplier.s_suppkey = lineitem.l_suppkey]
            Join inner [supplier.s_nationkey = n2.n_nationkey]
              Scan supplier [supplier.s_suppkey, supplier.s_name, supplier.s_address, supplier.s_nationkey, supplier.s_phone, supplier.s_acctbal, supplier.s_comment]
              Scan nation [n2.n_nationkey, n2.n_name, n2.n_regionkey, n2.n_comment] as n2
            Join inner [customer.c_custkey = orders.o_custkey]
              Join inner [customer.c_nationkey = n1.n_nationkey]
                Scan customer [customer.c_custkey, customer.c_name, customer.c_address, customer.c_nationkey, customer.c_phone, customer.c_acctbal, customer.c_mktsegment, customer.c_comment]
                Join inner [n1.n_regionkey = region.r_regionkey]
                  Scan nation [n1.n_nationkey, n1.n_name, n1.n_regionkey, n1.n_comment] as n1
                  Filter (region.r_name = 'AMERICA')
                    Scan region [region.r_regionkey, region.r_name, region.r_comment]
              Join inner [orders.o_orderkey = lineitem.l_orderkey]
                Filter (orders.o_orderdate <= DATE '1996-12-31')
                  Filter (orders.o_orderdate >= DATE '1995-01-01')
                    Scan orders [orders.o_orderkey, orders.o_custkey, orders.o_orderstatus, orders.o_totalprice, orders.o_orderdate, orders.o_orderpriority, orders.o_clerk, orders.o_shippriority, orders.o_comment]
                Join inner [lineitem.l_partkey = part.p_partkey]
                  Scan lineitem [lineitem.l_orderkey, lineitem.l_partkey, lineitem.l_suppkey, lineitem.l_linenumber, lineitem.l_quantity, lineitem.l_extendedprice, lineitem.l_discount, lineitem.l_tax, lineitem.l_returnflag, lineitem.l_linestatus, lineitem.l_shipdate, lineitem.l_commitdate, lineitem.l_receiptdate, lineitem.l_shipinstruct, lineitem.l_shipmode, lineitem.l_comment]
                  Filter (part.p_type = 'ECONOMY ANODIZED STEEL')
                    Scan part [part.p_partkey, part.p_name, part.p_mfgr, part.p_brand, part.p_type, part.p_size, part.p_container, part.p_retailprice, part.p_comment]

-- case: JOIN ... ON chain before a LEFT JOIN (TPC-DS Q72's shape): the inner run is ordered as a whole; the fact table probes the filtered dimension chain
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
      InnerJoins [(lineitem.l_orderkey = orders.o_orderkey), (orders.o_custkey = customer.c_custkey), (customer.c_nationkey = nation.n_nationkey), (nation.n_name = 'FRANCE'), (orders.o_orderdate < DATE '1995-01-01')]
        Scan lineitem [lineitem.l_orderkey, lineitem.l_partkey, lineitem.l_suppkey, lineitem.l_linenumber, lineitem.l_quantity, lineitem.l_extendedprice, lineitem.l_discount, lineitem.l_tax, lineitem.l_returnflag, lineitem.l_linestatus, lineitem.l_shipdate, lineitem.l_commitdate, lineitem.l_receiptdate, lineitem.l_shipinstruct, lineitem.l_shipmode, lineitem.l_comment]
        Scan orders [orders.o_orderkey, orders.o_custkey, orders.o_orderstatus, orders.o_totalprice, orders.o_orderdate, orders.o_orderpriority, orders.o_clerk, orders.o_shippriority, orders.o_comment]
        Scan customer [customer.c_custkey, customer.c_name, customer.c_address, customer.c_nationkey, customer.c_phone, customer.c_acctbal, customer.c_mktsegment, customer.c_comment]
        Scan nation [nation.n_nationkey, nation.n_name, nation.n_regionkey, nation.n_comment]
      Scan region [region.r_regionkey, region.r_name, region.r_comment]
-- after
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
