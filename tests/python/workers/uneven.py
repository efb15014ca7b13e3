"""Each rank trains on its own number of batches, then joins."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "python"))
import torch  # noqa: E402

import hvd.torch as hvd  # noqa: E402

hvd.init()
torch.manual_seed(0)
model = torch.nn.Linear(8, 2)
hvd.broadcast_parameters(model.state_dict(), root_rank=0)
opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                               named_parameters=model.named_parameters())
for step in range(3 * (hvd.rank() + 1)):
    opt.zero_grad()
    model(torch.randn(4, 8)).sum().backward()
    opt.step()
last = hvd.join()
print("rank %d: joined, last %d" % (hvd.rank(), last))
hvd.shutdown()
