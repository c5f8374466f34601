-- case: two sums of one column plus constants become one SUM and one COUNT of it
select l_returnflag, sum(l_linenumber::smallint + 1), sum(2 + l_linenumber::smallint), sum(l_linenumber::smallint - 3) from lineitem group by 1;
-- before
Project lineitem.l_returnflag, SUM(CAST(l_linenumber AS SMALLINT) + 1), SUM(2 + CAST(l_linenumber AS SMALLINT)), SUM(CAST(l_linenumber AS SMALLINT) - 3)
  Aggregate keys=[lineitem.l_returnflag] aggs=[SUM(CAST(l_linenumber AS SMALLINT) + 1) := sum((cast(lineitem.l_linenumber, LType(kind='int16', scale=0, precision=0)) + 1)), SUM(2 + CAST(l_linenumber AS SMALLINT)) := sum((2 + cast(lineitem.l_linenumber, LType(kind='int16', scale=0, precision=0)))), SUM(CAST(l_linenumber AS SMALLINT) - 3) := sum((cast(lineitem.l_linenumber, LType(kind='int16', scale=0, precision=0)) - 3))]
    Scan lineitem [lineitem.l_orderkey, lineitem.l_partkey, lineitem.l_suppkey, lineitem.l_linenumber, lineitem.l_quantity, lineitem.l_extendedprice, lineitem.l_discount, lineitem.l_tax, lineitem.l_returnflag, lineitem.l_linestatus, lineitem.l_shipdate, lineitem.l_commitdate, lineitem.l_receiptdate, lineitem.l_shipinstruct, lineitem.l_shipmode, lineitem.l_comment]
-- after
Project lineitem.l_returnflag, SUM(CAST(l_linenumber AS SMALLINT) + 1), SUM(2 + CAST(l_linenumber AS SMALLINT)), SUM(CAST(l_linenumber AS SMALLINT) - 3)
  Project lineitem.l_returnflag, SUM(CAST(l_linenumber AS SMALLINT) + 1) := case(is_null((SUM(CAST(l_linenumber AS SMALLINT) + 1) ∑max + 1)), NULL, (SUM(CAST(l_linenumber AS SMALLINT) + 1) ∑sum + (1 * SUM(CAST(l_linenumber AS SMALLINT) + 1) ∑count))), SUM(2 + CAST(l_linenumber AS SMALLINT)) := case(is_null((SUM(CAST(l_linenumber AS SMALLINT) + 1) ∑max + 2)), NULL, (SUM(CAST(l_linenumber AS SMALLINT) + 1) ∑sum + (2 * SUM(CAST(l_linenumber AS SMALLINT) + 1) ∑count))), SUM(CAST(l_linenumber AS SMALLINT) - 3) := case(is_null((SUM(CAST(l_linenumber AS SMALLINT) - 3) ∑min + -3)), NULL, (SUM(CAST(l_linenumber AS SMALLINT) + 1) ∑sum + (-3 * SUM(CAST(l_linenumber AS SMALLINT) + 1) ∑count)))
    Aggregate keys=[lineitem.l_returnflag] aggs=[SUM(CAST(l_linenumber AS SMALLINT) + 1) ∑sum := sum(cast(lineitem.l_linenumber, LType(kind='int16', scale=0, precision=0))), SUM(CAST(l_linenumber AS SMALLINT) + 1) ∑count := count(cast(lineitem.l_linenumber, LType(kind='int16', scale=0, precision=0))), SUM(CAST(l_linenumber AS SMALLINT) + 1) ∑max := max(cast(lineitem.l_linenumber, LType(kind='int16', scale=0, precision=0))), SUM(CAST(l_linenumber AS SMALLINT) - 3) ∑min := min(cast(lineitem.l_linenumber, LType(kind='int16', scale=0, precision=0)))]
      Scan lineitem [lineitem.l_orderkey, lineitem.l_partkey, lineitem.l_suppkey, lineitem.l_linenumber, lineitem.l_quantity, lineitem.l_extendedprice, lineitem.l_discount, lineitem.l_tax, lineitem.l_returnflag, lineitem.l_linestatus, lineitem.l_shipdate, lineitem.l_commitdate, lineitem.l_receiptdate, lineitem.l_shipinstruct, lineitem.l_shipmode, lineitem.l_comment]

