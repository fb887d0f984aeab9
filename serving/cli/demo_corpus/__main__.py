import sys

from serving.cli.demo_corpus.corpus import main

sys.exit(main())
