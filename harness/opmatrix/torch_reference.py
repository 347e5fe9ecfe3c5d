"""PyTorch-side references for ops whose PyTorch counterpart is not installed here, written
with torch's own differentiable functions so that torch's autograd (not a hand-written rule)
gives the gradients the op matrix compares against. The op-matrix templates reach them as
`torch_reference.<name>`.

- `deform_conv2d`: torchvision.ops.deform_conv2d's semantics (DCNv2, optional mask), built
  on `F.grid_sample(mode="bilinear", padding_mode="zeros", align_corners=True)`, which reads
  a point at pixel coordinates by the same bilinear rule as burn-flex's
  `bilinear_interpolate` (corners outside the input read 0; a point at or beyond -1 / the
  size reads 0).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

__all__ = ["deform_conv2d"]


def deform_conv2d(x, offset, weight, mask=None, bias=None, *, stride=(1, 1), padding=(0, 0),
                  dilation=(1, 1), weight_groups=1, offset_groups=1):  # fmt: skip
    """torchvision's `deform_conv2d(x, offset, weight, bias, stride, padding, dilation,
    mask)` with burn's argument names; offset `[N, offset_groups * kh * kw * 2, H', W']`
    ((dh, dw) per tap), mask `[N, offset_groups * kh * kw, H', W']`."""
    n, c_in, h, w = x.shape
    c_out, _, kh, kw = weight.shape
    oh, ow = offset.shape[2:]
    k = kh * kw
    rows = torch.arange(oh, dtype=x.dtype) * stride[0] - padding[0]
    cols = torch.arange(ow, dtype=x.dtype) * stride[1] - padding[1]
    taps_h = (torch.arange(kh, dtype=x.dtype) * dilation[0]).repeat_interleave(kw)
    taps_w = (torch.arange(kw, dtype=x.dtype) * dilation[1]).repeat(kh)
    off = offset.reshape(n, offset_groups, k, 2, oh, ow)
    ph = rows.view(1, 1, 1, oh, 1) + taps_h.view(1, 1, k, 1, 1) + off[:, :, :, 0]
    pw = cols.view(1, 1, 1, 1, ow) + taps_w.view(1, 1, k, 1, 1) + off[:, :, :, 1]
    # align_corners=True: -1 and 1 are the centres of the first and last pixels
    grid = torch.stack([pw * 2 / (w - 1) - 1, ph * 2 / (h - 1) - 1], dim=-1)
    per_group = c_in // offset_groups
    samples = []
    for g in range(offset_groups):
        xg = x[:, g * per_group : (g + 1) * per_group]
        grid_g = grid[:, g].reshape(n, k * oh, ow, 2)
        s = F.grid_sample(xg, grid_g, mode="bilinear", padding_mode="zeros", align_corners=True)
        s = s.reshape(n, per_group, k, oh * ow)
        if mask is not None:
            s = s * mask.reshape(n, offset_groups, k, oh * ow)[:, g : g + 1]
        samples.append(s)
    columns = torch.cat(samples, dim=1)  # [N, C_in, K, P]
    cg = columns.reshape(n, weight_groups, c_in // weight_groups, k, oh * ow)
    wg = weight.reshape(weight_groups, c_out // weight_groups, -1, k)
    out = torch.einsum("ngckp,gock->ngop", cg, wg).reshape(n, c_out, oh, ow)
    return out if bias is None else out + bias.view(1, -1, 1, 1)
