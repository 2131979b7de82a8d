# capture: call=f inputs=x:f32[2]
def f(x):
    y = x + 1
    print("value", y)
    return y
