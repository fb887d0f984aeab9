import sys

from retrieval.demo.corpus import main

sys.exit(main())
