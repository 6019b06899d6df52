"""Data-parallel gradients' sum from Python: every process (mpirun -np 2 python
allreduce.py) holds one tensor per local device; allreduce leaves the mean of
all of them in each, pushed like any op, and item() is the blocker.

    OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \\
        mpirun --oversubscribe -np 2 python examples/python/allreduce.py
"""

import numpy as np

import depengine as de

engine = de.default_engine()
engine.add_emulated_device(0)
comm = de.Communicator.world(engine=engine)
rank = comm.process_rank
# This process's gradients: one on the CPU, one on an emulated device.
grads = [de.full((1000,), float(2 * rank + 1)), de.full((1000,), float(2 * rank + 2), device="emulated:0")]
comm.allreduce(grads, op="mean", name="grad_mean")  # returns at once
expected = (2 * comm.process_count + 1) / 2.0  # the mean of 1, 2, ..., 2 * process_count
got = [g.sum().item() / 1000 for g in grads]
assert np.allclose(got, expected), (got, expected)
comm.barrier()
print(f"process {rank} of {comm.process_count}: mean {got[0]:.2f} on every device ({comm.describe()})")
