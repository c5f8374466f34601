-- case: a struct built in the query (not a scan's column) is left alone
select s.a, count(*) from (select {'a': l_returnflag, 'b': l_linestatus} as s from lineitem) group by 1;
-- before
Project s.a, COUNT(*)
  Aggregate keys=[s.a := struct_extract(unnamed_subquery1.s, 'a')] aggs=[COUNT(*) := count(*)]
    Project unnamed_subquery1.s := s
      Project s := struct_pack(lineitem.l_returnflag, lineitem.l_linestatus, ('a', 'b'))
        Scan lineitem [lineitem.l_returnflag, lineitem.l_linestatus]
-- after
unchanged

-- case: a query without struct columns is left alone
select l_returnflag, count(*) from lineitem group by 1;
-- before
Project lineitem.l_returnflag, COUNT(*)
  Aggregate keys=[lineitem.l_returnflag] aggs=[COUNT(*) := count(*)]
    Scan lineitem [lineitem.l_returnflag]
-- after
unchanged
