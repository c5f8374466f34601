"""The command line's subcommands, one module each (``query`` and ``explain`` share one; the
three layout tools, ``doctor``, ``inspect`` and ``rewrite``, share another). :mod:`sluice.cli`
parses the command line and imports only the module of the command it runs, so ``sluice
--help`` loads none of them and the footer-only tools load no torch. Each module's imports
sit at its top: its command needs them all."""
