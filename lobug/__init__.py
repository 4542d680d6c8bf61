"""Lo-Bug: an offline, memory-keeping voice assistant daemon for the M5Stack device."""

import os

# The daemon's numeric work is small matrix-vector products (the in-memory vector index), run
# on its own reader threads. BLAS worker threads would only spin against those threads for the
# machine's few cores (issue 13: KNN over 10k vectors took 2x longer with them). Set before
# numpy is first imported; an operator's own setting wins.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

__version__ = "0.1.0"
