"""The interactive shell driven through a pseudo-terminal (pexpect): multi-line statements,
every dot-command, completion, history, Ctrl-C during a query and Ctrl-D; script mode on a
pipe; and the table layout that fits results to the terminal."""

import os
import sys
from pathlib import Path

import pyarrow as pa
import pytest

from sluice.render import format_rows, format_table
from sluice.shell import split_statements

pexpect = pytest.importorskip("pexpect")
pytestmark = pytest.mark.tooling

SLUICE = str(Path(sys.executable).with_name("sluice"))
PROMPT = "sluice>"
# about 360 M joined pairs: many seconds (the recursive CTE used before ended within 2 s on a fast run)
SLOW = "select sum(a.l_linenumber + b.l_linenumber) from lineitem a, lineitem b where a.l_suppkey = b.l_suppkey;"


@pytest.fixture
def shell(tpch_dir, tmp_path):
    env = dict(os.environ, SLUICE_HISTORY=str(tmp_path / "history"), TERM="xterm", COLUMNS="120",
               PROMPT_TOOLKIT_NO_CPR="1")
    child = pexpect.spawn(SLUICE, ["shell", "--data", str(tpch_dir), "--device", "cpu"], env=env,
                          encoding="utf-8", timeout=60, dimensions=(40, 120), cwd=str(tmp_path))
    child.expect(PROMPT)
    yield child
    if child.isalive():
        child.sendeof()
        child.expect(pexpect.EOF)


def _run(child, text: str, *expect: str) -> str:
    child.send(text + "\r")
    child.expect("\r\n")  # the line is accepted: the next "sluice>" is a new prompt, not a redraw
    for e in expect:
        child.expect(e)
    child.expect(PROMPT)
    return child.before


def test_multiline_statement_and_table_output(shell, tpch_duck):
    n = tpch_duck.execute("select count(*) from nation where n_regionkey = 1").fetchone()[0]
    shell.send("select count(*) as n\r")
    shell.expect(r"\.\.\.>")
    _run(shell, "from nation where n_regionkey = 1;", rf"│\s+{n} │", "1 row")


def test_dot_commands(shell, tmp_path, tpch_duck):
    _run(shell, ".tables", "lineitem", "region")
    _run(shell, ".schema region", r"CREATE TABLE region\(r_regionkey BIGINT, r_name VARCHAR")
    names = [r[0] for r in tpch_duck.execute("select r_name from region order by 1").fetchall()]
    _run(shell, ".mode csv")
    _run(shell, "select r_name from region order by 1;", "r_name\r\n" + "\r\n".join(names))
    _run(shell, ".mode json")
    _run(shell, "select r_regionkey from region order by 1 limit 1;", r'\{"r_regionkey": 0\}')
    _run(shell, ".mode line")
    _run(shell, "select r_regionkey, r_name from region order by 1 limit 1;", r"r_regionkey = 0\r\n\s+r_name = AFRICA")
    _run(shell, ".mode markdown")
    _run(shell, "select r_name from region order by 1 limit 1;", r"\| r_name \|\r\n\|---\|\r\n\| AFRICA \|")
    _run(shell, ".mode bogus", "usage: .mode table|csv|json|markdown|line")
    _run(shell, ".mode table")
    _run(shell, ".timer on")
    _run(shell, "select 1;", r"Run Time: \d+\.\d+ s")
    _run(shell, ".timer off")
    out = tmp_path / "out.csv"
    _run(shell, f".output {out}")
    _run(shell, ".mode csv")
    _run(shell, "select r_name from region order by 1;")
    _run(shell, ".output")
    assert out.read_text().splitlines() == ["r_name"] + names
    script = tmp_path / "s.sql"
    script.write_text("select 40 + 2 as answer;\n.mode line\nselect 'x' as y;\n")
    _run(shell, f".read {script}", "answer\r\n42", "y = x")
    _run(shell, ".mode table")
    _run(shell, ".analyze", "analyze on")
    _run(shell, "select count(*) from region;", "T_min")
    _run(shell, ".analyze off", "analyze off")
    _run(shell, ".read /no/such/file.sql", "No such file")
    _run(shell, ".nope", "unknown command .nope")
    _run(shell, ".help", r"\.schema \[TABLE\]")


