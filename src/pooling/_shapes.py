"""Output shapes and pads: pure functions of shapes and attributes (behaviour.md §2.3, §3, §4)."""

AUTO_PADS = ("NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID")


def pool_output(op, spatial, kernel, strides, dilations, pads, auto_pad, ceil_mode):
    """(output spatial shape, pads_begin, pads_end) of MaxPool, behaviour.md §2.3.

    `pads` are the explicit pads (already checked against auto_pad).  Raises
    ValueError when an output dimension would be negative.
    """
    n = len(spatial)
    out, begin, end = [], [], []
    for i in range(n):
        size, k, s, d = spatial[i], kernel[i], strides[i], dilations[i]
        e = (k - 1) * d + 1
        if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
            o = -(-size // s)
            total = max(0, (o - 1) * s + e - size)  # with the *dilated* kernel
            pb = total // 2 if auto_pad == "SAME_UPPER" else total - total // 2
            pe = total - pb
        else:
            pb, pe = (0, 0) if auto_pad == "VALID" else (pads[i], pads[i + n])
            num = size + pb + pe - e
            if ceil_mode:
                o = -(-num // s) + 1
                if (o - 1) * s >= size + pb:  # a window may not start in the end padding
                    o -= 1
            else:
                o = num // s + 1
            if o < 0:
                raise ValueError(
                    f"{op}: output dimension {i} would be {o}: input spatial shape {tuple(spatial)} "
                    f"with pads {tuple(pads)} is smaller than the dilated kernel {(k - 1) * d + 1} "
                    f"(kernel_shape {tuple(kernel)}, dilations {tuple(dilations)})"
                )
        out.append(o)
        begin.append(pb)
        end.append(pe)
    return tuple(out), tuple(begin), tuple(end)
