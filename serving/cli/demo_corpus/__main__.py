import sys

from finrag.serving.cli.demo_corpus.corpus import main

sys.exit(main())
