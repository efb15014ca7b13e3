#!/bin/sh
# gpu_share.sh PROGRAM [ARG...]: runs PROGRAM as one of several ranks that
# share this host's one GPU. NCCL refuses two ranks of a communicator on
# one GPU of one host; with a host id of its own (NCCL_HOSTID) each rank
# is a host to NCCL, and the ranks talk through NCCL's network transport,
# over loopback. libhvd itself sees one host (local ranks 0..n-1) and, with
# CUDA_VISIBLE_DEVICES naming one GPU, gives every rank that GPU.
export NCCL_HOSTID="hvd-gpu-share-$HOROVOD_RANK"
export NCCL_SOCKET_IFNAME=lo
export CUDA_VISIBLE_DEVICES="${CUDA_VISIBLE_DEVICES:-0}"
exec "$@"
