"""Allow `python -m baton`."""

from baton.cli import main

if __name__ == "__main__":
    main()