def test_errors_are_one_line_and_the_shell_goes_on(shell):
    out = _run(shell, "select nope from region;")
    assert "nope" in out and "Traceback" not in out
    _run(shell, "select 1 + 1 as two;", r"│\s+2 │")


def test_ctrl_c_cancels_the_query_not_the_shell(shell):
    shell.send(SLOW + "\r")
    import time
    time.sleep(2.0)  # well into the query
    shell.sendintr()
    shell.expect("interrupted")
    shell.expect(PROMPT)
    _run(shell, "select 7 as seven;", r"│\s+7 │")
    shell.send("select 'half")
    shell.sendintr()  # at the prompt: drops the line being typed
    shell.expect("\r\n")
    shell.expect(PROMPT)
    _run(shell, "select 8 as eight;", r"│\s+8 │")


def test_completion_history_and_ctrl_d(tpch_dir, tmp_path, shell):
    shell.send("select count(*) from linei\t")
    shell.expect("tem")  # completed in place
    shell.send(";\r")
    shell.expect("1 row")
    shell.expect(PROMPT)
    shell.sendeof()
    shell.expect(pexpect.EOF)
    shell.close()
    assert shell.exitstatus == 0
    assert "select count(*) from lineitem;" in (tmp_path / "history").read_text()


def test_script_on_a_pipe_stops_at_the_first_error(tpch_dir, tmp_path):
    import subprocess
    ok = subprocess.run([SLUICE, "shell", "--data", str(tpch_dir)], input=".mode csv\nselect 1 as a;\nselect 2\n as b;\n",
                        capture_output=True, text=True)
    assert ok.returncode == 0 and ok.stdout == "a\n1\nb\n2\n", ok.stderr
    bad = subprocess.run([SLUICE, "shell", "--data", str(tpch_dir)], input=".mode csv\nselect 1 as a;\nselect nope;\nselect 3;\n",
                         capture_output=True, text=True)
    assert bad.returncode == 1 and bad.stdout == "a\n1\n"
    assert len(bad.stderr.strip().splitlines()) == 1 and "Traceback" not in bad.stderr
    bare = subprocess.run([SLUICE], input="select count(*) as n from region;", capture_output=True, text=True,
                          cwd=tpch_dir)  # no arguments: the shell on the current directory
    assert bare.returncode == 0 and "│     5 │" in bare.stdout, bare.stderr


def test_split_statements_respects_quotes_and_comments():
    stmts, rest = split_statements("select ';' as a; -- x; y\nselect 'it''s;' /* ; */; select 3")
    assert stmts == ["select ';' as a", "-- x; y\nselect 'it''s;' /* ; */"] and rest == " select 3"


def test_wide_and_long_tables_fit_the_terminal():
    t = pa.table({f"column_{i}": list(range(100)) for i in range(30)})
    text = format_table(t, width=100, max_rows=10)
    lines = text.splitlines()
    assert all(len(x) <= 100 for x in lines)
    assert "column_0" in lines[1] and "column_29" in lines[1] and "column_15" not in lines[1] and "…" in lines[1]
    body = [x for x in lines if x.startswith("│")][2:]
    assert len(body) == 11  # 5 first, the elision row, 5 last
    assert body[0].split("│")[1].strip() == "0" and body[-1].split("│")[1].strip() == "99"
    assert lines[-1].startswith("100 rows (10 shown,") and "of 30 columns" in lines[-1]
    assert "…" not in format_table(t.select([0, 1]), width=100, max_rows=200)


def test_line_and_markdown_rows():
    t = pa.table({"a": [1, None], "bb": ["x|y", "z"]})
    assert format_rows(t, "line") == " a = 1\nbb = x|y\n\n a = NULL\nbb = z"
    assert format_rows(t, "markdown").splitlines()[2] == "| 1 | x\\|y |"
