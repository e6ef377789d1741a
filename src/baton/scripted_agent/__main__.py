"""`python -m baton.scripted_agent`: run the scripted agent on this terminal."""

import sys

from baton.scripted_agent.program import main

if __name__ == "__main__":
    sys.exit(main())
