"""``python -m sluice`` (and ``torchrun ... -m sluice query ...``): the command line."""

from sluice.cli import main

if __name__ == "__main__":
    main()
