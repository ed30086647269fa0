import sys

from jobs.demo.launcher import main

sys.exit(main())
