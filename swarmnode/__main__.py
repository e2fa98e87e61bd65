import sys

from swarmnode.cli.app import main

sys.exit(main())
