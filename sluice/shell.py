"""The interactive SQL shell: ``sluice`` with no arguments, or ``sluice shell [--data DIR]``.

Like DuckDB's: statements span lines until a ``;``; history is kept across sessions
(``~/.sluice_history``); Tab completes table names, column names and keywords; dot-commands
change how results show (``.help`` lists them). Ctrl-C cancels the running query (or the
statement being typed), Ctrl-D leaves. Results fit the terminal: middle columns are elided,
long results show their first and last rows with the row count.

Line editing is prompt_toolkit's. When stdin is not a terminal (``sluice shell < x.sql``) the
statements are read and run without it, so scripts work the same way.
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from pathlib import Path

from prompt_toolkit import PromptSession
from prompt_toolkit.completion import Completer, Completion
from prompt_toolkit.history import FileHistory
from prompt_toolkit.key_binding import KeyBindings

from sluice.analyze import analyze_report
from sluice.errors import SluiceError
from sluice.render import MODES, format_rows, format_table
from sluice.sql.commands import type_name

HELP = """\
.tables                   the tables of the data directory
.schema [TABLE]           the columns and types of every table, or of one
.mode [MODE]              how results show: table, csv, json, line, markdown
.output [FILE]            send results to FILE (no FILE: back to the terminal)
.timer on|off             print each statement's run time
.analyze [on|off]         print each query's analysis (operators, stages, T_min) instead of its rows
.read FILE                run the statements in FILE
.maxrows N                rows a table shows (first and last halves; default 40)
.help                     this text
.quit, .exit              leave (as does Ctrl-D)
Statements end with ';' and may span lines. Ctrl-C cancels the running query."""

KEYWORDS = ("SELECT", "FROM", "WHERE", "GROUP BY", "ORDER BY", "HAVING", "LIMIT", "JOIN", "LEFT JOIN", "ON",
            "USING", "WITH", "AS", "AND", "OR", "NOT", "IN", "EXISTS", "BETWEEN", "LIKE", "CASE", "WHEN", "THEN",
            "ELSE", "END", "DISTINCT", "UNION", "ALL", "INTERSECT", "EXCEPT", "OVER", "PARTITION BY", "COUNT",
            "SUM", "AVG", "MIN", "MAX", "CAST", "DESCRIBE", "SHOW TABLES", "SUMMARIZE", "QUALIFY", "WINDOW")


def statement_end(text: str) -> int:
    """The index just past the first complete statement's ``;`` (quotes and comments
    respected), or -1 when the text holds no complete statement."""
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch in ("'", '"'):
            j = text.find(ch, i + 1)
            while j != -1 and j + 1 < n and text[j + 1] == ch:  # '' inside a string
                j = text.find(ch, j + 2)
            if j == -1:
                return -1
            i = j + 1
            continue
        if text.startswith("--", i):
            j = text.find("\n", i)
            if j == -1:
                return -1
            i = j + 1
            continue
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            if j == -1:
                return -1
            i = j + 2
            continue
        if ch == ";":
            return i + 1
        i += 1
    return -1


def split_statements(text: str) -> tuple[list[str], str]:
    """(complete statements without their ';', the unfinished rest)."""
    out = []
    while True:
        end = statement_end(text)
        if end < 0:
            return out, text
        stmt = text[:end - 1].strip()
        if stmt:
            out.append(stmt)
        text = text[end:]


class Shell:
    """The state of a shell session and what each input does; input comes from :meth:`loop`
    (a terminal, through prompt_toolkit) or :meth:`run_script` (any text)."""

    def __init__(self, con, out=None, err=None) -> None:
        self.con = con
        self.out = out or sys.stdout
        self.err = err or sys.stderr
        self.mode = "table"
        self.timer = False
        self.analyze = False
        self.max_rows = 40
        self._file = None  # the .output file
        self.bail = False  # a script stops at its first error
        self.failed = False

    # ------------------------------------------------------------------ running input

    def run_script(self, text: str) -> bool:
        """Run every statement and dot-command in ``text``; False when one asked to quit."""
        pending = ""
        for line in text.splitlines(keepends=True):
            if not pending.strip() and line.lstrip().startswith("."):
                if not self.dot(line.strip()):
                    return False
                continue
            pending += line
            stmts, pending = split_statements(pending)
            for s in stmts:
                self.statement(s)
                if self.failed and self.bail:
                    return False
        if pending.strip() and not _only_comments(pending):
            self.statement(pending.strip())
        return not (self.failed and self.bail)

    def statement(self, sql: str) -> None:
        """Run one statement and show its result; an error is one line, and Ctrl-C cancels."""
        t0 = time.perf_counter()
        try:
            rel = self.con.sql(sql)
            table = rel.to_arrow()
            if self.analyze:
                op, ctx = rel.last_run
                self._emit(analyze_report(op, ctx, self.con.root))
            else:
                self._show(table)
        except KeyboardInterrupt:
            print("interrupted", file=self.err)
            self.failed = True
            return
        except SluiceError as e:
            print(str(e), file=self.err)
            self.failed = True
            return
        except Exception as e:  # noqa: BLE001 - a bug: one line, and the shell goes on
            print(f"internal error: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}", file=self.err)
            self.failed = True
            return
        finally:
            self._flush()
        if self.timer:
            print(f"Run Time: {time.perf_counter() - t0:.3f} s", file=self.err)

    def _show(self, table) -> None:
        if self.mode == "table":
            width = None
            if self._file is None and self.out.isatty():
                width = shutil.get_terminal_size((120, 24)).columns
            self._emit(format_table(table, width, self.max_rows))
        else:
            text = format_rows(table, self.mode)
            if text:
                self._emit(text)

    def _emit(self, text: str) -> None:
        print(text, file=self._file or self.out)

    def _flush(self) -> None:
        (self._file or self.out).flush()

    # ------------------------------------------------------------------ dot-commands

    def dot(self, line: str) -> bool:
        """Run a dot-command; False for .quit/.exit."""
        parts = line.split()
        cmd, args = parts[0].lower(), parts[1:]
        try:
            if cmd in (".quit", ".exit", ".q"):
                return False
            if cmd == ".help":
                self._emit(HELP)
            elif cmd == ".tables":
                self._emit("  ".join(self.con.tables()) or "(no tables)")
            elif cmd == ".schema":
                self._schema(args)
            elif cmd == ".mode":
                self._set_mode(args)
            elif cmd == ".output":
                self._set_output(args)
            elif cmd == ".timer":
                self.timer = _on_off(cmd, args, self.timer)
            elif cmd == ".analyze":
                self.analyze = _on_off(cmd, args, self.analyze, toggle=True)
                print(f"analyze {'on' if self.analyze else 'off'}", file=self.err)
            elif cmd == ".read":
                self._read(args)
            elif cmd == ".maxrows":
                if len(args) != 1 or not args[0].isdigit() or int(args[0]) < 2:
                    raise _Usage(".maxrows N (N >= 2)")
                self.max_rows = int(args[0])
            else:
                raise _Usage(f"unknown command {cmd}; .help lists them")
        except _Usage as e:
            print(f"usage: {e}" if not str(e).startswith("unknown") else str(e), file=self.err)
            self.failed = True
        except SluiceError as e:
            print(str(e), file=self.err)
            self.failed = True
        except OSError as e:
            print(f"{cmd}: {e.strerror}: {e.filename}", file=self.err)
            self.failed = True
        return not (self.failed and self.bail)

    def _schema(self, args: list[str]) -> None:
        names = args or self.con.tables()
        lines = []
        for name in names:
            info = self.con.table(name)
            cols = [f"{f.name} {info.unsupported[f.name].upper()}" if f.name in info.unsupported
                    else f"{f.name} {type_name(info.types[f.name], getattr(f.type, 'precision', None))}"
                    for f in info.arrow_schema]
            lines.append(f"CREATE TABLE {info.name}({', '.join(cols)});")
        self._emit("\n".join(lines) if lines else "(no tables)")

    def _set_mode(self, args: list[str]) -> None:
        if not args:
            self._emit(f"current mode: {self.mode}")
            return
        if len(args) != 1 or args[0].lower() not in MODES:
            raise _Usage(f".mode {'|'.join(MODES)}")
        self.mode = args[0].lower()

    def _set_output(self, args: list[str]) -> None:
        if len(args) > 1:
            raise _Usage(".output [FILE]")
        if self._file is not None:
            self._file.close()
            self._file = None
        if args:
            self._file = open(args[0], "w", encoding="utf-8")

    def _read(self, args: list[str]) -> None:
        if len(args) != 1:
            raise _Usage(".read FILE")
        text = Path(args[0]).read_text(encoding="utf-8")
        self.run_script(text)

    def close(self) -> None:
        self._set_output([])

    # ------------------------------------------------------------------ the terminal

    def loop(self) -> None:
        """Read statements from the terminal until Ctrl-D or .quit."""
        keys = KeyBindings()

        @keys.add("enter")
        def _enter(event):
            buf = event.current_buffer
            text = buf.text
            if not text.strip() or text.lstrip().startswith(".") or statement_end(text) >= 0 \
                    or _only_comments(text) and text.strip():
                buf.validate_and_handle()
            else:
                buf.insert_text("\n")

        history = Path(os.environ.get("SLUICE_HISTORY", Path.home() / ".sluice_history"))
        try:
            history.parent.mkdir(parents=True, exist_ok=True)
            hist = FileHistory(str(history))
        except OSError:
            hist = None
        session = PromptSession(history=hist, completer=_SqlCompleter(self.con), key_bindings=keys,
                                multiline=True, prompt_continuation=lambda width, n, soft: "   ...> ".rjust(width),
                                complete_while_typing=False)
        print(f"sluice shell on {self.con.root} ({self.con.device}); .help for commands, Ctrl-D to leave",
              file=self.err)
        while True:
            try:
                text = session.prompt("sluice> ")
            except KeyboardInterrupt:
                continue  # drop what was being typed
            except EOFError:
                break
            if not self.run_script(text):
                break


class _Usage(Exception):
    pass


def _on_off(cmd: str, args: list[str], current: bool, toggle: bool = False) -> bool:
    if not args and toggle:
        return not current
    if len(args) != 1 or args[0].lower() not in ("on", "off"):
        raise _Usage(f"{cmd} on|off")
    return args[0].lower() == "on"


def _only_comments(text: str) -> bool:
    return all(not ln.strip() or ln.strip().startswith("--") for ln in text.splitlines())


def vocabulary(con) -> list[str]:
    """What Tab completes: keywords, table names and their column names (from the footers)."""
    words = set(KEYWORDS)
    for name in con.tables():
        words.add(name)
        try:
            words.update(con.table(name).arrow_schema.names)
        except SluiceError:
            pass
    return sorted(words)


class _SqlCompleter(Completer):
    """Tab: the keywords, table names and column names starting with the word typed."""

    def __init__(self, con) -> None:
        self.con = con
        self.words: list[str] | None = None

    def get_completions(self, document, complete_event):
        word = document.get_word_before_cursor(WORD=False)
        if not word or not (word[0].isalpha() or word[0] == "_"):
            return
        if self.words is None:
            self.words = vocabulary(self.con)  # read once, on the first Tab
        low = word.lower()
        for w in self.words:
            if w.lower().startswith(low) and w.lower() != low:
                text = w.lower() if w.isupper() and not word.isupper() else w
                yield Completion(text, start_position=-len(word))


def run_shell(con) -> int:
    """The shell over an open connection: interactive on a terminal; else the statements on
    stdin as a script, which stops at its first error with exit status 1."""
    shell = Shell(con)
    try:
        if sys.stdin.isatty() and sys.stdout.isatty():
            shell.loop()
            return 0
        shell.bail = True
        shell.run_script(sys.stdin.read())
        return 1 if shell.failed else 0
    finally:
        shell.close()

