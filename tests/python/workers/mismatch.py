"""Ranks disagree on a tensor's shape, then on its dtype (bool and uint8,
both bytes): every rank must raise HorovodInternalError with libhvd's
message, and the job goes on."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "python"))
import torch  # noqa: E402

import hvd.torch as hvd  # noqa: E402

hvd.init()
try:
    hvd.allreduce(torch.ones(hvd.rank() + 2), name="weights")
    print("rank %d: no error" % hvd.rank())
except hvd.HorovodInternalError as e:
    print("rank %d raised: %s" % (hvd.rank(), e))
try:
    hvd.allreduce(torch.ones(2, dtype=torch.uint8 if hvd.rank() == 0 else torch.bool),
                  name="flags", op=hvd.Max)
    print("rank %d: flags: no error" % hvd.rank())
except hvd.HorovodInternalError as e:
    print("rank %d: flags raised: %s" % (hvd.rank(), e))
# The mismatch failed one tensor, not the job.
out = hvd.allreduce(torch.ones(3), name="after", op=hvd.Sum)
print("rank %d: after %s" % (hvd.rank(), out.tolist()))
hvd.shutdown()
