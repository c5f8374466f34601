-- case: keys computed from another key's column alone are computed per group, above the aggregation
select l_orderkey, l_orderkey - 1, l_orderkey * 2 + 1, count(*) from lineitem group by l_orderkey, l_orderkey - 1, l_orderkey * 2 + 1;
-- before
Project lineitem.l_orderkey, l_orderkey - 1, l_orderkey * 2 + 1, COUNT(*)
  Aggregate keys=[lineitem.l_orderkey, l_orderkey - 1 := (lineitem.l_orderkey - 1), l_orderkey * 2 + 1 := ((lineitem.l_orderkey * 2) + 1)] aggs=[COUNT(*) := count(*)]
    Scan lineitem [lineitem.l_orderkey, lineitem.l_partkey, lineitem.l_suppkey, lineitem.l_linenumber, lineitem.l_quantity, lineitem.l_extendedprice, lineitem.l_discount, lineitem.l_tax, lineitem.l_returnflag, lineitem.l_linestatus, lineitem.l_shipdate, lineitem.l_commitdate, lineitem.l_receiptdate, lineitem.l_shipinstruct, lineitem.l_shipmode, lineitem.l_comment]
-- after
Project lineitem.l_orderkey, l_orderkey - 1, l_orderkey * 2 + 1, COUNT(*)
  Project lineitem.l_orderkey, l_orderkey - 1 := (lineitem.l_orderkey - 1), l_orderkey * 2 + 1 := ((lineitem.l_orderkey * 2) + 1), COUNT(*)
    Aggregate keys=[lineitem.l_orderkey] aggs=[COUNT(*) := count(*)]
      Scan lineitem [lineitem.l_orderkey, lineitem.l_partkey, lineitem.l_suppkey, lineitem.l_linenumber, lineitem.l_quantity, lineitem.l_extendedprice, lineitem.l_discount, lineitem.l_tax, lineitem.l_returnflag, lineitem.l_linestatus, lineitem.l_shipdate, lineitem.l_commitdate, lineitem.l_receiptdate, lineitem.l_shipinstruct, lineitem.l_shipmode, lineitem.l_comment]

-- case: a key from another column, or a function outside plain arithmetic, stays a key
select l_orderkey, l_partkey + 1, upper(l_returnflag), count(*) from lineitem group by l_orderkey, l_partkey + 1, upper(l_returnflag);
-- before
Project lineitem.l_orderkey, l_partkey + 1, UPPER(l_returnflag), COUNT(*)
  Aggregate keys=[lineitem.l_orderkey, l_partkey + 1 := (lineitem.l_partkey + 1), UPPER(l_returnflag) := upper(lineitem.l_returnflag)] aggs=[COUNT(*) := count(*)]
    Scan lineitem [lineitem.l_orderkey, lineitem.l_partkey, lineitem.l_suppkey, lineitem.l_linenumber, lineitem.l_quantity, lineitem.l_extendedprice, lineitem.l_discount, lineitem.l_tax, lineitem.l_returnflag, lineitem.l_linestatus, lineitem.l_shipdate, lineitem.l_commitdate, lineitem.l_receiptdate, lineitem.l_shipinstruct, lineitem.l_shipmode, lineitem.l_comment]
-- after
unchanged
