# capture: call=f inputs=x:f32[2,3,4]
def f(x):
    n = x.shape[0]
    flat = x.view(n, -1)
    return flat.reshape(x.size(1) * 2, x.size(-1) * n // 2)
