import sys

from slimfuse.cli.main import main

sys.exit(main())
