"""The command line's subcommands, one module each (``query`` and ``explain`` share one).
:mod:`sluice.cli` parses the command line and imports only the module of the command it runs,
so ``sluice --help`` loads none of them, and doctor and inspect load no torch (nor what the
other commands need: rich, the result renderer). Each module's imports sit at its top: its
command needs them all."""
