"""An elastic PyTorch job driven the way Horovod's own elastic tests drive
horovodrun: the hosts change by epoch (the discovery script reads the
epoch file that rank 0 writes), and at the end of an epoch whose next one
has other hosts, rank 0 waits until the change shows in
state._host_messages (DISCOVERY_WAIT seconds at most, else
TimeoutError), as Horovod's test script does. Each epoch rank 0 appends
its world to LOGFILE as JSON: epoch, size, rendezvous (how many times
train() began), hosts. HOSTS_BY_EPOCH: "EPOCH=HOST:SLOTS,...;..." for the
epochs whose hosts differ from DEFAULT_HOSTS."""

import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "python"))
import torch  # noqa: E402

import hvd.torch as hvd  # noqa: E402

EPOCHS = int(os.environ.get("EPOCHS", "4"))
BATCHES, COMMIT = 6, 2
WAIT = float(os.environ.get("DISCOVERY_WAIT", "10"))
default_hosts = os.environ["DEFAULT_HOSTS"]
by_epoch = {int(k): v for k, v in (p.split("=") for p in
                                    os.environ.get("HOSTS_BY_EPOCH", "").split(";") if p)}


def hosts_of(epoch):
    return by_epoch.get(epoch, default_hosts)


hvd.init()
torch.manual_seed(0)
model = torch.nn.Linear(4, 1)
opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.01),
                               named_parameters=model.named_parameters())


@hvd.elastic.run
def train(state):
    state.rendezvous += 1
    while state.epoch < EPOCHS:
        for state.batch in range(state.batch, BATCHES):
            opt.zero_grad()
            model(torch.ones(2, 4)).sum().backward()
            opt.step()
            if (state.batch + 1) % COMMIT == 0:
                state.commit()
        if hvd.rank() == 0:
            with open(os.environ["LOGFILE"], "a") as f:
                f.write(json.dumps({"epoch": state.epoch, "size": hvd.size(),
                                    "rendezvous": state.rendezvous}) + "\n")
            with open(os.environ["EPOCH_FILE"] + ".tmp", "w") as f:
                f.write("%d\n" % (state.epoch + 1))
            os.rename(os.environ["EPOCH_FILE"] + ".tmp", os.environ["EPOCH_FILE"])
            if hosts_of(state.epoch) != hosts_of(state.epoch + 1):
                state._last_updated_timestamp = 0
                start = time.time()
                while state._host_messages.empty():
                    if time.time() - start > WAIT:
                        raise TimeoutError("Timed out waiting for notifications from hvdrun")
                    time.sleep(0.1)
        state.epoch += 1
        state.batch = 0
        state.commit()


state = hvd.elastic.TorchState(model, opt, batch=0, epoch=0, rendezvous=0)
train(state)
print("worker %s: done: rank %d of %d, epoch %d" % (os.environ.get("HVD_WORKER_ID"),
                                                    hvd.rank(), hvd.size(), state.epoch),
      flush=True)
