# capture: call=f inputs=x:f32[3,4]
# An entry input updated through views (x[0], x.t()[1]): the runtime writes the new x back.
def f(x):
    x[0].add_(1.0)
    y = x.t()
    y[1].mul_(3.0)
    return x * 1
