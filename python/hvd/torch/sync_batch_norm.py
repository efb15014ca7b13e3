"""hvd.SyncBatchNorm: batch normalisation whose statistics are those of
the whole job's batch, not of one rank's, as Horovod's.

In training, every rank's per-channel count, mean and sum of squared
deviations are gathered (one allgather) and combined exactly (Chan's
parallel formula), so ranks with different batch sizes weigh by their
samples; the backward pass sums the two per-channel reductions it needs
over the ranks (one allreduce). The arithmetic is plain tensor algebra,
so CPU tensors work as well as CUDA ones (torch's fused sync-BN kernels
exist only for CUDA); float16 and bfloat16 inputs are computed in
float32. Weight and bias gradients stay local: the optimizer's allreduce
averages them like every other gradient.
"""

import torch
import torch.nn.functional as F
from torch.autograd.function import Function
from torch.nn.modules.batchnorm import _BatchNorm

from hvd.torch.mpi_ops import Sum, allgather, allreduce, size


class SyncBatchNorm(_BatchNorm):
    """Horovod's SyncBatchNorm: torch.nn.BatchNorm{1,2,3}d over the batch
    of every rank. Arguments as torch's _BatchNorm; inputs (N, C, ...)."""

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True,
                 track_running_stats=True):
        super().__init__(num_features, eps, momentum, affine, track_running_stats)

    def _check_input_dim(self, input):
        if input.dim() < 2:
            raise ValueError("expected at least 2D input (got {}D input)".format(input.dim()))

    def _run_bn(self, input, factor):
        return F.batch_norm(input, self.running_mean, self.running_var, self.weight,
                            self.bias, self.training or not self.track_running_stats,
                            factor, self.eps)

    def forward(self, input):
        self._check_input_dim(input)
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats:
            self.num_batches_tracked.add_(1)
            if self.momentum is None:  # a cumulative moving average
                factor = 1.0 / float(self.num_batches_tracked)
        if not self.training and self.track_running_stats:
            return self._run_bn(input, factor)
        if size() == 1:
            return self._run_bn(input, factor)
        return _SyncBatchNorm.apply(input, self.weight, self.bias, self.running_mean,
                                    self.running_var, self.eps, factor)


def _compute_dtype(t):
    return torch.float32 if t.dtype in (torch.float16, torch.bfloat16) else t.dtype


def _per_channel(t):
    """(C, everything else): the channel dimension first, flattened."""
    return t.transpose(0, 1).reshape(t.shape[1], -1)


class _SyncBatchNorm(Function):
    @staticmethod
    def forward(ctx, input, weight, bias, running_mean, running_var, eps, factor):
        dt = _compute_dtype(input)
        x = _per_channel(input.to(dt))
        channels, n = x.shape
        mean = x.mean(dim=1) if n else x.new_zeros(channels)
        m2 = ((x - mean.unsqueeze(1)) ** 2).sum(dim=1)
        # One row per rank: count, mean per channel, squared deviations.
        mine = torch.cat([torch.tensor([float(n)], dtype=torch.float64),
                          mean.double().cpu(), m2.double().cpu()]).unsqueeze(0)
        rows = allgather(mine, name="sync_batch_norm.stats")
        counts, means, m2s = rows[:, 0], rows[:, 1:1 + channels], rows[:, 1 + channels:]
        total = counts.sum()
        if total <= 0:
            raise ValueError("hvd.SyncBatchNorm: no rank has a sample")
        g_mean = (counts.unsqueeze(1) * means).sum(dim=0) / total
        g_m2 = (m2s + counts.unsqueeze(1) * (means - g_mean) ** 2).sum(dim=0)
        var = g_m2 / total
        if running_mean is not None and factor:
            unbiased = g_m2 / (total - 1) if total > 1 else var
            running_mean.mul_(1 - factor).add_(factor * g_mean.to(running_mean))
            running_var.mul_(1 - factor).add_(factor * unbiased.to(running_var))
        g_mean = g_mean.to(device=input.device, dtype=dt)
        invstd = torch.rsqrt(var.to(device=input.device, dtype=dt) + eps)
        shape = [1, channels] + [1] * (input.dim() - 2)
        xhat = (input.to(dt) - g_mean.view(shape)) * invstd.view(shape)
        out = xhat
        if weight is not None:
            out = out * weight.to(dt).view(shape)
        if bias is not None:
            out = out + bias.to(dt).view(shape)
        ctx.save_for_backward(input, weight, g_mean, invstd)
        ctx.total = float(total)
        ctx.has_bias = bias is not None
        return out.to(input.dtype)

    @staticmethod
    def backward(ctx, grad_output):
        input, weight, mean, invstd = ctx.saved_tensors
        dt = _compute_dtype(input)
        channels = input.shape[1]
        shape = [1, channels] + [1] * (input.dim() - 2)
        dy = grad_output.to(dt)
        xmu = input.to(dt) - mean.view(shape)
        sum_dy = _per_channel(dy).sum(dim=1)
        sum_dy_xmu = _per_channel(dy * xmu).sum(dim=1)
        grad_input = grad_weight = grad_bias = None
        if ctx.needs_input_grad[0]:
            both = allreduce(torch.cat([sum_dy, sum_dy_xmu]).double().cpu(), op=Sum,
                             name="sync_batch_norm.grads")
            mean_dy = (both[:channels] / ctx.total).to(device=input.device, dtype=dt)
            mean_dy_xmu = (both[channels:] / ctx.total).to(device=input.device, dtype=dt)
            scale = invstd if weight is None else invstd * weight.to(dt)
            grad_input = (dy - mean_dy.view(shape)
                          - xmu * (invstd * invstd * mean_dy_xmu).view(shape)) \
                * scale.view(shape)
            grad_input = grad_input.to(input.dtype)
        if weight is not None and ctx.needs_input_grad[1]:
            grad_weight = (sum_dy_xmu * invstd).to(weight.dtype)
        if ctx.has_bias and ctx.needs_input_grad[2]:
            grad_bias = sum_dy.to(weight.dtype if weight is not None else input.dtype)
        return grad_input, grad_weight, grad_bias, None, None, None, None
