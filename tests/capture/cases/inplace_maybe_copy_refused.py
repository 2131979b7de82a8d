# capture: call=f inputs=x:f32[4,6]
# reshape after a transpose copies in torch, and capture does not track strides: an in-place
# update of the base while that result lives is refused, never a stale or wrongly shared value.
def f(x):
    a = x * 1.0
    flat = a.t().reshape(-1)
    a.mul_(2.0)
    return flat, a
