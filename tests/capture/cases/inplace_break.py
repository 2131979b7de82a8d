# capture: call=f inputs=x:f32[4]
def f(x):
    y = x * 2
    y += 1
    return y
