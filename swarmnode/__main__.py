import sys

from swarmnode.cli.app import main

if __name__ == "__main__":  # guarded: spawned child processes re-import this module
    sys.exit(main())