-- case: an int32 column plus a constant may overflow INTEGER, as the original would: the sums wait for max(x) + c in its type
select sum(l_linenumber + 1), sum(l_linenumber + 2) from lineitem;
-- before
Project SUM(l_linenumber + 1), SUM(l_linenumber + 2)
  Aggregate keys=[] aggs=[SUM(l_linenumber + 1) := sum((lineitem.l_linenumber + 1)), SUM(l_linenumber + 2) := sum((lineitem.l_linenumber + 2))]
    Scan lineitem [lineitem.l_orderkey, lineitem.l_partkey, lineitem.l_suppkey, lineitem.l_linenumber, lineitem.l_quantity, lineitem.l_extendedprice, lineitem.l_discount, lineitem.l_tax, lineitem.l_returnflag, lineitem.l_linestatus, lineitem.l_shipdate, lineitem.l_commitdate, lineitem.l_receiptdate, lineitem.l_shipinstruct, lineitem.l_shipmode, lineitem.l_comment]
-- after
Project SUM(l_linenumber + 1), SUM(l_linenumber + 2)
  Project SUM(l_linenumber + 1) := case(is_null((SUM(l_linenumber + 1) ∑max + 1)), NULL, (SUM(l_linenumber + 1) ∑sum + (1 * SUM(l_linenumber + 1) ∑count))), SUM(l_linenumber + 2) := case(is_null((SUM(l_linenumber + 1) ∑max + 2)), NULL, (SUM(l_linenumber + 1) ∑sum + (2 * SUM(l_linenumber + 1) ∑count)))
    Aggregate keys=[] aggs=[SUM(l_linenumber + 1) ∑sum := sum(lineitem.l_linenumber), SUM(l_linenumber + 1) ∑count := count(lineitem.l_linenumber), SUM(l_linenumber + 1) ∑max := max(lineitem.l_linenumber)]
      Scan lineitem [lineitem.l_orderkey, lineitem.l_partkey, lineitem.l_suppkey, lineitem.l_linenumber, lineitem.l_quantity, lineitem.l_extendedprice, lineitem.l_discount, lineitem.l_tax, lineitem.l_returnflag, lineitem.l_linestatus, lineitem.l_shipdate, lineitem.l_commitdate, lineitem.l_receiptdate, lineitem.l_shipinstruct, lineitem.l_shipmode, lineitem.l_comment]

-- case: one offset alone is left as it is
select sum(l_linenumber + 1) from lineitem;
-- before
Project SUM(l_linenumber + 1)
  Aggregate keys=[] aggs=[SUM(l_linenumber + 1) := sum((lineitem.l_linenumber + 1))]
    Scan lineitem [lineitem.l_orderkey, lineitem.l_partkey, lineitem.l_suppkey, lineitem.l_linenumber, lineitem.l_quantity, lineitem.l_extendedprice, lineitem.l_discount, lineitem.l_tax, lineitem.l_returnflag, lineitem.l_linestatus, lineitem.l_shipdate, lineitem.l_commitdate, lineitem.l_receiptdate, lineitem.l_shipinstruct, lineitem.l_shipmode, lineitem.l_comment]
-- after
unchanged

-- case: int64 columns (x + c could overflow) and non-integers are left as they are
select sum(l_orderkey + 1), sum(l_orderkey + 2), sum(l_quantity + 1), sum(l_quantity + 2) from lineitem;
-- before
Project SUM(l_orderkey + 1), SUM(l_orderkey + 2), SUM(l_quantity + 1), SUM(l_quantity + 2)
  Aggregate keys=[] aggs=[SUM(l_orderkey + 1) := sum((lineitem.l_orderkey + 1)), SUM(l_orderkey + 2) := sum((lineitem.l_orderkey + 2)), SUM(l_quantity + 1) := sum((lineitem.l_quantity + 1.00)), SUM(l_quantity + 2) := sum((lineitem.l_quantity + 2.00))]
    Scan lineitem [lineitem.l_orderkey, lineitem.l_partkey, lineitem.l_suppkey, lineitem.l_linenumber, lineitem.l_quantity, lineitem.l_extendedprice, lineitem.l_discount, lineitem.l_tax, lineitem.l_returnflag, lineitem.l_linestatus, lineitem.l_shipdate, lineitem.l_commitdate, lineitem.l_receiptdate, lineitem.l_shipinstruct, lineitem.l_shipmode, lineitem.l_comment]
-- after
unchanged
