"""A real multi-node Ray cluster on this machine, for the tests and the benchmarks: a head and
a worker raylet on loopback, each its own Ray node with a resource of its own
(``finrag_head``, ``finrag_worker``) that placement can ask for; the worker node can be lost
(its raylet and workers killed) and come back.

    python -m finrag.benchmarks.ray_cluster     # prints the address; Ctrl-C ends it

Then ``RAY_ADDRESS=ADDR RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0 finrag serve --config ...``.
"""

from __future__ import annotations

import os
import shutil
import tempfile

HEAD, WORKER = "finrag_head", "finrag_worker"
LOOPBACK = "127.0.0.1"
LOOPBACK_ENV = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"  # Ray's switch: "0" keeps a node on loopback


class LocalCluster:
    def __init__(self):
        from ray.cluster_utils import Cluster

        # short: Ray's socket paths are long
        self.tmp = tempfile.mkdtemp(prefix="frc", dir="/tmp")
        os.makedirs(os.path.join(self.tmp, "ray"))
        os.environ["RAY_TMPDIR"] = self.tmp
        # every node on 127.0.0.1, and the drivers (our CLI's subprocesses inherit this) take
        # the address 127.0.0.1 as it is, instead of swapping in the machine's outward address
        os.environ[LOOPBACK_ENV] = "0"
        self.cluster = Cluster(initialize_head=True, connect=False, head_node_args={
            "num_cpus": 1, "resources": {HEAD: 1}, "include_dashboard": False,
            "node_ip_address": LOOPBACK})
        self.worker = None
        self.add_worker()

    @property
    def address(self) -> str:
        return self.cluster.address

    def add_worker(self) -> None:
        self.worker = self.cluster.add_node(num_cpus=1, resources={WORKER: 1},
                                            node_ip_address=LOOPBACK)

    def lose_worker(self) -> None:
        """The worker node dies at once: its raylet and every process on it are killed."""
        self.cluster.remove_node(self.worker, allow_graceful=False)
        self.worker = None

    def alive_nodes(self) -> int:
        return sum(1 for n in self.cluster.list_all_nodes() if n.remaining_processes_alive())

    def shutdown(self) -> None:
        try:
            self.cluster.shutdown()
        finally:
            os.environ.pop("RAY_TMPDIR", None)
            os.environ.pop(LOOPBACK_ENV, None)
            shutil.rmtree(self.tmp, ignore_errors=True)


def main() -> int:
    import signal
    import time

    cluster = LocalCluster()
    print(f"RAY_ADDRESS={cluster.address} {LOOPBACK_ENV}=0  (head: {HEAD}, worker: {WORKER}; "
          f"Ctrl-C ends it)", flush=True)
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt))
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        cluster.shutdown()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
