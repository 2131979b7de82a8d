# capture: call=f inputs=x:f32[4]
def f(x):
    y = x.exp()
    if y.sum() > 1:
        return y
    return -y
